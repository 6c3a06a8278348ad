#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/conv.h"
#include "reference/kernels/cuda/conv_graph.h"
#include "reference/kernels/cuda/conv_restage.h"
#include "reference/kernels/cuda/cudnn_type.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/switches.h"

namespace mlperf::cuda {
namespace {

using core::DType;
using core::Layout;
using core::Tensor;

// Process-wide; set once before training (warm-up), read by every thread.
// MLPERF_CUDNN_FIND=1 asks for timing from the start.
ConvAlgoSearch g_search =
    ops::Switches().cudnn_find ? ConvAlgoSearch::kExhaustive : ConvAlgoSearch::kHeuristic;

// Owning wrappers of the cuDNN descriptors (host objects, cheap to build).
struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc() { CUDNN_CHECK(cudnnCreateTensorDescriptor(&d)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  TensorDesc(const TensorDesc&) = delete;
};
struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc() { CUDNN_CHECK(cudnnCreateFilterDescriptor(&d)); }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
  FilterDesc(const FilterDesc&) = delete;
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc() { CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d)); }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
  ConvDesc(const ConvDesc&) = delete;
};

void SetActivationDesc(cudnnTensorDescriptor_t desc, DType dtype, bool three_d, bool channels_last,
                       int64_t n, int64_t c, const int64_t spatial[3]) {
  int64_t dims64[5], strides64[5];
  const int nb = ActivationDims(three_d, channels_last, n, c, spatial, dims64, strides64);
  int dims[5], strides[5];
  for (int i = 0; i < nb; ++i) {
    dims[i] = static_cast<int>(dims64[i]);
    strides[i] = static_cast<int>(strides64[i]);
  }
  CUDNN_CHECK(cudnnSetTensorNdDescriptor(desc, CudnnType(dtype), nb, dims, strides));
}

ConvGraphCall GraphCall(ConvGraphCall::Direction dir, const ConvGeometry& g, const Tensor& x_like,
                        const Tensor& w_t) {
  return DescribeConvGraph(dir, g, CudnnType(x_like.dtype()), IsVolume(x_like),
                           detail::ChannelsLast(x_like), detail::ChannelsLast(w_t));
}

enum Direction { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };

struct Choice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
  bool deterministic = true;
};

// Everything one call needs: descriptors for x, w, y and the convolution, of
// the geometry actually run (explicitly padded when the padding is uneven).
struct Plan {
  ConvGeometry run;  // the geometry cuDNN sees
  bool padded = false;
  bool three_d = false;
  bool x_channels_last = false;
  bool w_channels_last = false;
  DType dtype = DType::kF32;
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;

