// run_benchmark's own cost inside a measured window, against the smallest
// step it measures in docs/BENCHMARKS.md (inference of the small ResNet at
// batch 1), both timed in this run: the loop of TimeWindows (clock reads and
// recording a step time) around a step that does nothing, per step.
// Everything else the tool does (gathering times over ranks, statistics,
// reports) happens after the window's closing clock read.
//
//   build/bin/throughput_overhead_bench [steps]   (default 1000000)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "reference/kernels/dispatch.h"
#include "reference/models/resnet.h"
#include "throughput/timing.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 1000000;
  if (steps <= 0) {
    std::fprintf(stderr, "usage: throughput_overhead_bench [steps > 0]\n");
    return 2;
  }
  namespace tp = mlperf::throughput;
  // The loop alone: a step that only bumps a counter.
  volatile int64_t counter = 0;
  tp::TimingHooks empty{.step = [&] { counter = counter + 1; }, .now = Now};
  std::vector<double> loop_ns;
  for (int r = 0; r < 5; ++r) {
    const std::vector<tp::Window> w = tp::TimeWindows(empty, 0, steps, 1);
    loop_ns.push_back(w[0].seconds / steps * 1e9);
  }
  std::sort(loop_ns.begin(), loop_ns.end());

  // The smallest real step: small ResNet inference, batch 1, all cores.
  mlperf::ops::SetHostThreads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  mlperf::models::ResNet model(
      {.base_width = 8, .num_classes = 10, .image_size = 32, .layout = mlperf::core::Layout::kNHWC},
      1, /*seed=*/1);
  mlperf::models::OwnedBatch batch = model.SyntheticBatch();
  tp::TimingHooks real{.step = [&] { model.EvaluateBatch(batch.batch); }, .now = Now};
  const std::vector<tp::Window> w = tp::TimeWindows(real, 50, 500, 5);
  std::vector<double> step_us;
  for (const tp::Window& x : w) step_us.push_back(x.seconds / 500 * 1e6);
  std::sort(step_us.begin(), step_us.end());

  const double overhead = loop_ns[2] / 1e3 / step_us[2];
  std::printf("timing loop per step: %.1f ns (median of 5 x %d empty steps)\n", loop_ns[2], steps);
  std::printf(
      "smallest measured step (small ResNet inference, batch 1): %.1f us (median of 5 x 500)\n",
      step_us[2]);
  std::printf("overhead: %.4f%% of that step\n", 100 * overhead);
  return 0;
}
