// The f32 FMA throughput of this machine: independent FMA chains in
// registers, on the widest vector unit the kernels use, on `threads`
// threads at once (a roof no matmul can pass).
#pragma once

namespace fm::rt {
class ThreadPool;
} // namespace fm::rt

namespace fm::bench {

/// GFLOP/s (2 per FMA lane) summed over the pool's threads.
double fmaPeakGflops(fm::rt::ThreadPool &pool);

} // namespace fm::bench
