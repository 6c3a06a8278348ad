// Seconds per 3D U-Net training step (forward, DiceCE loss, backward,
// Nesterov SGD) on the CPU, ours against PyTorch's on the same shapes in the
// same run (bench/unet3d/unet3d_torch_bench.py under /usr/bin/python3).
//
//   unet3d_train_bench [filters] [roi] [batch] [steps] [--ncdhw] [--bf16] [--no-torch]
// defaults: 32,64,128,256,320 64 1 5, NDHWC (--ncdhw: NCDHW; the peer runs in
// the same memory format), fp32 (--bf16: bf16 compute precision; the peer
// under torch.autocast). Threads: OMP_NUM_THREADS, else all cores.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "benchmarks/unet3d/recipe.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/precision.h"
#include "reference/models/unet3d.h"
#include "reference/trainer/trainer.h"

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mlperf;
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool with_torch = std::find(args.begin(), args.end(), "--no-torch") == args.end();
  std::erase(args, "--no-torch");
  const bool ncdhw = std::find(args.begin(), args.end(), "--ncdhw") != args.end();
  std::erase(args, "--ncdhw");
  const bool bf16 = std::find(args.begin(), args.end(), "--bf16") != args.end();
  std::erase(args, "--bf16");
  models::UNet3DConfig config;
  config.layout = ncdhw ? core::Layout::kNCDHW : core::Layout::kNDHWC;
  config.filters.clear();
  bool filters_ok = true;
  for (absl::string_view f : absl::StrSplit(args.size() > 0 ? args[0] : "32,64,128,256,320", ',')) {
    int64_t v = 0;
    filters_ok = filters_ok && absl::SimpleAtoi(f, &v) && v > 0;
    config.filters.push_back(v);
  }
  config.roi = args.size() > 1 ? std::atoll(args[1].c_str()) : 64;
  const int64_t batch = args.size() > 2 ? std::atoll(args[2].c_str()) : 1;
  const int steps = args.size() > 3 ? std::atoi(args[3].c_str()) : 5;
  const int64_t divisor = int64_t{1} << config.filters.size();
  if (!filters_ok || config.roi <= 0 || config.roi % divisor != 0 || batch <= 0 || steps <= 0) {
    std::fprintf(stderr,
                 "usage: unet3d_train_bench [filters,...] [roi, a multiple of 2^levels] [batch] "
                 "[steps] [--ncdhw] [--bf16] [--no-torch]\n");
    return 2;
  }
  const ops::PrecisionScope precision(bf16 ? core::DType::kBF16 : core::DType::kF32);
  models::UNet3D model(config, batch, /*seed=*/1);
  auto comm = dist::MakeSingleProcessCommunicator();
  const benchmarks::unet3d::Recipe recipe{.base_lr = 0.5, .warmup_epochs = 0, .weight_decay = 1e-4};
  train::Trainer trainer(model, benchmarks::unet3d::MakeOptimizer(recipe, model),
                         benchmarks::unet3d::MakeSchedule(recipe, 100), {}, *comm);
  const models::OwnedBatch data = model.SyntheticBatch();
  std::vector<double> seconds;
  for (int s = 0; s <= steps; ++s) {
    const auto start = std::chrono::steady_clock::now();
    const float loss = trainer.TrainStep(data.batch);
    const double sec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("step %d: %.4f s  loss %.5f\n", s, sec, loss);
    if (s > 0) seconds.push_back(sec);  // step 0 warms caches and the allocator
  }
  const double ours = Median(seconds);
  const char* layout = ncdhw ? "ncdhw" : "ndhwc";
  const std::string shape =
      fmt::format("filters {} roi {}^3 batch {} {} {}, {} threads", fmt::join(config.filters, "-"),
                  config.roi, batch, layout, bf16 ? "bf16" : "fp32", omp_get_max_threads());
  std::printf("ours:    %s: median %.4f s/step, %.2f volumes/s\n", shape.c_str(), ours,
              batch / ours);
  if (!with_torch) return 0;
  const std::string command =
      fmt::format("/usr/bin/python3 {}/bench/unet3d/unet3d_torch_bench.py {} {} {} {} {} {} {}",
                  MLPERF_SOURCE_DIR, fmt::join(config.filters, ","), config.roi, batch, steps,
                  omp_get_max_threads(), layout, bf16 ? "bf16" : "fp32");
  FILE* pipe = popen(command.c_str(), "r");
  double torch_seconds = 0;
  if (pipe == nullptr || std::fscanf(pipe, "%lf", &torch_seconds) != 1 || pclose(pipe) != 0) {
    std::fprintf(stderr, "unet3d_train_bench: the PyTorch peer failed (%s)\n", command.c_str());
    return 1;
  }
  std::printf("PyTorch: %s: median %.4f s/step, %.2f volumes/s\n", shape.c_str(), torch_seconds,
              batch / torch_seconds);
  std::printf("ratio:   PyTorch time / ours = %.2fx\n", torch_seconds / ours);
  return 0;
}
