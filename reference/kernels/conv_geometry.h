// Shapes of a convolution or pooling window, shared by both backends. Two-D
// ops are the depth-1 case. Padding is given per side because TF "same"
// padding puts the odd extra pixel at the end (ResNet reference), while
// PyTorch pads symmetrically (3D U-Net reference).
#pragma once

#include <cstdint>

#include "base/check.h"

namespace mlperf {

struct ConvGeometry {
  int64_t batch = 1;
  int64_t in_channels = 1;
  int64_t out_channels = 1;   // for pooling equal to in_channels
  int64_t in[3] = {1, 1, 1};  // D, H, W
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0};
  int64_t pad_end[3] = {0, 0, 0};
  // Grouped convolution (ResNeXt): channels split into `groups` equal parts,
  // each output group seeing only its input group. Weights are [out_channels,
  // in_channels / groups, kD, kH, kW] (PyTorch's order).
  int64_t groups = 1;
  // The caller accepts Winograd's F(4x4, 3x3) for this convolution where the
  // CPU has it (cpu/conv_winograd.h): about 4x fewer multiplies for a
  // relative error of a few 1e-6 rather than about 1e-7. The GPU ignores it
  // (cuDNN picks its own algorithms).
  bool winograd = false;

  int64_t out(int i) const {
    return (in[i] + pad_begin[i] + pad_end[i] - kernel[i]) / stride[i] + 1;
  }
  int64_t in_spatial() const { return in[0] * in[1] * in[2]; }
  int64_t out_spatial() const { return out(0) * out(1) * out(2); }
  int64_t kernel_volume() const { return kernel[0] * kernel[1] * kernel[2]; }
  int64_t group_in_channels() const { return in_channels / groups; }
  int64_t group_out_channels() const { return out_channels / groups; }
  int64_t weight_elements() const { return out_channels * group_in_channels() * kernel_volume(); }
  // Elements of one image's im2col matrix: [in_channels * kernel_volume, out_spatial].
  int64_t col_elements() const { return in_channels * kernel_volume() * out_spatial(); }
  bool is_pointwise() const {
    for (int i = 0; i < 3; ++i)
      if (kernel[i] != 1 || stride[i] != 1 || pad_begin[i] != 0 || pad_end[i] != 0) return false;
    return true;
  }
};

// N x C x H x W input, K filters of R x S, symmetric padding.
inline ConvGeometry Conv2d(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                           int64_t s, int64_t stride, int64_t pad) {
  ConvGeometry g;
  g.batch = n;
  g.in_channels = c;
  g.out_channels = k;
  g.in[1] = h;
  g.in[2] = w;
  g.kernel[1] = r;
  g.kernel[2] = s;
  g.stride[1] = g.stride[2] = stride;
  g.pad_begin[1] = g.pad_begin[2] = g.pad_end[1] = g.pad_end[2] = pad;
  return g;
}

inline ConvGeometry Conv3d(int64_t n, int64_t c, int64_t d, int64_t h, int64_t w, int64_t k,
                           int64_t kernel, int64_t stride, int64_t pad) {
  ConvGeometry g;
  g.batch = n;
  g.in_channels = c;
  g.out_channels = k;
  g.in[0] = d;
  g.in[1] = h;
  g.in[2] = w;
  for (int i = 0; i < 3; ++i) {
    g.kernel[i] = kernel;
    g.stride[i] = stride;
    g.pad_begin[i] = g.pad_end[i] = pad;
  }
  return g;
}

// TF "same" padding on one axis: total = max((out-1)*stride + k - in, 0), the
// larger half at the end.
inline void SetSamePadding(ConvGeometry* g) {
  for (int i = 0; i < 3; ++i) {
    const int64_t out = (g->in[i] + g->stride[i] - 1) / g->stride[i];
    int64_t total = (out - 1) * g->stride[i] + g->kernel[i] - g->in[i];
    if (total < 0) total = 0;
    g->pad_begin[i] = total / 2;
    g->pad_end[i] = total - total / 2;
  }
}

}  // namespace mlperf
