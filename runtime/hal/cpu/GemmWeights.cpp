// GemmWeights (GemmWeights.h): the Panel16 repack of a weight, split by
// panels over the session's thread pool.
#include "hal/cpu/GemmWeights.h"

#include "base/ThreadPool.h"
#include "kernels/qgemm.h"

#include <chrono>

namespace fm::hal {

rt::WeightRef weightRef(const WeightDesc &w, kernels::QActivations act) {
  rt::WeightRef r;
  r.data = w.buffer->host() + w.offset;
  r.kind = w.kind == WeightKind::Quant ? rt::WeightRef::Kind::Quant
           : w.kind == WeightKind::F16 ? rt::WeightRef::Kind::F16
                                       : rt::WeightRef::Kind::F32;
  r.format = w.format;
  r.activations = act;
  return r;
}

std::vector<MatmulGroup> matmulGroups(const std::vector<WeightDesc> &weights,
                                      kernels::QActivations act,
                                      std::string &problem) {
  std::vector<MatmulGroup> groups;
  int64_t col = 0;
  const WeightDesc *prev = nullptr;
  const uint8_t *prevCopy = nullptr;
  for (const WeightDesc &w : weights) {
    const rt::WeightRef ref = weightRef(w, act);
    const uint8_t *copy = besidePanel16(w, problem);
    const int64_t rows = w.shape[0];
    const bool copiesContinue =
        copy ? prevCopy && prev->shape[0] % kernels::kPanelRows == 0 &&
                   prevCopy + prev->beside.bytes == copy
             : !prevCopy;
    if (prev && prev->buffer == w.buffer &&
        prev->offset + prev->bytes == w.offset && copiesContinue &&
        groups.back().w.sameLayout(ref))
      groups.back().rows += rows;
    else
      groups.push_back({ref, rows, col, copy});
    col += rows;
    prev = &w;
    prevCopy = copy;
  }
  return groups;
}

const uint8_t *besidePanel16(const WeightDesc &w, std::string &problem) {
  using kernels::GemmLayout;
  if (!w.beside.bytes || w.beside.layout != kernels::kPanel16LayoutName)
    return nullptr;
  const auto fail = [&](const std::string &why) -> const uint8_t * {
    problem = "weight '" + w.name + "': its " + kernels::kPanel16LayoutName +
              " copy " + why;
    return nullptr;
  };
  if (w.kind != WeightKind::Quant || w.shape.size() != 2)
    return fail("belongs to a packed 2-D weight");
  const int64_t N = w.shape[0], K = w.shape[1];
  const std::string why = kernels::gemmLayoutProblem(GemmLayout::Panel16,
                                                     w.format, N, K);
  if (!why.empty())
    return fail("cannot exist: " + why);
  const uint64_t want = kernels::gemmPackedBytes(GemmLayout::Panel16, w.format,
                                                 N, K);
  if (w.beside.bytes != want)
    return fail("is " + std::to_string(w.beside.bytes) + " bytes, not the " +
                std::to_string(want) + " of " + std::to_string(N) + " x " +
                std::to_string(K) + " weights at " +
                std::to_string(w.format.bits) + " bits");
  if (w.beside.offset % 64 != 0)
    return fail("is not 64-byte aligned (offset " +
                std::to_string(w.beside.offset) + ")");
  return w.buffer->host() + w.beside.offset;
}

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
