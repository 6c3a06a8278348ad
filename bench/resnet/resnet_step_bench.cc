// Seconds per training step of our ResNet alone (no PyTorch peer), for
// profiling under `perf record` and quick A/B runs; resnet_train_bench is the
// program that reports ratios against PyTorch.
//
//   resnet_step_bench [nchw|nhwc] [batch] [image] [steps] [base_width]
// defaults: nhwc 32 224 3 64. Threads: OMP_NUM_THREADS, else all cores.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "benchmarks/resnet/recipe.h"
#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/models/resnet.h"
#include "reference/trainer/trainer.h"

int main(int argc, char** argv) {
  using namespace mlperf;
  const std::string layout_name = argc > 1 ? argv[1] : "nhwc";
  const int64_t batch = argc > 2 ? std::atoll(argv[2]) : 32;
  const int image = argc > 3 ? std::atoi(argv[3]) : 224;
  const int steps = argc > 4 ? std::atoi(argv[4]) : 3;
  const int64_t width = argc > 5 ? std::atoll(argv[5]) : 64;
  if ((layout_name != "nchw" && layout_name != "nhwc") || batch <= 0 || image < 32 || steps <= 0 ||
      width <= 0) {
    std::fprintf(stderr,
                 "usage: resnet_step_bench [nchw|nhwc] [batch] [image>=32] [steps] [base_width]\n");
    return 2;
  }
  const models::ResNetConfig config{
      .base_width = width,
      .image_size = image,
      .layout = layout_name == "nhwc" ? core::Layout::kNHWC : core::Layout::kNCHW};
  models::ResNet model(config, batch, /*seed=*/1);
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
    const float loss =
        trainer.TrainStep(model.InputBatch(images.data(), labels.data(), model.batch_size()));
    const double sec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("step %d: %.3f s  loss %.5f\n", s, sec, loss);
    if (s > 0) t.push_back(sec);
  }
  std::sort(t.begin(), t.end());
  std::printf("%s batch %ld %dx%d width %ld, %d threads: median %.3f s/step, %.1f images/s\n",
              layout_name.c_str(), batch, image, image, width, omp_get_max_threads(),
              t[t.size() / 2], batch / t[t.size() / 2]);
  return 0;
}
