// GPU throughput of the CUDA twins on the shapes that dominate the MLPerf
// references: ResNet-50 convolutions (batch 256, NHWC, bf16/fp16; forward,
// data and weight gradients, through cuDNN's graph API as the models run
// them; with --legacy, in bf16 through its legacy API), GEMM (bf16 with fp32
// accumulation, and plain fp32), BERT-Large's FFN dense layer with its bias
// (fp32, and bf16 as its typed storage runs it; forward and backward, the
// bias in cuBLASLt's epilogue and, as linear_*_unfused, in separate kernels),
// BERT-Large attention (fp32) and the fused LAMB/LARS steps over a
// BERT-Large-sized arena. Each op: warm-up, then the median of CUDA-event
// timings; inputs are Philox random (never zeros). Prints CSV rows
//   op,shape,dtype,ms,rate,unit
// which bench/gpu/torch_peer.py joins with PyTorch's numbers on the same GPU.
//
//   build-gpu/bin/gpu_ops_bench [--repeats N] [--only SUBSTRING] [--legacy]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "reference/core/philox.h"
#include "reference/kernels/composite.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/conv.h"
#include "reference/kernels/cuda/conv_graph.h"
#include "reference/kernels/cuda/gemm.h"
#include "reference/kernels/cuda/gemm_epilogue.h"
#include "reference/kernels/cuda/linear.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/optimizer.h"

namespace mlperf {
namespace {

using core::DType;
using core::Layout;
using core::Tensor;

int g_repeats = 20;
const char* g_only = nullptr;

__global__ void FillUniform(void* p, DType t, int64_t n, uint64_t seed, float lo, float hi) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = lo + (hi - lo) * core::PhiloxUniform(seed, 0, static_cast<uint64_t>(i));
    if (t == DType::kF32) {
      static_cast<float*>(p)[i] = v;
    } else if (t == DType::kBF16) {
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
    } else {
      static_cast<__half*>(p)[i] = __float2half_rn(v);
    }
  }
}

// A device buffer of random values, freed at scope end.
struct Buffer {
  void* ptr = nullptr;
  Buffer(int64_t n, DType t, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    CUDA_CHECK(cudaMalloc(&ptr, n * core::DTypeSize(t)));
    FillUniform<<<cuda::Blocks(n), 256, 0, cuda::Stream()>>>(ptr, t, n, seed, lo, hi);
    CUDA_CHECK_LAUNCH();
  }
  ~Buffer() { cudaFree(ptr); }
  Buffer(const Buffer&) = delete;
};