  Plan(const ConvGeometry& g, const Tensor& x_like, const Tensor& w_t, const Tensor& y_like)
      : run(g) {
    dtype = x_like.dtype();
    MLPERF_CHECK_MSG(w_t.dtype() == dtype && y_like.dtype() == dtype,
                     "conv: x, w and y must share one dtype");
    MLPERF_CHECK(x_like.numel() == g.batch * g.in_channels * g.in_spatial());
    MLPERF_CHECK(w_t.numel() == g.weight_elements());
    MLPERF_CHECK(y_like.numel() == g.batch * g.out_channels * g.out_spatial());
    three_d = IsVolume(x_like);
    if (!three_d)
      MLPERF_CHECK_MSG(g.in[0] == 1 && g.kernel[0] == 1 && g.pad_begin[0] == 0 && g.pad_end[0] == 0,
                       "a 2-D conv tensor with a depth axis: tag it kNCDHW/kNDHWC");
    x_channels_last = detail::ChannelsLast(x_like);
    w_channels_last = detail::ChannelsLast(w_t);
    MLPERF_CHECK_MSG(detail::ChannelsLast(y_like) == x_channels_last,
                     "conv: x and y must share one layout");
    for (int i = 0; i < 3; ++i) {
      if (g.pad_begin[i] != g.pad_end[i]) padded = true;
    }
    if (padded) {
      for (int i = 0; i < 3; ++i) {
        run.in[i] += g.pad_begin[i] + g.pad_end[i];
        run.pad_begin[i] = run.pad_end[i] = 0;
      }
    }
    SetActivationDesc(x.d, dtype, three_d, x_channels_last, run.batch, run.in_channels, run.in);
    const int64_t out[3] = {run.out(0), run.out(1), run.out(2)};
    SetActivationDesc(y.d, dtype, three_d, x_channels_last, run.batch, run.out_channels, out);
    const int nb = three_d ? 5 : 4;
    int wdims[5] = {static_cast<int>(run.out_channels), static_cast<int>(run.group_in_channels())};
    int pad[3], stride[3], dilation[3];
    for (int i = 2; i < nb; ++i) {
      const int axis = 3 - nb + i;
      wdims[i] = static_cast<int>(run.kernel[axis]);
      pad[i - 2] = static_cast<int>(run.pad_begin[axis]);
      stride[i - 2] = static_cast<int>(run.stride[axis]);
      dilation[i - 2] = 1;
    }
    CUDNN_CHECK(cudnnSetFilterNdDescriptor(
        w.d, CudnnType(dtype), w_channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, nb, wdims));
    CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(conv.d, nb - 2, pad, stride, dilation,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv.d, static_cast<int>(run.groups)));
    // fp32 without TF32 (tight agreement with the CPU twin); tensor cores for
    // half types.
    CUDNN_CHECK(cudnnSetConvolutionMathType(
        conv.d, dtype == DType::kF32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
  }

  // fp32 channels-first: the configuration every convolution has a kernel for.
  bool canonical() const { return dtype == DType::kF32 && !x_channels_last && !w_channels_last; }

  size_t padded_bytes() const {
    return static_cast<size_t>(run.batch * run.in_channels * run.in_spatial()) *
           core::DTypeSize(dtype);
  }

  std::vector<int64_t> Key(Direction dir) const {
    std::vector<int64_t> k = {dir,
                              static_cast<int64_t>(dtype),
                              three_d,
                              x_channels_last,
                              w_channels_last,
                              run.batch,
                              run.in_channels,
                              run.out_channels,
                              run.groups};
    for (int i = 0; i < 3; ++i) {
      k.push_back(run.in[i]);
      k.push_back(run.kernel[i]);
      k.push_back(run.stride[i]);
      k.push_back(run.pad_begin[i]);
    }
    return k;
  }
};

// cuDNN's best-ranked kernel that runs the call, preferring deterministic
// ones: a recorded step must reproduce the step as queued, and a seeded run
// itself (atomics in a filter gradient do not). fp32 takes FMA math only, no
// TF32, unless `any_math` (fp32 channels-first, which has nothing to fall
// back to); none when cuDNN offers nothing acceptable.
template <typename Perf>
std::optional<Choice> Pick(const std::vector<Perf>& perf, int returned, bool fp32, bool any_math) {
  for (int pass = 0; pass < 3; ++pass) {
    for (int i = 0; i < returned; ++i) {
      const Perf& r = perf[i];
      if (r.status != CUDNN_STATUS_SUCCESS) continue;
      const bool fma = !fp32 || r.mathType == CUDNN_FMA_MATH;
      if (pass == 0 && !(fma && r.determinism == CUDNN_DETERMINISTIC)) continue;
      if (pass == 1 && !fma) continue;
      if (pass == 2 && !any_math) continue;
      return Choice{static_cast<int>(r.algo), r.mathType, 0, r.determinism == CUDNN_DETERMINISTIC};
    }
  }
  return std::nullopt;
}

const char* DirectionName(Direction dir) {
  return dir == kForward ? "forward" : dir == kBackwardData ? "data gradient" : "filter gradient";
}

// E.g. "forward bf16 channels-last (filter channels-first) N=64 C=3->K=8
// in 1x32x32 kernel 1x3x3 stride 1".
std::string Describe(Direction dir, const Plan& p) {
  const ConvGeometry& g = p.run;
  const std::string_view dtype = core::DTypeName(p.dtype);
  char text[256];
  std::snprintf(text, sizeof text,
                "%s %.*s %s (filter %s) N=%lld C=%lld->K=%lld in %lldx%lldx%lld kernel "
                "%lldx%lldx%lld stride %lld",
                DirectionName(dir), static_cast<int>(dtype.size()), dtype.data(),
                p.x_channels_last ? "channels-last" : "channels-first",
                p.w_channels_last ? "channels-last" : "channels-first",
                static_cast<long long>(g.batch), static_cast<long long>(g.in_channels),
                static_cast<long long>(g.out_channels), static_cast<long long>(g.in[0]),
                static_cast<long long>(g.in[1]), static_cast<long long>(g.in[2]),
                static_cast<long long>(g.kernel[0]), static_cast<long long>(g.kernel[1]),
                static_cast<long long>(g.kernel[2]), static_cast<long long>(g.stride[2]));
  return text;
}

std::optional<Choice> Choose(Direction dir, const Plan& p) {
  thread_local std::map<std::vector<int64_t>, std::optional<Choice>> cache;
  std::vector<int64_t> key = p.Key(dir);
  key.push_back(static_cast<int64_t>(g_search));  // a benchmark may time both ways
  auto it = cache.find(key);
  if (it == cache.end()) {
    const bool fp32 = p.dtype == DType::kF32;
    const bool find = g_search == ConvAlgoSearch::kExhaustive;
    cudnnHandle_t h = Cudnn();
    int max_count = 0, returned = 0;
    std::optional<Choice> c;
    if (dir == kForward) {
      CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(max_count);
      if (find) {
        CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(h, p.x.d, p.w.d, p.conv.d, p.y.d,
                                                         max_count, &returned, perf.data()));
      } else {
        CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, p.x.d, p.w.d, p.conv.d, p.y.d,
                                                           max_count, &returned, perf.data()));
      }
      c = Pick(perf, returned, fp32, p.canonical());
      if (c) {
        CUDNN_CHECK(cudnnSetConvolutionMathType(p.conv.d, c->math));
        CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
            h, p.x.d, p.w.d, p.conv.d, p.y.d, static_cast<cudnnConvolutionFwdAlgo_t>(c->algo),
            &c->workspace));
      }
    } else if (dir == kBackwardData) {
      CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_count));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(max_count);
      if (find) {
        CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(h, p.w.d, p.y.d, p.conv.d, p.x.d,
                                                              max_count, &returned, perf.data()));
      } else {
        CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p.w.d, p.y.d, p.conv.d, p.x.d,
                                                                max_count, &returned, perf.data()));
      }
      c = Pick(perf, returned, fp32, p.canonical());
      if (c) {
        CUDNN_CHECK(cudnnSetConvolutionMathType(p.conv.d, c->math));
        CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, p.w.d, p.y.d, p.conv.d, p.x.d, static_cast<cudnnConvolutionBwdDataAlgo_t>(c->algo),
            &c->workspace));
      }
    } else {
      CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_count));
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(max_count);
      if (find) {
        CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(h, p.x.d, p.y.d, p.conv.d, p.w.d,
                                                                max_count, &returned, perf.data()));
      } else {
        CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            h, p.x.d, p.y.d, p.conv.d, p.w.d, max_count, &returned, perf.data()));
      }
      c = Pick(perf, returned, fp32, p.canonical());
      if (c) {
        CUDNN_CHECK(cudnnSetConvolutionMathType(p.conv.d, c->math));
        CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h, p.x.d, p.y.d, p.conv.d, p.w.d, static_cast<cudnnConvolutionBwdFilterAlgo_t>(c->algo),
            &c->workspace));
      }
    }
    if (!c && !p.canonical()) {
      // Once per geometry: the call runs staged (slower), and a user tuning
      // a model wants to know which layer does.
      std::fprintf(stderr,
                   "cuDNN has no algorithm for the %s convolution; it runs in fp32 "
                   "channels-first copies\n",
                   Describe(dir, p).c_str());
    } else if (c && ops::Switches().cudnn_log) {
      std::fprintf(stderr, "cuDNN %s convolution: algorithm %d, math %d, %s\n",
                   Describe(dir, p).c_str(), c->algo, static_cast<int>(c->math),
                   c->deterministic ? "deterministic" : "not deterministic");
    }
    it = cache.emplace(key, c).first;
  }
  // The descriptor is rebuilt per call: give it the chosen math type.
  if (it->second) CUDNN_CHECK(cudnnSetConvolutionMathType(p.conv.d, it->second->math));
  return it->second;
}

