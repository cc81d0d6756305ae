// GemmWeights (GemmWeights.h): the Panel16 repack of a weight, split by
// panels over the session's thread pool.
#include "hal/cpu/GemmWeights.h"

#include "base/ThreadPool.h"
#include "kernels/qgemm.h"

#include <chrono>

namespace fm::hal {

std::shared_ptr<const rt::HostBlock>
GemmWeights::panel16(const uint8_t *packed, kernels::QuantFormat f, int64_t N,
                     int64_t K, rt::ThreadPool *pool) {
  using kernels::GemmLayout;
  const Key key{packed, f.bits, f.group, static_cast<int>(f.grid), N, K};
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = copies_.find(key);
  if (it != copies_.end())
    return it->second;
  std::shared_ptr<const rt::HostBlock> copy;
  if (kernels::gemmLayoutProblem(GemmLayout::Panel16, f, N, K).empty()) {
    auto block = std::make_shared<rt::HostBlock>();
    if (block->allocate(kernels::gemmPackedBytes(GemmLayout::Panel16, f, N, K))) {
      const auto t0 = std::chrono::steady_clock::now();
      // Panels are independent: one contiguous range per thread.
      const int64_t panels = kernels::panelGeometry(f, N, K).panels;
      auto part = [&](int64_t begin, int64_t end) {
        kernels::repackForGemmPanels(GemmLayout::Panel16, f, N, K, packed,
                                     block->data(), begin, end);
      };
      if (pool)
        pool->parallelFor(panels, part);
      else
        part(0, panels);
      repackSeconds_ += std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - t0)
                            .count();
      bytes_ += block->size();
      copy = std::move(block);
    }
  }
  copies_.emplace(key, copy);
  return copy;
}

uint64_t GemmWeights::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

double GemmWeights::repackSeconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return repackSeconds_;
}

} // namespace fm::hal
