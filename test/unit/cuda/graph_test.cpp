// CUDA graph replay (CudaGraph.h) on the host, against a fake driver table
// that logs what it is asked (no GPU): the shape key, the decision per
// segment (direct the first time, instantiated the second, updated after),
// that every recorded operation runs once, in order, with its argument
// values, and the fallback to direct launches where capture fails.
#include "hal/cuda/CudaGraph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace fm::hal::cuda {
namespace {

// What the fake driver saw, in order: "launch F a" (a the argument gArg),
// "copy", "begin", "end", "instantiate", "update", "graph-launch",
// "destroy", "exec-destroy".
std::vector<std::string> gLog;
bool gCaptureFails = false;
bool gUpdateFails = false;
bool gCapturing = false;
int gArg = 0; // the argument a launch's line shows

CUresult fakeLaunch(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                    unsigned, CUstream, void **params, void **) {
  uint64_t a = 0;
  std::memcpy(&a, params[gArg], sizeof a);
  gLog.push_back(std::string(gCapturing ? "capture " : "") + "launch " +
                 std::to_string(reinterpret_cast<uintptr_t>(f)) + " " + std::to_string(a));
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
    gCaptureFails = gUpdateFails = gCapturing = false;
    gArg = 0;
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

} // namespace
} // namespace fm::hal::cuda
