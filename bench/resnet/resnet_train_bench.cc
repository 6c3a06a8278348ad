// Seconds per ResNet-50 v1.5 training step (forward, backward, LARS) on the
// CPU in fp32, NCHW and NHWC, against PyTorch's resnet50 training step
// (channels_last and contiguous, same thread count) measured in the same run
// by bench/resnet/resnet_torch_bench.py (/usr/bin/python3; skipped if torch
// is missing). Also images/s of a small member (width 16, 64x64).
//
//   build-model/bin/resnet_train_bench [batch] [image] [steps] [small_batch]
// defaults: 32 224 2 32. Threads: OMP_NUM_THREADS, else all cores.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/resnet/recipe.h"
#include "fmt/format.h"
#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/models/resnet.h"
#include "reference/trainer/trainer.h"

namespace mlperf::models {
namespace {

// Median seconds of `steps` training steps after one warm-up step.
double TimeSteps(const ResNetConfig& config, int64_t batch, int steps) {
  ResNet model(config, batch, /*seed=*/1);
  auto comm = dist::MakeSingleProcessCommunicator();
  const benchmarks::resnet::Recipe recipe{.base_lr = 1.0, .warmup_epochs = 1, .decay_epochs = 41};
  train::Trainer trainer(model, benchmarks::resnet::MakeOptimizer(recipe, model),
                         benchmarks::resnet::MakeSchedule(recipe, 100), {}, *comm);
  std::vector<float> images(batch * model.image_elements());
  std::vector<int32_t> labels(batch);
  for (size_t i = 0; i < images.size(); ++i) images[i] = 2.0f * core::PhiloxUniform(7, 0, i) - 1.0f;
  for (size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<int32_t>(core::PhiloxBits(7, 1, i) % config.num_classes);
  std::vector<double> t;
  for (int s = 0; s <= steps; ++s) {
    const auto start = std::chrono::steady_clock::now();
    trainer.TrainStep(model.InputBatch(images.data(), labels.data(), model.batch_size()));
    if (s > 0)
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// PyTorch seconds per step by memory format; empty when torch is missing.
std::map<std::string, double> TorchSteps(int threads, int width, int image, int64_t batch,
                                         int steps) {
  std::map<std::string, double> out;
  const std::string cmd =
      fmt::format("/usr/bin/python3 {}/bench/resnet/resnet_torch_bench.py {} {} {} {} {} 2>&1",
                  MLPERF_SOURCE_DIR, threads, width, image, batch, steps);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  char name[64];
  double seconds;
  while (std::fscanf(pipe, "%63s %lf", name, &seconds) == 2) out[name] = seconds;
  pclose(pipe);
  return out;
}

void Run(int64_t batch, int image, int steps, int64_t small_batch) {
  const int threads = omp_get_max_threads();
  std::printf("ResNet-50 v1.5 training step, fp32, %d threads, batch %ld, %dx%d, median of %d\n",
              threads, batch, image, image, steps);
  const std::map<std::string, double> torch = TorchSteps(threads, 64, image, batch, steps);
  if (torch.empty()) std::printf("  (PyTorch not available: no peer numbers)\n");
  for (const auto& [name, s] : torch)
    std::printf("  torch %-14s %8.2f s/step  %7.2f images/s\n", name.c_str(), s, batch / s);
  for (core::Layout layout : {core::Layout::kNCHW, core::Layout::kNHWC}) {
    const char* name = layout == core::Layout::kNCHW ? "NCHW" : "NHWC";
    const double s = TimeSteps({.image_size = image, .layout = layout}, batch, steps);
    std::printf("  ours  %-14s %8.2f s/step  %7.2f images/s", name, s, batch / s);
    for (const auto& [peer, t] : torch) std::printf("  x%.2f vs %s", s / t, peer.c_str());
    std::printf("\n");
  }
  std::printf("small member: width 16, 64x64, batch %ld\n", small_batch);
  const std::map<std::string, double> small_torch = TorchSteps(threads, 16, 64, small_batch, 5);
  for (const auto& [name, s] : small_torch)
    std::printf("  torch %-14s %8.1f images/s\n", name.c_str(), small_batch / s);
  for (core::Layout layout : {core::Layout::kNCHW, core::Layout::kNHWC}) {
    const double s =
        TimeSteps({.base_width = 16, .image_size = 64, .layout = layout}, small_batch, 5);
    std::printf("  ours  %-14s %8.1f images/s\n", layout == core::Layout::kNCHW ? "NCHW" : "NHWC",
                small_batch / s);
  }
}

}  // namespace
}  // namespace mlperf::models

int main(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 32;
  const int image = argc > 2 ? std::atoi(argv[2]) : 224;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 2;
  const int64_t small_batch = argc > 4 ? std::atoll(argv[4]) : 32;
  if (batch <= 0 || image < 32 || steps <= 0 || small_batch <= 0) {
    std::fprintf(stderr, "usage: resnet_train_bench [batch] [image>=32] [steps] [small_batch]\n");
    return 2;
  }
  mlperf::models::Run(batch, image, steps, small_batch);
  return 0;
}
