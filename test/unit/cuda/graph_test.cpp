// CUDA graph replay (CudaGraph.h) on the host, against a fake driver table
// that logs what it is asked (no GPU): the shape key, the decision per
// segment (direct the first time, instantiated the second, updated after),
// that every recorded operation runs once, in order, with its argument
// values, and the fallback to direct launches where capture fails. Then the
// device itself (CudaDevice::openOn the fake table, its memory host memory):
// its kernels' runs recorded and replayed as one graph per identical step,
// and every host-involved operation (the token upload, the MoE routing, the
// all-reduce staging, upload and download) after the pending segment.
#include "hal/cuda/CudaGraph.h"

#include "fm/communicator.h"
#include "fm/fmb_generated.h"
#include "hal/cuda/CudaDevice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace fm::hal::cuda {
namespace {

// What the fake driver saw, in order: "launch F a" (F a kernel's number, or
// its name for the kernels the fake modules handed out; a the argument
// gArg), "copy N", "begin", "end", "instantiate", "update", "graph-launch",
// "destroy", "exec-destroy"; the device's "htod-async N", "htod N", "dtoh N",
// "sync" (N bytes). What a capture records is prefixed "capture ".
std::vector<std::string> gLog;
bool gCaptureFails = false;
bool gUpdateFails = false;
bool gInstantiateFails = false;
bool gCapturing = false;
int gArg = 0;           // the argument a launch's line shows
bool gNamedArg = false; // named kernels show it too (their first is a pointer)
std::map<CUfunction, std::string> gNames; // cuModuleGetFunction's handles

std::string captured(const std::string &what) {
  return (gCapturing ? "capture " : "") + what;
}

CUresult fakeLaunch(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                    unsigned, CUstream, void **params, void **) {
  auto named = gNames.find(f);
  std::string line = "launch " + (named != gNames.end()
                                      ? named->second
                                      : std::to_string(reinterpret_cast<uintptr_t>(f)));
  if (named == gNames.end() || gNamedArg) {
    uint64_t a = 0;
    std::memcpy(&a, params[gArg], sizeof a);
    line += " " + std::to_string(a);
  }
  gLog.push_back(captured(line));
  return CUDA_SUCCESS;
}
CUresult fakeCopy(CUdeviceptr, CUdeviceptr, size_t bytes, CUstream) {
  gLog.push_back(std::string(gCapturing ? "capture " : "") + "copy " + std::to_string(bytes));
  return CUDA_SUCCESS;
}
CUresult fakeBegin(CUstream, int mode) {
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  gCapturing = true;
  gLog.push_back("begin");
  return CUDA_SUCCESS;
}
CUresult fakeEnd(CUstream, CUgraph *g) {
  gCapturing = false;
  gLog.push_back("end");
  *g = reinterpret_cast<CUgraph>(uintptr_t(0x100));
  return gCaptureFails ? 901 /* CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */ : CUDA_SUCCESS;
}
CUresult fakeInstantiate(CUgraphExec *e, CUgraph, unsigned long long) {
  gLog.push_back("instantiate");
  if (gInstantiateFails)
    return 2; // CUDA_ERROR_OUT_OF_MEMORY
  *e = reinterpret_cast<CUgraphExec>(uintptr_t(0x200));
  return CUDA_SUCCESS;
}
CUresult fakeUpdate(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *) {
  gLog.push_back("update");
  return gUpdateFails ? 910 /* CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE */ : CUDA_SUCCESS;
}
CUresult fakeGraphLaunch(CUgraphExec, CUstream) {
  gLog.push_back("graph-launch");
  return CUDA_SUCCESS;
}
CUresult fakeDestroy(CUgraph) {
  gLog.push_back("destroy");
  return CUDA_SUCCESS;
}
CUresult fakeExecDestroy(CUgraphExec) {
  gLog.push_back("exec-destroy");
  return CUDA_SUCCESS;
}

DriverApi fakeApi(bool graphs = true) {
  DriverApi a{};
  a.cuLaunchKernel = fakeLaunch;
  a.cuMemcpyDtoDAsync = fakeCopy;
  if (graphs) {
    a.cuStreamBeginCapture = fakeBegin;
    a.cuStreamEndCapture = fakeEnd;
    a.cuGraphInstantiate = fakeInstantiate;
    a.cuGraphExecUpdate = fakeUpdate;
    a.cuGraphLaunch = fakeGraphLaunch;
    a.cuGraphDestroy = fakeDestroy;
    a.cuGraphExecDestroy = fakeExecDestroy;
  }
  return a;
}

// The device's side of the fake: one sm_80 GPU whose memory is host
// memory (the copies copy; the kernels do nothing).
CUresult fakeDeviceCount(int *n) {
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult fakeDeviceGet(CUdevice *d, int ordinal) {
  *d = ordinal;
  return CUDA_SUCCESS;
}
CUresult fakeDeviceName(char *name, int size, CUdevice) {
  std::snprintf(name, size_t(size), "fake GPU");
  return CUDA_SUCCESS;
}
CUresult fakeAttribute(int *v, int attr, CUdevice) {
  *v = attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 8
       : attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? 0
                                                              : 1;
  return CUDA_SUCCESS;
}
CUresult fakeTotalMem(size_t *bytes, CUdevice) {
  *bytes = size_t(1) << 30;
  return CUDA_SUCCESS;
}
CUresult fakeRetain(CUcontext *c, CUdevice) {
  *c = reinterpret_cast<CUcontext>(uintptr_t(0x400));
  return CUDA_SUCCESS;
}
CUresult fakeRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult fakeSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult fakeAlloc(CUdeviceptr *p, size_t bytes) {
  *p = reinterpret_cast<CUdeviceptr>(std::calloc(1, bytes));
  return CUDA_SUCCESS;
}
CUresult fakeFree(CUdeviceptr p) {
  std::free(reinterpret_cast<void *>(p));
  return CUDA_SUCCESS;
}
CUresult fakeMemset(CUdeviceptr p, unsigned char v, size_t bytes) {
  std::memset(reinterpret_cast<void *>(p), v, bytes);
  return CUDA_SUCCESS;
}
CUresult fakeHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  gLog.push_back(captured("htod " + std::to_string(bytes)));
  return CUDA_SUCCESS;
}
CUresult fakeDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
  gLog.push_back(captured("dtoh " + std::to_string(bytes)));
  return CUDA_SUCCESS;
}
CUresult fakeHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, CUstream) {
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  gLog.push_back(captured("htod-async " + std::to_string(bytes)));
  return CUDA_SUCCESS;
}
CUresult fakeModuleLoad(CUmodule *m, const void *, unsigned, int *, void **) {
  *m = reinterpret_cast<CUmodule>(uintptr_t(0x500));
  return CUDA_SUCCESS;
}
CUresult fakeModuleUnload(CUmodule) { return CUDA_SUCCESS; }
// Every name is found: a handle per name, remembered for the log.
CUresult fakeGetFunction(CUfunction *f, CUmodule, const char *name) {
  for (const auto &[handle, known] : gNames)
    if (known == name) {
      *f = handle;
      return CUDA_SUCCESS;
    }
  *f = reinterpret_cast<CUfunction>(uintptr_t(0x10000 + gNames.size()));
  gNames[*f] = name;
  return CUDA_SUCCESS;
}
CUresult fakeStreamCreate(CUstream *s, unsigned) {
  *s = reinterpret_cast<CUstream>(uintptr_t(0x300));
  return CUDA_SUCCESS;
}
CUresult fakeStreamDestroy(CUstream) { return CUDA_SUCCESS; }
CUresult fakeStreamSync(CUstream) {
  gLog.push_back("sync");
  return CUDA_SUCCESS;
}

