// Images/s per GPU of the full ResNet-50 v1.5 training step (forward,
// backward, LARS) on one CUDA device, against PyTorch's torchvision resnet50
// on the same device in the same run (bench/resnet/resnet_gpu_torch_bench.py:
// AMP bf16 and fp32, channels_last, cudnn.benchmark). Timing: CUDA events
// on the ops stream around each step, after warm-up, median of the repeats;
// input on the device (one upload, then the same batch), Philox data, never
// zeros. Each layout and precision asked for (auto: each precision in the
// layout the models use for it on a GPU, fp32 NCHW, bf16/fp16 NHWC) is timed
// as steps run as queued and as steps recorded once as a CUDA graph and
// replayed (TrainerConfig::cuda_graph); last, as its search over engines
// may take long, the first of them once more with the convolution
// algorithms picked by timing ("timed algos", as cudnn.benchmark picks
// PyTorch's). Under bf16 and fp16 the convolutions and the FC layer run in
// that type on the tensor cores (fp16 with dynamic loss scaling), with the
// activations stored in that type. PyTorch's AMP bf16 line is the target.
// Then, for the first layout and precision, a per-op profile of our step: every convolution, batch
// norm (with its fused add and ReLU), pooling, the classifier and the loss of ResNet-50 timed alone
// with events at the step's shapes and storage type, summed per op kind and listed for the slowest
// single calls, and the backward time of each bottleneck read from events recorded by the model's
// gradients-ready hook during a real step.
//
//   resnet_gpu_bench [batch] [steps] [nhwc|nchw|both|auto] [precisions]
// defaults: 256 20 both fp32 (precisions: a comma list of fp32, bf16, fp16).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/gpu/step_bench.h"
#include "benchmarks/resnet/recipe.h"
#include "fmt/format.h"
#include "reference/core/arena.h"
#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/cuda/conv.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "reference/layers/conv_norm.h"
#include "reference/models/resnet.h"
#include "reference/trainer/trainer.h"

