#include "base/parallel_for.h"

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace mlperf::base {
namespace {

TEST(ParallelFor, EveryItemExactlyOnce) {
  for (int threads : {-1, 0, 1, 2, 7, 64}) {
    std::vector<std::atomic<int>> calls(1000);
    ParallelFor(calls.size(), threads, [&](size_t i) { ++calls[i]; });
    for (size_t i = 0; i < calls.size(); ++i) ASSERT_EQ(calls[i].load(), 1) << threads << " " << i;
  }
}

TEST(ParallelFor, NoItemsNoCalls) {
  bool called = false;
  ParallelFor(0, 4, [&](size_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(ParallelFor, ThreadCount) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(ParallelForThreads(100, 0), std::min(cores, 100));
  EXPECT_EQ(ParallelForThreads(100, -3), std::min(cores, 100));
  EXPECT_EQ(ParallelForThreads(3, 8), 3);  // never more threads than items
  EXPECT_EQ(ParallelForThreads(10, 4), 4);
  EXPECT_EQ(ParallelForThreads(0, 4), 1);
}

TEST(ParallelFor, UsesTheThreadsAskedFor) {
  // Each item waits until all three threads have arrived, so three distinct
  // threads must be running the items at once.
  std::mutex m;
  std::set<std::thread::id> ids;
  std::atomic<int> arrived{0};
  ParallelFor(3, 3, [&](size_t) {
    {
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
    }
    ++arrived;
    while (arrived.load() < 3) std::this_thread::yield();
  });
  EXPECT_EQ(ids.size(), 3u);
}

TEST(ParallelFor, OneThreadRunsInOrderOnTheCaller) {
  std::vector<size_t> order;
  const std::thread::id caller = std::this_thread::get_id();
  bool same_thread = true;
  ParallelFor(5, 1, [&](size_t i) {
    order.push_back(i);
    same_thread = same_thread && std::this_thread::get_id() == caller;
  });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(same_thread);
}

}  // namespace
}  // namespace mlperf::base