DriverApi fakeDeviceApi(bool graphs = true) {
  DriverApi a = fakeApi(graphs);
  a.cuDeviceGetCount = fakeDeviceCount;
  a.cuDeviceGet = fakeDeviceGet;
  a.cuDeviceGetName = fakeDeviceName;
  a.cuDeviceGetAttribute = fakeAttribute;
  a.cuDeviceTotalMem = fakeTotalMem;
  a.cuDevicePrimaryCtxRetain = fakeRetain;
  a.cuDevicePrimaryCtxRelease = fakeRelease;
  a.cuCtxSetCurrent = fakeSetCurrent;
  a.cuMemAlloc = fakeAlloc;
  a.cuMemFree = fakeFree;
  a.cuMemsetD8 = fakeMemset;
  a.cuMemcpyHtoD = fakeHtoD;
  a.cuMemcpyDtoH = fakeDtoH;
  a.cuMemcpyHtoDAsync = fakeHtoDAsync;
  a.cuModuleLoadDataEx = fakeModuleLoad;
  a.cuModuleUnload = fakeModuleUnload;
  a.cuModuleGetFunction = fakeGetFunction;
  a.cuStreamCreate = fakeStreamCreate;
  a.cuStreamDestroy = fakeStreamDestroy;
  a.cuStreamSynchronize = fakeStreamSync;
  return a;
}

CUfunction fn(uintptr_t id) { return reinterpret_cast<CUfunction>(id); }

// A decode step's shape: two kernels and a copy; `position` is the value
// that changes per token.
void recordStep(GraphRecorder &r, uint64_t position, unsigned rows = 4) {
  const unsigned grid[3] = {rows, 1, 1}, block[3] = {256, 1, 1};
  const uint64_t a[2] = {position, 7};
  r.recordLaunch(fn(1), grid, block, a, 2);
  r.recordCopy(0x1000, 0x2000, 64);
  const uint64_t b[1] = {position + 1};
  r.recordLaunch(fn(2), grid, block, b, 1);
}

using Log = std::vector<std::string>;

class CudaGraph : public ::testing::Test {
protected:
  void SetUp() override {
    gLog.clear();
    gCaptureFails = gUpdateFails = gInstantiateFails = gCapturing = false;
    gArg = 0;
    gNamedArg = false;
  }
};

TEST_F(CudaGraph, DecisionIsDirectThenInstantiateThenUpdate) {
  EXPECT_EQ(graphStep(true, 1, false), GraphStep::Direct);
  EXPECT_EQ(graphStep(true, 2, false), GraphStep::Instantiate);
  EXPECT_EQ(graphStep(true, 2, true), GraphStep::Update);
  EXPECT_EQ(graphStep(false, 2, true), GraphStep::Direct);
}

