// fm-partition-tracks (on the kernel level): each track of every fmk.tracks
// gets an MPI rank (contiguous, balanced) and the block's combine becomes
// the collective with the rank of each partial; the model records the rank
// count. With one rank the combine is row adds and a scale. A partition that
// would split a track is rejected.
// RUN: fm-opt %examples/ir/pt-moe-tiny.mlir --fm-lower-to-kernels --fm-partition-tracks=ranks=2 | FileCheck %s --check-prefix=TWO
// RUN: fm-opt %examples/ir/pt-moe-tiny.mlir --fm-lower-to-kernels --fm-partition-tracks=ranks=1 | FileCheck %s --check-prefix=ONE
// RUN: rm -rf %t && %python %examples/gen_checkpoint.py --family pt_moe --preset tiny --set num_tracks=5 --out %t > /dev/null
// RUN: fmc import %t | fm-opt --fm-lower-to-kernels --fm-partition-tracks=ranks=3 | FileCheck %s --check-prefix=THREE
// RUN: not fm-opt %examples/ir/pt-moe-tiny.mlir --fm-lower-to-kernels --fm-partition-tracks=ranks=4 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: not fm-opt %examples/ir/pt-moe-tiny.mlir --fm-lower-to-kernels --fm-partition-tracks=ranks=0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not fm-opt %examples/ir/afm7-tiny.mlir --fm-lower-to-kernels --fm-partition-tracks=ranks=2 2>&1 | FileCheck %s --check-prefix=NOTRACKS
// RUN: fm-opt %examples/ir/pt-moe-tiny.mlir --fm-compile=ranks=2 | FileCheck %s --check-prefix=KERNELS
// RUN: fm-opt %examples/ir/pt-moe-tiny.mlir --fm-compile=ranks=1 | FileCheck %s --check-prefix=KERNELS1

// TWO: fm.model @pt_moe_tiny attributes {{{.*}}num_ranks = 2 : i64
// TWO-LABEL: func.func @prefill
// TWO: %[[T0:.*]]:2 = fmk.tracks block 0 {ranks = array<i64: 0, 1>}
// TWO: fmk.all_reduce %[[T0]]#0, %[[T0]]#1 {ranks = array<i64: 0, 1>, scale = 5.000000e-01 : f64}
// TWO: %[[T1:.*]]:2 = fmk.tracks block 1 {ranks = array<i64: 0, 1>}
// TWO: fmk.all_reduce %[[T1]]#0, %[[T1]]#1 {ranks = array<i64: 0, 1>, scale = 5.000000e-01 : f64}

// ONE-NOT: num_ranks
// ONE-LABEL: func.func @prefill
// ONE: %[[T:.*]]:2 = fmk.tracks block 0 :
// ONE-NOT: fmk.all_reduce
// ONE: %[[S:.*]] = fmk.add %[[T]]#0, %[[T]]#1
// ONE: fmk.scale %[[S]] {factor = 5.000000e-01 : f64}

// Five tracks over three ranks: 2 + 2 + 1, each track whole.
// THREE: fmk.tracks block 0 {ranks = array<i64: 0, 0, 1, 1, 2>}
// THREE: fmk.all_reduce {{.*}}ranks = array<i64: 0, 0, 1, 1, 2>

// SPLIT: error: 'fmk.tracks' op cannot partition track block 0 (2 tracks) over 4 ranks: a track would be split across ranks, which needs a collective inside the track block
// ZERO: error: fm-partition-tracks: ranks must be >= 1, got 0
// NOTRACKS: error: 'fm.model' op model 'afm7_tiny' has no track blocks to partition over 2 ranks

// After fusion and planning: every kernel of a track stays in its region,
// and one all-reduce per block joins the tracks' outputs into a buffer of
// its own. Two blocks: two collectives per phase.
// KERNELS-LABEL: func.func @prefill
// KERNELS: %[[T:.*]]:2 = fmk.tracks block 0 {fmk.buffers = array<i64: [[A:[0-9]+]], [[B:[0-9]+]]>, ranks = array<i64: 0, 1>}
// KERNELS: fmk.attention {{.*}}cache @kv_t0[0]
// KERNELS: fmk.moe
// KERNELS: fmk.yield
// KERNELS: fmk.attention {{.*}}cache @kv_t1[0]
// KERNELS: fmk.yield
// KERNELS: fmk.all_reduce %[[T]]#0, %[[T]]#1 {fmk.buffers = array<i64: {{[0-9]+}}>, ranks = array<i64: 0, 1>, scale = 5.000000e-01 : f64}
// KERNELS: fmk.tracks block 1
// KERNELS: fmk.all_reduce
// KERNELS-NOT: fmk.all_reduce
// KERNELS: return

// One rank: no collective; the tracks' sum is scaled in a fused kernel.
// KERNELS1-LABEL: func.func @prefill
// KERNELS1-NOT: all_reduce
// KERNELS1: fmk.tracks block 0
// KERNELS1: fmk.group "{{k[0-9]+}}"
// KERNELS1: fmk.add
// KERNELS1: fmk.scale {{.*}}{factor = 5.000000e-01 : f64}
// KERNELS1: return