void* Workspace(const Choice& c) {
  return c.workspace > 0 ? Scratch(c.workspace, kScratchWorkspace) : nullptr;
}

// Copies between an activation and its explicitly padded version (zeros in
// the border). kToPadded: iterate over the padded tensor and gather;
// otherwise iterate over the unpadded one and gather from the padded copy
// (the crop that undoes the padding of a data gradient).
struct PadShape {
  int64_t n, c;
  int64_t small[3], big[3], begin[3];
  bool channels_last;
};

template <typename T, bool kToPadded>
__global__ void PadOrCrop(const T* src, T* dst, int64_t count, PadShape s) {
  const int64_t* dims = kToPadded ? s.big : s.small;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = i, c = 0;
    if (s.channels_last) {
      c = rest % s.c;
      rest /= s.c;
    }
    const int64_t w = rest % dims[2];
    rest /= dims[2];
    const int64_t h = rest % dims[1];
    rest /= dims[1];
    const int64_t d = rest % dims[0];
    rest /= dims[0];
    if (!s.channels_last) {
      c = rest % s.c;
      rest /= s.c;
    }
    const int64_t n = rest;
    // The same position in the other tensor.
    const int64_t sign = kToPadded ? -1 : 1;
    const int64_t od = d + sign * s.begin[0], oh = h + sign * s.begin[1],
                  ow = w + sign * s.begin[2];
    const int64_t* other = kToPadded ? s.small : s.big;
    const bool inside =
        od >= 0 && od < other[0] && oh >= 0 && oh < other[1] && ow >= 0 && ow < other[2];
    if (!inside) {
      dst[i] = T(0);  // only reachable when padding
      continue;
    }
    const int64_t sp = (od * other[1] + oh) * other[2] + ow;
    const int64_t plane = other[0] * other[1] * other[2];
    const int64_t j = s.channels_last ? (n * plane + sp) * s.c + c : (n * s.c + c) * plane + sp;
    dst[i] = src[j];
  }
}

