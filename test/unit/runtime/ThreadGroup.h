// An in-process fm::Communicator for tests: N ranks that are threads of
// this process, with the collectives built on a barrier (sums in rank
// order, so every rank gets the same bits).
#pragma once

#include "fm/communicator.h"

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace fm::test {

class ThreadGroup {
public:
  explicit ThreadGroup(int size) : size_(size), floats_(size), ints_(size) {
    for (int r = 0; r < size; ++r)
      members_.push_back(std::make_unique<Member>(this, r));
  }

  /// Rank r's communicator; each rank is used from its own thread.
  Communicator &rank(int r) { return *members_[r]; }
  /// allReduceSum calls that reached the group (per rank).
  int64_t allReduces() const { return allReduces_; }

private:
  class Member final : public Communicator {
  public:
    Member(ThreadGroup *group, int rank) : group_(group), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return group_->size_; }
    Status allReduceSum(float *data, int64_t count) override {
      return group_->allReduceSum(rank_, data, count);
    }
    Status broadcast(int32_t *data, int64_t count, int root) override {
      return group_->broadcast(rank_, data, count, root);
    }

  private:
    ThreadGroup *group_;
    int rank_;
  };

  void barrier() {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation; });
  }

  Status allReduceSum(int rank, float *data, int64_t count) {
    floats_[rank] = data;
    barrier();
    std::vector<float> sum(count, 0.0f);
    for (int r = 0; r < size_; ++r)
      for (int64_t i = 0; i < count; ++i)
        sum[i] += floats_[r][i];
    barrier(); // everyone has read everyone's data
    std::copy(sum.begin(), sum.end(), data);
    if (rank == 0)
      ++allReduces_;
    barrier();
    return Status::ok();
  }

  Status broadcast(int rank, int32_t *data, int64_t count, int root) {
    ints_[rank] = data;
    barrier();
    if (rank != root)
      std::copy(ints_[root], ints_[root] + count, data);
    barrier();
    return Status::ok();
  }

  int size_;
  std::vector<std::unique_ptr<Member>> members_;
  std::vector<float *> floats_;
  std::vector<int32_t *> ints_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  int64_t allReduces_ = 0;
};

} // namespace fm::test
