// CUDA graphs for a run's kernel launches: the launches of a segment
// (what runs between two host synchronizations) are recorded, then
// replayed on the stream as one graph: captured, and either instantiated
// or, where an executable graph of the same shape exists, updated in place
// with this run's parameters (positions, KV lengths change per token), so a
// decode step costs one cuGraphLaunch instead of one launch per kernel.
#pragma once

#include "hal/cuda/CudaDriver.h"
#include "hal/cuda/Nccl.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fm::hal::cuda {

/// One recorded stream operation: a kernel launch (its argument values are
/// numArgs words of the recorder's pool from firstArg; cuLaunchKernel's
/// pointers are made to point at them at replay), a device-to-device copy,
/// or an NCCL all-reduce (a float sum across the ranks, in place on
/// `bytes / 4` floats at dst; NCCL's kernels join the captured graph).
struct GraphOp {
  enum Kind : uint8_t { Launch, Copy, AllReduce };
  Kind kind = Launch;
  CUfunction fn = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  uint32_t firstArg = 0;
  int numArgs = 0;
  CUdeviceptr dst = 0, src = 0;
  uint64_t bytes = 0;
  const NcclComm *comm = nullptr; // AllReduce
};

/// What a segment's graph depends on beyond the argument values: the
/// sequence of kernels, their geometry, argument counts and the copies'
/// sizes. Two segments with the same shape differ only in values, which
/// cuGraphExecUpdate changes; a new shape needs a new executable graph.
uint64_t graphShape(const std::vector<GraphOp> &ops);

/// How a segment runs, given how often its shape was seen before (counting
/// this time) and whether an executable graph of that shape exists: a
/// shape seen once runs directly (a prefill length that does not come back
/// pays no instantiation), from the second time it is instantiated, then
/// updated and relaunched. Disabled (or after a failure): always direct.
enum class GraphStep { Direct, Instantiate, Update };
GraphStep graphStep(bool enabled, int timesSeen, bool haveExec);

/// The most executable graphs kept (prefill lengths each make one); past
/// it, all are dropped and built again as shapes return.
constexpr size_t kMaxGraphs = 32;
/// The most shapes whose sightings are counted.
constexpr size_t kMaxShapesSeen = 1024;

/// Records a stream's operations and replays them (submit). Not
/// thread-safe: one per stream.
class GraphRecorder {
public:
  GraphRecorder(const DriverApi &api, bool enabled) : api_(api), enabled_(enabled) {}
  ~GraphRecorder();
  GraphRecorder(const GraphRecorder &) = delete;
  GraphRecorder &operator=(const GraphRecorder &) = delete;

  /// Records a launch with its argument values (copied: the caller's
  /// array may change after), however many there are: a generated kernel
  /// takes five words per buffer.
  void recordLaunch(CUfunction fn, const unsigned (&grid)[3], const unsigned (&block)[3],
                    const uint64_t *args, int numArgs);
  void recordCopy(CUdeviceptr dst, CUdeviceptr src, uint64_t bytes);
  /// Records an in-place sum of `count` floats at `data` across the ranks
  /// of `comm`; consecutive ones are issued as one NCCL group.
  void recordAllReduce(const NcclComm &comm, CUdeviceptr data, uint64_t count);
  bool empty() const { return ops_.empty(); }
  /// Runs the recorded operations on `stream` in order (as a graph or
  /// directly, graphStep) and forgets them. A capture, instantiation or
  /// update that fails turns graphs off for this recorder with one line on
  /// stderr, and the operations run directly.
  Status submit(CUstream stream);
  bool enabled() const { return enabled_; }
  /// Segments run as one graph launch so far, and kernels launched one by
  /// one outside a graph (fm-run --stats).
  int64_t graphLaunches() const { return graphLaunches_; }
  int64_t directLaunches() const { return directLaunches_; }

private:
  /// Issues the operations on `stream` (into a capture, or to run).
  Status issue(CUstream stream);
  /// Issues the run of all-reduces that starts at ops_[i] (one NCCL group
  /// where there are several); leaves i at the run's last.
  Status issueAllReduces(size_t &i, CUstream stream);
  Status runDirect(CUstream stream);
  Status capture(CUstream stream, CUgraph *graph);
  void disable(const std::string &why);
  void clear() {
    ops_.clear();
    args_.clear();
  }
  void dropGraphs();

  const DriverApi &api_;
  bool enabled_;
  std::vector<GraphOp> ops_;
  std::vector<uint64_t> args_;    // the launches' argument values, in order
  std::vector<void *> pointers_; // one launch's pointers into args_
  std::map<uint64_t, int> seen_;
  std::map<uint64_t, CUgraphExec> execs_;
  int64_t graphLaunches_ = 0, directLaunches_ = 0;
};

} // namespace fm::hal::cuda
