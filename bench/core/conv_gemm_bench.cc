// CPU GFLOP/s of the GEMM and convolution paths of the training core, against
// the BLAS peak (a large square SGEMM) and against PyTorch on the same ops in
// the same run (/usr/bin/python3 with python3-torch; skipped if absent); the
// bf16 GEMMs (AMX where the CPU has it) against PyTorch's bf16 matmul.
//
//   build-core/bin/core_conv_gemm_bench [--repeats N]
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
#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/cpu/gemm_amx.h"

namespace mlperf {
namespace {

using core::Tensor;

struct Result {
  double seconds;
  double gflops;
};

// Median of `repeats` timed runs after one warm-up run.
template <typename F>
Result Time(F run, double flops, int repeats) {
  run();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  const double median = t[t.size() / 2];
  return {median, flops / median * 1e-9};
}

std::vector<float> Random(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = core::PhiloxUniform(seed, 0, i) - 0.5f;
  return v;
}

struct ConvCase {
  const char* name;
  ConvGeometry g;
};

// PyTorch on the same shapes, timed the same way (median after a warm-up).
double TorchGflops(const std::string& op, int repeats) {
  const std::string script =
      "import sys,time,torch\n"
      "torch.set_num_threads(int(sys.argv[1]))\n"
      "op=sys.argv[2]\n"
      "a=[int(x) for x in sys.argv[3:]]\n"
      "if op=='gemm':\n"
      "  m,n,k=a; A=torch.rand(m,k)-.5; B=torch.rand(k,n)-.5; f=lambda: A@B; fl=2*m*n*k\n"
      "elif op=='bgemm':\n"
      "  m,n,k,ta,tb=a; bf=torch.bfloat16\n"
      "  A=(torch.rand(k,m)-.5).to(bf).t() if ta else (torch.rand(m,k)-.5).to(bf)\n"
      "  B=(torch.rand(n,k)-.5).to(bf).t() if tb else (torch.rand(k,n)-.5).to(bf)\n"
      "  f=lambda: A@B; fl=2*m*n*k\n"
      "else:\n"
      "  n,c,h,w,kk,r,s,p=a; x=torch.rand(n,c,h,w)-.5; wt=torch.rand(kk,c,r,r)-.5\n"
      "  f=lambda: torch.nn.functional.conv2d(x,wt,stride=s,padding=p)\n"
      "  y=f(); fl=2*y.numel()*c*r*r\n"
      "f(); t=[]\n"
      "for _ in range(" +
      std::to_string(repeats) +
      "):\n"
      "  s0=time.perf_counter(); f(); t.append(time.perf_counter()-s0)\n"
      "t.sort(); print(fl/t[len(t)//2]*1e-9)\n";
  FILE* f = std::fopen("/tmp/mlperf_bench_torch.py", "w");
  if (!f) return -1;
  std::fputs(script.c_str(), f);
  std::fclose(f);
  const char* threads = base::GetEnv("OMP_NUM_THREADS");
  const std::string cmd = std::string("/usr/bin/python3 /tmp/mlperf_bench_torch.py ") +
                          (threads ? threads : "2") + " " + op + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  double gflops = -1;
  if (std::fscanf(p, "%lf", &gflops) != 1) gflops = -1;
  pclose(p);
  return gflops;
}

int Main(int argc, char** argv) {
  int repeats = 10;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::atoi(argv[i + 1]);
  const bool have_torch = std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;

  // BLAS peak: a large square SGEMM.
  const int64_t big = 2048;
  std::vector<float> a = Random(big * big, 1), b = Random(big * big, 2), c(big * big);
  const Result peak = Time(
      [&] { cpu::Gemm(false, false, big, big, big, 1.0f, a.data(), b.data(), 0.0f, c.data()); },
      2.0 * big * big * big, std::max(3, repeats / 3));
  std::printf("%-34s %9s %9s %8s %9s %8s\n", "op", "ms", "GFLOP/s", "of peak", "torch", "ratio");
  std::printf("%-34s %9.2f %9.1f %7.0f%% %9s %8s\n", "sgemm 2048^3 (BLAS peak)", peak.seconds * 1e3,
              peak.gflops, 100.0, "", "");

  const int64_t gemm_shapes[][3] = {{256, 1000, 2048}, {4096, 1024, 1024}, {512, 4096, 1024}};
  for (const auto& s : gemm_shapes) {
    std::vector<float> x = Random(s[0] * s[2], 3), w = Random(s[2] * s[1], 4), y(s[0] * s[1]);
    const Result r = Time(
        [&] {
          cpu::Gemm(false, false, s[0], s[1], s[2], 1.0f, x.data(), w.data(), 0.0f, y.data());
        },
        2.0 * s[0] * s[1] * s[2], repeats);
    const double torch = have_torch
                             ? TorchGflops("gemm " + std::to_string(s[0]) + " " +
                                               std::to_string(s[1]) + " " + std::to_string(s[2]),
                                           repeats)
                             : -1;
    char name[64];
    std::snprintf(name, sizeof(name), "gemm %ldx%ldx%ld", static_cast<long>(s[0]),
                  static_cast<long>(s[1]), static_cast<long>(s[2]));
    std::printf("%-34s %9.2f %9.1f %7.0f%% %9.1f %8.2f\n", name, r.seconds * 1e3, r.gflops,
                100.0 * r.gflops / peak.gflops, torch, torch > 0 ? r.gflops / torch : 0.0);
  }

  // bf16 GEMMs (bf16 compute precision: AMX where the CPU has it, else fp32
  // OpenBLAS) from fp32 operands, against PyTorch's bf16 matmul on bf16
  // tensors. BERT-Large's feed-forward at 512 tokens: forward (NT), the
  // input gradient (NN) and the weight gradient (TN).
  std::printf("bf16 GEMMs: %s\n", cpu::AmxBf16Available() ? "AMX tiles" : "no AMX, fp32 OpenBLAS");
  struct Bf16Case {
    int64_t m, n, k;
    bool trans_a, trans_b;
  };
  const Bf16Case bf16_cases[] = {{2048, 2048, 2048, false, false},
                                 {512, 4096, 1024, false, true},
                                 {512, 1024, 4096, false, false},
                                 {4096, 1024, 512, true, false}};
  for (const Bf16Case& s : bf16_cases) {
    std::vector<float> x = Random(s.m * s.k, 3), w = Random(s.k * s.n, 4), y(s.m * s.n);
    cpu::SetBf16Operands(true);
    const Result r = Time(
        [&] {
          cpu::Gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, x.data(), w.data(), 0.0f, y.data());
        },
        2.0 * s.m * s.n * s.k, repeats);
    cpu::SetBf16Operands(false);
    char args[96], name[64];
    std::snprintf(args, sizeof(args), "bgemm %ld %ld %ld %d %d", static_cast<long>(s.m),
                  static_cast<long>(s.n), static_cast<long>(s.k), s.trans_a, s.trans_b);
    std::snprintf(name, sizeof(name), "bf16 gemm %ldx%ldx%ld %c%c", static_cast<long>(s.m),
                  static_cast<long>(s.n), static_cast<long>(s.k), s.trans_a ? 'T' : 'N',
                  s.trans_b ? 'T' : 'N');
    const double torch = have_torch ? TorchGflops(args, repeats) : -1;
    std::printf("%-34s %9.2f %9.1f %7.0f%% %9.1f %8.2f\n", name, r.seconds * 1e3, r.gflops,
                100.0 * r.gflops / peak.gflops, torch, torch > 0 ? r.gflops / torch : 0.0);
  }

