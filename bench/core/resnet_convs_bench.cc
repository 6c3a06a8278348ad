// Time of every distinct ResNet-50 v1.5 convolution at batch 32 (forward,
// backward-data, backward-weight), channels-first and channels-last, against
// PyTorch doing the same op in the same run (contiguous and channels_last),
// plus the convolution time of one whole training step (each shape weighted
// by how often the network uses it; the stem needs no data gradient).
//
//   build-kernels/bin/core_resnet_convs_bench [--repeats N] [--batch N]
//       [--layouts nchw,nhwc] [--only NAME_PART] [--no-torch]
//
// PyTorch runs as /usr/bin/python3 bench/core/resnet_convs_torch.py; its
// columns stay empty where that is not available.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/environment.h"
#include "reference/core/philox.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/cpu/conv.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf {
namespace {

using core::Layout;
using core::Tensor;

struct Shape {
  const char* name;
  int64_t c, h, k, r, stride, pad;
  int count;  // uses in one forward pass of ResNet-50
};

// ResNet-50 v1.5 (stride in the 3x3 of each stage's first block) at 224x224.
constexpr Shape kShapes[] = {
    {"stem 7x7/2 3>64 @224", 3, 224, 64, 7, 2, 3, 1},
    {"1x1 64>64 @56", 64, 56, 64, 1, 1, 0, 1},
    {"3x3 64>64 @56", 64, 56, 64, 3, 1, 1, 3},
    {"1x1 64>256 @56", 64, 56, 256, 1, 1, 0, 4},
    {"1x1 256>64 @56", 256, 56, 64, 1, 1, 0, 2},
    {"1x1 256>128 @56", 256, 56, 128, 1, 1, 0, 1},
    {"3x3/2 128>128 @56", 128, 56, 128, 3, 2, 1, 1},
    {"1x1/2 256>512 @56", 256, 56, 512, 1, 2, 0, 1},
    {"1x1 128>512 @28", 128, 28, 512, 1, 1, 0, 4},
    {"1x1 512>128 @28", 512, 28, 128, 1, 1, 0, 3},
    {"3x3 128>128 @28", 128, 28, 128, 3, 1, 1, 3},
    {"1x1 512>256 @28", 512, 28, 256, 1, 1, 0, 1},
    {"3x3/2 256>256 @28", 256, 28, 256, 3, 2, 1, 1},
    {"1x1/2 512>1024 @28", 512, 28, 1024, 1, 2, 0, 1},
    {"1x1 256>1024 @14", 256, 14, 1024, 1, 1, 0, 6},
    {"1x1 1024>256 @14", 1024, 14, 256, 1, 1, 0, 5},
    {"3x3 256>256 @14", 256, 14, 256, 3, 1, 1, 5},
    {"1x1 1024>512 @14", 1024, 14, 512, 1, 1, 0, 1},
    {"3x3/2 512>512 @14", 512, 14, 512, 3, 2, 1, 1},
    {"1x1/2 1024>2048 @14", 1024, 14, 2048, 1, 2, 0, 1},
    {"1x1 512>2048 @7", 512, 7, 2048, 1, 1, 0, 3},
    {"1x1 2048>512 @7", 2048, 7, 512, 1, 1, 0, 2},
    {"3x3 512>512 @7", 512, 7, 512, 3, 1, 1, 2},
};

enum Pass { kForward, kBackwardData, kBackwardWeight };
constexpr const char* kPassNames[] = {"fwd", "bwd_data", "bwd_weight"};
constexpr const char* kLayoutNames[] = {"nchw", "nhwc"};

template <typename F>
double MedianSeconds(F run, int repeats) {
  run();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void FillRandom(std::vector<float>& v, uint64_t seed) {
  for (size_t i = 0; i < v.size(); ++i) v[i] = core::PhiloxUniform(seed, 0, i) - 0.5f;
}

// Ours: one pass of one shape in one layout.
double TimeOurs(const ConvGeometry& g, Pass pass, bool channels_last, int repeats) {
  const Layout layout = channels_last ? Layout::kNHWC : Layout::kNCHW;
  const int64_t ho = g.out(1), wo = g.out(2);
  std::vector<float> x(g.batch * g.in_channels * g.in_spatial());
  std::vector<float> w(g.out_channels * g.in_channels * g.kernel_volume());
  std::vector<float> y(g.batch * g.out_channels * g.out_spatial());
  std::vector<float> ws(cpu::ConvWorkspaceElements(g, layout) + 1);
  FillRandom(x, 1);
  FillRandom(w, 2);
  FillRandom(y, 3);
  const core::Shape xs = channels_last ? core::Shape{g.batch, g.in[1], g.in[2], g.in_channels}
                                       : core::Shape{g.batch, g.in_channels, g.in[1], g.in[2]};
  const core::Shape ys = channels_last ? core::Shape{g.batch, ho, wo, g.out_channels}
                                       : core::Shape{g.batch, g.out_channels, ho, wo};
  const Tensor tx(x.data(), xs, core::DType::kF32, core::Device::kCpu, layout);
  const Tensor ty(y.data(), ys, core::DType::kF32, core::Device::kCpu, layout);
  const Tensor tw(w.data(), {static_cast<int64_t>(w.size())}, core::DType::kF32);
  const Tensor tws(ws.data(), {static_cast<int64_t>(ws.size())}, core::DType::kF32);
  switch (pass) {
    case kForward:
      return MedianSeconds([&] { cpu::ConvForward(g, tx, tw, ty, tws); }, repeats);
    case kBackwardData:
      return MedianSeconds([&] { cpu::ConvBackwardData(g, ty, tw, tx, tws); }, repeats);
    case kBackwardWeight:
      return MedianSeconds([&] { cpu::ConvBackwardWeight(g, tx, ty, tw, tws); }, repeats);
  }
  return -1;
}

// PyTorch as a child process that times one case per request line, so each
// of our measurements sits right next to PyTorch's for the same op (this
// machine is shared: load drifts over a run, interleaving keeps ratios fair).
class TorchPeer {
 public:
  explicit TorchPeer(int repeats) {
    if (repeats <= 0) return;
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) return;
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0) return;
    if (pipe(from_child) != 0) return;
    const char* threads = base::GetEnv("OMP_NUM_THREADS");
    const std::string threads_arg = threads ? threads : "2", repeats_arg = std::to_string(repeats);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      close(to_child[1]);
      close(from_child[0]);
      execl("/usr/bin/python3", "python3", MLPERF_SOURCE_DIR "/bench/core/resnet_convs_torch.py",
            threads_arg.c_str(), repeats_arg.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    to_ = fdopen(to_child[1], "w");
    from_ = fdopen(from_child[0], "r");
  }
  ~TorchPeer() {
    if (to_) std::fclose(to_);
    if (from_) std::fclose(from_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  // Median seconds of the case, or -1 without PyTorch.
  double Time(const std::string& line) {
    if (!to_ || !from_) return -1;
    std::fprintf(to_, "%s\n", line.c_str());
    std::fflush(to_);
    double s = -1;
    if (std::fscanf(from_, "%lf", &s) != 1) s = -1;
    return s;
  }

 private:
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

int Main(int argc, char** argv) {
  int repeats = 3;
  int64_t batch = 32;
  bool torch = true, layouts[2] = {true, true};
  std::string only;  // run only the shapes whose name contains this
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--repeats") == 0 && has_value) {
      repeats = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--batch") == 0 && has_value) {
      batch = std::atoll(argv[++i]);
    } else if (std::strcmp(argv[i], "--layouts") == 0 && has_value) {
      const std::string v = argv[++i];
      layouts[0] = v.find("nchw") != std::string::npos;
      layouts[1] = v.find("nhwc") != std::string::npos;
    } else if (std::strcmp(argv[i], "--only") == 0 && has_value) {
      only = argv[++i];
    } else if (std::strcmp(argv[i], "--no-torch") == 0) {
      torch = false;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--repeats N] [--batch N] [--layouts nchw,nhwc] [--only NAME_PART]"
                   " [--no-torch]\n",
                   argv[0]);
      return 2;
    }
  }

