#include "reference/kernels/cpu/conv.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "reference/kernels/cpu/blas_threads.h"
#include "reference/kernels/cpu/conv_nhwc.h"
#include "reference/kernels/cpu/conv_winograd.h"
#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/cpu/layout.h"
#include "reference/kernels/cpu/parallel.h"
#include "reference/kernels/cpu/round.h"

namespace mlperf::cpu {
namespace {

using core::Tensor;

// Row (c, kd, kh, kw), column (od, oh, ow) of the im2col matrix of one image.
template <bool kScatter>
void Im2ColOrCol2Im(const ConvGeometry& g, float* image, float* col) {
  const int64_t od = g.out(0), oh = g.out(1), ow = g.out(2);
  const int64_t rows = g.in_channels * g.kernel_volume();
  const int64_t kvol = g.kernel_volume();
  // Col2im sums overlapping windows into the image, so rows that share
  // pixels (same channel) must not run concurrently: parallelise over channels.
#pragma omp parallel for if (WorthParallel(rows * g.out_spatial()))
  for (int64_t c = 0; c < g.in_channels; ++c) {
    for (int64_t kk = 0; kk < kvol; ++kk) {
      const int64_t row = c * kvol + kk;
      const int64_t kd = kk / (g.kernel[1] * g.kernel[2]);
      const int64_t kh = (kk / g.kernel[2]) % g.kernel[1];
      const int64_t kw = kk % g.kernel[2];
      float* col_row = col + row * od * oh * ow;
      float* img_c = image + c * g.in_spatial();
      for (int64_t z = 0; z < od; ++z) {
        const int64_t iz = z * g.stride[0] - g.pad_begin[0] + kd;
        for (int64_t y = 0; y < oh; ++y) {
          const int64_t iy = y * g.stride[1] - g.pad_begin[1] + kh;
          float* out = col_row + (z * oh + y) * ow;
          const bool row_inside = iz >= 0 && iz < g.in[0] && iy >= 0 && iy < g.in[1];
          for (int64_t x = 0; x < ow; ++x) {
            const int64_t ix = x * g.stride[2] - g.pad_begin[2] + kw;
            const bool inside = row_inside && ix >= 0 && ix < g.in[2];
            if constexpr (kScatter) {
              if (inside) img_c[(iz * g.in[1] + iy) * g.in[2] + ix] += out[x];
            } else {
              out[x] = inside ? img_c[(iz * g.in[1] + iy) * g.in[2] + ix] : 0.0f;
            }
          }
        }
      }
    }
  }
}

// Also returns whether the activations are channels-last; x and y must agree,
// and a channels-last tensor must have its channels as the last dimension.
bool CheckShapes(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor& y) {
  MLPERF_CHECK(g.groups >= 1 && g.in_channels % g.groups == 0 && g.out_channels % g.groups == 0);
  MLPERF_CHECK(x.numel() == g.batch * g.in_channels * g.in_spatial());
  MLPERF_CHECK(w.numel() == g.weight_elements());
  MLPERF_CHECK(y.numel() == g.batch * g.out_channels * g.out_spatial());
  const bool channels_last = SameLayoutFamily(x, y);
  if (channels_last) {
    MLPERF_CHECK(LastDim(x) == g.in_channels && LastDim(y) == g.out_channels);
    MLPERF_CHECK_MSG(g.groups == 1, "grouped convolutions are channels-first on the CPU");
  }
  return channels_last;
}

// One group's convolution: its input channels, its filters, its outputs
// (contiguous per image in channels-first storage).
ConvGeometry GroupOf(const ConvGeometry& g) {
  ConvGeometry sub = g;
  sub.in_channels = g.group_in_channels();
  sub.out_channels = g.group_out_channels();
  sub.groups = 1;
  return sub;
}

// Pointwise convolutions may be handed an empty workspace.
float* Scratch(const Tensor& workspace) { return workspace.empty() ? nullptr : workspace.f32(); }

int64_t WeightElements(const ConvGeometry& g) { return g.weight_elements(); }

// Channels-first convs over several images give each OpenMP thread whole
// images, with its own im2col buffer and single-threaded GEMMs (see
// blas_threads.h). One image, one thread or a pointwise conv keep the plain
// loop: OpenMP inside im2col and OpenBLAS's own threads in the GEMM.
int ImageThreads(const ConvGeometry& g, const Tensor& workspace) {
  if (g.is_pointwise()) return 1;
  const int64_t fit =
      (workspace.numel() + WeightElements(g)) / (g.col_elements() + WeightElements(g));
  MLPERF_CHECK_MSG(fit >= 1, "conv workspace smaller than ConvWorkspaceElements(g, layout)");
  return static_cast<int>(std::min<int64_t>({omp_get_max_threads(), g.batch, fit}));
}

// body(first_image, end_image, thread) over this call's threads.
template <typename Body>
void ForImageShares(int threads, int64_t batch, Body body) {
  if (threads <= 1) {
    body(0, batch, 0);
    return;
  }
  BlasInCallingThread blas;
#pragma omp parallel num_threads(threads)
  {
    int64_t begin, end;
    ThreadShare(batch, &begin, &end);
    body(begin, end, omp_get_thread_num());
  }
}

// Winograd where it computes g and the caller's workspace holds it (one
// sized by ConvWorkspaceElements does).
bool UseWinograd(const ConvGeometry& g, const Tensor& workspace) {
  return winograd::Applies(g) && workspace.numel() >= winograd::WorkspaceElements(g);
}

}  // namespace

int64_t ConvWorkspaceElements(const ConvGeometry& g, core::Layout layout) {
  if (IsChannelsLast(layout)) return nhwc::ConvWorkspaceElements(g);
  if (g.is_pointwise()) return 0;
  const int64_t threads = std::min<int64_t>(omp_get_max_threads(), g.batch);
  return std::max(threads * g.col_elements() + (threads - 1) * WeightElements(g),
                  winograd::WorkspaceElements(g));
}

void ConvForward(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor& y,
                 const Tensor& workspace, core::DType round_to) {
  if (CheckShapes(g, x, w, y)) {
    if (IsBf16(y) && IsBf16(x)) {
      nhwc::ConvForward(g, Bf16Data(x), w.f32(), Bf16Data(y), Scratch(workspace),
                        workspace.numel());
    } else if (IsBf16(y)) {
      nhwc::ConvForward(g, x.f32(), w.f32(), Bf16Data(y), Scratch(workspace), workspace.numel());
    } else if (IsBf16(x)) {
      nhwc::ConvForward(g, Bf16Data(x), w.f32(), y.f32(), Scratch(workspace), workspace.numel(),
                        round_to);
    } else {
      nhwc::ConvForward(g, x.f32(), w.f32(), y.f32(), Scratch(workspace), workspace.numel(),
                        round_to);
    }
    return;
  }
  if (UseWinograd(g, workspace)) {
    winograd::Forward(g, x.f32(), w.f32(), y.f32(), workspace.f32());
    RoundSpan(round_to, y.f32(), y.numel());
    return;
  }
  const ConvGeometry sub = GroupOf(g);
  const int64_t k = sub.in_channels * g.kernel_volume(), p = g.out_spatial();
  const int threads = ImageThreads(g, workspace);
  ForImageShares(threads, g.batch, [&](int64_t n0, int64_t n1, int t) {
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t group = 0; group < g.groups; ++group) {
        float* xn = x.f32() + (n * g.in_channels + group * sub.in_channels) * g.in_spatial();
        const float* col = xn;
        if (!g.is_pointwise()) {
          Im2ColOrCol2Im<false>(sub, xn, workspace.f32() + t * g.col_elements());
          col = workspace.f32() + t * g.col_elements();
        }
        float* yn = y.f32() + (n * g.out_channels + group * sub.out_channels) * p;
        Gemm(false, false, sub.out_channels, p, k, 1.0f, w.f32() + group * sub.weight_elements(),
             col, 0.0f, yn);
      }
      RoundSpan(round_to, y.f32() + n * g.out_channels * p, g.out_channels * p);
    }
  });
}