  // ResNet-50 convolutions at batch 8 (forward), one per kind of layer.
  const ConvCase convs[] = {
      {"conv 7x7/2 3->64 @224 (stem)", Conv2d(8, 3, 224, 224, 64, 7, 7, 2, 3)},
      {"conv 3x3 64->64 @56", Conv2d(8, 64, 56, 56, 64, 3, 3, 1, 1)},
      {"conv 1x1 256->64 @56", Conv2d(8, 256, 56, 56, 64, 1, 1, 1, 0)},
      {"conv 3x3/2 256->256 @28", Conv2d(8, 256, 28, 28, 256, 3, 3, 2, 1)}};
  for (const ConvCase& cc : convs) {
    const ConvGeometry& g = cc.g;
    std::vector<float> x = Random(g.batch * g.in_channels * g.in_spatial(), 5);
    std::vector<float> w = Random(g.out_channels * g.in_channels * g.kernel_volume(), 6);
    std::vector<float> y(g.batch * g.out_channels * g.out_spatial());
    std::vector<float> ws(cpu::ConvWorkspaceElements(g) + 1);
    const Tensor tx(x.data(), {static_cast<int64_t>(x.size())}, core::DType::kF32);
    const Tensor tw(w.data(), {static_cast<int64_t>(w.size())}, core::DType::kF32);
    const Tensor ty(y.data(), {static_cast<int64_t>(y.size())}, core::DType::kF32);
    const Tensor tws(ws.data(), {static_cast<int64_t>(ws.size())}, core::DType::kF32);
    const double flops = 2.0 * y.size() * g.in_channels * g.kernel_volume();
    const Result r = Time([&] { cpu::ConvForward(g, tx, tw, ty, tws); }, flops, repeats);
    char args[128];
    std::snprintf(args, sizeof(args), "conv %ld %ld %ld %ld %ld %ld %ld %ld",
                  static_cast<long>(g.batch), static_cast<long>(g.in_channels),
                  static_cast<long>(g.in[1]), static_cast<long>(g.in[2]),
                  static_cast<long>(g.out_channels), static_cast<long>(g.kernel[1]),
                  static_cast<long>(g.stride[1]), static_cast<long>(g.pad_begin[1]));
    const double torch = have_torch ? TorchGflops(args, repeats) : -1;
    std::printf("%-34s %9.2f %9.1f %7.0f%% %9.1f %8.2f\n", cc.name, r.seconds * 1e3, r.gflops,
                100.0 * r.gflops / peak.gflops, torch, torch > 0 ? r.gflops / torch : 0.0);
  }
  if (!have_torch) std::printf("(PyTorch not found for /usr/bin/python3: torch columns empty)\n");
  return 0;
}

}  // namespace
}  // namespace mlperf

int main(int argc, char** argv) { return mlperf::Main(argc, argv); }
