// Tracks on MPI ranks on the CUDA device, one GPU per rank: `mpirun -np N
// fm_cuda_test --gtest_filter=GpuNccl.*` (ctest runtime.cuda.nccl-emulated)
// runs a model partitioned over the N ranks (two track blocks: a q4 matmul
// per rank, then a MoE per rank, each block's partial sums joined by an
// AllReduce) on cuda and on the CPU device; every rank's logits, prefill
// and decode, match, with the sums going through NCCL: GPU to GPU on the
// stream, inside the decode step's CUDA graph, no host staging. With rank
// 0 on cuda and the others on the CPU device, all agree on the host. On the
// block emulator (FM_CUDA_EMULATE) NCCL is the emulator's (CudaEmu.h
// installNccl: the MPI world's allReduceSum on the emulated device's
// memory) and the host-staged path runs beside it; on GPUs it is the
// machine's NCCL.
#include "ArtifactBuilder.h"
#include "CudaEmu.h"
#include "DeviceSides.h"

#include "fm/communicator.h"
#include "fm/runtime.h"
#include "hal/cuda/CudaDevice.h"
#include "hal/cuda/Nccl.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <memory>
#include <string>
#include <vector>

namespace fm::hal::cuda {
namespace {

using gputest::expectClose;
using gputest::randomFloats;
namespace fa = fm::artifact;
using kernels::QuantFormat;
using kernels::QuantGrid;

/// The partitioned model: x = embed[t]; block 0: rank r adds W_r · x
/// (q4 g32) into its partial, AllReduce × 1/N → x1; block 1: rank r adds
/// its MoE (4 experts, top 2, q4) of x1, AllReduce → x2; logits = L · x2.
std::vector<uint8_t> partitionedModel(uint32_t ranks) {
  test::ArtifactBuilder b;
  const uint32_t V = 64, Hd = 128, E = 4, I = 64, rows = 8;
  b.vocab = V;
  b.hidden = Hd;
  b.layers = 2;
  b.ranks = ranks;
  b.numTracks = ranks;
  b.numTrackBlocks = 2;
  const QuantFormat q4{4, 32, QuantGrid::Balanced};
  const uint32_t emb = b.addWeight("model.embed_tokens.weight", {V, Hd},
                                   randomFloats(size_t(V * Hd), 61));
  const uint32_t lm = b.addQuantWeight("lm_head.weight", V, Hd,
                                       randomFloats(size_t(V * Hd), 62, 0.1f), q4);
  struct RankWeights {
    uint32_t w, router;
    std::vector<uint32_t> gate, up, down;
  };
  std::vector<RankWeights> rw(ranks);
  for (uint32_t r = 0; r < ranks; ++r) {
    const std::string p = "model.blocks.";
    const std::string t = ".tracks." + std::to_string(r) + ".";
    rw[r].w = b.addQuantWeight(p + "0" + t + "proj.weight", Hd, Hd,
                               randomFloats(size_t(Hd * Hd), 70 + r, 0.1f), q4);
    rw[r].router = b.addWeight(p + "1" + t + "mlp.router.weight", {E, Hd},
                               randomFloats(size_t(E * Hd), 80 + r));
    for (uint32_t e = 0; e < E; ++e) {
      const std::string x = p + "1" + t + "mlp.experts." + std::to_string(e) + ".";
      const uint32_t seed = 100 + 10 * r + e;
      rw[r].gate.push_back(b.addQuantWeight(x + "gate.weight", I, Hd,
                                            randomFloats(size_t(I * Hd), seed, 0.1f), q4));
      rw[r].up.push_back(b.addQuantWeight(x + "up.weight", I, Hd,
                                          randomFloats(size_t(I * Hd), seed + 1000, 0.1f), q4));
      rw[r].down.push_back(b.addQuantWeight(x + "down.weight", Hd, I,
                                            randomFloats(size_t(Hd * I), seed + 2000, 0.1f), q4));
    }
  }
  // The arena: x, x1, x2, a partial per rank and block, the logits; `rows`
  // rows each.
  uint32_t next = 0;
  auto region = [&](uint32_t width) {
    const fa::BufferRef ref = test::buf(next, width, width);
    next += rows * width;
    return ref;
  };
  const fa::BufferRef x = region(Hd), x1 = region(Hd), x2 = region(Hd);
  std::vector<fa::BufferRef> p0, p1;
  std::vector<int32_t> owner;
  for (uint32_t r = 0; r < ranks; ++r) {
    p0.push_back(region(Hd));
    p1.push_back(region(Hd));
    owner.push_back(int32_t(r));
  }
  const fa::BufferRef logits = region(V);
  for (const char *phase : {"decode", "prefill"}) {
    std::vector<test::ArtifactBuilder::Cmd> cmds;
    b.placement = {};
    cmds.push_back(b.embed(emb, x));
    for (uint32_t r = 0; r < ranks; ++r) {
      b.placement = {0, int32_t(r), int32_t(r)};
      cmds.push_back(b.matmul(x, {rw[r].w}, p0[r], Hd, Hd));
    }
    b.placement = {};
    cmds.push_back(b.allReduceOf(p0, owner, x1, 1.0f / float(ranks)));
    for (uint32_t r = 0; r < ranks; ++r) {
      b.placement = {1, int32_t(r), int32_t(r)};
      cmds.push_back(b.moe(x1, p1[r], rw[r].router, rw[r].gate, rw[r].up, rw[r].down, 2, true));
    }
    b.placement = {};
    cmds.push_back(b.allReduceOf(p1, owner, x2, 1.0f));
    cmds.push_back(b.matmul(x2, {lm}, logits, Hd, V));
    b.addProgram(phase, std::string(phase) == "decode" ? 1 : rows, next, logits, false, cmds);
  }
  return b.finish();
}

/// The MPI world, initialized once; finalized when the process exits.
Communicator *world() {
  static std::unique_ptr<Communicator> w = [] {
    auto c = initMpi(nullptr, nullptr);
    if (!c) {
      std::fprintf(stderr, "%s\n", c.message().c_str());
      return std::unique_ptr<Communicator>();
    }
    return std::move(*c);
  }();
  return w.get();
}

/// A run's logits (the prompt's rows, then each decoded token's), its
/// stats, and what the emulated driver counted over the decode steps.
struct RankRun {
  std::vector<float> logits;
  SessionStats stats;
  int64_t decodeSteps = 0;
  fm_cuda_emu::Counts decode; // the decode steps' share (emulator only)
};

fm_cuda_emu::Counts minus(const fm_cuda_emu::Counts &a, const fm_cuda_emu::Counts &b) {
  fm_cuda_emu::Counts d;
  d.launches = a.launches - b.launches;
  d.graphLaunches = a.graphLaunches - b.graphLaunches;
  d.streamSyncs = a.streamSyncs - b.streamSyncs;
  d.ncclAllReduces = a.ncclAllReduces - b.ncclAllReduces;
  d.ncclFloats = a.ncclFloats - b.ncclFloats;
  d.dtoh = a.dtoh - b.dtoh;
  d.htod = a.htod - b.htod;
  return d;
}

RankRun runRank(const std::vector<uint8_t> &file, const std::string &device,
                Communicator &ranks) {
  RankRun r;
  LoadOptions o;
  o.device = device;
  auto m = Model::loadFromBuffer(file.data(), file.size(), "tracks.fmb", o);
  EXPECT_TRUE(m.isOk()) << device << ": " << m.message();
  if (!m)
    return r;
  SessionOptions so;
  so.activations = SessionOptions::Activations::F32;
  so.communicator = &ranks;
  so.threads = 1;
  Session s(*m, so);
  auto p = s.prefill({5, 9, 63, 2, 17, 40}, /*allLogits=*/true);
  EXPECT_TRUE(p.isOk()) << device << ": " << p.message();
  if (!p)
    return r;
  r.logits.assign(p->data, p->data + p->rows * p->vocab);
  const int64_t vocab = p->vocab;
  const fm_cuda_emu::Counts before = fm_cuda_emu::counts();
  for (int32_t t : {3, 11, 4, 4, 29}) {
    auto l = s.decode(t);
    EXPECT_TRUE(l.isOk()) << device << ": " << l.message();
    if (!l)
      return r;
    r.logits.insert(r.logits.end(), *l, *l + vocab);
    ++r.decodeSteps;
  }
  r.decode = minus(fm_cuda_emu::counts(), before);
  r.stats = s.stats();
  return r;
}

// The machine's NCCL, where one is installed (the CUDA 13 toolkit here
// ships libnccl.so.2): every entry point Nccl.h names binds, and its
// version reads as NCCL 2.
TEST(NcclLoader, BindsTheInstalledNccl) {
  void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    GTEST_SKIP() << "no libnccl.so.2 on this machine's loader path";
  dlclose(lib);
  if (const char *off = std::getenv("FM_NCCL"); off && std::string(off) == "0")
    GTEST_SKIP() << "FM_NCCL=0";
  setNcclForTests(nullptr);
  auto api = nccl();
  ASSERT_TRUE(api.isOk()) << api.message();
  int code = 0;
  ASSERT_EQ((*api)->ncclGetVersion(&code), ncclSuccess);
  EXPECT_GE(code, 20000) << "NCCL_VERSION_CODE of NCCL 2.9 and later";
  std::printf("libnccl.so.2: version code %d\n", code);
  EXPECT_STREQ((*api)->ncclGetErrorString(ncclSuccess), "no error");
}

// A one-rank NCCL communicator on one GPU (what a lent single-GPU machine
// can run: scripts/check-cuda.sh points FM_NCCL_LIBRARY at PyTorch's
// libnccl.so.2): made through the device, and its all-reduce (the identity
// for one rank) on the stream, directly, then captured into a CUDA graph,
// instantiated and updated, leaving the data as it was.
TEST(GpuNccl, OneRankAllReduceDirectAndInAGraph) {
  SingleProcess one;
  const bool emulated = fm_cuda_emu::installIfAsked();
  if (emulated)
    fm_cuda_emu::installNccl(&one);
  struct Restore {
    bool on;
    ~Restore() {
      if (on)
        fm_cuda_emu::installNccl(nullptr);
    }
  } restore{emulated};
  auto device = CudaDevice::open(0);
  if (!device)
    GTEST_SKIP() << "skipped: no CUDA device (" << device.message() << ")";
  if (auto api = nccl(); !api)
    GTEST_SKIP() << "skipped: " << api.message();
  std::unique_ptr<CudaDevice> dev = std::move(*device);
  auto q = dev->createQueue({});
  ASSERT_TRUE(q.isOk()) << q.message();
  std::unique_ptr<Queue> queue = std::move(*q);
  CudaQueue &cq = static_cast<CudaQueue &>(*queue);
  const std::vector<float> data = randomFloats(1000, 5);
  auto buffer = dev->allocate(data.size() * sizeof(float), MemorySpace::Device);
  ASSERT_TRUE(buffer.isOk()) << buffer.message();
  ASSERT_TRUE(dev->upload(**buffer, 0, data.data(), data.size() * sizeof(float)).isOk());
  // One rank agrees with itself (agreeCollectives does nothing for one).
  ASSERT_EQ(dev->collectiveCapabilities(), uint32_t(kNcclCollectives));
  const Status made = dev->useCollectives(one, kNcclCollectives);
  ASSERT_TRUE(made.isOk()) << made.message();
  std::string why;
  const NcclComm *comm = dev->ncclFor(one, &why);
  ASSERT_NE(comm, nullptr) << why;
  std::printf("%s: one rank on %s\n", comm->version().c_str(), dev->description().c_str());
  for (int step = 0; step < 3; ++step) {
    cq.allReduce(*comm, devicePtr(buffer->get(), 0), data.size());
    const Status s = cq.flush();
    ASSERT_TRUE(s.isOk()) << "step " << step << ": " << s.message();
  }
  std::vector<float> back(data.size());
  ASSERT_TRUE(dev->download(**buffer, 0, back.data(), back.size() * sizeof(float)).isOk());
  EXPECT_EQ(back, data);
  // Direct the first time, a graph launch (instantiated, then updated) after.
  EXPECT_EQ(queue->launchCounts().graph, 2);
  queue.reset();
  buffer->reset();
  dev.reset(); // the communicator with it, while the emulated NCCL is set
}

TEST(GpuNccl, TracksOnRanksMatchTheCpu) {
  if (mpiLaunchSize() < 2)
    GTEST_SKIP() << "not started by mpirun with 2 or more ranks";
  Communicator *ranks = world();
  ASSERT_NE(ranks, nullptr) << "MPI did not start";
  const bool emulated = fm_cuda_emu::installIfAsked();
  const std::string rank = "rank " + std::to_string(ranks->rank());
  const std::vector<uint8_t> file = partitionedModel(uint32_t(ranks->size()));

  const RankRun cpu = runRank(file, "cpu", *ranks);
  ASSERT_FALSE(cpu.logits.empty());
  EXPECT_EQ(cpu.stats.collectiveTransport, "host");

  RankRun host;
  if (emulated) {
    // No NCCL: the sums staged through the host, each a stream
    // synchronization and two copies per collective.
    setenv("FM_NCCL", "0", 1);
    fm_cuda_emu::installNccl(nullptr);
    host = runRank(file, "cuda", *ranks);
    ASSERT_FALSE(host.logits.empty());
    EXPECT_EQ(host.stats.collectiveTransport, "host");
    expectClose(host.logits, cpu.logits, 1e-4, rank + ": cuda (host staging) vs cpu logits");
    fm_cuda_emu::installNccl(ranks);
  }

  const RankRun nccl = runRank(file, "cuda", *ranks);
  ASSERT_FALSE(nccl.logits.empty());
  ASSERT_EQ(nccl.stats.collectiveTransport.rfind("NCCL ", 0), 0u)
      << rank << ": the sums did not go through NCCL (" << nccl.stats.collectiveTransport << ")";
  expectClose(nccl.logits, cpu.logits, 1e-4, rank + ": cuda (NCCL) vs cpu logits");
  const int64_t perStep = nccl.stats.decodeCollectives / nccl.decodeSteps;
  EXPECT_GT(perStep, 0) << "the artifact has no collective in a decode step";
  // From the second step on, a decode step is one graph launch, its
  // collectives inside it.
  EXPECT_GE(nccl.stats.graphLaunches, nccl.decodeSteps - 1) << rank;
  std::printf("%s: prompt and %lld decoded tokens match the cpu; %s; %lld collectives per "
              "decode step; %lld graph launches\n",
              rank.c_str(), (long long)nccl.decodeSteps, nccl.stats.collectiveTransport.c_str(),
              (long long)perStep, (long long)nccl.stats.graphLaunches);

  // Rank 0 on cuda, the others on the CPU device (a node without a GPU):
  // the ranks agree on the host, whose sums every device makes alike.
  const RankRun mixed = runRank(file, ranks->rank() == 0 ? "cuda" : "cpu", *ranks);
  ASSERT_FALSE(mixed.logits.empty());
  EXPECT_EQ(mixed.stats.collectiveTransport, "host") << rank;
  expectClose(mixed.logits, cpu.logits, 1e-4, rank + ": rank 0 on cuda, the rest on cpu");
  if (!emulated)
    return;
  // Every collective of the decode steps ran as an NCCL all-reduce, and
  // none was staged: one stream synchronization per step (the end of the
  // run), as against one more per collective through the host.
  EXPECT_EQ(nccl.decode.ncclAllReduces, nccl.stats.decodeCollectives) << rank;
  EXPECT_EQ(nccl.decode.streamSyncs, nccl.decodeSteps) << rank;
  EXPECT_EQ(nccl.decode.graphLaunches, nccl.decodeSteps - 1) << rank; // the first: direct
  EXPECT_EQ(host.decode.ncclAllReduces, 0) << rank;
  EXPECT_EQ(host.decode.streamSyncs, host.decodeSteps * (1 + perStep)) << rank;
  EXPECT_EQ(host.decode.dtoh - nccl.decode.dtoh, host.stats.decodeCollectives) << rank;
  std::printf("%s: decode step: %lld stream syncs, %lld dtoh with NCCL; %lld, %lld staged "
              "through the host\n",
              rank.c_str(), (long long)(nccl.decode.streamSyncs / nccl.decodeSteps),
              (long long)(nccl.decode.dtoh / nccl.decodeSteps),
              (long long)(host.decode.streamSyncs / host.decodeSteps),
              (long long)(host.decode.dtoh / host.decodeSteps));
}

} // namespace
} // namespace fm::hal::cuda
