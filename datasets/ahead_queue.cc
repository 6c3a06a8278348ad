#include "datasets/ahead_queue.h"

#include <utility>

namespace mlperf::datasets {

AheadQueue::AheadQueue(int depth, Hooks hooks, bool wait_for_restart)
    : hooks_(std::move(hooks)),
      slots_(static_cast<size_t>(depth < 1 ? 1 : depth) + 1),
      waiting_(wait_for_restart),
      ended_(wait_for_restart) {
  thread_ = std::thread([this] { Produce(); });
}

AheadQueue::~AheadQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void AheadQueue::Restart() {
  std::unique_lock<std::mutex> lock(mu_);
  paused_ = true;
  cv_.wait(lock, [&] { return !busy_; });
  for (Slot& s : slots_) s = Slot();
  filled_ = taken_ = 0;
  holding_ = false;
  waiting_ = ended_ = false;
  if (hooks_.restart) hooks_.restart();
  paused_ = false;
  cv_.notify_all();
}

absl::StatusOr<std::optional<int>> AheadQueue::Next() {
  std::unique_lock<std::mutex> lock(mu_);
  if (waiting_) return absl::FailedPreconditionError("no pass has begun: call StartEval() first");
  const int64_t n = static_cast<int64_t>(slots_.size());
  if (holding_) {
    slots_[static_cast<size_t>((taken_ - 1) % n)].ready = false;
    holding_ = false;
    cv_.notify_all();
  }
  const int index = static_cast<int>(taken_ % n);
  Slot& slot = slots_[static_cast<size_t>(index)];
  cv_.wait(lock, [&] { return slot.ready; });
  // An error or the end of a pass stays in its slot: later calls see it too.
  if (!slot.status.ok()) return slot.status;
  if (slot.end) return std::nullopt;
  ++taken_;
  holding_ = true;
  return index;
}

void AheadQueue::Produce() {
  if (hooks_.thread_start) hooks_.thread_start();
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t n = static_cast<int64_t>(slots_.size());
  for (;;) {
    // The next slot is free once the consumer has taken and released it.
    cv_.wait(lock, [&] {
      return stop_ || (!paused_ && !ended_ && !slots_[static_cast<size_t>(filled_ % n)].ready);
    });
    if (stop_) return;
    const int index = static_cast<int>(filled_ % n);
    busy_ = true;
    lock.unlock();
    absl::StatusOr<bool> filled = hooks_.fill(index);
    lock.lock();
    busy_ = false;
    Slot& slot = slots_[static_cast<size_t>(index)];
    slot.status = filled.ok() ? absl::OkStatus() : filled.status();
    slot.end = filled.ok() && !*filled;
    slot.ready = true;
    ++filled_;
    if (!filled.ok() || slot.end) ended_ = true;  // nothing more until Restart()
    cv_.notify_all();
  }
}

}  // namespace mlperf::datasets
