// RetinaNet's training step, ours against torchvision's in the same run
// (bench/retinanet/retinanet_torch_bench.py under /usr/bin/python3):
//
//   retinanet_step_bench [image] [batch] [steps] [--cuda]
//       the reference's widths (ResNeXt50-32x4d with frozen batch norms,
//       layer2-4 training, FPN 256, 264 classes): forward, loss and backward
//       of random images with two boxes each; the median of `steps` after one
//       warm-up (defaults 384 2 3). On the CPU in fp32; with --cuda on the
//       GPU in bf16 against torchvision under AMP (bf16, channels_last).
//
// --no-torch skips the peer; --im2col also times our CPU step with
// Winograd's 3x3 path switched off (conv_winograd.h). Threads:
// OMP_NUM_THREADS (the peer gets the same).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/environment.h"
#include "fmt/format.h"
#include "reference/kernels/cpu/conv_winograd.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "reference/models/retinanet.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

using namespace mlperf;

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bool torch = true, im2col = false, cuda = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-torch") == 0) {
      torch = false;
    } else if (std::strcmp(argv[i], "--im2col") == 0) {
      im2col = true;
    } else if (std::strcmp(argv[i], "--cuda") == 0) {
      cuda = true;
    } else {
      args.emplace_back(argv[i]);
    }
  }
  const int64_t image = args.size() > 0 ? std::stoll(args[0]) : 384;
  const int64_t batch = args.size() > 1 ? std::stoll(args[1]) : 2;
  const int steps = args.size() > 2 ? std::stoi(args[2]) : 3;
  if (cuda && !ops::CudaAvailable()) {
    std::fprintf(stderr, "retinanet_step_bench: --cuda: no CUDA device\n");
    return 2;
  }
  const core::Device device = cuda ? core::Device::kCuda : core::Device::kCpu;
  const ops::PrecisionScope precision(cuda ? core::DType::kBF16 : core::DType::kF32);
  models::RetinaNetConfig config;
  config.backbone.image_size = image;
  config.max_boxes = 2;
  config.device = device;
  models::RetinaNet model(config, batch, 1);
  models::OwnedBatch owned;
  const core::Tensor images = owned.Add({batch, 3, image, image}, core::DType::kF32);
  const core::Tensor boxes = owned.Add({batch, 2, 4}, core::DType::kF32);
  const core::Tensor labels = owned.Add({batch, 2}, core::DType::kI32);
  for (int64_t i = 0; i < images.numel(); ++i)
    images.f32()[i] = static_cast<float>((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  const float box[2][4] = {{10, 20, 200, 180}, {100, 120, 300, 330}};
  for (int64_t i = 0; i < batch; ++i)
    for (int j = 0; j < 2; ++j) {
      std::copy(box[j], box[j] + 4, boxes.f32() + (i * 2 + j) * 4);
      labels.as<int32_t>()[i * 2 + j] = j == 0 ? 3 : 7;
    }
  owned.batch.count = batch;
  auto median_step = [&] {
    std::vector<double> times;
    for (int step = 0; step <= steps; ++step) {
      const auto start = std::chrono::steady_clock::now();
      model.ForwardTrain(owned.batch);
      model.Backward();
      ops::Synchronize(device);
      if (step > 0)
        times.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  const double ours = median_step();
  fmt::print(
      "RetinaNet step, {} x {}, batch {}, {}\n", image, image, batch,
      cuda ? std::string("GPU, bf16") : fmt::format("{} threads, fp32", omp_get_max_threads()));
  fmt::print("ours (channels-first)      {:8.3f} s\n", ours);
  if (im2col && !cuda) {
    cpu::winograd::SetEnabled(false);
    const double plain = median_step();
    cpu::winograd::SetEnabled(true);
    fmt::print("ours without Winograd      {:8.3f} s  (Winograd {:.2f}x)\n", plain, plain / ours);
  }
  if (!torch) return 0;
  // MLPERF_PYTHON and MLPERF_SOURCE_DIR override the interpreter and the
  // checkout baked in at build time (scripts/gpu_check.sh's bundle).
  const char* python = base::GetEnv("MLPERF_PYTHON");
  const char* source = base::GetEnv("MLPERF_SOURCE_DIR");
  const std::string cmd =
      fmt::format("{} {}/bench/retinanet/retinanet_torch_bench.py {} {} {} {}{}",
                  python != nullptr ? python : "/usr/bin/python3",
                  source != nullptr ? source : MLPERF_SOURCE_DIR, omp_get_max_threads(), image,
                  batch, steps, cuda ? " cuda" : "");
  FILE* peer = popen(cmd.c_str(), "r");
  char name[64];
  double seconds = 0;
  while (peer != nullptr && std::fscanf(peer, "%63s %lf", name, &seconds) == 2)
    fmt::print("torchvision ({:13s}) {:8.3f} s  (ours {:.2f}x)\n", name, seconds, seconds / ours);
  if (peer == nullptr || pclose(peer) != 0) {
    std::fprintf(stderr, "retinanet_step_bench: the peer failed: %s\n", cmd.c_str());
    return 1;
  }
  return 0;
}
