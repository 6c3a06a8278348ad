// The two FP8 formats of mixed-precision training (Micikevicius et al., "FP8
// Formats for Deep Learning", 2022) on the host: E4M3 (4 exponent bits, bias
// 7, no infinities, one NaN pattern per sign, largest 448) for weights and
// activations, E5M2 (5 exponent bits, bias 15, IEEE-like with infinities,
// largest 57344) for gradients; and the delayed per-tensor scaling that
// keeps a tensor's values inside them.
//
// Conversions from fp32 round to nearest even, as the ml_dtypes package's
// float8_e4m3fn and float8_e5m2 do (tests/core/fp8_test, bit for bit). A
// value past the largest becomes NaN in E4M3 and infinity in E5M2, unless the
// cast saturates, as the scaled casts of FP8 GEMMs do (CUDA's
// __NV_SATFINITE): then it becomes the largest finite value of its sign.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mlperf::core {

inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kE5m2Max = 57344.0f;

uint8_t FloatToE4m3(float f, bool saturate = false);
uint8_t FloatToE5m2(float f, bool saturate = false);
float E4m3ToFloat(uint8_t bits);
float E5m2ToFloat(uint8_t bits);

// Delayed scaling as Transformer Engine does it by default: each step casts
// with the scale the amax history gave before the step (x * scale into
// FP8, the GEMM's result times 1 / (scale_a * scale_b)), then records the
// step's amax. scale = format_max / max(history) / 2^margin; a zero or
// non-finite amax keeps the previous scale.
class DelayedScaling {
 public:
  DelayedScaling(float format_max, int history_length, int margin = 0);
  float scale() const { return scale_; }
  // Records a step's amax (largest |x| of the tensor before scaling) and
  // computes the next step's scale.
  void Record(float amax);

 private:
  float format_max_;
  int margin_;
  std::vector<float> history_;
  size_t next_ = 0;
  float scale_ = 1.0f;
};

}  // namespace mlperf::core
