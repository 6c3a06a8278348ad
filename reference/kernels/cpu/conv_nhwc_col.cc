#include "reference/kernels/cpu/conv_nhwc_col.h"

#include <algorithm>
#include <vector>

#include "reference/kernels/cpu/gemm_amx.h"
#include "reference/kernels/cpu/parallel.h"

namespace mlperf::cpu::nhwc {
namespace {

template <bool kToChannelsLast>
void RepackWeight(const ConvGeometry& g, const float* src, float* dst) {
  const int64_t c = g.in_channels, v = g.kernel_volume();
#pragma omp parallel for if (WorthParallel(g.out_channels * c * v))
  for (int64_t k = 0; k < g.out_channels; ++k) {
    const float* s = src + k * c * v;
    float* d = dst + k * c * v;
    for (int64_t i = 0; i < c; ++i)
      for (int64_t j = 0; j < v; ++j) {
        if constexpr (kToChannelsLast) {
          d[j * c + i] = s[i * v + j];
        } else {
          d[i * v + j] = s[j * c + i];
        }
      }
  }
}

}  // namespace

void Im2Col(const ConvGeometry& g, const float* x, int64_t begin, int64_t end, uint16_t* col) {
  const int64_t width = ColWidth(g);
  for (int64_t row = begin; row < end; ++row) {
    uint16_t* out = col + (row - begin) * width;
    ForEachRun(g, row, [&](int64_t at, int64_t in, int64_t count) {
      if (in < 0) {
        std::fill(out + at, out + at + count, uint16_t{0});
      } else {
        PackedBf16(x + in, count, out + at);
      }
    });
  }
}

namespace {

template <typename T>
void PairsOf(const ConvGeometry& g, const T* x, int64_t begin, int64_t end, uint16_t* pairs) {
  const int64_t width = ColWidth(g), columns = AmxPairColumns(width);
  const int64_t padded = (end - begin + 31) / 32 * 32;
  thread_local std::vector<uint16_t> two;
  if (static_cast<int64_t>(two.size()) < 2 * width) two.resize(static_cast<size_t>(2 * width));
  for (int64_t r = 0; r < padded; r += 2) {
    uint16_t* out = pairs + r * columns;  // pair row r / 2, 2 * columns long
    const int64_t row = begin + r;
    if (row >= end) {
      std::fill(out, out + 2 * columns, uint16_t{0});
      continue;
    }
    const int64_t last = std::min(end, row + 2);
    Im2Col(g, x, row, last, two.data());
    AmxPairRows(two.data(), last - row == 2 ? two.data() + width : nullptr, width, out);
  }
}

}  // namespace

void Im2ColPairs(const ConvGeometry& g, const uint16_t* x, int64_t begin, int64_t end,
                 uint16_t* pairs) {
  PairsOf(g, x, begin, end, pairs);
}

void Im2ColPairs(const ConvGeometry& g, const float* x, int64_t begin, int64_t end,
                 uint16_t* pairs) {
  PairsOf(g, x, begin, end, pairs);
}

void Col2ImAdd(const ConvGeometry& g, const float* col, int64_t begin, int64_t end, float* dx,
               int64_t origin) {
  const int64_t width = ColWidth(g);
  for (int64_t row = begin; row < end; ++row) {
    const float* in = col + (row - begin) * width;
    ForEachRun(g, row, [&](int64_t at, int64_t out, int64_t count) {
      if (out < 0) return;
      const float* s = in + at;
      float* d = dx + (out - origin);
      for (int64_t i = 0; i < count; ++i) d[i] += s[i];
    });
  }
}

void RepackToChannelsLast(const ConvGeometry& g, const float* src, float* dst) {
  RepackWeight<true>(g, src, dst);
}

void RepackFromChannelsLast(const ConvGeometry& g, const float* src, float* dst) {
  RepackWeight<false>(g, src, dst);
}

// A block of 64 filter channels at a time, so that its source stays in L1.
void RepackFlipped(const ConvGeometry& g, const float* src, float* dst) {
  const int64_t kc = g.out_channels * g.in_channels, v = g.kernel_volume();
#pragma omp parallel for if (WorthParallel(kc * v))
  for (int64_t i0 = 0; i0 < kc; i0 += 64) {
    const int64_t i1 = std::min(kc, i0 + 64);
    for (int64_t j = 0; j < v; ++j) {
      float* d = dst + (v - 1 - j) * kc;
      for (int64_t i = i0; i < i1; ++i) d[i] = src[i * v + j];
    }
  }
}

}  // namespace mlperf::cpu::nhwc
