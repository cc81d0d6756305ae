// A persistent fork-join thread pool: spin-then-sleep workers, no allocation
// per parallelFor.
#include "base/ThreadPool.h"

#include <cassert>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace fm::rt {
namespace {

// How long an idle thread polls before it sleeps. Long enough to bridge the
// gap between two kernels of one decode step (a norm or a rope in between),
// short enough not to burn a core that other work could use.
constexpr auto kSpinTime = std::chrono::microseconds(50);
// Polls between two clock reads while spinning.
constexpr int kPollsPerClockRead = 64;

// True on pool workers and on a caller inside parallelFor: nested calls then
// run inline rather than deadlock waiting for busy workers.
thread_local bool tInsideParallelFor = false;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Polls `done` for up to kSpinTime; returns whether it became true.
template <typename Pred> bool spinUntil(Pred done) {
  auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (;;) {
    for (int i = 0; i < kPollsPerClockRead; ++i) {
      if (done())
        return true;
      cpuRelax();
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return done();
  }
}

} // namespace

ThreadPool::ThreadPool(int numThreads) {
  if (numThreads <= 0)
    numThreads = static_cast<int>(std::thread::hardware_concurrency());
  numThreads_ = numThreads > 0 ? numThreads : 1;
  workers_.reserve(numThreads_ - 1);
  for (int i = 1; i < numThreads_; ++i)
    workers_.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  if (workers_.empty())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_seq_cst);
  }
  workCv_.notify_all();
  for (std::thread &t : workers_)
    t.join();
}

void ThreadPool::runChunk(int index) {
  auto [begin, end] = chunk(jobSize_, numThreads_, index);
  if (begin < end)
    (*job_)(begin, end);
}

void ThreadPool::parallelFor(int64_t n, RangeFn fn) {
  if (n <= 0)
    return;
  if (numThreads_ == 1 || n == 1 || tInsideParallelFor) {
    fn(0, n);
    return;
  }
  tInsideParallelFor = true;
  dispatches_.fetch_add(1, std::memory_order_relaxed);
  job_ = &fn;
  jobSize_ = n;
  pending_.store(numThreads_ - 1, std::memory_order_relaxed);
  // Publishes job_/jobSize_/pending_. seq_cst pairs with the worker's
  // increment of sleepingWorkers_ before its last look at generation_:
  // either it sees the new generation or we see it asleep and wake it.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepingWorkers_.load(std::memory_order_seq_cst) > 0) {
    // Taking the mutex orders this wake-up after a worker that has
    // checked generation_ under it has started waiting.
    { std::lock_guard<std::mutex> lock(mutex_); }
    workCv_.notify_all();
  }

  runChunk(0);

  auto allDone = [this] {
    return pending_.load(std::memory_order_acquire) == 0;
  };
  if (!spinUntil(allDone)) {
    std::unique_lock<std::mutex> lock(mutex_);
    callerSleeping_.store(true, std::memory_order_seq_cst);
    while (pending_.load(std::memory_order_seq_cst) != 0)
      doneCv_.wait(lock);
    callerSleeping_.store(false, std::memory_order_relaxed);
  }
  job_ = nullptr;
  tInsideParallelFor = false;
}

void ThreadPool::workerLoop(int index) {
  tInsideParallelFor = true;
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = seen;
    auto hasWork = [&] {
      gen = generation_.load(std::memory_order_acquire);
      return gen != seen;
    };
    if (!spinUntil(hasWork)) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepingWorkers_.fetch_add(1, std::memory_order_seq_cst);
      while ((gen = generation_.load(std::memory_order_seq_cst)) == seen)
        workCv_.wait(lock);
      sleepingWorkers_.fetch_sub(1, std::memory_order_relaxed);
    }
    // stop_ is written before the generation bump that announces it.
    if (stop_.load(std::memory_order_relaxed))
      return;
    seen = gen;
    runChunk(index);
    // The last worker to finish wakes the caller if it went to sleep; the
    // seq_cst pair mirrors the one on generation_/sleepingWorkers_.
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        callerSleeping_.load(std::memory_order_seq_cst)) {
      { std::lock_guard<std::mutex> lock(mutex_); }
      doneCv_.notify_one();
    }
  }
}

void ThreadPool::parallelForDynamic(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0)
    return;
  if (grain < 1)
    grain = 1;
  std::atomic<int64_t> next{0};
  auto claim = [&](int64_t, int64_t) {
    for (int64_t b; (b = next.fetch_add(grain, std::memory_order_relaxed)) < n;)
      fn(b, b + grain < n ? b + grain : n);
  };
  parallelFor(numThreads_, claim);
}

} // namespace fm::rt
