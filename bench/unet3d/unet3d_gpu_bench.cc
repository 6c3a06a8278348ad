// Samples/s per GPU of the 3D U-Net training step (forward, DiceCE loss,
// backward, Nesterov SGD) at the reference's shapes (128^3 patches, batch 7 per
// GPU as in the MLPerf submissions), in each precision asked for (bf16 and
// fp16: the convolutions in that type on the tensor cores, fp16 with dynamic
// loss scaling; each once more with the activations stored in that type,
// "typed", then its per-op profile; each precision once more with the
// convolution algorithms picked by timing, "timed algos", as cudnn.benchmark
// picks PyTorch's), against the same network in PyTorch on the same device
// in the same run
// (bench/unet3d/unet3d_gpu_torch_bench.py: AMP bf16 for bf16 and fp16, fp32 for
// fp32; channels_last_3d, cudnn.benchmark). Each step ends in the loss on the
// host, so wall time per step is device time; median after two warm-up steps.
// Ours first, each line printed as it is measured (the first forward and
// backward alone, the warm-up's time, then a per-op profile with every
// convolution's line, so that a run stopped at its limit still tells where the
// time went), then the peer, then the sliding-window evaluation of 42 generated
// volumes (the validation set's count) of one preprocessed-case shape, `batch`
// windows at a time, and last the "timed algos" steps, whose search over
// engines on first use may take long.
//
//   unet3d_gpu_bench [batch] [steps] [ncdhw|ndhwc|both|auto] [D,H,W of the eval volumes]
//                    [precisions]
// defaults: 7 10 both 192,256,256 fp32 (auto: each precision in the layout
// the model takes for it on a GPU, fp32 NCDHW, bf16/fp16 NDHWC; the
// evaluation runs in each layout's first precision, with typed storage). MLPERF_PYTHON and
// MLPERF_SOURCE_DIR override the peer's interpreter and the checkout baked in at build time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/gpu/step_bench.h"
#include "benchmarks/unet3d/recipe.h"
#include "fmt/format.h"
#include "reference/core/arena.h"
#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/composite.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/cuda/conv.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "reference/layers/conv_instance_norm.h"
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

// `timed`: convolution algorithms picked by timing (MLPERF_CUDNN_FIND=1's
// search) rather than by cuDNN's heuristics.
void Train(core::Layout layout, core::DType precision, bool typed, bool timed, int64_t batch,
           int steps) {
  const ops::PrecisionScope scope(precision);
  const ops::TypedActivationsScope storage(typed);
  const cuda::ConvAlgoSearch search = cuda::GetConvAlgoSearch();
  if (timed) cuda::SetConvAlgoSearch(cuda::ConvAlgoSearch::kExhaustive);
  models::UNet3D model(Config(layout), batch, /*seed=*/1);
  const std::string name = fmt::format(
      "{} {}{}{}", ops::PrecisionName(precision), Name(layout),
      model.activation_storage() != core::DType::kF32 ? " typed" : "", timed ? " timed algos" : "");
  auto comm = dist::MakeSingleProcessCommunicator();
  const benchmarks::unet3d::Recipe recipe{.base_lr = 0.5, .warmup_epochs = 0, .weight_decay = 1e-4};
  train::Trainer trainer(model, benchmarks::unet3d::MakeOptimizer(recipe, model),
                         benchmarks::unet3d::MakeSchedule(recipe, 100),
                         {.dynamic_loss_scaling = precision == core::DType::kF16}, *comm);
  const models::OwnedBatch data = model.SyntheticBatch();
  // One forward and backward alone first, each waited for: a step too slow
  // for the stage's limit still says which half it stalls in.
  Clock::time_point phase = Clock::now();
  model.ForwardTrain(data.batch);
  std::printf("  ours  %s: first forward %.1f s", name.c_str(), Seconds(phase));
  phase = Clock::now();
  model.Backward();
  ops::Synchronize(core::Device::kCuda);
  std::printf(", first backward %.1f s\n", Seconds(phase));
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
  cuda::SetConvAlgoSearch(search);
}

