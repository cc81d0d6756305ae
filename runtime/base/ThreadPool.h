// A persistent fork-join thread pool for the runtime's data-parallel kernels.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace fm::rt {

/// A non-owning reference to a callable `void(int64_t begin, int64_t end)`.
/// Unlike std::function it never allocates, so building one per kernel call
/// is free. The referenced callable must outlive the call it is passed to.
class RangeFn {
public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<
                            std::remove_cv_t<std::remove_reference_t<F>>,
                            RangeFn>>>
  RangeFn(F &&f) // NOLINT(google-explicit-constructor): used like a lambda.
      : obj_(const_cast<void *>(static_cast<const void *>(&f))),
        call_([](void *obj, int64_t begin, int64_t end) {
          (*static_cast<std::remove_reference_t<F> *>(obj))(begin, end);
        }) {}

  void operator()(int64_t begin, int64_t end) const { call_(obj_, begin, end); }

private:
  void *obj_;
  void (*call_)(void *, int64_t, int64_t);
};

/// N-1 persistent workers plus the calling thread. parallelFor splits [0, n)
/// into one contiguous chunk per thread and blocks until all chunks ran.
///
/// Built for per-token decode calls: a call allocates nothing, and workers
/// spin briefly before sleeping, so back-to-back calls (one per layer) wake
/// them without a syscall. A pool serves one calling thread at a time; a
/// parallelFor issued from inside a body runs inline on that thread. Bodies
/// must not throw.
class ThreadPool {
public:
  /// numThreads <= 0 means std::thread::hardware_concurrency().
  explicit ThreadPool(int numThreads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int numThreads() const { return numThreads_; }

  /// Runs fn(begin, end) over a partition of [0, n) into numThreads()
  /// contiguous chunks (chunk i goes to thread i; the caller runs chunk 0).
  /// Empty chunks are skipped, so fn only ever sees begin < end.
  void parallelFor(int64_t n, RangeFn fn);

  /// Runs fn over [0, n) in chunks of `grain` (the last may be shorter)
  /// that the threads claim one after another, so that a thread that runs
  /// slower (a core shared with another job, an efficiency core) takes
  /// fewer of them rather than holding the others up, as parallelFor's fixed
  /// chunks would. Which thread runs a chunk varies from call to call: for
  /// work whose chunks are independent (each output computed in one chunk).
  /// fn sees each chunk once, begin < end.
  void parallelForDynamic(int64_t n, int64_t grain, RangeFn fn);

  /// How many parallelFor calls have handed work to the workers (not the
  /// ones run inline): what a kernel that promises one hand-off per call
  /// is tested against.
  uint64_t dispatches() const {
    return dispatches_.load(std::memory_order_relaxed);
  }

  /// The [begin, end) of chunk `index` when [0, n) is split into `parts`.
  static std::pair<int64_t, int64_t> chunk(int64_t n, int parts, int index) {
    int64_t base = n / parts, rem = n % parts;
    int64_t begin = index * base + (index < rem ? index : rem);
    return {begin, begin + base + (index < rem ? 1 : 0)};
  }

private:
  void workerLoop(int index);
  void runChunk(int index);

  int numThreads_;
  std::vector<std::thread> workers_;

  // The job of the current generation; written by the caller before it
  // bumps generation_, read by workers after they see the bump.
  const RangeFn *job_ = nullptr;
  int64_t jobSize_ = 0;

  // Each worker's cache line holds nothing else, so their spinning does not
  // slow down the caller's writes.
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<int> pending_{0};
  alignas(64) std::atomic<int> sleepingWorkers_{0};
  std::atomic<bool> callerSleeping_{false};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> dispatches_{0};
  std::mutex mutex_;
  std::condition_variable workCv_;
  std::condition_variable doneCv_;
};

} // namespace fm::rt
