// libFuzzer target: the .fmb loader must accept or reject any bytes without
// crashing, and a model it accepts must run without touching memory outside
// what it verified (ASan watches the executor's reads and writes).
//
// Built by test/fuzz/CMakeLists.txt against instrumented variants of the
// runtime's libraries (ninja fmb_loader_fuzz), run in ctest as fuzz.fmb:
//   build/bin/fmb_loader_fuzz -max_total_time=60 test/fuzz/corpus/fmb
// Seeds (the loader tests' artifacts, test/unit/runtime/MiniModels.h and
// beside it): build/bin/fm-test-artifacts fmb-corpus test/fuzz/corpus/fmb
#include "fm/runtime.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

// Rank `rank` of a group of `size` whose collectives do nothing: one
// process can then run each rank's share of a partitioned model in turn
// (the AllReduce only scales).
class LoneRank final : public fm::Communicator {
public:
  LoneRank(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  fm::Status allReduceSum(float *, int64_t) override { return fm::Status::ok(); }
  fm::Status broadcast(int32_t *, int64_t, int) override {
    return fm::Status::ok();
  }

private:
  int rank_, size_;
};

void exercise(const std::shared_ptr<fm::Model> &model, int threads,
              fm::Communicator *comm) {
  const fm::Model &m = *model;
  fm::Session session(model, fm::SessionOptions{threads, comm});
  if (!session.status())
    return;
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < 6; ++i)
    tokens.push_back(static_cast<int32_t>((i * 7 + 1) % std::max<int64_t>(m.vocabSize(), 1)));
  // Every program through the public paths; errors (no program, context
  // full, dispatch without code) are fine, crashes are not.
  (void)session.prefill(tokens, /*allLogits=*/true, 0);
  (void)session.prefill(tokens.data(), 3, /*allLogits=*/false, 2);
  (void)session.decode(tokens[0]);
  (void)session.decode(-1);
  (void)session.prefill(tokens, false, 1);
  (void)session.stats();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fm::LoadOptions options;
  options.verifyHash = size % 2 == 0; // both paths
  // Never dlopen fuzzed bytes: that runs them.
  options.loadExecutable = false;
  // Mutated bytes would all stop at the program digest: skip it to reach
  // the checks behind it (the digest itself is tested in the loader tests).
  options.skipProgramDigestForFuzzing = true;
  auto model = fm::Model::loadFromBuffer(data, size, "fuzz.fmb", options);
  if (!model)
    return 0;
  const fm::Model &m = **model;

  // Run what the loader accepted, when it is small enough to be quick.
  int64_t arena = 0;
  for (const fm::ProgramInfo &p : m.programs())
    arena = std::max(arena, p.arenaFloats);
  int64_t cacheFloats = 0;
  for (const fm::CacheInfo &c : m.caches())
    cacheFloats += 2 * c.slots * c.capacity * c.kvHeads * c.headDim;
  if (arena > (1 << 20) || cacheFloats > (1 << 22) || m.vocabSize() > (1 << 16))
    return 0;
  // One thread, then two (track sections run their tracks concurrently,
  // the Moe kernel splits its work); a partitioned model as each of its
  // ranks in turn.
  if (m.ranks() <= 1) {
    exercise(*model, 1, nullptr);
    exercise(*model, 2, nullptr);
  } else if (m.ranks() <= 4) {
    for (int rank = 0; rank < m.ranks(); ++rank) {
      LoneRank comm(rank, static_cast<int>(m.ranks()));
      exercise(*model, 2, &comm);
    }
  }
  return 0;
}