namespace mlperf::models {
namespace {

cudaStream_t Stream() { return static_cast<cudaStream_t>(ops::ComputeStream().native()); }

struct StepResult {
  double step_ms = 0;
  int64_t replayed = 0;                   // steps replayed from a recording
  std::vector<double> block_backward_ms;  // per bottleneck, last step (profile only)
};

StepResult TimeTrainingStep(core::Layout layout, int64_t batch, int steps, core::DType precision,
                            bool graph, bool profile) {
  const ResNetConfig config{.layout = layout, .device = core::Device::kCuda};
  const ops::PrecisionScope scope(precision);
  ResNet model(config, batch, /*seed=*/1);
  auto comm = dist::MakeSingleProcessCommunicator();
  const benchmarks::resnet::Recipe recipe{.base_lr = 1.0, .warmup_epochs = 1, .decay_epochs = 41};
  train::Trainer trainer(
      model, benchmarks::resnet::MakeOptimizer(recipe, model),
      benchmarks::resnet::MakeSchedule(recipe, 1000),
      {.dynamic_loss_scaling = precision == core::DType::kF16, .cuda_graph = graph}, *comm);
  std::vector<float> images(batch * model.image_elements());
  std::vector<int32_t> labels(batch);
  for (size_t i = 0; i < images.size(); ++i) images[i] = 2.0f * core::PhiloxUniform(7, 0, i) - 1.0f;
  for (size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<int32_t>(core::PhiloxBits(7, 1, i) % config.num_classes);
  // Warm-up: uploads the batch, picks cuDNN algorithms, grows scratch.
  trainer.TrainStep(model.InputBatch(images.data(), labels.data(), model.batch_size()));
  for (int i = 0; i < 3; ++i) trainer.TrainStep(models::Batch{});
  StepResult r;
  r.step_ms = bench::MedianMs(steps, [&] { trainer.TrainStep(models::Batch{}); });
  r.replayed = trainer.replayed_steps();
  if (!profile) return r;

  // Per-block backward: an event at every gradients-ready report.
  std::vector<cudaEvent_t> marks;
  model.set_gradients_ready_hook([&](int64_t) {
    cudaEvent_t e;
    BENCH_CUDA(cudaEventCreate(&e));
    BENCH_CUDA(cudaEventRecord(e, Stream()));
    marks.push_back(e);
  });
  model.ForwardTrain(nullptr, nullptr, 0.1f);
  model.Backward();
  BENCH_CUDA(cudaStreamSynchronize(Stream()));
  model.set_gradients_ready_hook(nullptr);
  // marks: after fc, after each block (last to first), after the stem.
  for (size_t i = 1; i + 1 < marks.size(); ++i) {
    float ms = 0.0f;
    BENCH_CUDA(cudaEventElapsedTime(&ms, marks[i - 1], marks[i]));
    r.block_backward_ms.push_back(ms);
  }
  for (cudaEvent_t e : marks) BENCH_CUDA(cudaEventDestroy(e));
  std::reverse(r.block_backward_ms.begin(), r.block_backward_ms.end());
  return r;
}

// Every op of the ResNet-50 step at its shapes and precision, timed alone:
// ms per step by kind of op, and each call (kind and shape) on its own.
struct Profile {
  std::map<std::string, double> by_op;
  std::vector<std::pair<std::string, double>> calls;
};

Profile OpProfile(core::Layout layout, core::DType precision, int64_t n, int repeats) {
  const ops::PrecisionScope scope(precision);
  const core::DType stored = ops::ActivationStorageType(core::Device::kCuda);
  Profile profile;
  const auto time = [&](const std::string& op, const std::string& shape, auto&& fn) {
    const double ms = bench::MedianMs(repeats, fn);
    profile.by_op[op] += ms;
    profile.calls.emplace_back(op + " " + shape, ms);
  };
  const layers::PaddingMode mode = layers::PaddingMode::kTfSame;
  struct Unit {
    ConvGeometry g;
    bool relu;
    // A bottleneck's last conv: the shortcut is added to its output, and
    // the backward adds the next block's two branches' gradients.
    bool residual = false;
  };
  std::vector<Unit> units{{Conv2d(n, 3, 224, 224, 64, 7, 7, 2, 3), true}};
  int64_t h = 56, w = 56, channels = 64;
  const int blocks[4] = {3, 4, 6, 3};
  for (int s = 0; s < 4; ++s) {
    const int64_t width = int64_t{64} << s;
    for (int b = 0; b < blocks[s]; ++b) {
      const int64_t stride = (s > 0 && b == 0) ? 2 : 1;
      const ConvGeometry g1 = layers::Conv2dPadded(n, channels, h, w, width, 1, 1, mode);
      const ConvGeometry g2 = layers::Conv2dPadded(n, width, h, w, width, 3, stride, mode);
      const ConvGeometry g3 =
          layers::Conv2dPadded(n, width, g2.out(1), g2.out(2), 4 * width, 1, 1, mode);
      units.push_back({g1, true});
      units.push_back({g2, true});
      units.push_back({g3, false, true});
      if (b == 0)
        units.push_back(
            {layers::Conv2dPadded(n, channels, h, w, 4 * width, 1, stride, mode), false});
      h = g2.out(1);
      w = g2.out(2);
      channels = 4 * width;
    }
  }
  int64_t largest = 0, largest_w = 0;
  for (const Unit& u : units) {
    largest = std::max({largest, u.g.batch * u.g.in_channels * u.g.in_spatial(),
                        u.g.batch * u.g.out_channels * u.g.out_spatial()});
    largest_w = std::max(largest_w, u.g.out_channels * u.g.in_channels * u.g.kernel_volume());
  }
  core::Arena arena(core::Device::kCuda,
                    (4 * largest + 2 * largest_w + 8 * 2048 + largest / 16 + 1024) * 4 + 65536);
  const core::Tensor bx = arena.Allocate({largest}), by = arena.Allocate({largest}),
                     bdy = arena.Allocate({largest}), bdx = arena.Allocate({largest}),
                     bw = arena.Allocate({largest_w}), bdw = arena.Allocate({largest_w});
  core::Tensor stats[6];
  for (core::Tensor& t : stats) t = arena.Allocate({2048});
  // The ReLU's mask as bits, as the model keeps it where y is stored in the
  // precision's type (layers/conv_norm.cc).
  const core::Tensor bmask = arena.Allocate({largest / 16 + 1024}, core::DType::kI32);
  // Non-zero data: a Philox fill uploaded once.
  std::vector<float> host(static_cast<size_t>(largest));
  for (size_t i = 0; i < host.size(); ++i) host[i] = core::PhiloxUniform(3, 0, i) - 0.5f;
  for (const core::Tensor& t : {bx, by, bdy, bdx})
    ops::CopyBytes(t.data(), core::Device::kCuda, host.data(), core::Device::kCpu, t.bytes());
  ops::CopyBytes(bw.data(), core::Device::kCuda, host.data(), core::Device::kCpu, bw.bytes());
  ops::Fill(stats[2], 1.0f);
  ops::Fill(stats[3], 1.0f);
  const core::Tensor none;
  for (const Unit& u : units) {
    const ConvGeometry& g = u.g;
    const core::Shape xs =
        layers::ActivationShape(layout, g.batch, g.in_channels, g.in[1], g.in[2]);
    const core::Shape ys =
        layers::ActivationShape(layout, g.batch, g.out_channels, g.out(1), g.out(2));
    const auto act = [&](const core::Tensor& b, const core::Shape& s) {
      return core::Tensor(b.data(), s, stored, core::Device::kCuda, layout);
    };
    const core::Tensor x = act(bx, xs), dx = act(bdx, xs), y = act(by, ys), dy = act(bdy, ys);
    const core::Shape wshape{g.out_channels, g.in_channels, g.kernel[1], g.kernel[2]};
    const core::Tensor wt(bw.data(), wshape, core::DType::kF32, core::Device::kCuda);
    const core::Tensor dwt(bdw.data(), wshape, core::DType::kF32, core::Device::kCuda);
    const int64_t k = g.out_channels;
    const auto stat = [&](int i) {
      return core::Tensor(stats[i].data(), {k}, core::DType::kF32, core::Device::kCuda);
    };
    const std::string shape =
        fmt::format("{}x{}/{} {}->{} at {}x{}", g.kernel[1], g.kernel[2], g.stride[1],
                    g.in_channels, g.out_channels, g.in[1], g.in[2]);
    time("conv forward", shape, [&] { ops::ConvForward(g, x, wt, y, none); });
    // The stem's input is the images, which take no gradient (models/resnet.cc).
    if (&u != &units.front())
      time("conv backward data", shape, [&] { ops::ConvBackwardData(g, dy, wt, dx, none); });
    time("conv backward weight", shape, [&] { ops::ConvBackwardWeight(g, x, dy, dwt, none); });
    // The batch norm as the model runs it (layers/conv_norm.cc): with the
    // shortcut's add and the ReLU fused; its output in bdx's memory, the
    // shortcut in bx's; the backward adds the addend (bx's memory) to dy,
    // masks dy in place and writes dz there.
    const core::Tensor out = act(bdx, ys), shortcut = u.residual ? act(bx, ys) : core::Tensor();
    const core::Tensor mask = u.relu && stored == precision
                                  ? core::Tensor(bmask.data(), {ops::ReluMaskWords(out)},
                                                 core::DType::kI32, core::Device::kCuda)
                                  : core::Tensor();
    time("bn (+ add) + relu forward", shape, [&] {
      ops::BatchNormActForwardTraining({}, u.relu, y, shortcut, stat(2), stat(0), out, stat(4),
                                       stat(5), stat(1), stat(3), mask);
    });
    time(u.residual ? "bn + add + relu backward" : "bn + relu backward", shape, [&] {
      ops::BatchNormActBackward(u.relu, y, out, dy, stat(2), stat(4), stat(5), dy, stat(0), stat(1),
                                shortcut, mask);
    });
  }
  // The stem's max pool and the global average pool, at the step's shapes.
  const ConvGeometry pool = Conv2d(n, 64, 112, 112, 64, 3, 3, 2, 1);
  const auto shaped = [&](const core::Tensor& b, int64_t c, int64_t h) {
    return core::Tensor(b.data(), layers::ActivationShape(layout, n, c, h, h), stored,
                        core::Device::kCuda, layout);
  };
  time("max pool forward", "",
       [&] { ops::MaxPoolForward(pool, shaped(bx, 64, 112), shaped(by, 64, 56)); });
  time("max pool backward", "", [&] {
    ops::MaxPoolBackward(pool, shaped(bx, 64, 112), shaped(bdy, 64, 56), shaped(bdx, 64, 112));
  });
  const core::Tensor features(by.data(), {n, 2048}, core::DType::kF32, core::Device::kCuda);
  time("global pool forward", "",
       [&] { ops::GlobalAvgPoolForward(shaped(bx, 2048, 7), features); });
  time("global pool backward", "",
       [&] { ops::GlobalAvgPoolBackward(features, shaped(bdx, 2048, 7)); });
  // The classifier and the loss (fp32 tensors, as the model keeps them).
  const auto f32 = [&](const core::Tensor& b, core::Shape shape) {
    return core::Tensor(b.data(), shape, core::DType::kF32, core::Device::kCuda);
  };
  const core::Tensor fc_w = f32(bw, {1000, 2048}), fc_dw = f32(bdw, {1000, 2048}),
                     fc_b = f32(stats[0], {1000}), fc_db = f32(stats[1], {1000}),
                     logits = f32(bdy, {n, 1000}), dlogits = f32(bdx, {n, 1000}),
                     dfeatures = f32(bx, {n, 2048}), loss = f32(stats[2], {1});
  const core::Tensor labels(stats[3].data(), {n}, core::DType::kI32, core::Device::kCuda);
  ops::ZeroBytes(labels.data(), core::Device::kCuda, labels.bytes());
  time("fc forward", "", [&] { ops::LinearForward(features, fc_w, fc_b, logits); });
  time("loss", "", [&] {
    ops::SoftmaxCrossEntropy(0.1f, static_cast<float>(n), logits, labels, loss, dlogits);
  });
  time("fc backward", "",
       [&] { ops::LinearBackward(features, fc_w, dlogits, dfeatures, fc_dw, fc_db); });
  return profile;
}

void PrintStep(const std::string& name, const StepResult& r, bool graph, int64_t batch,
               const std::map<std::string, double>& torch) {
  std::printf("  ours  %-28s %8.1f ms/step %8.1f images/s", name.c_str(), r.step_ms,
              1000.0 * batch / r.step_ms);
  for (const auto& [peer, ms] : torch) std::printf("  x%.2f vs %s", ms / r.step_ms, peer.c_str());
  if (graph && r.replayed == 0) std::printf("  (not recorded: ran as queued)");
  std::printf("\n");
}

void Run(int64_t batch, int steps, const std::string& which,
         const std::vector<core::DType>& precisions) {
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("ResNet-50 v1.5 training step on %s, batch %ld per GPU, 224x224, median of %d\n",
              prop.name, batch, steps);
  const std::map<std::string, double> torch = bench::TorchPeer(
      "bench/resnet/resnet_gpu_torch_bench.py", fmt::format("{} {}", batch, steps));
  if (torch.empty()) std::printf("  (PyTorch with CUDA not available: no peer numbers)\n");
  for (const auto& [name, ms] : torch)
    std::printf("  torch %-22s %8.1f ms/step %8.1f images/s\n", name.c_str(), ms,
                1000.0 * batch / ms);
  // The (layout, precision) pairs in order: NCHW first, or for "auto" each
  // precision in the order given and in the layout the models use for it on
  // a GPU (fp32 NCHW, bf16/fp16 NHWC).
  std::vector<std::pair<core::Layout, core::DType>> configs;
  for (core::DType precision : precisions) {
    if (which == "auto")
      configs.emplace_back(
          precision == core::DType::kF32 ? core::Layout::kNCHW : core::Layout::kNHWC, precision);
  }
  for (core::Layout layout : {core::Layout::kNCHW, core::Layout::kNHWC}) {
    for (core::DType precision : precisions) {
      if (which == "both" || (which == "nchw" && layout == core::Layout::kNCHW) ||
          (which == "nhwc" && layout == core::Layout::kNHWC))
        configs.emplace_back(layout, precision);
    }
  }
  for (size_t k = 0; k < configs.size(); ++k) {
    const auto [layout, precision] = configs[k];
    const char* layout_name = layout == core::Layout::kNHWC ? "NHWC" : "NCHW";
    StepResult profiled;
    // As queued, and recorded once and replayed.
    for (const bool graph : {false, true}) {
      const bool profile = k == 0 && !graph;
      const StepResult r = TimeTrainingStep(layout, batch, steps, precision, graph, profile);
      if (profile) profiled = r;
      PrintStep(
          fmt::format("{} {}{}", ops::PrecisionName(precision), layout_name, graph ? " graph" : ""),
          r, graph, batch, torch);
    }
    if (profiled.block_backward_ms.empty()) continue;
    const std::string what = fmt::format("{} {}", ops::PrecisionName(precision), layout_name);
    std::printf("    %s backward per bottleneck (ms):", what.c_str());
    for (double ms : profiled.block_backward_ms) std::printf(" %.1f", ms);
    std::printf("\n    per-op profile (each op alone at the step's shapes, ms per step):\n");
    double total = 0.0;
    Profile profile = OpProfile(layout, precision, batch, 5);
    for (const auto& [op, ms] : profile.by_op) total += ms;
    for (const auto& [op, ms] : profile.by_op)
      std::printf("      %-26s %8.2f  %5.1f%%\n", op.c_str(), ms, 100.0 * ms / total);
    std::printf(
        "      %-26s %8.2f (the rest of the step: LARS, the filters' and input's "
        "conversions, launch gaps)\n",
        "sum", total);
    // Where to look first: the slowest calls (a shape repeats in a stage).
    std::sort(profile.calls.begin(), profile.calls.end(),
              [](const auto& a, const auto& b) { return a.second > b.second; });
    profile.calls.resize(std::min<size_t>(profile.calls.size(), 15));
    std::printf("    the slowest single calls (ms):\n");
    for (const auto& [call, ms] : profile.calls)
      std::printf("      %-50s %7.3f\n", call.c_str(), ms);
  }
  if (configs.empty()) return;
  const auto [layout, precision] = configs[0];
  // Last, as the search over engines may take long on first use: the first
  // configuration with algorithms picked by timing (MLPERF_CUDNN_FIND=1's
  // search) rather than cuDNN's heuristics.
  const cuda::ConvAlgoSearch search = cuda::GetConvAlgoSearch();
  cuda::SetConvAlgoSearch(cuda::ConvAlgoSearch::kExhaustive);
  const StepResult r = TimeTrainingStep(layout, batch, steps, precision, true, false);
  cuda::SetConvAlgoSearch(search);
  PrintStep(fmt::format("{} {} graph timed algos", ops::PrecisionName(precision),
                        layout == core::Layout::kNHWC ? "NHWC" : "NCHW"),
            r, true, batch, torch);
}

}  // namespace
}  // namespace mlperf::models

int main(int argc, char** argv) {
  mlperf::bench::PrintLineByLine();
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 256;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  const std::string which = argc > 3 ? argv[3] : "both";
  std::vector<mlperf::core::DType> precisions;
  const bool usage_error =
      batch <= 0 || steps <= 0 || argc > 5 ||
      (which != "both" && which != "nhwc" && which != "nchw" && which != "auto") ||
      !mlperf::bench::ParsePrecisions(argc > 4 ? argv[4] : "fp32", &precisions);
  if (usage_error) {
    std::fprintf(stderr,
                 "usage: resnet_gpu_bench [batch] [steps] [nhwc|nchw|both|auto] "
                 "[fp32,bf16,fp16]\n");
    return 2;
  }
  if (!mlperf::ops::CudaAvailable()) {
    std::fprintf(stderr, "resnet_gpu_bench: no CUDA device\n");
    return 2;
  }
  mlperf::models::Run(batch, steps, which, precisions);
  return 0;
}
