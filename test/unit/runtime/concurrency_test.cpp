// Several sessions over one shared Model, on several threads at once (as a
// server runs them): each must give exactly, bit for bit, what one session
// alone gives for the same work. The models cover generated code (the KV
// write dispatch), concurrent track sections and packed weights with int8
// caches; the sessions themselves use 1 and 2 threads. Run under TSan by
// `make check-sanitize` (scripts/check-sanitize.sh).
#include "ArtifactBuilder.h"
#include "QuantModel.h"
#include "TinyModel.h"
#include "TrackModel.h"
#include "fm/runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fm::test {
namespace {

const std::vector<uint8_t> &kernelsSo() {
  static const std::vector<uint8_t> image = readFile(FM_TEST_KERNELS_SO);
  return image;
}

// What one session computes for a prompt: every prompt position's logits
// (prefill in chunks of 3), then 6 greedy decode steps' logits.
std::vector<float> work(const std::shared_ptr<Model> &model, int threads,
                        const std::vector<int32_t> &prompt, std::string *error) {
  Session session(model, SessionOptions{threads});
  if (!session.status()) {
    *error = session.status().message();
    return {};
  }
  std::vector<float> out;
  auto logits = session.prefill(prompt, /*allLogits=*/true, /*chunk=*/3);
  if (!logits) {
    *error = logits.message();
    return {};
  }
  out.assign(logits->data, logits->data + logits->rows * logits->vocab);
  const int64_t vocab = logits->vocab;
  const float *last = logits->last();
  for (int step = 0; step < 6; ++step) {
    int32_t next = 0;
    for (int64_t v = 1; v < vocab; ++v)
      if (last[v] > last[next])
        next = static_cast<int32_t>(v);
    auto decoded = session.decode(next);
    if (!decoded) {
      *error = decoded.message();
      return {};
    }
    last = *decoded;
    out.insert(out.end(), last, last + vocab);
  }
  return out;
}

// Runs `sessions` threads at once (released together), thread i on prompt
// i % prompts.size(), `rounds` times each, and compares every result with
// `expected[i % prompts.size()]` bit for bit.
void runConcurrently(const std::shared_ptr<Model> &model, int threads,
                     const std::vector<std::vector<int32_t>> &prompts,
                     const std::vector<std::vector<float>> &expected,
                     int sessions, int rounds) {
  std::mutex m;
  std::condition_variable cv;
  bool go = false;
  std::atomic<int> mismatches{0};
  std::vector<std::string> errors(sessions);
  std::vector<std::thread> pool;
  for (int i = 0; i < sessions; ++i)
    pool.emplace_back([&, i] {
      {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return go; });
      }
      const size_t p = static_cast<size_t>(i) % prompts.size();
      for (int r = 0; r < rounds; ++r) {
        std::vector<float> got = work(model, threads, prompts[p], &errors[i]);
        if (got.size() != expected[p].size() ||
            std::memcmp(got.data(), expected[p].data(),
                        got.size() * sizeof(float)) != 0)
          ++mismatches;
      }
    });
  {
    std::lock_guard<std::mutex> lock(m);
    go = true;
  }
  cv.notify_all();
  for (std::thread &t : pool)
    t.join();
  for (int i = 0; i < sessions; ++i)
    EXPECT_EQ(errors[i], "") << "session " << i;
  EXPECT_EQ(mismatches.load(), 0)
      << "a concurrent session's logits differ from one session's";
}

void checkModel(const std::vector<uint8_t> &file, const std::string &name,
                int32_t vocab) {
  auto loaded = Model::loadFromBuffer(file.data(), file.size(), name);
  ASSERT_TRUE(loaded.isOk()) << loaded.message();
  std::shared_ptr<Model> model = *loaded;
  const std::vector<std::vector<int32_t>> prompts = {
      {3, 17, 0, 5, 5, 22, 11},
      {1, 2, 3},
      {vocab - 1, 0, vocab / 2, 7, 9, 13, 2, 4, 6}};
  for (int threads : {1, 2}) {
    SCOPED_TRACE(name + ", " + std::to_string(threads) + " thread(s) per session");
    std::vector<std::vector<float>> expected;
    for (const auto &p : prompts) {
      std::string error;
      expected.push_back(work(model, threads, p, &error));
      ASSERT_EQ(error, "");
      ASSERT_FALSE(expected.back().empty());
    }
    // Different prompts give different logits: the comparison can fail.
    ASSERT_NE(std::memcmp(expected[0].data(), expected[1].data(),
                          std::min(expected[0].size(), expected[1].size()) *
                              sizeof(float)),
              0);
    runConcurrently(model, threads, prompts, expected, /*sessions=*/4,
                    /*rounds=*/2);
  }
}

TEST(Sessions, ConcurrentSessionsMatchOneSession) {
  TinyModel tiny;
  TinyModel::Options o;
  o.capacity = 32;
  checkModel(tiny.build(o, kernelsSo()), "tiny.fmb", TinyModel::kVocab);
}

TEST(Sessions, ConcurrentTrackSessionsMatchOneSession) {
  TrackModel tracks;
  checkModel(tracks.build({}, kernelsSo()), "tracks.fmb", TrackModel::kVocab);
}

TEST(Sessions, ConcurrentQuantSessionsMatchOneSession) {
  QuantModel quant;
  checkModel(quant.build({}, kernelsSo()), "quant.fmb", QuantModel::kVocab);
}

} // namespace
} // namespace fm::test
