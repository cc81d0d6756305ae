// Attention entry point: checks the arguments and splits (row, head) pairs
// across the thread pool.
#include "kernels/attention.h"

#include "kernels/attention_impl.h"
#include "src/ThreadPool.h"

#include <cassert>

namespace fm::kernels {
namespace {

struct GenericTag {};
using Kernel = detail::AttentionKernel<GenericTag>;

// Below this many multiply-adds a call runs on the calling thread.
constexpr int64_t kMinParallelWork = 1 << 16;

} // namespace

void attention(const AttentionArgs &a, fm::rt::ThreadPool *pool) {
  assert(a.q && a.k && a.v && a.out && "attention: null buffer");
  assert(a.S >= 0 && a.pos0 >= 0 && a.D > 0 && a.window >= 0);
  assert(a.KVH > 0 && a.H % a.KVH == 0 && "attention: H % KVH != 0");
  assert(a.pos0 + a.S <= a.capacity && "attention: past the cache capacity");
  if (a.S <= 0 || a.H <= 0)
    return;
  const int64_t items = a.S * a.H;
  int64_t keysPerRow = a.pos0 + a.S;
  if (a.window > 0 && a.window < keysPerRow)
    keysPerRow = a.window;
  const int64_t work = items * keysPerRow * a.D;
  auto body = [&a](int64_t begin, int64_t end) { Kernel::range(a, begin, end); };
  if (pool && pool->numThreads() > 1 && work >= kMinParallelWork)
    pool->parallelFor(items, body);
  else
    body(0, items);
}

} // namespace fm::kernels