template <bool kToPadded>
void LaunchPadOrCrop(const Plan& p, const ConvGeometry& g, const void* src, void* dst) {
  PadShape s{g.batch, g.in_channels, {}, {}, {}, p.x_channels_last};
  for (int i = 0; i < 3; ++i) {
    s.small[i] = g.in[i];
    s.big[i] = p.run.in[i];
    s.begin[i] = g.pad_begin[i];
  }
  const int64_t count = g.batch * g.in_channels * (kToPadded ? p.run.in_spatial() : g.in_spatial());
  if (core::DTypeSize(p.dtype) == 4) {
    PadOrCrop<uint32_t, kToPadded><<<Blocks(count), 256, 0, Stream()>>>(
        static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), count, s);
  } else {
    PadOrCrop<uint16_t, kToPadded><<<Blocks(count), 256, 0, Stream()>>>(
        static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), count, s);
  }
  CUDA_CHECK_LAUNCH();
}

// x as cuDNN should read it: the tensor itself or its padded copy.
const void* InputFor(const Plan& p, const ConvGeometry& g, const Tensor& x) {
  if (!p.padded) return x.data();
  void* padded = Scratch(p.padded_bytes(), kScratchPadded);
  LaunchPadOrCrop<true>(p, g, x.data(), padded);
  return padded;
}