TEST_F(CudaGraph, ShapeIgnoresWhereArgumentValuesLieButNotGeometryOrKernels) {
  auto ops = [](uint32_t firstArg, unsigned rows, uintptr_t second, uint64_t bytes,
                int numArgs = 1) {
    std::vector<GraphOp> v(2);
    v[0].fn = fn(1);
    v[0].grid[0] = rows;
    v[0].firstArg = firstArg;
    v[0].numArgs = numArgs;
    v[1].fn = second ? fn(second) : nullptr;
    v[1].kind = second ? GraphOp::Launch : GraphOp::Copy;
    v[1].bytes = bytes;
    return v;
  };
  const uint64_t base = graphShape(ops(0, 4, 0, 64));
  EXPECT_EQ(graphShape(ops(9, 4, 0, 64)), base);
  EXPECT_NE(graphShape(ops(0, 8, 0, 64)), base);
  EXPECT_NE(graphShape(ops(0, 4, 3, 64)), base);
  EXPECT_NE(graphShape(ops(0, 4, 0, 128)), base);
  EXPECT_NE(graphShape(ops(0, 4, 0, 64, 2)), base);
  EXPECT_NE(graphShape({}), base);
  // An all-reduce of as many bytes is not the copy.
  std::vector<GraphOp> reduce = ops(0, 4, 0, 64);
  reduce[1].kind = GraphOp::AllReduce;
  EXPECT_NE(graphShape(reduce), base);
}

TEST_F(CudaGraph, FirstSegmentDirectSecondInstantiatedThenUpdatedPerToken) {
  const DriverApi api = fakeApi();
  GraphRecorder r(api, true);
  CUstream s = nullptr;
  recordStep(r, 10);
  ASSERT_TRUE(r.submit(s).isOk());
  EXPECT_EQ(gLog, (std::vector<std::string>{"launch 1 10", "copy 64", "launch 2 11"}));
  EXPECT_TRUE(r.empty());
  gLog.clear();
  recordStep(r, 11);
  ASSERT_TRUE(r.submit(s).isOk());
  EXPECT_EQ(gLog, (std::vector<std::string>{"begin", "capture launch 1 11", "capture copy 64",
                                            "capture launch 2 12", "end", "instantiate",
                                            "destroy", "graph-launch"}));
  gLog.clear();
  recordStep(r, 12);
  ASSERT_TRUE(r.submit(s).isOk());
  EXPECT_EQ(gLog, (std::vector<std::string>{"begin", "capture launch 1 12", "capture copy 64",
                                            "capture launch 2 13", "end", "update", "destroy",
                                            "graph-launch"}));
  EXPECT_EQ(r.graphLaunches(), 2);
}

TEST_F(CudaGraph, NewShapeRunsDirectOnceAndAFailedUpdateReinstantiates) {
  const DriverApi api = fakeApi();
  GraphRecorder r(api, true);
  for (uint64_t p = 0; p < 3; ++p) {
    recordStep(r, p);
    ASSERT_TRUE(r.submit(nullptr).isOk());
  }
  gLog.clear();
  recordStep(r, 3, /*rows=*/9); // a new shape: seen once, direct
  ASSERT_TRUE(r.submit(nullptr).isOk());
  EXPECT_EQ(gLog.front(), "launch 1 3");
  EXPECT_EQ(gLog.size(), 3u);
  gLog.clear();
  gUpdateFails = true;
  recordStep(r, 4);
  ASSERT_TRUE(r.submit(nullptr).isOk());
  EXPECT_EQ(gLog, (std::vector<std::string>{"begin", "capture launch 1 4", "capture copy 64",
                                            "capture launch 2 5", "end", "update",
                                            "exec-destroy", "instantiate", "destroy",
                                            "graph-launch"}));
  EXPECT_TRUE(r.enabled());
}

