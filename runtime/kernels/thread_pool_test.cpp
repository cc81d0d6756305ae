// Checks fm::rt::ThreadPool: coverage and chunking of parallelFor and
// parallelForDynamic, repeated and idle-separated calls, nesting, and
// shutdown.
#include "base/ThreadPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace fm::rt {
namespace {

TEST(ThreadPool, ChunksPartitionTheRange) {
  for (int parts : {1, 2, 3, 5})
    for (int64_t n : {0, 1, 2, 3, 4, 7, 100, 1001}) {
      int64_t expectedBegin = 0;
      for (int i = 0; i < parts; ++i) {
        auto [begin, end] = ThreadPool::chunk(n, parts, i);
        EXPECT_EQ(begin, expectedBegin);
        EXPECT_LE(end - begin, n / parts + 1);
        EXPECT_GE(end - begin, n / parts);
        expectedBegin = end;
      }
      EXPECT_EQ(expectedBegin, n);
    }
}

TEST(ThreadPool, EveryIndexRunsOnceInOneChunkPerThread) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.numThreads(), threads);
    for (int64_t n : {0, 1, 2, 3, 5, 64, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      std::mutex mutex;
      std::vector<std::pair<int64_t, int64_t>> chunks;
      std::set<std::thread::id> ids;
      pool.parallelFor(n, [&](int64_t begin, int64_t end) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          chunks.emplace_back(begin, end);
          ids.insert(std::this_thread::get_id());
        }
        for (int64_t i = begin; i < end; ++i)
          hits[i].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << "threads=" << threads << " n=" << n;
      EXPECT_EQ(static_cast<int64_t>(chunks.size()),
                std::min<int64_t>(n, threads));
      EXPECT_EQ(ids.size(), chunks.size());
      for (auto [begin, end] : chunks)
        EXPECT_LT(begin, end);
    }
  }
}

// parallelForDynamic: every index once, in chunks of `grain` that start at
// multiples of it (the last one cut at n); a thread that is slow gets fewer
// of them (here a body that sleeps on the caller's thread, so the worker
// claims the rest).
TEST(ThreadPool, DynamicChunksCoverTheRangeOnce) {
  for (int threads : {1, 2, 3})
    for (int64_t grain : {1, 3, 64})
      for (int64_t n : {0, 1, 2, 7, 64, 1000}) {
        ThreadPool pool(threads);
        std::vector<std::atomic<int>> hits(n);
        std::mutex mutex;
        std::vector<std::pair<int64_t, int64_t>> chunks;
        pool.parallelForDynamic(n, grain, [&](int64_t begin, int64_t end) {
          {
            std::lock_guard<std::mutex> lock(mutex);
            chunks.emplace_back(begin, end);
          }
          for (int64_t i = begin; i < end; ++i)
            hits[i].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[i].load(), 1)
              << "threads=" << threads << " grain=" << grain << " n=" << n;
        EXPECT_EQ(static_cast<int64_t>(chunks.size()), (n + grain - 1) / grain);
        for (auto [begin, end] : chunks) {
          EXPECT_EQ(begin % grain, 0);
          EXPECT_EQ(end, std::min(begin + grain, n));
        }
      }
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> callerChunks{0}, chunks{0};
  pool.parallelForDynamic(40, 1, [&](int64_t, int64_t) {
    chunks.fetch_add(1);
    if (std::this_thread::get_id() == caller) {
      callerChunks.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  EXPECT_EQ(chunks.load(), 40);
  EXPECT_LT(callerChunks.load(), 20) << "the slow thread took half the chunks";
}

TEST(ThreadPool, ManyBackToBackCalls) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int call = 0; call < 20000; ++call)
    pool.parallelFor(7, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        sum.fetch_add(i, std::memory_order_relaxed);
    });
  EXPECT_EQ(sum.load(), 20000 * 21);
}

TEST(ThreadPool, CallsAfterWorkersFellAsleep) {
  ThreadPool pool(3);
  for (int call = 0; call < 5; ++call) {
    // Longer than the spin phase, so the workers sleep on the condition
    // variable and must be woken.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::atomic<int> ran{0};
    pool.parallelFor(3, [&](int64_t begin, int64_t end) {
      ran.fetch_add(static_cast<int>(end - begin));
    });
    EXPECT_EQ(ran.load(), 3);
  }
}

TEST(ThreadPool, SlowWorkerMakesCallerSleep) {
  ThreadPool pool(2);
  std::atomic<int> done{0};
  pool.parallelFor(2, [&](int64_t begin, int64_t) {
    if (begin == 1) // The worker's chunk outlasts the caller's spin.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    done.fetch_add(1);
  });
  EXPECT_EQ(done.load(), 2);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  pool.parallelFor(4, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      pool.parallelFor(10,
                       [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
  });
  EXPECT_EQ(total.load(), 40);
}

TEST(ThreadPool, DestroysIdleAndFreshPools) {
  for (int i = 0; i < 50; ++i) {
    ThreadPool fresh(3); // Destroyed while workers may still be starting.
  }
  ThreadPool idle(3);
  idle.parallelFor(3, [](int64_t, int64_t) {});
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

TEST(ThreadPool, DefaultSizeIsHardwareConcurrency) {
  ThreadPool pool;
  EXPECT_GE(pool.numThreads(), 1);
  if (std::thread::hardware_concurrency() > 0) {
    EXPECT_EQ(pool.numThreads(),
              static_cast<int>(std::thread::hardware_concurrency()));
  }
}

} // namespace
} // namespace fm::rt