bool NeedsChannelsLastFilter(const Tensor& x, const Tensor& w) {
  return detail::ChannelsLast(x) && !detail::ChannelsLast(w);
}

// A call with no kernel that staging cannot help is a hard error.
void CheckStageable(Direction dir, const Plan& p) {
  if (p.canonical()) {
    const std::string what = "cuDNN has no algorithm for the " + Describe(dir, p) + " convolution";
    MLPERF_CHECK_MSG(false, what.c_str());
  }
}

// Runs op(a', b', out') on fp32 channels-first copies of the operands and
// copies out' back into `out`.
template <typename Op>
void RunStaged(const Tensor& a, const Tensor& b, const Tensor& out, Op op) {
  const Tensor staged_out = StagedLike(out, DType::kF32, false, kScratchStaged0 + 2);
  op(Restaged(a, DType::kF32, false, kScratchStaged0),
     Restaged(b, DType::kF32, false, kScratchStaged0 + 1), staged_out);
  CopyStaged(staged_out, out);
}

// run(g', x', w') on the operands as a fused graph call takes them: the
// filter channels-last; after the checks of Plan, which the graph API's path
// does not build.
template <typename Run>
bool OnFusedOperands(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor& y,
                     const Tensor& residual, Run run) {
  if (NeedsChannelsLastFilter(x, w))
    return OnFusedOperands(g, x, Restaged(w, w.dtype(), true, kScratchFilter), y, residual, run);
  MLPERF_CHECK_MSG(w.dtype() == x.dtype() && y.dtype() == x.dtype() &&
                       (residual.empty() || residual.dtype() == x.dtype()),
                   "conv: x, w, y (and a residual) must share one dtype");
  MLPERF_CHECK(x.numel() == g.batch * g.in_channels * g.in_spatial() &&
               y.numel() == g.batch * g.out_channels * g.out_spatial() &&
               (residual.empty() || residual.numel() == y.numel()));
  return run(g, x, w);
}

}  // namespace

int64_t ConvWorkspaceElements(const ConvGeometry&, Layout) { return 0; }

void SetConvAlgoSearch(ConvAlgoSearch search) { g_search = search; }
ConvAlgoSearch GetConvAlgoSearch() { return g_search; }

void ConvForward(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor& y,
                 const Tensor& workspace) {
  if (NeedsChannelsLastFilter(x, w))
    return ConvForward(g, x, Restaged(w, w.dtype(), true, kScratchFilter), y, workspace);
  if (g.groups == 1 && ConvGraphApi() &&
      RunConvGraph(GraphCall(ConvGraphCall::kForward, g, x, w), x.data(), w.data(), y.data()))
    return;
  Plan p(g, x, w, y);
  const std::optional<Choice> c = Choose(kForward, p);
  if (!c) {
    CheckStageable(kForward, p);
    return RunStaged(x, w, y, [&](const Tensor& sx, const Tensor& sw, const Tensor& sy) {
      ConvForward(g, sx, sw, sy, workspace);
    });
  }
  const void* in = InputFor(p, g, x);
  const float alpha = 1.0f, beta = 0.0f;
  CUDNN_CHECK(cudnnConvolutionForward(Cudnn(), &alpha, p.x.d, in, p.w.d, w.data(), p.conv.d,
                                      static_cast<cudnnConvolutionFwdAlgo_t>(c->algo),
                                      Workspace(*c), c->workspace, &beta, p.y.d, y.data()));
}