TEST_F(CudaGraph, FailedCaptureLaunchesDirectlyWithOneNoticeAndStaysOff) {
  const DriverApi api = fakeApi();
  GraphRecorder r(api, true);
  recordStep(r, 1);
  ASSERT_TRUE(r.submit(nullptr).isOk());
  gLog.clear();
  gCaptureFails = true;
  recordStep(r, 2);
  testing::internal::CaptureStderr();
  ASSERT_TRUE(r.submit(nullptr).isOk());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cuStreamEndCapture"), std::string::npos) << err;
  EXPECT_NE(err.find("CUDA graphs off, launching directly"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  // The captured launches never ran: all three run directly after.
  EXPECT_EQ(gLog, (std::vector<std::string>{"begin", "capture launch 1 2", "capture copy 64",
                                            "capture launch 2 3", "end", "destroy",
                                            "launch 1 2", "copy 64", "launch 2 3"}));
  EXPECT_FALSE(r.enabled());
  gLog.clear();
  recordStep(r, 3);
  ASSERT_TRUE(r.submit(nullptr).isOk());
  EXPECT_EQ(gLog, (std::vector<std::string>{"launch 1 3", "copy 64", "launch 2 4"}));
}

TEST_F(CudaGraph, DisabledOrWithoutGraphEntryPointsAlwaysDirect) {
  for (bool graphsInDriver : {false, true}) {
    const DriverApi api = fakeApi(graphsInDriver);
    GraphRecorder r(api, /*enabled=*/graphsInDriver ? false : true);
    for (uint64_t p = 0; p < 3; ++p) {
      gLog.clear();
      recordStep(r, p);
      ASSERT_TRUE(r.submit(nullptr).isOk());
      EXPECT_EQ(gLog.size(), 3u);
      EXPECT_EQ(gLog.front(), "launch 1 " + std::to_string(p));
    }
    EXPECT_EQ(r.graphLaunches(), 0);
  }
}

TEST_F(CudaGraph, DirectLaunchesCountKernelsNotCopies) {
  const DriverApi api = fakeApi();
  GraphRecorder r(api, true);
  recordStep(r, 1); // seen once: direct
  ASSERT_TRUE(r.submit(nullptr).isOk());
  recordStep(r, 2); // a graph
  ASSERT_TRUE(r.submit(nullptr).isOk());
  EXPECT_EQ(r.directLaunches(), 2);
  EXPECT_EQ(r.graphLaunches(), 1);
}

// A generated kernel takes five words per buffer: every one is replayed,
// directly and in a capture.
TEST_F(CudaGraph, LaunchWithManyArgumentsIsReplayedWhole) {
  const DriverApi api = fakeApi(true);
  GraphRecorder r(api, true);
  const unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
  std::vector<uint64_t> args(40);
  for (size_t i = 0; i < args.size(); ++i)
    args[i] = 100 + i;
  gArg = 39;
  for (int step = 0; step < 2; ++step) {
    r.recordLaunch(fn(1), grid, block, args.data(), int(args.size()));
    args[39] = 0; // recorded values are copies
    ASSERT_TRUE(r.submit(nullptr).isOk());
    args[39] = 139;
  }
  EXPECT_EQ(gLog, (Log{"launch 1 139", "begin", "capture launch 1 139", "end", "instantiate",
                       "destroy", "graph-launch"}));
}

// ---------------------------------------------------------------------------
// The device on the fake driver
// ---------------------------------------------------------------------------

/// A second rank whose all-reduce only logs.
class TwoRanks final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  Status allReduceSum(float *, int64_t count) override {
    gLog.push_back("all-reduce " + std::to_string(count));
    return Status::ok();
  }
  Status broadcast(int32_t *, int64_t, int) override { return Status::ok(); }
};

/// A device on the fake driver, and a tiny decode step's kernels on it: an
/// f32 embedding (4 tokens of 8), an 8 x 8 f32 matmul and a row copy.
class CudaGraphDevice : public CudaGraph {
protected:
  static constexpr int64_t kWidth = 8;

  void open(bool graphs) {
    api_ = fakeDeviceApi();
    CudaOptions options;
    options.graphs = graphs;
    auto d = CudaDevice::openOn(api_, 0, options);
    ASSERT_TRUE(d.isOk()) << d.message();
    device_ = std::move(*d);
    auto q = device_->createQueue({});
    ASSERT_TRUE(q.isOk()) << q.message();
    queue_.reset(static_cast<CudaQueue *>(q->release()));
    auto w = device_->allocate(4096, MemorySpace::Device);
    auto a = device_->allocate(1024, MemorySpace::Device);
    ASSERT_TRUE(w.isOk() && a.isOk());
    weights_ = std::move(*w);
    arena_ = std::move(*a);

    EmbedDesc e;
    e.table = weight(0, {4, kWidth});
    e.out = rows(0);
    MatmulDesc m;
    m.x = rows(0);
    m.y = rows(1);
    m.k = m.n = kWidth;
    m.weights = {weight(128, {kWidth, kWidth})};
    CopyRowDesc c;
    c.src = rows(1);
    c.dst = rows(2);
    embed_ = prepared(device_->prepareEmbed(e));
    matmul_ = prepared(device_->prepareMatmul(m));
    copyRow_ = prepared(device_->prepareCopyRow(c));
    gLog.clear();
  }

  WeightDesc weight(uint64_t offset, std::vector<int64_t> shape) {
    WeightDesc w;
    w.buffer = weights_.get();
    w.offset = offset;
    w.bytes = uint64_t(shape[0] * shape[1]) * 4;
    w.shape = std::move(shape);
    return w;
  }
  /// Row block `i` of the arena: one row of kWidth floats.
  Rows rows(int i) { return {arena_.get(), uint64_t(i) * 64, kWidth, kWidth}; }
  std::unique_ptr<Kernel> prepared(Expected<std::unique_ptr<Kernel>> k) {
    EXPECT_TRUE(k.isOk()) << k.message();
    return k ? std::move(*k) : nullptr;
  }
  void run(const std::unique_ptr<Kernel> &k, int64_t pos = 0) {
    const int32_t token = int32_t(pos % 4);
    const Status s = k->run(*queue_, Launch{1, pos, &token});
    ASSERT_TRUE(s.isOk()) << s.message();
  }
  /// One decode step, then the end of the run (the executor's flush).
  void step(int64_t pos) {
    run(embed_, pos);
    run(matmul_, pos);
    run(copyRow_, pos);
    const Status s = queue_->flush();
    ASSERT_TRUE(s.isOk()) << s.message();
  }
  /// The kernels of step(), launched one by one.
  static Log directStep() {
    return {"launch fm_embed", "launch fm_matvec_f32", "copy 32"};
  }
  /// step()'s recorded segment, captured into a graph.
  static Log capturedStep() {
    return {"begin", "capture launch fm_embed", "capture launch fm_matvec_f32",
            "capture copy 32", "end"};
  }
  static Log concat(std::initializer_list<Log> parts) {
    Log all;
    for (const Log &p : parts)
      all.insert(all.end(), p.begin(), p.end());
    return all;
  }

  // Declared in the order they may be destroyed in reverse.
  DriverApi api_{};
  std::unique_ptr<CudaDevice> device_;
  std::unique_ptr<Buffer> weights_, arena_;
  std::unique_ptr<CudaQueue> queue_;
  std::unique_ptr<Kernel> embed_, matmul_, copyRow_;
};

TEST_F(CudaGraphDevice, IdenticalStepsReplayAsOneGraphFromTheSecond) {
  open(/*graphs=*/true);
  run(embed_, 0);
  run(matmul_, 0);
  run(copyRow_, 0);
  // Recorded, not launched: only the token upload reached the stream.
  EXPECT_EQ(gLog, (Log{"htod-async 4"}));
  ASSERT_TRUE(queue_->flush().isOk());
  EXPECT_EQ(gLog, concat({{"htod-async 4"}, directStep(), {"sync"}}));
  gLog.clear();
  step(1);
  EXPECT_EQ(gLog, concat({{"htod-async 4"}, capturedStep(),
                          {"instantiate", "destroy", "graph-launch", "sync"}}));
  gLog.clear();
  step(2);
  EXPECT_EQ(gLog, concat({{"htod-async 4"}, capturedStep(),
                          {"update", "destroy", "graph-launch", "sync"}}));
  const Queue::LaunchCounts counts = queue_->launchCounts();
  EXPECT_EQ(counts.graph, 2);
  EXPECT_EQ(counts.direct, 2);
}

TEST_F(CudaGraphDevice, ATokenUploadSubmitsThePendingSegmentFirst) {
  open(true);
  run(matmul_);
  run(embed_);
  // The matmul recorded before the embedding is on the stream before the
  // embedding's tokens; the embedding's launch waits for the flush.
  EXPECT_EQ(gLog, (Log{"launch fm_matvec_f32", "htod-async 4"}));
  ASSERT_TRUE(queue_->flush().isOk());
  EXPECT_EQ(gLog, (Log{"launch fm_matvec_f32", "htod-async 4", "launch fm_embed", "sync"}));
}

TEST_F(CudaGraphDevice, UploadAndDownloadSubmitThePendingSegmentFirst) {
  open(true);
  float row[kWidth] = {};
  run(matmul_);
  ASSERT_TRUE(device_->download(*arena_, 64, row, sizeof row).isOk());
  run(copyRow_); // another segment's shape (a repeated one would be a graph)
  ASSERT_TRUE(device_->upload(*arena_, 0, row, sizeof row).isOk());
  EXPECT_EQ(gLog, (Log{"launch fm_matvec_f32", "dtoh 32", "copy 32", "htod 32"}));
}

TEST_F(CudaGraphDevice, WithoutGraphsEveryStepLaunchesDirectly) {
  open(/*graphs=*/false);
  for (int64_t pos = 0; pos < 3; ++pos) {
    gLog.clear();
    step(pos);
    EXPECT_EQ(gLog, concat({{"htod-async 4"}, directStep(), {"sync"}})) << "step " << pos;
  }
  const Queue::LaunchCounts counts = queue_->launchCounts();
  EXPECT_EQ(counts.graph, 0);
  EXPECT_EQ(counts.direct, 6);
}

TEST_F(CudaGraphDevice, AFailedInstantiationLaunchesDirectlyWithOneNotice) {
  open(true);
  step(0);
  gLog.clear();
  gInstantiateFails = true;
  testing::internal::CaptureStderr();
  step(1);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "fm: cuda: cuGraphInstantiate: CUDA error 2: CUDA graphs off, launching "
                 "directly\n");
  EXPECT_EQ(gLog, concat({{"htod-async 4"}, capturedStep(), {"instantiate", "destroy"},
                          directStep(), {"sync"}}));
  gLog.clear();
  step(2);
  EXPECT_EQ(gLog, concat({{"htod-async 4"}, directStep(), {"sync"}}));
  EXPECT_EQ(queue_->launchCounts().graph, 0);
}

