#include "reference/kernels/cpu/conv_bn.h"

#include "base/check.h"
#include "reference/kernels/cpu/conv_nhwc.h"
#include "reference/kernels/cpu/layout.h"
#include "reference/kernels/cpu/norm_rows.h"

namespace mlperf::cpu {

using core::Tensor;

bool FusesConvBatchNorm(const Tensor& x, const Tensor& y) {
  return IsChannelsLast(x) && IsChannelsLast(y);
}

void ConvBatchNormActForwardInference(const ConvGeometry& g, const Tensor& x, const Tensor& w,
                                      const Tensor& workspace, const BatchNormParams& p, bool relu,
                                      const Tensor& residual, const Tensor& gamma,
                                      const Tensor& beta, const Tensor& running_mean,
                                      const Tensor& running_var, const Tensor& y,
                                      core::DType conv_round_to, core::DType round_to) {
  MLPERF_CHECK_MSG(FusesConvBatchNorm(x, y), "the fused convolution takes channels-last tensors");
  const int64_t k = g.out_channels;
  MLPERF_CHECK(x.numel() == g.batch * g.in_channels * g.in_spatial() &&
               LastDim(x) == g.in_channels);
  MLPERF_CHECK_MSG(g.groups == 1, "the fused convolution has no groups");
  MLPERF_CHECK(w.numel() == k * g.in_channels * g.kernel_volume());
  MLPERF_CHECK(y.numel() == g.batch * k * g.out_spatial() && LastDim(y) == k);
  MLPERF_CHECK(gamma.numel() == k);
  if (!residual.empty())
    MLPERF_CHECK(residual.numel() == y.numel() && IsChannelsLast(residual) &&
                 residual.dtype() == y.dtype());
  const norm_detail::Affine a =
      norm_detail::InferenceAffine(p, gamma, beta, running_mean, running_var);
  float* ws = workspace.empty() ? nullptr : workspace.f32();
  nhwc::OutputRows consume;
  if (IsBf16(y)) {
    // Stored in bf16, which rounds it (round_to names fp32 storage's rounding).
    const norm_detail::ApplyBf16Fn apply = norm_detail::PickApplyBf16(relu, !residual.empty());
    const uint16_t* res = Bf16Data(residual);
    uint16_t* out = Bf16Data(y);
    consume = [&](int64_t r0, int64_t r1, const float* rows) {
      apply(r1 - r0, k, rows, res == nullptr ? nullptr : res + r0 * k, a.mean, a.scale, a.beta,
            out + r0 * k);
    };
  } else {
    const norm_detail::ApplyFn apply = norm_detail::PickApply(relu, !residual.empty());
    const float* res = residual.empty() ? nullptr : residual.f32();
    float* out = y.f32();
    consume = [&](int64_t r0, int64_t r1, const float* rows) {
      apply(r1 - r0, k, rows, res == nullptr ? nullptr : res + r0 * k, a.mean, a.scale, a.beta,
            out + r0 * k, round_to);
    };
  }
  if (IsBf16(x)) {
    nhwc::ConvForwardRows(g, Bf16Data(x), w.f32(), consume, ws, workspace.numel(), conv_round_to);
  } else {
    nhwc::ConvForwardRows(g, x.f32(), w.f32(), consume, ws, workspace.numel(), conv_round_to);
  }
}

}  // namespace mlperf::cpu