void ConvBackwardData(const ConvGeometry& g, const Tensor& dy, const Tensor& w, const Tensor& dx,
                      const Tensor& workspace, core::DType round_to) {
  if (CheckShapes(g, dx, w, dy)) {
    if (IsBf16(dy)) {
      MLPERF_CHECK_MSG(IsBf16(dx), "conv backward data: a bf16 dy needs a bf16 dx");
      nhwc::ConvBackwardData(g, Bf16Data(dy), w.f32(), Bf16Data(dx), Scratch(workspace),
                             workspace.numel());
    } else if (IsBf16(dx)) {
      nhwc::ConvBackwardData(g, dy.f32(), w.f32(), Bf16Data(dx), Scratch(workspace),
                             workspace.numel());
    } else {
      nhwc::ConvBackwardData(g, dy.f32(), w.f32(), dx.f32(), Scratch(workspace), workspace.numel(),
                             round_to);
    }
    return;
  }
  if (UseWinograd(g, workspace)) {
    winograd::BackwardData(g, dy.f32(), w.f32(), dx.f32(), workspace.f32());
    RoundSpan(round_to, dx.f32(), dx.numel());
    return;
  }
  const ConvGeometry sub = GroupOf(g);
  const int64_t k = sub.in_channels * g.kernel_volume(), p = g.out_spatial();
  const int threads = ImageThreads(g, workspace);
  ForImageShares(threads, g.batch, [&](int64_t n0, int64_t n1, int t) {
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t group = 0; group < g.groups; ++group) {
        float* dxn = dx.f32() + (n * g.in_channels + group * sub.in_channels) * g.in_spatial();
        const float* dyn = dy.f32() + (n * g.out_channels + group * sub.out_channels) * p;
        const float* wg = w.f32() + group * sub.weight_elements();
        if (g.is_pointwise()) {
          Gemm(true, false, k, p, sub.out_channels, 1.0f, wg, dyn, 0.0f, dxn);
        } else {
          float* col = workspace.f32() + t * g.col_elements();
          Gemm(true, false, k, p, sub.out_channels, 1.0f, wg, dyn, 0.0f, col);
          std::memset(dxn, 0, sizeof(float) * sub.in_channels * g.in_spatial());
          Im2ColOrCol2Im<true>(sub, dxn, col);
        }
      }
      RoundSpan(round_to, dx.f32() + n * g.in_channels * g.in_spatial(),
                g.in_channels * g.in_spatial());
    }
  });
}

