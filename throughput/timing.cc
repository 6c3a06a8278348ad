#include "throughput/timing.h"

namespace mlperf::throughput {

std::vector<Window> TimeWindows(const TimingHooks& hooks, int warmup, int iters, int repeats) {
  const auto meet = [&] {
    if (hooks.meet) hooks.meet();
  };
  if (hooks.start_window) hooks.start_window();
  for (int i = 0; i < warmup; ++i) hooks.step();
  std::vector<Window> windows;
  for (int r = 0; r < repeats; ++r) {
    if (r > 0 && hooks.start_window) hooks.start_window();
    Window w;
    w.step_seconds.reserve(iters);
    meet();
    w.start = hooks.now();
    double last = w.start;
    for (int i = 0; i < iters; ++i) {
      hooks.step();
      const double t = hooks.now();
      w.step_seconds.push_back(t - last);
      last = t;
    }
    meet();
    w.seconds = hooks.now() - w.start;
    windows.push_back(std::move(w));
  }
  return windows;
}

}  // namespace mlperf::throughput
