// The im2col matrices of the channels-last convolutions (conv_nhwc.cc): one
// row per output pixel (n, z, y, x) and one column per (kd, kh, kw, c); the
// col2im adjoint; the weight repacks their GEMMs take; and the adjoint
// geometry, under which a stride-1 convolution's backward data is a forward.
#pragma once

#include <algorithm>
#include <cstdint>

#include "reference/kernels/conv_geometry.h"

namespace mlperf::cpu::nhwc {

inline int64_t ColWidth(const ConvGeometry& g) { return g.kernel_volume() * g.in_channels; }

// The convolution whose forward over dy is g's backward data when g has
// stride 1 and less padding than its kernel: channels swapped, dy's extent
// in, the padding mirrored (its taps run in reverse order: RepackFlipped).
inline ConvGeometry Adjoint(const ConvGeometry& g) {
  ConvGeometry a = g;
  a.in_channels = g.out_channels;
  a.out_channels = g.in_channels;
  for (int i = 0; i < 3; ++i) {
    a.in[i] = g.out(i);
    a.pad_begin[i] = g.kernel[i] - 1 - g.pad_begin[i];
    a.pad_end[i] = g.kernel[i] - 1 - g.pad_end[i];
  }
  return a;
}

// Offset of input pixel (n, z, y, x) in an N[D]HWC tensor.
inline int64_t PixelOffset(const ConvGeometry& g, int64_t n, int64_t z, int64_t y, int64_t x) {
  return (((n * g.in[0] + z) * g.in[1] + y) * g.in[2] + x) * g.in_channels;
}

// Calls visit(col_offset, input_offset, floats) for the runs of output row
// `row` = (n, z, y, x), in tap order: the kW taps of one kernel row are
// neighbouring input pixels, so where all of them lie inside the input they
// form one contiguous run of kW * C floats (21 for the stem's 7x7 over RGB
// rather than seven runs of 3); elsewhere each tap is its own run of C, with
// input_offset -1 for padding.
template <typename Visit>
void ForEachRun(const ConvGeometry& g, int64_t row, Visit visit) {
  const int64_t ow = g.out(2), oh = g.out(1), od = g.out(0), c = g.in_channels;
  const int64_t kw_count = g.kernel[2];
  const int64_t x = row % ow, y = (row / ow) % oh, z = (row / (ow * oh)) % od;
  const int64_t n = row / g.out_spatial();
  const int64_t ix0 = x * g.stride[2] - g.pad_begin[2];
  const bool columns_inside = ix0 >= 0 && ix0 + kw_count <= g.in[2];
  for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
    const int64_t iz = z * g.stride[0] - g.pad_begin[0] + kd;
    for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
      const int64_t iy = y * g.stride[1] - g.pad_begin[1] + kh;
      const bool row_inside = iz >= 0 && iz < g.in[0] && iy >= 0 && iy < g.in[1];
      const int64_t col = (kd * g.kernel[1] + kh) * kw_count * c;
      if (row_inside && columns_inside) {
        visit(col, PixelOffset(g, n, iz, iy, ix0), kw_count * c);
        continue;
      }
      for (int64_t kw = 0; kw < kw_count; ++kw) {
        const int64_t ix = ix0 + kw;
        visit(col + kw * c,
              row_inside && ix >= 0 && ix < g.in[2] ? PixelOffset(g, n, iz, iy, ix) : int64_t{-1},
              c);
      }
    }
  }
}

// col rows [begin, end) of the im2col matrix; padding reads as zero. T is
// float, or uint16_t for bf16 bits (zero is zero in both).
template <typename T>
void Im2Col(const ConvGeometry& g, const T* x, int64_t begin, int64_t end, T* col) {
  const int64_t width = ColWidth(g);
  for (int64_t row = begin; row < end; ++row) {
    T* out = col + (row - begin) * width;
    ForEachRun(g, row, [&](int64_t at, int64_t in, int64_t count) {
      T* o = out + at;
      if (in < 0) {
        std::fill(o, o + count, T{0});
      } else {
        std::copy(x + in, x + in + count, o);
      }
    });
  }
}

// The same from an fp32 x into a bf16 col, rounded as the AMX GEMMs pack
// fp32 (PackedBf16): under bf16 they read it with the bits of the fp32 col,
// from half its bytes, and in place where its rows are whole tile rows.
void Im2Col(const ConvGeometry& g, const float* x, int64_t begin, int64_t end, uint16_t* col);

// Col rows [begin, end) in bf16 (x in bf16, or in fp32 rounded as above) in
// the AMX GEMMs' pair layout (gemm_amx.h's AmxPairRows), zero rows up to a
// multiple of 32: the B of a weight gradient's GEMM, which then reads it in
// place rather than packing it. Two rows at a time go through a thread's
// small buffer, so the chunk is written once.
void Im2ColPairs(const ConvGeometry& g, const uint16_t* x, int64_t begin, int64_t end,
                 uint16_t* pairs);
void Im2ColPairs(const ConvGeometry& g, const float* x, int64_t begin, int64_t end,
                 uint16_t* pairs);

// The adjoint: adds col rows [begin, end) into the pixels they were copied
// from, dx holding the input from element `origin` on.
void Col2ImAdd(const ConvGeometry& g, const float* col, int64_t begin, int64_t end, float* dx,
               int64_t origin = 0);

// [K, C, V] -> [K, V, C] (w' of conv_nhwc.cc) and back: a transpose of each
// filter's [C, V] matrix.
void RepackToChannelsLast(const ConvGeometry& g, const float* src, float* dst);
void RepackFromChannelsLast(const ConvGeometry& g, const float* src, float* dst);

// [K, C, V] -> [V, K, C] with the taps in reverse order (w" of conv_nhwc.cc).
void RepackFlipped(const ConvGeometry& g, const float* src, float* dst);

}  // namespace mlperf::cpu::nhwc
