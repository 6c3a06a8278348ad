// Batch, instance and layer normalisation. Statistics are accumulated in at
// least fp32; the saved mean and inverse standard deviation feed the backward.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/norm_params.h"

namespace mlperf::cpu {

using mlperf::BatchNormParams;

// Batch norm over x = [N, C, spatial...] (NCHW / NCDHW, or kRowMajor [N, C])
// or channels-last x = [N, spatial..., C] (kNHWC / kNDHWC); y, dy and dx must
// be in the same layout family as x (checked); BatchNormParams is in
// kernels/norm_params.h. The fused channels-last ops below also take x, y,
// dy, dx, residual and addend stored in bf16 (all of them; norm_rows.h),
// rounded as stored. The running
// variance takes the unbiased batch variance (n / (n - 1)), as both do.
void BatchNormForwardTraining(const BatchNormParams& p, const core::Tensor& x,
                              const core::Tensor& gamma, const core::Tensor& beta,
                              const core::Tensor& y, const core::Tensor& save_mean,
                              const core::Tensor& save_inv_std, const core::Tensor& running_mean,
                              const core::Tensor& running_var);
void BatchNormForwardInference(const BatchNormParams& p, const core::Tensor& x,
                               const core::Tensor& gamma, const core::Tensor& beta,
                               const core::Tensor& running_mean, const core::Tensor& running_var,
                               const core::Tensor& y);
void BatchNormBackward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& gamma,
                       const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                       const core::Tensor& dx, const core::Tensor& dgamma,
                       const core::Tensor& dbeta);

// Batch norm fused with what follows it in a ResNet unit, so that the
// activation makes one trip through memory: y = act(BN(x) + residual), where
// act is ReLU when `relu` is set (else the identity) and `residual` may be
// empty (no add). residual is in x's layout. y must not alias x or residual.
// y is rounded to `round_to` (bf16 or fp16) as it is written, if given, and
// with a residual so is BN(x) before the add (ops/precision.h's points).
void BatchNormActForwardTraining(const BatchNormParams& p, bool relu, const core::Tensor& x,
                                 const core::Tensor& residual, const core::Tensor& gamma,
                                 const core::Tensor& beta, const core::Tensor& y,
                                 const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                                 const core::Tensor& running_mean, const core::Tensor& running_var,
                                 core::DType round_to = core::DType::kF32);
void BatchNormActForwardInference(const BatchNormParams& p, bool relu, const core::Tensor& x,
                                  const core::Tensor& residual, const core::Tensor& gamma,
                                  const core::Tensor& beta, const core::Tensor& running_mean,
                                  const core::Tensor& running_var, const core::Tensor& y,
                                  core::DType round_to = core::DType::kF32);
// The backward of BatchNormActForward*: y is that forward's output and dy its
// gradient. With `relu`, dy is first overwritten by the gradient before the
// ReLU (dy where y > 0), which is also the residual's gradient; without it,
// y is not read (may be empty) and dy is left as it is. dx may alias dy; dy
// must not alias x or y. dx is rounded to `round_to` as it is written. A
// non-empty `addend` (a residual unit's second gradient branch) is added to
// dy first, the sum rounded to `round_to` and left in dy (before the mask).
void BatchNormActBackward(bool relu, const core::Tensor& x, const core::Tensor& y,
                          const core::Tensor& dy, const core::Tensor& gamma,
                          const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                          const core::Tensor& dx, const core::Tensor& dgamma,
                          const core::Tensor& dbeta, core::DType round_to = core::DType::kF32,
                          const core::Tensor& addend = core::Tensor());

// Instance norm (InstanceNorm3d(affine=True), no running statistics, as the
// 3D U-Net reference): statistics per (n, c); save_* hold N*C values. Either
// layout; x, y (dy, dx) must agree. With `relu` the forward writes
// relu(norm(x)), rounded to `round_to` (bf16 or fp16) if given; the
// backward of that forward is given its y as `relu_y`, and first zeroes dy
// where y <= 0, in place (ReluBackward's values).
void InstanceNormForward(float epsilon, const core::Tensor& x, const core::Tensor& gamma,
                         const core::Tensor& beta, const core::Tensor& y,
                         const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                         bool relu = false, core::DType round_to = core::DType::kF32);
void InstanceNormBackward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& gamma,
                          const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                          const core::Tensor& dx, const core::Tensor& dgamma,
                          const core::Tensor& dbeta, const core::Tensor& relu_y = core::Tensor());

// Layer norm over the last dimension of x = [rows, features]; BERT uses
// epsilon 1e-12 (reference modeling.py).
void LayerNormForward(float epsilon, const core::Tensor& x, const core::Tensor& gamma,
                      const core::Tensor& beta, const core::Tensor& y,
                      const core::Tensor& save_mean, const core::Tensor& save_inv_std);
void LayerNormBackward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& gamma,
                       const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                       const core::Tensor& dx, const core::Tensor& dgamma,
                       const core::Tensor& dbeta);

}  // namespace mlperf::cpu