void ConvBackwardWeight(const ConvGeometry& g, const Tensor& x, const Tensor& dy, const Tensor& dw,
                        const Tensor& workspace, core::DType round_to) {
  if (CheckShapes(g, x, dw, dy)) {
    if (IsBf16(dy) && IsBf16(x)) {
      nhwc::ConvBackwardWeight(g, Bf16Data(x), Bf16Data(dy), dw.f32(), Scratch(workspace),
                               workspace.numel());
    } else if (IsBf16(dy)) {
      nhwc::ConvBackwardWeight(g, x.f32(), Bf16Data(dy), dw.f32(), Scratch(workspace),
                               workspace.numel());
    } else if (IsBf16(x)) {
      nhwc::ConvBackwardWeight(g, Bf16Data(x), dy.f32(), dw.f32(), Scratch(workspace),
                               workspace.numel());
    } else {
      nhwc::ConvBackwardWeight(g, x.f32(), dy.f32(), dw.f32(), Scratch(workspace),
                               workspace.numel());
    }
    if (round_to != core::DType::kF32) RoundToPrecision(round_to, dw, dw);
    return;
  }
  if (UseWinograd(g, workspace)) {
    winograd::BackwardWeight(g, x.f32(), dy.f32(), dw.f32(), workspace.f32());
    if (round_to != core::DType::kF32) RoundToPrecision(round_to, dw, dw);
    return;
  }
  const ConvGeometry sub = GroupOf(g);
  const int64_t k = sub.in_channels * g.kernel_volume(), p = g.out_spatial();
  const int threads = ImageThreads(g, workspace);
  // Thread t > 0 sums its images into its own partial, added to dw at the end.
  auto partial = [&](int t) {
    return t == 0 ? dw.f32()
                  : workspace.f32() + threads * g.col_elements() + (t - 1) * WeightElements(g);
  };
  ForImageShares(threads, g.batch, [&](int64_t n0, int64_t n1, int t) {
    float* acc = partial(t);
    std::fill(acc, acc + WeightElements(g), 0.0f);
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t group = 0; group < g.groups; ++group) {
        float* xn = x.f32() + (n * g.in_channels + group * sub.in_channels) * g.in_spatial();
        const float* col = xn;
        if (!g.is_pointwise()) {
          Im2ColOrCol2Im<false>(sub, xn, workspace.f32() + t * g.col_elements());
          col = workspace.f32() + t * g.col_elements();
        }
        Gemm(false, true, sub.out_channels, k, p, 1.0f,
             dy.f32() + (n * g.out_channels + group * sub.out_channels) * p, col, 1.0f,
             acc + group * sub.weight_elements());
      }
    }
  });
  for (int t = 1; t < threads; ++t) {
    const float* part = partial(t);
#pragma omp parallel for if (WorthParallel(WeightElements(g)))
    for (int64_t i = 0; i < WeightElements(g); ++i) dw.f32()[i] += part[i];
  }
  if (round_to != core::DType::kF32) RoundToPrecision(round_to, dw, dw);
}