// Milliseconds of `fn` on the device: one untimed run, then the median of
// `repeats`, each waited for.
template <typename Fn>
double OpMs(int repeats, Fn&& fn) {
  fn();
  ops::Synchronize(core::Device::kCuda);
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const Clock::time_point start = Clock::now();
    fn();
    ops::Synchronize(core::Device::kCuda);
    ms.push_back(1e3 * Seconds(start));
  }
  return Median(ms);
}

// Every convolution of the network at the step's shapes in `precision`
// (the activations in the model's storage type), each timed alone and
// printed as measured with the fused instance norm and ReLU on its output; then
// the transposed convolutions and concatenations; then the sums by kind.
void OpProfile(core::Layout layout, core::DType precision, int64_t n, int repeats) {
  const ops::PrecisionScope scope(precision);
  const core::DType stored = ops::ActivationStorageType(core::Device::kCuda);
  const models::UNet3DConfig c = Config(layout);
  const size_t depth = c.filters.size();
  std::vector<ConvGeometry> convs, ups;
  int64_t size = c.roi, channels = c.in_channels;
  for (size_t i = 0; i <= depth; ++i) {  // as UNet3D::Build
    const int64_t width = c.filters[std::min(i, depth - 1)], stride = i == 0 ? 1 : 2;
    convs.push_back(Conv3d(n, channels, size, size, size, width, 3, stride, 1));
    size /= stride;
    convs.push_back(Conv3d(n, width, size, size, size, width, 3, 1, 1));
    channels = width;
  }
  for (size_t j = 0; j < depth; ++j) {
    const int64_t out = c.filters[depth - 1 - j];
    ups.push_back(Conv3d(n, out, 2 * size, 2 * size, 2 * size, channels, 2, 2, 0));
    size *= 2;
    convs.push_back(Conv3d(n, 2 * out, size, size, size, out, 3, 1, 1));
    convs.push_back(Conv3d(n, out, size, size, size, out, 3, 1, 1));
    channels = out;
  }
  int64_t largest = 0, largest_w = 0;
  for (const std::vector<ConvGeometry>* list : {&convs, &ups}) {
    for (const ConvGeometry& g : *list) {
      largest = std::max({largest, g.batch * g.in_channels * g.in_spatial(),
                          g.batch * g.out_channels * g.out_spatial()});
      largest_w = std::max(largest_w, g.out_channels * g.in_channels * g.kernel_volume());
    }
  }
  core::Arena arena(
      core::Device::kCuda,
      static_cast<size_t>(4 * largest + 2 * largest_w + 8 * n * 512 + largest / 16 + 1024) * 4 +
          (1 << 20));
  const core::Tensor bx = arena.AllocateZeroed({largest}), by = arena.AllocateZeroed({largest}),
                     bdy = arena.AllocateZeroed({largest}), bdx = arena.AllocateZeroed({largest}),
                     bw = arena.AllocateZeroed({largest_w}),
                     bdw = arena.AllocateZeroed({largest_w});
  core::Tensor stats[6];
  for (core::Tensor& t : stats) t = arena.AllocateZeroed({n * 512});
  // The ReLU's mask as bits, as the model keeps it where y is stored in the
  // precision's type (layers/conv_instance_norm.cc).
  const core::Tensor bmask = arena.AllocateZeroed({largest / 16 + 1024}, core::DType::kI32);
  for (const core::Tensor& t : {bx, bdy, bw}) ops::Fill(t, 0.01f);
  ops::Fill(stats[0], 1.0f);
  const auto volume = [&](const core::Tensor& b, int64_t ch, const int64_t* s) {
    return core::Tensor(b.data(), layers::VolumeShape(layout, n, ch, s[0], s[1], s[2]), stored,
                        core::Device::kCuda, layout);
  };
  const auto first = [](const core::Tensor& b, core::Shape s) {
    return core::Tensor(b.data(), s, core::DType::kF32, core::Device::kCuda);
  };
  const core::Tensor none;
  std::map<std::string, double> kinds;
  const std::string what = fmt::format("{} {}", ops::PrecisionName(precision), Name(layout));
  std::printf("  ours  %s per-op profile (ms, each op alone):\n", what.c_str());
  for (const ConvGeometry& g : convs) {
    const int64_t out[3] = {g.out(0), g.out(1), g.out(2)};
    const core::Tensor x = volume(bx, g.in_channels, g.in), dx = volume(bdx, g.in_channels, g.in);
    const core::Tensor y = volume(by, g.out_channels, out), dy = volume(bdy, g.out_channels, out);
    const core::Tensor dz = volume(bdx, g.out_channels, out);  // the norm's input gradient
    const core::Shape ws{g.out_channels, g.in_channels, g.kernel[0], g.kernel[1], g.kernel[2]};
    const core::Tensor w = first(bw, ws), dw = first(bdw, ws);
    const core::Tensor gamma = first(stats[0], {g.out_channels}),
                       beta = first(stats[1], {g.out_channels}),
                       mean = first(stats[2], {n * g.out_channels}),
                       inv_std = first(stats[3], {n * g.out_channels}),
                       dgamma = first(stats[4], {g.out_channels}),
                       dbeta = first(stats[5], {g.out_channels});
    const double f = OpMs(repeats, [&] { ops::ConvForward(g, x, w, y, none); });
    const double bd = OpMs(repeats, [&] { ops::ConvBackwardData(g, dy, w, dx, none); });
    const double bw_ms = OpMs(repeats, [&] { ops::ConvBackwardWeight(g, x, dy, dw, none); });
    // dz holds the unit's output here; the backward masks dy in place.
    const core::Tensor mask = stored == precision
                                  ? core::Tensor(bmask.data(), {ops::ReluMaskWords(dz)},
                                                 core::DType::kI32, core::Device::kCuda)
                                  : core::Tensor();
    const double nf = OpMs(repeats, [&] {
      ops::InstanceNormReluForward(c.norm_epsilon, y, gamma, beta, dz, mean, inv_std, mask);
    });
    const double nb = OpMs(repeats, [&] {
      ops::InstanceNormReluBackward(y, dz, dy, gamma, mean, inv_std, dy, dgamma, dbeta, mask);
    });
    std::printf(
        "    conv %3ld->%3ld at %3ld^3 stride %ld: forward %7.1f, data gradient %7.1f, weight "
        "gradient %7.1f; instance norm + ReLU %6.1f / %6.1f\n",
        g.in_channels, g.out_channels, g.in[0], g.stride[0], f, bd, bw_ms, nf, nb);
    kinds["conv forward"] += f;
    kinds["conv data gradient"] += bd;
    kinds["conv weight gradient"] += bw_ms;
    kinds["instance norm + ReLU forward"] += nf;
    kinds["instance norm + ReLU backward"] += nb;
  }
  for (const ConvGeometry& g : ups) {
    // The transposed convolution reads g's output shape and writes its input's.
    const int64_t out[3] = {g.out(0), g.out(1), g.out(2)};
    const core::Tensor x = volume(bx, g.out_channels, out), dx = volume(bdx, g.out_channels, out);
    const core::Tensor y = volume(by, g.in_channels, g.in), dy = volume(bdy, g.in_channels, g.in);
    const core::Shape ws{g.out_channels, g.in_channels, 2, 2, 2};
    const core::Tensor w = first(bw, ws), dw = first(bdw, ws);
    const double f = OpMs(repeats, [&] { ops::ConvTransposeForward(g, x, w, y, none); });
    const double bd = OpMs(repeats, [&] { ops::ConvTransposeBackwardData(g, dy, w, dx, none); });
    const double bw_ms =
        OpMs(repeats, [&] { ops::ConvTransposeBackwardWeight(g, x, dy, dw, none); });
    // The skip joins the upsampled volume: [upsampled, skip] and back.
    const core::Tensor a = volume(bx, g.in_channels, g.in), b = volume(bdx, g.in_channels, g.in);
    const core::Tensor cat = volume(by, 2 * g.in_channels, g.in);
    const double cf = OpMs(repeats, [&] { ops::ConcatChannels(a, b, cat); });
    const double cb = OpMs(repeats, [&] { ops::SplitChannels(cat, a, b); });
    std::printf(
        "    transposed conv %3ld->%3ld to %3ld^3: forward %7.1f, data gradient %7.1f, weight "
        "gradient %7.1f; concat %5.1f / %5.1f\n",
        g.out_channels, g.in_channels, g.in[0], f, bd, bw_ms, cf, cb);
    kinds["transposed conv (3 directions)"] += f + bd + bw_ms;
    kinds["concat and split"] += cf + cb;
  }
  double total = 0.0;
  for (const auto& [kind, ms] : kinds) total += ms;
  for (const auto& [kind, ms] : kinds)
    std::printf("    %-32s %8.1f ms %5.1f%%\n", kind.c_str(), ms, 100.0 * ms / total);
  std::printf("    %-32s %8.1f ms\n", "summed", total);
}