// A decode step's MoE (one row) routes on the device: its launches join the
// pending segment and nothing synchronizes before the run's end. Two rows
// of top 2 (4 slots, more than the 2 experts: MoE launches of at most E
// slots route on the device) route on the host, which needs the router's
// logits there: the segment
// with the router is run and waited for before they are read, and the
// experts start the next one.
TEST_F(CudaGraphDevice, MoeRoutesOnTheDeviceForOneRowAndSynchronizesForMoreSlotsThanExperts) {
  open(true);
  MoeDesc d;
  d.x = rows(0);
  d.y = rows(1);
  d.router = weight(0, {2, kWidth});
  for (int e = 0; e < 2; ++e) {
    d.gate.push_back(weight(128, {kWidth, kWidth}));
    d.up.push_back(weight(512, {kWidth, kWidth}));
    d.down.push_back(weight(1024, {kWidth, kWidth}));
  }
  d.topK = 2; // two rows are 4 slots, more than the 2 experts
  d.maxRows = 2;
  std::unique_ptr<Kernel> moe = prepared(device_->prepareMoe(d));
  ASSERT_TRUE(moe);
  gLog.clear();
  run(matmul_);
  run(moe);
  EXPECT_EQ(gLog, Log{});
  ASSERT_TRUE(queue_->flush().isOk());
  EXPECT_EQ(gLog, (Log{"launch fm_matvec_f32", "launch fm_matvec_f32", "launch fm_moe_route",
                       "launch fm_matvec_grouped_f32", "launch fm_matvec_grouped_f32",
                       "launch fm_silu_mul", "launch fm_matvec_grouped_f32",
                       "launch fm_moe_combine", "sync"}));
  gLog.clear();
  run(matmul_);
  const int32_t tokens[2] = {0, 1};
  ASSERT_TRUE(moe->run(*queue_, Launch{2, 0, tokens}).isOk());
  EXPECT_EQ(gLog, (Log{"launch fm_matvec_f32", "launch fm_matvec_f32", "sync", "dtoh 16",
                       "htod 16", "htod 16", "htod 16"}));
  gLog.clear();
  ASSERT_TRUE(queue_->flush().isOk());
  // Both experts have both rows.
  const Log expert = {"launch fm_moe_gather", "launch fm_matvec_f32", "launch fm_matvec_f32",
                      "launch fm_silu_mul", "launch fm_matvec_f32"};
  EXPECT_EQ(gLog, concat({expert, expert, {"launch fm_moe_combine", "sync"}}));
}