  struct Row {
    const Shape* shape;
    Pass pass;
    int layout;
    double flops, ours, torch;
  };
  std::vector<Row> rows;
  TorchPeer peer(torch ? repeats : 0);
  for (const Shape& s : kShapes) {
    if (std::string(s.name).find(only) == std::string::npos) continue;
    for (int pass = kForward; pass <= kBackwardWeight; ++pass)
      for (int layout = 0; layout < 2; ++layout) {
        if (!layouts[layout]) continue;
        const ConvGeometry g = Conv2d(batch, s.c, s.h, s.h, s.k, s.r, s.r, s.stride, s.pad);
        const double flops = 2.0 * batch * g.out_spatial() * s.k * s.c * s.r * s.r;
        const double ours = TimeOurs(g, static_cast<Pass>(pass), layout == 1, repeats);
        char c[160];
        std::snprintf(c, sizeof(c), "%ld %ld %ld %ld %ld %ld %ld %ld %s %s",
                      static_cast<long>(batch), static_cast<long>(s.c), static_cast<long>(s.h),
                      static_cast<long>(s.h), static_cast<long>(s.k), static_cast<long>(s.r),
                      static_cast<long>(s.stride), static_cast<long>(s.pad), kPassNames[pass],
                      kLayoutNames[layout]);
        const double theirs = torch ? peer.Time(c) : -1.0;
        rows.push_back({&s, static_cast<Pass>(pass), layout, flops, ours, theirs});
        std::fprintf(stderr, "  %-22s %-10s %s ours %8.2f ms, torch %8.2f ms\n", s.name,
                     kPassNames[pass], kLayoutNames[layout], ours * 1e3, theirs * 1e3);
      }
  }

