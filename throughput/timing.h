// The measurement loop, apart from any model: warm-up steps, then windows of
// timed steps, each between two meetings of every process, so that a
// window's wall time covers every process's steps. The step, the meeting and
// the clock are passed in: the tool passes the model's step, a barrier and
// the steady clock; the tests pass a recorded timeline.
#pragma once

#include <functional>
#include <vector>

namespace mlperf::throughput {

struct TimingHooks {
  // One step (a training step or one inference batch); returns when its
  // result is on the host, so that the clock after it has seen it finish.
  std::function<void()> step;
  // Every process meets (a barrier); may be empty for one process.
  std::function<void()> meet;
  // Seconds on a monotonic clock.
  std::function<double()> now;
  // Before the warm-up and before every window (e.g. a fresh evaluation
  // pass over the data); may be empty.
  std::function<void()> start_window;
};

struct Window {
  double seconds = 0;                // meeting to meeting, this process's clock
  std::vector<double> step_seconds;  // each timed step, this process's clock
  double start = 0;                  // now() at the first meeting
};

// `warmup` untimed steps, then `repeats` windows of `iters` timed steps.
std::vector<Window> TimeWindows(const TimingHooks& hooks, int warmup, int iters, int repeats);

}  // namespace mlperf::throughput