TEST_F(CudaGraphDevice, AllReduceStagesThroughTheHostAfterThePendingSegment) {
  open(true);
  TwoRanks ranks;
  AllReduceDesc d;
  d.inputs = {rows(1)};
  d.out = rows(2);
  d.scale = 0.5f;
  d.comm = &ranks;
  std::unique_ptr<Kernel> reduce = prepared(device_->prepareAllReduce(d));
  ASSERT_TRUE(reduce);
  gLog.clear();
  run(matmul_);
  run(reduce);
  EXPECT_EQ(gLog, (Log{"launch fm_matvec_f32", "launch fm_add_rows", "sync", "dtoh 32",
                       "all-reduce 8", "htod 32"}));
  ASSERT_TRUE(queue_->flush().isOk());
  EXPECT_EQ(gLog.back(), "sync");
  EXPECT_EQ(gLog[gLog.size() - 2], "launch fm_scale_rows");
}

/// Two ranks, both with NCCL: this rank's "can" doubles (the other rank's
/// is the same), rank 0's unique id stays (broadcast from rank 0).
class TwoNcclRanks final : public Communicator {
public:
  explicit TwoNcclRanks(int rank = 0) : rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  Status allReduceSum(float *data, int64_t count) override {
    gLog.push_back("all-reduce " + std::to_string(count));
    for (int64_t i = 0; i < count; ++i)
      data[i] *= 2.0f;
    return Status::ok();
  }
  Status broadcast(int32_t *data, int64_t count, int root) override {
    gLog.push_back("broadcast " + std::to_string(count) + " from " + std::to_string(root));
    if (rank_ != root) // what rank 0 sent: its id, or zeros where it made none
      for (int64_t i = 0; i < count; ++i)
        data[i] = gRootIdFails ? 0 : 0x07070707;
    return Status::ok();
  }
  static bool gRootIdFails;

private:
  int rank_;
};
bool TwoNcclRanks::gRootIdFails = false;
bool gNcclFails = false; // the fake's ncclGetUniqueId and ncclCommInitRank fail

// The fake NCCL: logs "nccl init N R", "nccl all-reduce COUNT" (in place,
// floats, sum; "capture " inside a capture), "nccl group", "nccl end
// group", "nccl destroy".
ncclResult_t fakeNcclVersion(int *v) {
  *v = 22105;
  return ncclSuccess;
}
ncclResult_t fakeNcclId(ncclUniqueId *id) {
  if (gNcclFails)
    return 2; // ncclSystemError
  std::memset(id->internal, 7, sizeof id->internal);
  return ncclSuccess;
}
ncclResult_t fakeNcclInit(ncclComm_t *c, int n, ncclUniqueId id, int rank) {
  if (gNcclFails)
    return 2;
  EXPECT_EQ(id.internal[0], 7);
  gLog.push_back("nccl init " + std::to_string(n) + " " + std::to_string(rank));
  *c = reinterpret_cast<ncclComm_t>(uintptr_t(0x500));
  return ncclSuccess;
}
ncclResult_t fakeNcclDestroy(ncclComm_t) {
  gLog.push_back("nccl destroy");
  return ncclSuccess;
}
std::vector<uintptr_t> gNcclData; // each all-reduce's address

ncclResult_t fakeNcclAllReduce(const void *send, void *recv, size_t count, int type, int op,
                               ncclComm_t, CUstream) {
  EXPECT_EQ(send, recv);
  gNcclData.push_back(reinterpret_cast<uintptr_t>(recv));
  EXPECT_EQ(type, ncclFloat32);
  EXPECT_EQ(op, ncclSum);
  gLog.push_back(captured("nccl all-reduce " + std::to_string(count)));
  return ncclSuccess;
}
ncclResult_t fakeNcclGroupStart() {
  gLog.push_back(captured("nccl group"));
  return ncclSuccess;
}
ncclResult_t fakeNcclGroupEnd() {
  gLog.push_back(captured("nccl end group"));
  return ncclSuccess;
}
const char *fakeNcclError(ncclResult_t) { return "fake NCCL error"; }

