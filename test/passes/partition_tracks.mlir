// fm-partition-tracks: each track of every track block gets a device
// (contiguous, balanced); the model records the device count; a partition
// that would split a track is rejected.
// RUN: fm-opt %examples/ir/pt-moe-tiny.mlir --fm-partition-tracks=devices=2 | FileCheck %s --check-prefix=TWO
// RUN: fm-opt %examples/ir/pt-moe-tiny.mlir --fm-partition-tracks=devices=1 | FileCheck %s --check-prefix=ONE
// RUN: rm -rf %t && %python %examples/gen_checkpoint.py --family pt_moe --preset tiny --set num_tracks=5 --out %t > /dev/null
// RUN: fmc import %t | fm-opt --fm-partition-tracks=devices=3 | FileCheck %s --check-prefix=THREE
// RUN: not fm-opt %examples/ir/pt-moe-tiny.mlir --fm-partition-tracks=devices=4 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: fm-opt %examples/ir/pt-moe-tiny.mlir --fm-compile=devices=2 | FileCheck %s --check-prefix=KERNELS
// RUN: fm-opt %examples/ir/pt-moe-tiny.mlir --fm-compile=devices=1 | FileCheck %s --check-prefix=KERNELS1

// TWO: fm.model @pt_moe_tiny attributes {{{.*}}num_devices = 2 : i64
// TWO: fm.track_block {{.*}}{block = 0 : i64, combine = #fm<combine mean>, depth = 2 : i64, devices = array<i64: 0, 1>}
// TWO: fm.track_block {{.*}}{block = 1 : i64, combine = #fm<combine mean>, depth = 2 : i64, devices = array<i64: 0, 1>}

// ONE-NOT: num_devices
// ONE-NOT: devices =

// Five tracks over three devices: 2 + 2 + 1, each track whole.
// THREE: fm.track_block {{.*}}devices = array<i64: 0, 0, 1, 1, 2>

// SPLIT: error: 'fm.track_block' op cannot partition track block 0 (2 tracks) over 4 devices: a track would be split across devices, which needs a collective inside the track block

// After lowering: every kernel of a track is tagged [block, track, device];
// each device sums its own tracks, and one all-reduce per block scales the
// sum by 1/T (mean). Two blocks: two collectives per phase.
// KERNELS-LABEL: func.func @prefill
// KERNELS: fmk.attention {{.*}}cache @kv_t0[0] {{{.*}}fmk.track = array<i64: 0, 0, 0>
// KERNELS: fmk.moe {{.*}}fmk.track = array<i64: 0, 0, 0>
// KERNELS: fmk.attention {{.*}}cache @kv_t1[0] {{{.*}}fmk.track = array<i64: 0, 1, 1>
// KERNELS: %[[R0:.*]] = fmk.all_reduce %{{.*}}, %{{.*}} {fmk.buffers = array<i64: [[OFF:[0-9]+]]>, scale = 5.000000e-01 : f64}
// KERNELS: fmk.attention {{.*}}cache @kv_t0[2] {{{.*}}fmk.track = array<i64: 1, 0, 0>
// KERNELS: fmk.all_reduce
// KERNELS-NOT: fmk.all_reduce
// KERNELS: return

// One device: no collective; the tracks' sum is scaled in a fused kernel.
// KERNELS1-LABEL: func.func @prefill
// KERNELS1-NOT: all_reduce
// KERNELS1: fmk.scale {{.*}}{factor = 5.000000e-01 : f64}
// KERNELS1: return
