// GemmWeights (GemmWeights.h): the Panel16 repack of a weight, split by
// panels over the machine's cores.
#include "hal/cpu/GemmWeights.h"

#include "kernels/qgemm.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace fm::hal {

std::shared_ptr<const rt::HostBlock>
GemmWeights::panel16(const uint8_t *packed, kernels::QuantFormat f, int64_t N,
                     int64_t K) {
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
      // Panels are independent: one contiguous range per core.
      const int64_t panels = kernels::panelGeometry(f, N, K).panels;
      const int64_t threads = std::clamp<int64_t>(
          std::thread::hardware_concurrency(), 1, std::max<int64_t>(1, panels));
      auto part = [&](int64_t t) {
        kernels::repackForGemmPanels(GemmLayout::Panel16, f, N, K, packed,
                                     block->data(), panels * t / threads,
                                     panels * (t + 1) / threads);
      };
      std::vector<std::thread> workers;
      for (int64_t t = 1; t < threads; ++t)
        workers.emplace_back(part, t);
      part(0);
      for (std::thread &w : workers)
        w.join();
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

} // namespace fm::hal
