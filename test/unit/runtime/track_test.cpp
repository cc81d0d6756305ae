// Track sections and collectives: the hand-built PT-MoE model against its
// reference at 1-3 threads (tracks concurrent), partitioned over two ranks
// (threads of this process, through an in-process communicator), the
// AllReduce scale and sum, rank/device mismatches, and the stats.
#include "ArtifactBuilder.h"
#include "ThreadGroup.h"
#include "TrackModel.h"
#include "fm/runtime.h"
#include "fm/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

namespace fm::test {
namespace {

const std::vector<uint8_t> &kernelsSo() {
  static const std::vector<uint8_t> image = readFile(FM_TEST_KERNELS_SO);
  return image;
}

std::shared_ptr<Model> load(const std::vector<uint8_t> &file,
                            const std::string &name = "tracks.fmb") {
  auto model = Model::loadFromBuffer(file.data(), file.size(), name);
  EXPECT_TRUE(model.isOk()) << model.message();
  return model ? *model : nullptr;
}

void expectNear(const float *got, const float *want, size_t n,
                const std::string &what, float tol = 2e-4f) {
  for (size_t i = 0; i < n; ++i)
    ASSERT_NEAR(got[i], want[i], tol + tol * std::fabs(want[i]))
        << what << " at " << i;
}

const std::vector<int32_t> kTokens = {3, 17, 0, 39, 5, 5, 22, 11, 8, 1, 30, 2, 14};

std::vector<float> copy(const Logits &l) {
  return std::vector<float>(l.data, l.data + l.rows * l.vocab);
}

TEST(Tracks, ConcurrentTracksMatchReference) {
  TrackModel tm;
  const std::vector<float> want = tm.reference(kTokens);
  for (bool interleave : {false, true}) {
    SCOPED_TRACE(interleave ? "interleaved" : "track by track");
    TrackModel::Options o;
    o.interleave = interleave;
    auto model = load(tm.build(o, kernelsSo()));
    ASSERT_TRUE(model);
    EXPECT_EQ(model->numTracks(), 4);
    EXPECT_EQ(model->numTrackBlocks(), 2);
    EXPECT_EQ(model->ranks(), 1);
    EXPECT_EQ(model->program("decode")->collectives, 2);
    std::vector<float> oneThread;
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      Session session(model, SessionOptions{threads});
      ASSERT_TRUE(session.status().isOk()) << session.status().message();
      auto logits = session.prefill(kTokens, /*allLogits=*/true);
      ASSERT_TRUE(logits.isOk()) << logits.message();
      expectNear(logits->data, want.data(), want.size(), "prefill");
      if (threads == 1)
        oneThread = copy(*logits);
      else
        expectNear(logits->data, oneThread.data(), oneThread.size(),
                   "against 1 thread", 1e-5f);
      // The decode program, token by token.
      ASSERT_TRUE(session.reset().isOk());
      auto decoded = session.prefill(kTokens, true, /*chunk=*/1);
      ASSERT_TRUE(decoded.isOk()) << decoded.message();
      expectNear(decoded->data, want.data(), want.size(), "decode path");
    }
  }
}

// Four tracks that record which thread ran them: on two threads the pool
// gives tracks 0-1 to the caller and 2-3 to its worker; on one thread all
// run on the caller.
TEST(Tracks, TracksRunOnThePoolThreads) {
  ArtifactBuilder b;
  b.vocab = 4;
  b.numTracks = 4;
  b.numTrackBlocks = 1;
  b.setExecutable("elf-so", "x86_64-unknown-linux-gnu",
                  {"fmt_write_kv", "fmt_thread_tag"}, kernelsSo());
  std::vector<ArtifactBuilder::Cmd> cmds;
  for (int32_t t = 0; t < 4; ++t) {
    b.placement = {0, t, -1};
    cmds.push_back(b.dispatch(1, {b.bufferArg(buf(4 + 4 * t, 4, 1))},
                              "model.blocks.0.tracks." + std::to_string(t)));
  }
  b.addProgram("decode", 1, 20, buf(0, 4, 4), false, cmds);
  auto model = load(b.finish());
  ASSERT_TRUE(model);
  for (int threads : {1, 2}) {
    Session session(model, SessionOptions{threads});
    auto logits = session.decode(0);
    ASSERT_TRUE(logits.isOk()) << logits.message();
    const float *arena = *logits; // the logits are at arena float 0
    float tag[4];
    for (int t = 0; t < 4; ++t)
      tag[t] = arena[4 + 4 * t];
    EXPECT_GT(tag[0], 0.0f);
    EXPECT_EQ(tag[0], tag[1]);
    EXPECT_EQ(tag[2], tag[3]);
    if (threads == 1)
      EXPECT_EQ(tag[0], tag[2]);
    else
      EXPECT_NE(tag[0], tag[2]);
  }
}

TEST(Tracks, StatsCountCollectives) {
  TrackModel tm;
  auto model = load(tm.build({}, kernelsSo()));
  ASSERT_TRUE(model);
  Session session(model, SessionOptions{2});
  ASSERT_TRUE(session.prefill(kTokens.data(), 5).isOk()); // one call: 2
  for (size_t t = 5; t < kTokens.size(); ++t)
    ASSERT_TRUE(session.decode(kTokens[t]).isOk()); // 8 calls: 16
  SessionStats st = session.stats();
  EXPECT_EQ(st.ranks, 1);
  EXPECT_EQ(st.rank, 0);
  EXPECT_EQ(st.collectives, 18);
  EXPECT_EQ(st.decodeTokens, 8);
  EXPECT_EQ(st.decodeCollectives, 16);
  EXPECT_GE(st.collectiveMs, 0.0);
}

// Two ranks, each a thread with its own session over one communicator:
// rank 0 runs tracks 0-1, rank 1 tracks 2-3; the AllReduce joins them.
TEST(Tracks, PartitionedOverTwoRanks) {
  TrackModel tm;
  const std::vector<float> want = tm.reference(kTokens);
  TrackModel::Options o;
  o.ranks = 2;
  auto model = load(tm.build(o, kernelsSo()));
  ASSERT_TRUE(model);
  EXPECT_EQ(model->ranks(), 2);
  ThreadGroup group(2);
  std::vector<float> got[2], decoded[2];
  std::vector<int32_t> generated[2];
  SessionStats stats[2];
  std::string errors[2];
  auto rank = [&](int r) {
    Session session(model, SessionOptions{r + 1, &group.rank(r)});
    if (!session.status()) {
      errors[r] = session.status().message();
      return;
    }
    auto logits = session.prefill(kTokens, true);
    if (!logits) {
      errors[r] = logits.message();
      return;
    }
    got[r] = copy(*logits);
    (void)session.reset();
    auto one = session.prefill(kTokens, true, 1);
    if (!one) {
      errors[r] = one.message();
      return;
    }
    decoded[r] = copy(*one);
    // Each rank's sampler has its own seed; rank 0's choices win.
    (void)session.reset();
    Sampler sampler(1.0f, 0, 1.0f, 1000 + r);
    auto gen = session.generate({1, 2, 3}, 6, sampler);
    if (!gen) {
      errors[r] = gen.message();
      return;
    }
    generated[r] = *gen;
    stats[r] = session.stats();
  };
  std::thread other(rank, 1);
  rank(0);
  other.join();
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_EQ(errors[r], "");
    ASSERT_EQ(got[r].size(), want.size());
    expectNear(got[r].data(), want.data(), want.size(), "prefill");
    expectNear(decoded[r].data(), want.data(), want.size(), "decode path");
    EXPECT_EQ(stats[r].ranks, 2);
    EXPECT_EQ(stats[r].rank, r);
    EXPECT_EQ(stats[r].decodeCollectives, 2 * stats[r].decodeTokens);
  }
  EXPECT_EQ(generated[0], generated[1]);
  EXPECT_EQ(generated[0].size(), 6u);
  EXPECT_EQ(stats[0].collectives, stats[1].collectives);
  // And the session's one agreement on how to sum (hal::agreeCollectives).
  EXPECT_EQ(group.allReduces(), stats[0].collectives + 1);
}

