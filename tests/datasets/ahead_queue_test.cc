// AheadQueue, the GPU data path's decode-ahead thread, with a stand-in fill:
// order, a held slot never refilled, how far ahead it runs, passes that end
// and restart (also mid-pass), and sticky errors.
#include "datasets/ahead_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "reference/core/philox.h"

namespace mlperf::datasets {
namespace {

using std::chrono::microseconds;

// Fills slot s with the item's number within its pass; the pass ends after
// `pass_length` items (0 = never), item `fail_at` fails.
struct Producer {
  explicit Producer(int depth, int64_t pass_length = 0, int64_t fail_at = -1)
      : values(static_cast<size_t>(depth) + 1), pass_length(pass_length), fail_at(fail_at) {}

  AheadQueue::Hooks Hooks() {
    return {.fill = [this](int slot) -> absl::StatusOr<bool> {
              const int64_t item = next++;
              // Uneven work, so that producer and consumer interleave every way.
              std::this_thread::sleep_for(
                  microseconds(core::PhiloxBits(1, static_cast<uint64_t>(item), 0) % 300));
              if (item == fail_at) return absl::DataLossError("item broken");
              if (pass_length > 0 && item >= pass_length) return false;
              values[static_cast<size_t>(slot)] = item;
              ++filled;
              return true;
            },
            .restart =
                [this] {
                  next = 0;
                  ++restarts;
                }};
  }

  std::vector<int64_t> values;
  const int64_t pass_length, fail_at;
  int64_t next = 0;  // the producer's thread only, or the consumer's while it waits
  std::atomic<int64_t> filled{0};
  int restarts = 0;
};

int Take(AheadQueue& q) {
  absl::StatusOr<std::optional<int>> got = q.Next();
  EXPECT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got.ok() && got->has_value());
  return got.ok() && got->has_value() ? **got : -1;
}

TEST(AheadQueueTest, ItemsComeInOrderAndAHeldSlotIsNeverRefilled) {
  for (int depth : {1, 2, 4}) {
    Producer p(depth);
    AheadQueue q(depth, p.Hooks());
    for (int64_t i = 0; i < 300; ++i) {
      const int slot = Take(q);
      ASSERT_GE(slot, 0);
      ASSERT_EQ(p.values[static_cast<size_t>(slot)], i) << "depth " << depth;
      // The consumer works on its item while the producer runs ahead.
      std::this_thread::sleep_for(microseconds(core::PhiloxBits(2, i, 0) % 300));
      ASSERT_EQ(p.values[static_cast<size_t>(slot)], i) << "refilled while held";
    }
  }
}

TEST(AheadQueueTest, RunsDepthAheadOfTheHeldItem) {
  Producer p(2);
  AheadQueue q(2, p.Hooks());
  const auto settle = [] { std::this_thread::sleep_for(std::chrono::milliseconds(100)); };
  settle();
  EXPECT_EQ(p.filled, 3) << "nothing held: every slot filled";
  Take(q);
  settle();
  EXPECT_EQ(p.filled, 3) << "one held, two ahead";
  Take(q);
  settle();
  EXPECT_EQ(p.filled, 4);
}

TEST(AheadQueueTest, PassesEndAndRestartAlsoMidPass) {
  Producer p(2, /*pass_length=*/5);
  AheadQueue q(2, p.Hooks());
  for (int pass = 0; pass < 4; ++pass) {
    q.Restart();
    const int64_t take = pass == 2 ? 2 : 5;  // pass 2 is abandoned after two items
    for (int64_t i = 0; i < take; ++i) {
      const int slot = Take(q);
      ASSERT_GE(slot, 0);
      EXPECT_EQ(p.values[static_cast<size_t>(slot)], i) << "pass " << pass;
    }
    if (take < 5) continue;
    for (int again = 0; again < 2; ++again) {
      absl::StatusOr<std::optional<int>> end = q.Next();
      ASSERT_TRUE(end.ok());
      EXPECT_FALSE(end->has_value()) << "a finished pass stays finished until Restart";
    }
  }
  EXPECT_EQ(p.restarts, 4);
}

TEST(AheadQueueTest, WaitsForTheFirstRestartWhenAsked) {
  Producer p(2, /*pass_length=*/3);
  AheadQueue q(2, p.Hooks(), /*wait_for_restart=*/true);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(p.filled, 0);
  EXPECT_EQ(q.Next().status().code(), absl::StatusCode::kFailedPrecondition);
  q.Restart();
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(p.values[static_cast<size_t>(Take(q))], i);
}

TEST(AheadQueueTest, AnErrorIsHandedOutAfterTheItemsBeforeIt) {
  Producer p(3, 0, /*fail_at=*/4);
  AheadQueue q(3, p.Hooks());
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(p.values[static_cast<size_t>(Take(q))], i);
  for (int again = 0; again < 2; ++again) {
    absl::StatusOr<std::optional<int>> got = q.Next();
    EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(p.next, 5) << "nothing is filled after an error";
}

TEST(AheadQueueTest, ThreadStartsFirstAndStopsWithTheQueue) {
  std::atomic<bool> started{false};
  std::atomic<bool> filled_before_start{false};
  {
    AheadQueue q(1, {.thread_start = [&] { started = true; },
                     .fill = [&](int) -> absl::StatusOr<bool> {
                       if (!started) filled_before_start = true;
                       return true;
                     }});
    Take(q);
  }  // destroyed with the producer waiting for a free slot: no hang
  EXPECT_TRUE(started);
  EXPECT_FALSE(filled_before_start);
}

}  // namespace
}  // namespace mlperf::datasets