// In `precision` with its typed storage, as run_closed evaluates.
void Evaluate(core::Layout layout, core::DType precision, int64_t batch,
              const std::vector<int64_t>& eval_shape) {
  const ops::PrecisionScope scope(precision);
  const ops::TypedActivationsScope storage(true);
  const models::UNet3DConfig config = Config(layout);
  models::UNet3D model(config, batch, /*seed=*/1);
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
  std::printf("  ours  %s %s evaluation of 42 volumes of %ldx%ldx%ld: %.1f s\n",
              std::string(ops::PrecisionName(precision)).c_str(), Name(layout), d, h, w,
              Seconds(start));
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
  // The evaluation's layouts, each in the first precision trained in it.
  std::vector<std::pair<core::Layout, core::DType>> evaluated, timed;
  const int n = static_cast<int>(steps);
  for (core::DType precision : precisions) {
    std::vector<core::Layout> these;
    if (which == "auto")
      these = {precision == core::DType::kF32 ? core::Layout::kNCDHW : core::Layout::kNDHWC};
    if (which == "both" || which == "ncdhw") these.push_back(core::Layout::kNCDHW);
    if (which == "both" || which == "ndhwc") these.push_back(core::Layout::kNDHWC);
    for (core::Layout layout : these) {
      Train(layout, precision, /*typed=*/false, /*timed=*/false, batch, n);
      if (precision != core::DType::kF32) Train(layout, precision, true, false, batch, n);
      OpProfile(layout, precision, batch, 1);
      timed.emplace_back(layout, precision);
      if (std::none_of(evaluated.begin(), evaluated.end(),
                       [&](const auto& e) { return e.first == layout; }))
        evaluated.emplace_back(layout, precision);
    }
  }
  for (const auto& [name, ms] :
       bench::TorchPeer("bench/unet3d/unet3d_gpu_torch_bench.py",
                        fmt::format("32,64,128,256,320 128 {} {} {}", batch, steps,
                                    argc > 5 ? argv[5] : "fp32")))
    std::printf("  torch %-24s %8.1f ms/step %8.2f samples/s\n", name.c_str(), ms,
                1000.0 * batch / ms);
  for (const auto& [layout, precision] : evaluated) Evaluate(layout, precision, batch, shape);
  // Last, as the search over engines may take long on first use.
  for (const auto& [layout, precision] : timed)
    Train(layout, precision, precision != core::DType::kF32, /*timed=*/true, batch, n);
  return 0;
}