  std::printf("batch %ld, fp32, median of %d after a warm-up; GFLOP/s; ratio = ours / PyTorch\n",
              static_cast<long>(batch), repeats);
  std::printf("%-22s %-10s %-5s %9s %9s %9s %7s\n", "conv", "pass", "layout", "ms", "GFLOP/s",
              "torch", "ratio");
  double step_ours[2] = {0, 0}, step_torch[2] = {0, 0}, step_flops = 0;
  for (const Row& r : rows) {
    const double gf = r.flops / r.ours * 1e-9;
    const double tgf = r.torch > 0 ? r.flops / r.torch * 1e-9 : 0.0;
    std::printf("%-22s %-10s %-5s %9.2f %9.1f %9.1f %7.2f\n", r.shape->name, kPassNames[r.pass],
                kLayoutNames[r.layout], r.ours * 1e3, gf, tgf, tgf > 0 ? gf / tgf : 0.0);
    // The stem's input is the image: training never needs its data gradient.
    const bool in_step = !(r.pass == kBackwardData && r.shape == &kShapes[0]);
    if (!in_step) continue;
    step_ours[r.layout] += r.shape->count * r.ours;
    step_torch[r.layout] += r.shape->count * (r.torch > 0 ? r.torch : 0.0);
    if (r.layout == (layouts[0] ? 0 : 1)) step_flops += r.shape->count * r.flops;
  }
  std::printf("\nAll convolutions of one training step (%.1f GFLOP):\n", step_flops * 1e-9);
  for (int layout = 0; layout < 2; ++layout) {
    if (!layouts[layout]) continue;
    std::printf(
        "  %s: ours %.3f s (%.1f GFLOP/s), PyTorch %.3f s, ratio %.2f\n", kLayoutNames[layout],
        step_ours[layout], step_flops / step_ours[layout] * 1e-9, step_torch[layout],
        step_ours[layout] > 0 && step_torch[layout] > 0 ? step_torch[layout] / step_ours[layout]
                                                        : 0.0);
  }
  std::printf("(ratio here = PyTorch time / our time: above 1 means ours is faster)\n");
  return 0;
}

}  // namespace
}  // namespace mlperf

int main(int argc, char** argv) { return mlperf::Main(argc, argv); }