const NcclApi kFakeNccl = {fakeNcclVersion, fakeNcclId,        fakeNcclInit,
                           fakeNcclDestroy, fakeNcclAllReduce, fakeNcclGroupStart,
                           fakeNcclGroupEnd, fakeNcclError};

class CudaNcclDevice : public CudaGraphDevice {
protected:
  void SetUp() override {
    CudaGraphDevice::SetUp();
    setNcclForTests(&kFakeNccl);
    gNcclFails = TwoNcclRanks::gRootIdFails = false;
  }
  void TearDown() override {
    closeDevice(); // with its communicator, while the fake is set
    setNcclForTests(nullptr);
  }
  void closeDevice() {
    embed_.reset();
    matmul_.reset();
    copyRow_.reset();
    queue_.reset();
    arena_.reset();
    weights_.reset();
    device_.reset();
  }
  std::unique_ptr<Kernel> prepareReduce(Communicator &ranks, Rows out, CollectiveStats *stats) {
    AllReduceDesc d;
    d.inputs = {rows(1)};
    d.out = out;
    d.scale = 0.5f;
    d.comm = &ranks;
    d.stats = stats;
    d.maxRows = 2;
    return prepared(device_->prepareAllReduce(d));
  }
};

// Where every rank has NCCL the sum goes GPU to GPU: the ranks agree
// (every rank's vote), the communicator is made once (rank 0's id, init),
// the all-reduce is recorded after this rank's partial sums with no host
// synchronization, and a step with it replays as one graph from the second.
TEST_F(CudaNcclDevice, AllReduceGoesThroughNcclInsideTheGraph) {
  open(true);
  TwoNcclRanks ranks;
  ASSERT_TRUE(agreeCollectives(*device_, ranks).isOk());
  EXPECT_EQ(gLog, (Log{"all-reduce 1", "broadcast 32 from 0", "nccl init 2 0"}));
  // A second session over the same ranks votes again and keeps the
  // communicator.
  gLog.clear();
  ASSERT_TRUE(agreeCollectives(*device_, ranks).isOk());
  EXPECT_EQ(gLog, Log{"all-reduce 1"});
  gLog.clear();
  CollectiveStats stats;
  std::unique_ptr<Kernel> reduce = prepareReduce(ranks, rows(2), &stats);
  ASSERT_TRUE(reduce);
  EXPECT_EQ(stats.transport, "NCCL 2.21.5");
  ASSERT_TRUE(prepareReduce(ranks, rows(3), nullptr));
  EXPECT_EQ(gLog, Log{}) << "preparing kernels makes no collective";
  const Log step = {"launch fm_matvec_f32", "launch fm_add_rows", "nccl all-reduce 8",
                    "launch fm_scale_rows"};
  for (int64_t pos = 0; pos < 3; ++pos) {
    gLog.clear();
    run(matmul_, pos);
    run(reduce, pos);
    EXPECT_EQ(gLog, Log{}) << "step " << pos << ": nothing reaches the stream before the flush";
    ASSERT_TRUE(queue_->flush().isOk());
    if (pos == 0) {
      EXPECT_EQ(gLog, concat({step, {"sync"}}));
    } else {
      Log capture = {"begin"};
      for (const std::string &op : step)
        capture.push_back("capture " + op);
      capture.push_back("end");
      EXPECT_EQ(gLog, concat({capture, {pos == 1 ? "instantiate" : "update", "destroy",
                                        "graph-launch", "sync"}}))
          << "step " << pos;
    }
  }
  EXPECT_EQ(stats.allReduces, 3);
  gLog.clear();
  reduce.reset();
  closeDevice();
  EXPECT_EQ(std::count(gLog.begin(), gLog.end(), "nccl destroy"), 1);
}

// Two rows with a gap between them (an out stride above the width): one
// all-reduce per row, in one NCCL group.
TEST_F(CudaNcclDevice, StridedRowsGoAsOneNcclGroup) {
  open(false);
  TwoNcclRanks ranks;
  ASSERT_TRUE(agreeCollectives(*device_, ranks).isOk());
  std::unique_ptr<Kernel> reduce =
      prepareReduce(ranks, Rows{arena_.get(), 128, 2 * kWidth, kWidth}, nullptr);
  ASSERT_TRUE(reduce);
  gLog.clear();
  gNcclData.clear();
  const int32_t tokens[2] = {0, 1};
  ASSERT_TRUE(reduce->run(*queue_, Launch{2, 0, tokens}).isOk());
  ASSERT_TRUE(queue_->flush().isOk());
  EXPECT_EQ(gLog, (Log{"launch fm_add_rows", "nccl group", "nccl all-reduce 8",
                       "nccl all-reduce 8", "nccl end group", "launch fm_scale_rows", "sync"}));
  // Each row where it lies: the out rows at 128 bytes, one stride apart.
  ASSERT_EQ(gNcclData.size(), 2u);
  EXPECT_EQ(gNcclData[0], uintptr_t(devicePtr(arena_.get(), 128)));
  EXPECT_EQ(gNcclData[1] - gNcclData[0], 2 * kWidth * sizeof(float));
}

