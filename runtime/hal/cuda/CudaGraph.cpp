// Recording and replaying a stream's launches as CUDA graphs (CudaGraph.h).
#include "hal/cuda/CudaGraph.h"

#include <cstdio>

namespace fm::hal::cuda {

namespace {
// FNV-1a over the shape's words.
void mix(uint64_t &h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xffu;
    h *= 1099511628211ull;
  }
}
} // namespace

uint64_t graphShape(const std::vector<GraphOp> &ops) {
  uint64_t h = 14695981039346656037ull;
  mix(h, ops.size());
  for (const GraphOp &op : ops) {
    mix(h, op.kind);
    mix(h, reinterpret_cast<uintptr_t>(op.fn));
    if (op.kind != GraphOp::Launch) {
      mix(h, op.bytes);
      mix(h, reinterpret_cast<uintptr_t>(op.comm));
      continue;
    }
    for (int d = 0; d < 3; ++d) {
      mix(h, op.grid[d]);
      mix(h, op.block[d]);
    }
    mix(h, uint64_t(op.numArgs));
  }
  return h;
}

GraphStep graphStep(bool enabled, int timesSeen, bool haveExec) {
  if (!enabled || timesSeen < 2)
    return GraphStep::Direct;
  return haveExec ? GraphStep::Update : GraphStep::Instantiate;
}

GraphRecorder::~GraphRecorder() { dropGraphs(); }

void GraphRecorder::recordLaunch(CUfunction fn, const unsigned (&grid)[3],
                                 const unsigned (&block)[3], const uint64_t *args,
                                 int numArgs) {
  GraphOp op;
  op.fn = fn;
  for (int d = 0; d < 3; ++d) {
    op.grid[d] = grid[d];
    op.block[d] = block[d];
  }
  op.firstArg = uint32_t(args_.size());
  op.numArgs = numArgs;
  args_.insert(args_.end(), args, args + numArgs);
  ops_.push_back(op);
}

void GraphRecorder::recordCopy(CUdeviceptr dst, CUdeviceptr src, uint64_t bytes) {
  GraphOp op;
  op.kind = GraphOp::Copy;
  op.dst = dst;
  op.src = src;
  op.bytes = bytes;
  ops_.push_back(op);
}

void GraphRecorder::recordAllReduce(const NcclComm &comm, CUdeviceptr data, uint64_t count) {
  GraphOp op;
  op.kind = GraphOp::AllReduce;
  op.dst = op.src = data;
  op.bytes = count * sizeof(float);
  op.comm = &comm;
  ops_.push_back(op);
}

Status GraphRecorder::issueAllReduces(size_t &i, CUstream stream) {
  // A run of all-reduces on one communicator is one NCCL group (the rows
  // of a strided block go as one operation).
  size_t end = i;
  while (end < ops_.size() && ops_[end].kind == GraphOp::AllReduce &&
         ops_[end].comm == ops_[i].comm)
    ++end;
  const NcclComm &comm = *ops_[i].comm;
  const NcclApi &nccl = comm.api();
  const bool group = end - i > 1;
  if (group)
    FM_RETURN_IF_ERROR(ncclCheck(nccl, nccl.ncclGroupStart(), "ncclGroupStart"));
  Status status = Status::ok();
  for (; i < end && status.isOk(); ++i) {
    void *data = reinterpret_cast<void *>(uintptr_t(ops_[i].dst));
    status = ncclCheck(nccl,
                       nccl.ncclAllReduce(data, data, ops_[i].bytes / sizeof(float), ncclFloat32,
                                          ncclSum, comm.handle(), stream),
                       "ncclAllReduce");
  }
  if (group) {
    const Status ended = ncclCheck(nccl, nccl.ncclGroupEnd(), "ncclGroupEnd");
    if (status.isOk())
      status = ended;
  }
  i = end - 1; // the caller's loop steps past the last one
  return status;
}

