#include "reference/kernels/cpu/conv.h"

#include <cstring>

#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/cpu/parallel.h"

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

void CheckShapes(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor& y) {
  MLPERF_CHECK(x.numel() == g.batch * g.in_channels * g.in_spatial());
  MLPERF_CHECK(w.numel() == g.out_channels * g.in_channels * g.kernel_volume());
  MLPERF_CHECK(y.numel() == g.batch * g.out_channels * g.out_spatial());
}

}  // namespace

int64_t ConvWorkspaceElements(const ConvGeometry& g) {
  return g.is_pointwise() ? 0 : g.col_elements();
}

void ConvForward(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor& y,
                 const Tensor& workspace) {
  CheckShapes(g, x, w, y);
  const int64_t k = g.in_channels * g.kernel_volume(), p = g.out_spatial();
  for (int64_t n = 0; n < g.batch; ++n) {
    float* xn = x.f32() + n * g.in_channels * g.in_spatial();
    const float* col = xn;
    if (!g.is_pointwise()) {
      MLPERF_CHECK(workspace.numel() >= g.col_elements());
      Im2ColOrCol2Im<false>(g, xn, workspace.f32());
      col = workspace.f32();
    }
    Gemm(false, false, g.out_channels, p, k, 1.0f, w.f32(), col, 0.0f,
         y.f32() + n * g.out_channels * p);
  }
}

void ConvBackwardData(const ConvGeometry& g, const Tensor& dy, const Tensor& w, const Tensor& dx,
                      const Tensor& workspace) {
  CheckShapes(g, dx, w, dy);
  const int64_t k = g.in_channels * g.kernel_volume(), p = g.out_spatial();
  for (int64_t n = 0; n < g.batch; ++n) {
    float* dxn = dx.f32() + n * g.in_channels * g.in_spatial();
    const float* dyn = dy.f32() + n * g.out_channels * p;
    if (g.is_pointwise()) {
      Gemm(true, false, k, p, g.out_channels, 1.0f, w.f32(), dyn, 0.0f, dxn);
      continue;
    }
    MLPERF_CHECK(workspace.numel() >= g.col_elements());
    Gemm(true, false, k, p, g.out_channels, 1.0f, w.f32(), dyn, 0.0f, workspace.f32());
    std::memset(dxn, 0, sizeof(float) * g.in_channels * g.in_spatial());
    Im2ColOrCol2Im<true>(g, dxn, workspace.f32());
  }
}

void ConvBackwardWeight(const ConvGeometry& g, const Tensor& x, const Tensor& dy, const Tensor& dw,
                        const Tensor& workspace) {
  CheckShapes(g, x, dw, dy);
  const int64_t k = g.in_channels * g.kernel_volume(), p = g.out_spatial();
  for (int64_t n = 0; n < g.batch; ++n) {
    float* xn = x.f32() + n * g.in_channels * g.in_spatial();
    const float* col = xn;
    if (!g.is_pointwise()) {
      MLPERF_CHECK(workspace.numel() >= g.col_elements());
      Im2ColOrCol2Im<false>(g, xn, workspace.f32());
      col = workspace.f32();
    }
    Gemm(false, true, g.out_channels, k, p, 1.0f, dy.f32() + n * g.out_channels * p, col,
         n == 0 ? 0.0f : 1.0f, dw.f32());
  }
}

void ConvTransposeForward(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor& y,
                          const Tensor& workspace) {
  ConvBackwardData(g, x, w, y, workspace);
}

void ConvTransposeBackwardData(const ConvGeometry& g, const Tensor& dy, const Tensor& w,
                               const Tensor& dx, const Tensor& workspace) {
  ConvForward(g, dy, w, dx, workspace);
}

void ConvTransposeBackwardWeight(const ConvGeometry& g, const Tensor& x, const Tensor& dy,
                                 const Tensor& dw, const Tensor& workspace) {
  // The convolution's "input" is the transposed conv's output gradient and its
  // "output gradient" the transposed conv's input.
  ConvBackwardWeight(g, dy, x, dw, workspace);
}

void BiasAddChannels(const Tensor& bias, const Tensor& y) {
  const int64_t n = y.dim(0), c = y.dim(1), s = y.numel() / (n * c);
  MLPERF_CHECK(bias.numel() == c);
  const float* b = bias.f32();
  float* out = y.f32();
#pragma omp parallel for collapse(2) if (WorthParallel(y.numel()))
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j) {
      float* row = out + (i * c + j) * s;
      for (int64_t q = 0; q < s; ++q) row[q] += b[j];
    }
}

void BiasBackwardChannels(const Tensor& dy, const Tensor& dbias) {
  const int64_t n = dy.dim(0), c = dy.dim(1), s = dy.numel() / (n * c);
  MLPERF_CHECK(dbias.numel() == c);
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