// Median milliseconds of `op` over g_repeats event-timed runs after 3 warm-ups.
double TimeMs(const std::function<void()>& op) {
  for (int i = 0; i < 3; ++i) op();
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> ms(g_repeats);
  for (int i = 0; i < g_repeats; ++i) {
    CUDA_CHECK(cudaEventRecord(start, cuda::Stream()));
    op();
    CUDA_CHECK(cudaEventRecord(stop, cuda::Stream()));
    CUDA_CHECK(cudaEventSynchronize(stop));
    CUDA_CHECK(cudaEventElapsedTime(&ms[i], start, stop));
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

bool Selected(const std::string& name) {
  return g_only == nullptr || name.find(g_only) != std::string::npos;
}

void Report(const std::string& op, const std::string& shape, const char* dtype, double ms,
            double amount, const char* unit) {
  // amount: FLOPs (unit TFLOP/s) or bytes (unit GB/s).
  const double rate =
      std::strcmp(unit, "TFLOP/s") == 0 ? amount / (ms * 1e-3) / 1e12 : amount / (ms * 1e-3) / 1e9;
  std::printf("%s,%s,%s,%.4f,%.2f,%s\n", op.c_str(), shape.c_str(), dtype, ms, rate, unit);
  std::fflush(stdout);
}

const char* Name(DType t) {
  return t == DType::kBF16 ? "bf16" : t == DType::kF16 ? "fp16" : "fp32";
}

// One ResNet-50 convolution: N=256, C->K, HxW input, RxR kernel, stride, pad;
// through cuDNN's graph API (none where it offers no engine), or with
// `legacy` its legacy API (rows conv_*_legacy).
void BenchConv(int64_t c, int64_t hw, int64_t k, int64_t r, int64_t stride, DType t, bool legacy) {
  const ConvGeometry g = Conv2d(256, c, hw, hw, k, r, r, stride, r / 2);
  const std::string shape = "n256_c" + std::to_string(c) + "_h" + std::to_string(hw) + "_k" +
                            std::to_string(k) + "_r" + std::to_string(r) + "_s" +
                            std::to_string(stride);
  if (!Selected("conv_" + shape)) return;
  const int64_t p = g.out(1), q = g.out(2);
  Buffer x(g.batch * c * hw * hw, t, 1), w(k * c * r * r, t, 2, -0.1f, 0.1f),
      y(g.batch * k * p * q, t, 3), dy(g.batch * k * p * q, t, 4), dx(g.batch * c * hw * hw, t, 5),
      dw(k * c * r * r, t, 6);
  const Tensor tx(x.ptr, {g.batch, hw, hw, c}, t, core::Device::kCuda, Layout::kNHWC);
  const Tensor tdx(dx.ptr, {g.batch, hw, hw, c}, t, core::Device::kCuda, Layout::kNHWC);
  const Tensor tw(w.ptr, {k, r, r, c}, t, core::Device::kCuda, Layout::kNHWC);
  const Tensor tdw(dw.ptr, {k, r, r, c}, t, core::Device::kCuda, Layout::kNHWC);
  const Tensor ty(y.ptr, {g.batch, p, q, k}, t, core::Device::kCuda, Layout::kNHWC);
  const Tensor tdy(dy.ptr, {g.batch, p, q, k}, t, core::Device::kCuda, Layout::kNHWC);
  const double flops = 2.0 * g.batch * k * c * r * r * p * q;
  const bool graph = !legacy, was = cuda::ConvGraphApi();
  cuda::SetConvGraphApi(graph);
  const std::string suffix = legacy ? "_legacy" : "";
  const auto report = [&](const std::string& op, const std::function<void()>& run) {
    const int64_t before = cuda::ConvGraphRuns();
    const double ms = TimeMs(run);
    if (graph && cuda::ConvGraphRuns() == before) {
      std::fprintf(stderr, "gpu_ops_bench: no graph-API engine for %s %s %s\n", op.c_str(),
                   shape.c_str(), Name(t));
      return;
    }
    Report(op + suffix, shape, Name(t), ms, flops, "TFLOP/s");
  };
  report("conv_fwd", [&] { cuda::ConvForward(g, tx, tw, ty, Tensor()); });
  report("conv_dgrad", [&] { cuda::ConvBackwardData(g, tdy, tw, tdx, Tensor()); });
  report("conv_wgrad", [&] { cuda::ConvBackwardWeight(g, tx, tdy, tdw, Tensor()); });
  cuda::SetConvGraphApi(was);
}

void BenchGemm(int64_t m, int64_t n, int64_t k, DType t) {
  const std::string shape = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  if (!Selected("gemm_" + shape)) return;
  Buffer a(m * k, t, 7), b(k * n, t, 8), c(m * n, t, 9);
  const Tensor ta(a.ptr, {m, k}, t, core::Device::kCuda), tb(b.ptr, {k, n}, t, core::Device::kCuda),
      tc(c.ptr, {m, n}, t, core::Device::kCuda);
  Report("gemm", shape, Name(t), TimeMs([&] { cuda::Gemm(false, false, 1.0f, ta, tb, 0.0f, tc); }),
         2.0 * m * n * k, "TFLOP/s");
}

// BERT-Large self-attention core: batch 8 x 16 heads x 512 x 64, fp32.
// BERT-Large's FFN up-projection with bias: 8*512 tokens, 1024 -> 4096, in
// fp32, or in bf16 as BERT's typed storage runs it (x, w, bias, y, dy and dx
// in bf16; dw and dbias fp32).
void BenchLinear(DType t, bool fused) {
  const int64_t rows = 8 * 512, in = 1024, out = 4096;
  const std::string shape = "t4096_1024x4096_bias";
  const std::string suffix = fused ? "" : "_unfused";
  if (!Selected("linear_fwd" + suffix) && !Selected("linear_bwd" + suffix)) return;
  Buffer x(rows * in, t, 51), w(out * in, t, 52), b(out, t, 53), y(rows * out, t, 54),
      dy(rows * out, t, 55), dx(rows * in, t, 56), dw(out * in, DType::kF32, 57),
      db(out, DType::kF32, 58);
  const auto in_t = [t](const Buffer& buf, core::Shape s) {
    return Tensor(buf.ptr, s, t, core::Device::kCuda);
  };
  const auto f32 = [](const Buffer& buf, core::Shape s) {
    return Tensor(buf.ptr, s, DType::kF32, core::Device::kCuda);
  };
  cuda::SetGemmEpilogues(fused);
  const double flops = 2.0 * rows * in * out;
  Report("linear_fwd" + suffix, shape, Name(t), TimeMs([&] {
           cuda::LinearForward(in_t(x, {rows, in}), in_t(w, {out, in}), in_t(b, {out}),
                               in_t(y, {rows, out}));
         }),
         flops, "TFLOP/s");
  Report("linear_bwd" + suffix, shape, Name(t), TimeMs([&] {
           cuda::LinearBackward(in_t(x, {rows, in}), in_t(w, {out, in}), in_t(dy, {rows, out}),
                                in_t(dx, {rows, in}), f32(dw, {out, in}), f32(db, {out}));
         }),
         2 * flops, "TFLOP/s");
  cuda::SetGemmEpilogues(true);
}

void BenchAttention() {
  const int64_t b = 8, h = 16, t = 512, d = 64, n = b * h * t * d, nn = b * h * t * t;
  const std::string shape = "b8_h16_t512_d64";
  if (!Selected("attention")) return;
  Buffer q(n, DType::kF32, 10), k(n, DType::kF32, 11), v(n, DType::kF32, 12),
      dout(n, DType::kF32, 13), out(n, DType::kF32, 14), dq(n, DType::kF32, 15),
      dk(n, DType::kF32, 16), dv(n, DType::kF32, 17), probs(nn, DType::kF32, 18),
      ws(nn, DType::kF32, 19), mask(b * t, DType::kF32, 20, 1.0f, 1.0f);
  auto T = [&](const Buffer& buf, core::Shape s) {
    return Tensor(buf.ptr, s, DType::kF32, core::Device::kCuda);
  };
  const core::Shape qs{b, h, t, d};
  const AttentionParams p{.dropout = 0.1f, .seed = 1, .offset = 0};
  const double flops = 4.0 * b * h * t * t * d;
  Report("attention_fwd", shape, "fp32", TimeMs([&] {
           ops::AttentionForward(p, T(q, qs), T(k, qs), T(v, qs), T(mask, {b, t}),
                                 T(probs, {b, h, t, t}), T(out, qs), T(ws, {nn}));
         }),
         flops, "TFLOP/s");
  Report("attention_bwd", shape, "fp32", TimeMs([&] {
           ops::AttentionBackward(p, T(q, qs), T(k, qs), T(v, qs), T(probs, {b, h, t, t}),
                                  T(dout, qs), T(dq, qs), T(dk, qs), T(dv, qs), T(ws, {nn}));
         }),
         2.0 * flops, "TFLOP/s");
}

// Fused optimizer steps over a BERT-Large-sized arena (335M fp32 parameters
// in 1024x1024 tensors plus a bias per tensor). GB/s counts the minimal
// traffic: LAMB reads w, g, m, v and writes w, m, v (28 B/param); LARS reads
// w, g, v and writes w, v (20 B/param).
void BenchOptimizers() {
  if (!Selected("lamb") && !Selected("lars")) return;
  const int64_t tensors = 320, weight = 1024 * 1024, bias = 1024;
  std::vector<TensorSlice> slices;
  int64_t total = 0;
  for (int64_t i = 0; i < tensors; ++i) {
    slices.push_back({total, weight, false});
    total += weight;
    slices.push_back({total, bias, true});
    total += bias;
  }
  Buffer w(total, DType::kF32, 21), g(total, DType::kF32, 22, -1e-3f, 1e-3f),
      m(total, DType::kF32, 23, -1e-3f, 1e-3f), v(total, DType::kF32, 24, 0.0f, 1e-6f);
  int32_t* step = nullptr;
  CUDA_CHECK(cudaMalloc(&step, sizeof(int32_t)));
  CUDA_CHECK(cudaMemsetAsync(step, 0, sizeof(int32_t), cuda::Stream()));
  const std::string shape = "bert_large_" + std::to_string(total / 1000000) + "M";
  if (Selected("lamb"))
    Report("lamb_step", shape, "fp32", TimeMs([&] {
             ops::LambStep(core::Device::kCuda, {.lr = 1e-4f}, slices, static_cast<float*>(w.ptr),
                           static_cast<const float*>(g.ptr), static_cast<float*>(m.ptr),
                           static_cast<float*>(v.ptr), step, nullptr);
           }),
           28.0 * total, "GB/s");
  if (Selected("lars"))
    Report("lars_step", shape, "fp32", TimeMs([&] {
             ops::LarsStep(core::Device::kCuda, {.lr = 1.0f, .weight_decay = 5e-5f}, slices,
                           static_cast<float*>(w.ptr), static_cast<const float*>(g.ptr),
                           static_cast<float*>(m.ptr), nullptr);
           }),
           20.0 * total, "GB/s");
  cudaFree(step);
}

int Main(int argc, char** argv) {
  bool legacy = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
      g_repeats = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      g_only = argv[++i];
    } else if (std::strcmp(argv[i], "--legacy") == 0) {
      legacy = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--repeats N] [--only SUBSTRING] [--legacy]\n"
                   "Times the CUDA twins (median of N CUDA-event timings) and prints CSV\n"
                   "op,shape,dtype,ms,rate,unit. Compare with bench/gpu/torch_peer.py.\n"
                   "--legacy: only the bf16 convolutions, through cuDNN's legacy API.\n",
                   argv[0]);
      return 2;
    }
  }
  if (!cuda::DeviceAvailable()) {
    std::fprintf(stderr, "gpu_ops_bench: no CUDA device\n");
    return 2;
  }
  // Like torch.backends.cudnn.benchmark=True in the peer.
  cuda::SetConvAlgoSearch(cuda::ConvAlgoSearch::kExhaustive);
  std::printf("op,shape,dtype,ms,rate,unit\n");
  // ResNet-50 v1.5: the 3x3 convs of each stage (one strided) and 1x1 convs.
  // --legacy: bf16 through the legacy API only (a separate run, for the
  // comparison with the graph API the models use).
  for (DType t : {DType::kBF16, DType::kF16}) {
    if (legacy && t != DType::kBF16) continue;
    BenchConv(64, 56, 64, 3, 1, t, legacy);
    BenchConv(128, 56, 128, 3, 2, t, legacy);
    BenchConv(128, 28, 128, 3, 1, t, legacy);
    BenchConv(256, 14, 256, 3, 1, t, legacy);
    BenchConv(512, 7, 512, 3, 1, t, legacy);
    BenchConv(256, 56, 64, 1, 1, t, legacy);
    BenchConv(64, 56, 256, 1, 1, t, legacy);
    BenchConv(1024, 14, 256, 1, 1, t, legacy);
    BenchConv(512, 7, 2048, 1, 1, t, legacy);
  }
  if (legacy) return 0;
  BenchGemm(8192, 8192, 8192, DType::kBF16);
  BenchGemm(4096, 4096, 4096, DType::kF32);
  // BERT-Large FFN GEMM: tokens 8*512 x 1024 -> 4096.
  BenchGemm(4096, 4096, 1024, DType::kBF16);
  for (DType t : {DType::kF32, DType::kBF16}) {
    BenchLinear(t, /*fused=*/true);
    BenchLinear(t, /*fused=*/false);
  }
  BenchAttention();
  BenchOptimizers();
  return 0;
}

}  // namespace
}  // namespace mlperf

int main(int argc, char** argv) { return mlperf::Main(argc, argv); }