void BiasAddChannels(const Tensor& bias, const Tensor& y, core::DType round_to) {
  const auto [n, c, s] = ViewChannels(y);
  MLPERF_CHECK(bias.numel() == c);
  const float* b = bias.f32();
  if (IsBf16(y)) {  // channels-last bf16 storage: the sum rounded as it is stored
    MLPERF_CHECK_MSG(s == 1, "bias add: bf16 storage is channels-last");
    uint16_t* out = Bf16Data(y);
#pragma omp parallel for if (WorthParallel(y.numel()))
    for (int64_t i = 0; i < n; ++i) {
      uint16_t* row = out + i * c;
      for (int64_t j = 0; j < c; ++j) row[j] = Bf16Bits(Bf16Value(row[j]) + b[j]);
    }
    return;
  }
  float* out = y.f32();
  // Each row rounded while it is in cache.
  if (s == 1) {  // channels-last: rows of channels
#pragma omp parallel for if (WorthParallel(y.numel()))
    for (int64_t i = 0; i < n; ++i) {
      float* row = out + i * c;
      for (int64_t j = 0; j < c; ++j) row[j] += b[j];
      RoundSpan(round_to, row, c);
    }
    return;
  }
#pragma omp parallel for collapse(2) if (WorthParallel(y.numel()))
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j) {
      float* row = out + (i * c + j) * s;
      for (int64_t q = 0; q < s; ++q) row[q] += b[j];
      RoundSpan(round_to, row, s);
    }
}

void BiasBackwardChannels(const Tensor& dy, const Tensor& dbias) {
  const auto [n, c, s] = ViewChannels(dy);
  MLPERF_CHECK(dbias.numel() == c);
  const bool bf16 = IsBf16(dy);
  MLPERF_CHECK_MSG(!bf16 || s == 1, "bias gradient: bf16 storage is channels-last");
  if (s == 1) {
    // Channels-last: each thread sums its share of the channels over the
    // rows in order (one pass over dy, each sum in the order below).
    std::vector<double> sums(static_cast<size_t>(c), 0.0);
#pragma omp parallel if (WorthParallel(dy.numel()) && c >= 64)
    {
      int64_t j0, j1;
      ThreadShare(c, &j0, &j1);
      for (int64_t i = 0; i < n; ++i) {
        if (bf16) {
          const uint16_t* row = Bf16Data(dy) + i * c;
          for (int64_t j = j0; j < j1; ++j) sums[j] += Bf16Value(row[j]);
        } else {
          const float* row = dy.f32() + i * c;
          for (int64_t j = j0; j < j1; ++j) sums[j] += row[j];
        }
      }
    }
    for (int64_t j = 0; j < c; ++j) dbias.f32()[j] = static_cast<float>(sums[j]);
    return;
  }
  const float* g = dy.f32();
#pragma omp parallel for if (WorthParallel(dy.numel()))
  for (int64_t j = 0; j < c; ++j) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const float* row = g + (i * c + j) * s;
      for (int64_t q = 0; q < s; ++q) sum += row[q];
    }
    dbias.f32()[j] = static_cast<float>(sum);
  }
}

}  // namespace mlperf::cpu