bool ConvForwardScaleBiasAct(const ConvGeometry& g, const Tensor& x, const Tensor& w,
                             const float* scale, const float* bias, const Tensor& residual,
                             bool relu, const Tensor& y) {
  return g.groups == 1 && ConvGraphApi() && ConvEpilogues() &&
         OnFusedOperands(
             g, x, w, y, residual, [&](const ConvGeometry& fg, const Tensor& fx, const Tensor& fw) {
               ConvGraphCall call = GraphCall(ConvGraphCall::kForward, fg, fx, fw);
               call.scale_bias = true;
               call.residual = !residual.empty();
               call.relu = relu;
               return RunConvGraph(call, fx.data(), fw.data(), y.data(),
                                   {.scale = scale, .bias = bias, .residual = residual.data()});
             });
}

void ConvBackwardData(const ConvGeometry& g, const Tensor& dy, const Tensor& w, const Tensor& dx,
                      const Tensor& workspace) {
  if (NeedsChannelsLastFilter(dx, w))
    return ConvBackwardData(g, dy, Restaged(w, w.dtype(), true, kScratchFilter), dx, workspace);
  if (g.groups == 1 && ConvGraphApi() &&
      RunConvGraph(GraphCall(ConvGraphCall::kBackwardData, g, dx, w), dx.data(), w.data(),
                   dy.data()))
    return;
  Plan p(g, dx, w, dy);
  const std::optional<Choice> c = Choose(kBackwardData, p);
  if (!c) {
    CheckStageable(kBackwardData, p);
    return RunStaged(dy, w, dx, [&](const Tensor& sdy, const Tensor& sw, const Tensor& sdx) {
      ConvBackwardData(g, sdy, sw, sdx, workspace);
    });
  }
  void* out = p.padded ? Scratch(p.padded_bytes(), kScratchPadded) : dx.data();
  const float alpha = 1.0f, beta = 0.0f;
  CUDNN_CHECK(cudnnConvolutionBackwardData(Cudnn(), &alpha, p.w.d, w.data(), p.y.d, dy.data(),
                                           p.conv.d,
                                           static_cast<cudnnConvolutionBwdDataAlgo_t>(c->algo),
                                           Workspace(*c), c->workspace, &beta, p.x.d, out));
  if (p.padded) LaunchPadOrCrop<false>(p, g, out, dx.data());
}

void ConvBackwardWeight(const ConvGeometry& g, const Tensor& x, const Tensor& dy, const Tensor& dw,
                        const Tensor& workspace) {
  if (NeedsChannelsLastFilter(x, dw)) {
    const Tensor sdw = StagedLike(dw, dw.dtype(), true, kScratchFilter);
    ConvBackwardWeight(g, x, dy, sdw, workspace);
    return CopyStaged(sdw, dw);
  }
  if (g.groups == 1 && ConvGraphApi() &&
      RunConvGraph(GraphCall(ConvGraphCall::kBackwardFilter, g, x, dw), x.data(), dw.data(),
                   dy.data()))
    return;
  Plan p(g, x, dw, dy);
  const std::optional<Choice> c = Choose(kBackwardFilter, p);
  if (!c) {
    CheckStageable(kBackwardFilter, p);
    return RunStaged(x, dy, dw, [&](const Tensor& sx, const Tensor& sdy, const Tensor& sdw) {
      ConvBackwardWeight(g, sx, sdy, sdw, workspace);
    });
  }
  const void* in = InputFor(p, g, x);
  const float alpha = 1.0f, beta = 0.0f;
  CUDNN_CHECK(cudnnConvolutionBackwardFilter(Cudnn(), &alpha, p.x.d, in, p.y.d, dy.data(), p.conv.d,
                                             static_cast<cudnnConvolutionBwdFilterAlgo_t>(c->algo),
                                             Workspace(*c), c->workspace, &beta, p.w.d, dw.data()));
}

}  // namespace mlperf::cuda
