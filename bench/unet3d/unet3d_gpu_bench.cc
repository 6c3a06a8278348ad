// Samples/s per GPU of the 3D U-Net training step (forward, DiceCE loss,
// backward, Nesterov SGD) at the reference's shapes (128^3 patches, batch 7
// per GPU as in the MLPerf submissions), in each precision asked for (bf16
// and fp16: the convolutions in that type on the tensor cores, fp16 with
// dynamic loss scaling), against the same network in PyTorch on the same
// device in the same run
// (bench/unet3d/unet3d_gpu_torch_bench.py: AMP bf16 and fp32,
// channels_last_3d, cudnn.benchmark). Each step ends in the loss on the host,
// so wall time per step is device time; median after two warm-up steps.
// Ours first, each line printed as it is measured (with the warm-up's time,
// so that a run stopped at its limit still tells where the time went), then
// the peer, then the sliding-window evaluation of 42 generated volumes (the
// validation set's count) of one preprocessed-case shape, `batch` windows
// at a time.
//
//   unet3d_gpu_bench [batch] [steps] [ncdhw|ndhwc|both|auto] [D,H,W of the eval volumes]
//                    [precisions]
// defaults: 7 10 both 192,256,256 fp32 (auto: each precision in the layout
// the model takes for it on a GPU, fp32 NCDHW, bf16/fp16 NDHWC; the
// evaluation runs in fp32). MLPERF_PYTHON and MLPERF_SOURCE_DIR
// override the peer's interpreter and the checkout baked in at build time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/gpu/step_bench.h"
#include "fmt/format.h"
#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "reference/models/unet3d.h"
#include "reference/trainer/trainer.h"

namespace mlperf {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

models::UNet3DConfig Config(core::Layout layout) {
  models::UNet3DConfig config;  // the reference network, 128^3
  config.layout = layout;
  config.device = core::Device::kCuda;
  return config;
}

const char* Name(core::Layout layout) { return layout == core::Layout::kNDHWC ? "ndhwc" : "ncdhw"; }

void Train(core::Layout layout, core::DType precision, int64_t batch, int steps) {
  const ops::PrecisionScope scope(precision);
  const std::string name = fmt::format("{} {}", ops::PrecisionName(precision), Name(layout));
  models::UNet3D model(Config(layout), batch);
  model.Initialize(1);
  auto comm = dist::MakeSingleProcessCommunicator();
  train::Trainer trainer(model,
                         {.optimizer = train::OptimizerKind::kNesterov,
                          .global_batch_size = batch,
                          .base_lr = 0.5,
                          .warmup_epochs = 0,
                          .schedule = train::ScheduleKind::kUnetEpochs,
                          .steps_per_epoch = 100,
                          .dynamic_loss_scaling = precision == core::DType::kF16},
                         *comm);
  const models::OwnedBatch data = model.SyntheticBatch();
  const Clock::time_point warm = Clock::now();
  std::vector<double> seconds;
  for (int s = 0; s < steps + 2; ++s) {
    const Clock::time_point start = Clock::now();
    trainer.TrainStep(data.batch);
    if (s >= 2) seconds.push_back(Seconds(start));
    if (s == 1)
      std::printf("  ours  %s: two warm-up steps took %.1f s\n", name.c_str(), Seconds(warm));
  }
  const double step = Median(seconds);
  std::printf("  ours  %-22s %8.1f ms/step %8.2f samples/s\n", name.c_str(), 1e3 * step,
              batch / step);
}

void Evaluate(core::Layout layout, int64_t batch, const std::vector<int64_t>& eval_shape) {
  const models::UNet3DConfig config = Config(layout);
  models::UNet3D model(config, batch);
  model.Initialize(1);
  const int64_t d = eval_shape[0], h = eval_shape[1], w = eval_shape[2], voxels = d * h * w;
  std::vector<float> image(voxels);
  std::vector<int32_t> labels(voxels);
  for (int64_t i = 0; i < voxels; ++i) {
    image[i] = 2.0f * core::PhiloxUniform(9, 0, static_cast<uint64_t>(i)) - 1.0f;
    labels[i] = image[i] > 0.6f ? 2 : image[i] > 0.2f ? 1 : 0;
  }
  const core::Tensor image_t(image.data(), {1, 1, d, h, w}, core::DType::kF32);
  const core::Tensor labels_t(labels.data(), {1, d, h, w}, core::DType::kI32);
  const Clock::time_point start = Clock::now();
  for (int c = 0; c < 42; ++c) model.EvaluateCase(image_t, labels_t, {.roi = config.roi});
  std::printf("  ours  fp32 %s evaluation of 42 volumes of %ldx%ldx%ld: %.1f s\n", Name(layout), d,
              h, w, Seconds(start));
}

}  // namespace
}  // namespace mlperf

int main(int argc, char** argv) {
  mlperf::bench::PrintLineByLine();
  using namespace mlperf;
  int64_t batch = 7, steps = 10;
  std::string which = "both";
  std::vector<int64_t> shape;
  std::vector<core::DType> precisions;
  bool ok = (argc <= 1 || absl::SimpleAtoi(argv[1], &batch)) &&
            (argc <= 2 || absl::SimpleAtoi(argv[2], &steps)) && argc <= 6 &&
            bench::ParsePrecisions(argc > 5 ? argv[5] : "fp32", &precisions);
  if (argc > 3) which = argv[3];
  for (absl::string_view v : absl::StrSplit(argc > 4 ? argv[4] : "192,256,256", ',')) {
    int64_t x = 0;
    ok = ok && absl::SimpleAtoi(v, &x) && x > 0;
    shape.push_back(x);
  }
  if (!ok || batch <= 0 || steps <= 0 || shape.size() != 3 ||
      (which != "both" && which != "ncdhw" && which != "ndhwc" && which != "auto")) {
    std::fprintf(stderr,
                 "usage: unet3d_gpu_bench [batch] [steps] [ncdhw|ndhwc|both|auto] [D,H,W] "
                 "[fp32,bf16,fp16]\n");
    return 2;
  }
  if (!ops::CudaAvailable()) {
    std::fprintf(stderr, "unet3d_gpu_bench: no CUDA device\n");
    return 2;
  }
  std::printf("3D U-Net training step, reference width, 128^3, batch %ld per GPU, median of %ld\n",
              batch, steps);
  std::vector<core::Layout> layouts;
  for (core::DType precision : precisions) {
    std::vector<core::Layout> these;
    if (which == "auto")
      these = {precision == core::DType::kF32 ? core::Layout::kNCDHW : core::Layout::kNDHWC};
    if (which == "both" || which == "ncdhw") these.push_back(core::Layout::kNCDHW);
    if (which == "both" || which == "ndhwc") these.push_back(core::Layout::kNDHWC);
    for (core::Layout layout : these) {
      Train(layout, precision, batch, static_cast<int>(steps));
      if (std::find(layouts.begin(), layouts.end(), layout) == layouts.end())
        layouts.push_back(layout);
    }
  }
  for (const auto& [name, ms] :
       bench::TorchPeer("bench/unet3d/unet3d_gpu_torch_bench.py",
                        fmt::format("32,64,128,256,320 128 {} {}", batch, steps)))
    std::printf("  torch %-24s %8.1f ms/step %8.2f samples/s\n", name.c_str(), ms,
                1000.0 * batch / ms);
  for (core::Layout layout : layouts) Evaluate(layout, batch, shape);
  return 0;
}