TEST(Tracks, PartitionedModelNeedsOneProcessPerRank) {
  TrackModel tm;
  TrackModel::Options o;
  o.ranks = 2;
  auto two = load(tm.build(o, kernelsSo()));
  ASSERT_TRUE(two);
  {
    Session session(two, SessionOptions{1});
    EXPECT_EQ(session.status().message(),
              "tracks.fmb is partitioned over 2 ranks: run it on as many "
              "(mpirun -np 2)");
    EXPECT_FALSE(session.prefill(kTokens).isOk());
  }
  {
    ThreadGroup group(4);
    Session session(two, SessionOptions{1, &group.rank(0)});
    EXPECT_EQ(session.status().message(),
              "tracks.fmb is partitioned over 2 ranks but mpirun started 4 "
              "processes");
  }
  {
    auto one = load(tm.build({}, kernelsSo()));
    ThreadGroup group(2);
    Session session(one, SessionOptions{1, &group.rank(1)});
    EXPECT_EQ(session.status().message(),
              "tracks.fmb is partitioned over 1 rank but mpirun started 2 "
              "processes");
  }
}

// vocab 4: h = E[token] (rows of `stride` floats), AllReduce(h, scale),
// logits = W · h with W the identity: logits = scale · (ranks · E[token]).
std::vector<uint8_t> reduceModel(uint32_t ranks, uint32_t stride, float scale) {
  ArtifactBuilder b;
  b.vocab = 4;
  b.hidden = 4;
  b.ranks = ranks;
  const uint32_t E = b.addWeight("embed", {4, 4},
                                 {1, 2, 3, 4, -1, 0.5f, 8, 0, 2, 2, 2, 2, 0, 0, 0, 1});
  const uint32_t W = b.addWeight("w", {4, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0,
                                               0, 0, 0, 1});
  const uint32_t R = 4;
  const uint64_t logits = uint64_t(stride) * R;
  b.addProgram("prefill", R, logits + 4 * R, buf(logits, 4, 4), false,
               {b.embed(E, buf(0, stride, 4)), b.allReduce(buf(0, stride, 4), scale),
                b.matmul(buf(0, stride, 4), {W}, buf(logits, 4, 4), 4, 4)});
  return b.finish();
}