Status GraphRecorder::issue(CUstream stream) {
  for (size_t i = 0; i < ops_.size(); ++i) {
    const GraphOp &op = ops_[i];
    if (op.kind == GraphOp::AllReduce) {
      FM_RETURN_IF_ERROR(issueAllReduces(i, stream));
      continue;
    }
    if (op.kind == GraphOp::Copy) {
      FM_RETURN_IF_ERROR(check(api_, api_.cuMemcpyDtoDAsync(op.dst, op.src, op.bytes, stream),
                               "cuMemcpyDtoDAsync"));
      continue;
    }
    pointers_.resize(size_t(op.numArgs));
    for (int i = 0; i < op.numArgs; ++i)
      pointers_[size_t(i)] = &args_[op.firstArg + size_t(i)];
    FM_RETURN_IF_ERROR(check(api_,
                             api_.cuLaunchKernel(op.fn, op.grid[0], op.grid[1], op.grid[2],
                                                 op.block[0], op.block[1], op.block[2], 0,
                                                 stream, pointers_.data(), nullptr),
                             "cuLaunchKernel"));
  }
  return Status::ok();
}

Status GraphRecorder::runDirect(CUstream stream) {
  for (const GraphOp &op : ops_)
    directLaunches_ += op.kind == GraphOp::Launch;
  return issue(stream);
}

Status GraphRecorder::capture(CUstream stream, CUgraph *graph) {
  if (CUresult r = api_.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
      r != CUDA_SUCCESS)
    return check(api_, r, "cuStreamBeginCapture");
  Status launched = issue(stream);
  CUresult r = api_.cuStreamEndCapture(stream, graph);
  FM_RETURN_IF_ERROR(launched);
  return check(api_, r, "cuStreamEndCapture");
}

void GraphRecorder::disable(const std::string &why) {
  std::fprintf(stderr, "fm: %s: CUDA graphs off, launching directly\n", why.c_str());
  enabled_ = false;
  dropGraphs();
}

void GraphRecorder::dropGraphs() {
  for (auto &[shape, exec] : execs_)
    api_.cuGraphExecDestroy(exec);
  execs_.clear();
}

Status GraphRecorder::submit(CUstream stream) {
  if (ops_.empty())
    return Status::ok();
  const bool enabled = enabled_ && api_.hasGraphs();
  const uint64_t shape = enabled ? graphShape(ops_) : 0;
  if (seen_.size() > kMaxShapesSeen)
    seen_.clear(); // many one-off prefill lengths: count afresh
  int &seen = seen_[shape];
  seen = seen < 2 ? seen + 1 : 2;
  auto exec = execs_.find(shape);
  const GraphStep step = graphStep(enabled, seen, exec != execs_.end());
  Status status = Status::ok();
  if (step == GraphStep::Direct) {
    status = runDirect(stream);
    clear();
    return status;
  }
  CUgraph graph = nullptr;
  Status failed = capture(stream, &graph);
  CUresult r = CUDA_SUCCESS;
  if (!failed.isOk()) {
    r = -1;
  } else if (step == GraphStep::Update) {
    CUgraphExecUpdateResultInfo info{};
    // A failed update (the driver judged the topology changed) builds the
    // graph anew, not an error.
    if (api_.cuGraphExecUpdate(exec->second, graph, &info) != CUDA_SUCCESS) {
      api_.cuGraphExecDestroy(exec->second);
      execs_.erase(exec);
      exec = execs_.end();
    }
  }
  if (r == CUDA_SUCCESS && exec == execs_.end()) {
    if (execs_.size() >= kMaxGraphs)
      dropGraphs();
    CUgraphExec made = nullptr;
    r = api_.cuGraphInstantiate(&made, graph, 0);
    failed = check(api_, r, "cuGraphInstantiate");
    if (r == CUDA_SUCCESS)
      exec = execs_.emplace(shape, made).first;
  }
  if (graph)
    api_.cuGraphDestroy(graph);
  if (r == CUDA_SUCCESS) {
    r = api_.cuGraphLaunch(exec->second, stream);
    failed = check(api_, r, "cuGraphLaunch");
    if (r == CUDA_SUCCESS)
      ++graphLaunches_;
  }
  if (r != CUDA_SUCCESS) {
    disable(failed.message());
    status = runDirect(stream);
  }
  clear();
  return status;
}

} // namespace fm::hal::cuda