// A rank without NCCL (here: the other one, which may be on the CPU
// device) makes every rank stage through the host, with one line saying
// why; no NCCL call is made.
TEST_F(CudaNcclDevice, ARankWithoutNcclMakesAllStageThroughTheHost) {
  open(true);
  TwoRanks ranks; // its sum leaves this rank's 1: the other said 0
  testing::internal::CaptureStderr();
  ASSERT_TRUE(agreeCollectives(*device_, ranks).isOk());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "fm: cuda: the all-reduce of 2 ranks is staged through the host (a rank has "
                 "no NCCL or no CUDA device)\n");
  EXPECT_EQ(gLog, Log{"all-reduce 1"});
  CollectiveStats stats;
  std::unique_ptr<Kernel> reduce = prepareReduce(ranks, rows(2), &stats);
  ASSERT_TRUE(reduce);
  EXPECT_EQ(stats.transport, "host");
  gLog.clear();
  run(reduce);
  EXPECT_EQ(gLog, (Log{"launch fm_add_rows", "sync", "dtoh 32", "all-reduce 8", "htod 32"}));
}

// NCCL failing while the ranks make their communicator: each rank's error
// names its rank and what failed; rank 0 still broadcasts (zeros), so that
// no rank waits in the broadcast alone, and the others refuse the zeros.
TEST_F(CudaNcclDevice, FailuresToMakeTheCommunicatorNameTheRankAndTheCall) {
  open(true);
  gNcclFails = true;
  TwoNcclRanks zero(0);
  Status s = agreeCollectives(*device_, zero);
  EXPECT_EQ(s.message(), "nccl: ncclGetUniqueId: fake NCCL error");
  EXPECT_EQ(gLog, (Log{"all-reduce 1", "broadcast 32 from 0"}));
  TwoNcclRanks one(1);
  TwoNcclRanks::gRootIdFails = true;
  s = agreeCollectives(*device_, one);
  EXPECT_EQ(s.message(), "rank 1: nccl: rank 0 could not make a unique id (ncclGetUniqueId "
                         "failed there)");
  TwoNcclRanks::gRootIdFails = false;
  TwoNcclRanks other(1);
  s = agreeCollectives(*device_, other);
  EXPECT_EQ(s.message(), "nccl: ncclCommInitRank (rank 1 of 2): fake NCCL error");
  // No communicator was kept: the kernels stage through the host.
  EXPECT_EQ(device_->ncclFor(other), nullptr);
}

// A generated kernel (fmc --target cuda) with four buffers takes 22
// parameters: recorded whole, its rows and pos words included.
TEST_F(CudaGraphDevice, GeneratedKernelLaunchesAreRecorded) {
  open(true);
  const int buffers = 4;
  std::string ptx = ".version 8.0\n.target sm_80\n.address_size 64\n"
                    ".visible .entry fmk_k0_entry(\n";
  for (int i = 0; i < buffers * 5 + 2; ++i)
    ptx += std::string(i ? ",\n" : "") + "\t.param ." + (i < buffers * 5 ? "u64" : "u32") +
           " p" + std::to_string(i);
  ptx += "\n)\n{\n\tret;\n}\n";
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<artifact::Binding>> bindings;
  for (int i = 0; i < buffers; ++i)
    bindings.push_back(artifact::CreateBinding(fbb, 0, uint32_t(i)));
  std::vector<flatbuffers::Offset<artifact::PushConstant>> push = {
      artifact::CreatePushConstantDirect(fbb, "rows", 0, 4),
      artifact::CreatePushConstantDirect(fbb, "pos", 4, 4)};
  const std::vector<uint32_t> wg = {64, 1, 1};
  std::vector<flatbuffers::Offset<artifact::Function>> fns = {
      artifact::CreateFunctionDirect(fbb, "fmk_k0_entry", &wg, &bindings, &push)};
  const std::vector<uint8_t> data(ptx.begin(), ptx.end());
  fbb.Finish(artifact::CreateExecutableDirect(fbb, "cuda", "ptx", "nvptx64-nvidia-cuda",
                                              "sm_80", &data, &fns));
  auto exe = device_->loadExecutable(
      *flatbuffers::GetRoot<artifact::Executable>(fbb.GetBufferPointer()), "m.fmb");
  ASSERT_TRUE(exe.isOk()) << exe.message();
  DispatchDesc d;
  d.executable = exe->get();
  for (int i = 0; i < buffers; ++i) {
    DispatchArg a;
    a.rows = rows(i);
    d.args.push_back(a);
  }
  std::unique_ptr<Kernel> dispatch = prepared(device_->prepareDispatch(d));
  ASSERT_TRUE(dispatch);
  gLog.clear();
  gArg = buffers * 5 + 1; // pos
  gNamedArg = true;
  for (int64_t pos = 7; pos < 9; ++pos) {
    run(dispatch, pos);
    EXPECT_TRUE(gLog.empty() || gLog.back() == "sync");
    ASSERT_TRUE(queue_->flush().isOk());
  }
  EXPECT_EQ(gLog, (Log{"launch fmk_k0_entry 7", "sync", "begin", "capture launch fmk_k0_entry 8",
                       "end", "instantiate", "destroy", "graph-launch", "sync"}));
}

} // namespace
} // namespace fm::hal::cuda