TEST(AllReduce, OneProcessOnlyScales) {
  for (uint32_t stride : {4u, 8u}) {
    auto model = load(reduceModel(1, stride, 0.5f), "reduce.fmb");
    ASSERT_TRUE(model);
    EXPECT_EQ(model->program("prefill")->collectives, 1);
    Session session(model, SessionOptions{1});
    auto logits = session.prefill(std::vector<int32_t>{1, 0, 2}, true);
    ASSERT_TRUE(logits.isOk()) << logits.message();
    const float want[12] = {-0.5f, 0.25f, 4, 0, 0.5f, 1, 1.5f, 2, 1, 1, 1, 1};
    for (int i = 0; i < 12; ++i)
      EXPECT_EQ(logits->data[i], want[i]) << "stride " << stride << " at " << i;
    EXPECT_EQ(session.stats().collectives, 1);
  }
}

// Two ranks that both hold E[token]: the sum doubles it and scale 0.5
// halves it back, exactly; a strided buffer is packed for one collective.
TEST(AllReduce, SumsAcrossRanks) {
  for (uint32_t stride : {4u, 8u}) {
    auto model = load(reduceModel(2, stride, 0.5f), "reduce.fmb");
    ASSERT_TRUE(model);
    ThreadGroup group(2);
    std::vector<float> got[2];
    auto rank = [&](int r) {
      Session session(model, SessionOptions{1, &group.rank(r)});
      auto logits = session.prefill(std::vector<int32_t>{1, 0, 2}, true);
      if (logits)
        got[r] = copy(*logits);
    };
    std::thread other(rank, 1);
    rank(0);
    other.join();
    const float want[12] = {-1, 0.5f, 8, 0, 1, 2, 3, 4, 2, 2, 2, 2};
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(got[r].size(), 12u);
      for (int i = 0; i < 12; ++i)
        EXPECT_EQ(got[r][i], want[i]) << "rank " << r << " stride " << stride;
    }
    EXPECT_EQ(group.allReduces(), 2); // the AllReduce, and the sessions' agreement
  }
}

} // namespace
} // namespace fm::test
