// A producer that runs ahead of its consumer on a thread of its own: it fills
// numbered slots (depth ahead, plus the one the consumer holds) in order, and
// the consumer takes them in the same order. For the GPU data path, where the
// filling is decoding a batch on the device while the GPU trains on the last.
//
// A fill may end a pass (validation: the loader has no more batches); the
// queue then hands out "end" until Restart(), which drops whatever was filled
// ahead and begins again. An error is handed out from then on.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mlperf::datasets {

class AheadQueue {
 public:
  struct Hooks {
    std::function<void()> thread_start;  // first, on the producer's thread (a CUDA device)
    // Fills slot `slot`; false: the pass is over and the slot holds nothing.
    std::function<absl::StatusOr<bool>(int slot)> fill;
    // Begins a new pass; runs on the consumer's thread while the producer waits.
    std::function<void()> restart;
  };

  // depth >= 1 slots are filled ahead of the consumer's. wait_for_restart:
  // nothing is filled before the first Restart() (validation, whose passes
  // begin there), and Next() before it is an error.
  AheadQueue(int depth, Hooks hooks, bool wait_for_restart = false);
  ~AheadQueue();
  AheadQueue(const AheadQueue&) = delete;
  AheadQueue& operator=(const AheadQueue&) = delete;

  int slots() const { return static_cast<int>(slots_.size()); }
  // Releases the slot handed out last and returns the next one, or nullopt at
  // the end of a pass.
  absl::StatusOr<std::optional<int>> Next();
  void Restart();

 private:
  struct Slot {
    bool ready = false;  // filled, and not yet released by the consumer
    bool end = false;
    absl::Status status;
  };
  void Produce();

  Hooks hooks_;
  std::vector<Slot> slots_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t filled_ = 0, taken_ = 0;
  bool holding_ = false;  // the consumer holds slot (taken_ - 1)
  bool waiting_;          // for the first Restart()
  bool busy_ = false, paused_ = false, ended_, stop_ = false;
  std::thread thread_;
};

}  // namespace mlperf::datasets
