// CUDA twins of cpu/norm.h. Channels-last batch and instance norms run on
// the own kernels of cuda/norm_channels_last; channels-first batch norm runs
// on cuDNN (spatial mode), channels-first instance norm and layer norm on own
// kernels with one block per normalised group. x, y, dy
// and dx may be fp32, bf16 or fp16 (activations tagged kNHWC/kNDHWC are
// channels-last); gamma, beta, the saved and running statistics are fp32 and
// all statistics accumulate in fp32.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/norm_params.h"

namespace mlperf::cuda {

using mlperf::BatchNormParams;

// cuDNN's exponentialAverageFactor is the weight of the new batch statistic,
// which is `momentum` in this suite's (PyTorch's) convention, and cuDNN's
// running variance takes the unbiased batch variance, as the CPU twin does;
// save_inv_std is cuDNN's resultSaveInvVariance, 1/sqrt(var + epsilon).
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

// Twins of cpu::BatchNormAct*: channels-last, one fused pass; otherwise
// cuDNN's batch norm, then one pointwise pass for the residual add and ReLU
// (forward) or the ReLU mask written back into dy (backward). residual
// (optional), y and dy share x's dtype and layout. The backward's optional
// addend is added to dy first, rounded to dy's dtype (ops::
// BatchNormActBackward); the ReLU mask (ops::ReluMaskWords) is written and
// read by the channels-last kernels only.
void BatchNormActForwardTraining(const BatchNormParams& p, bool relu, const core::Tensor& x,
                                 const core::Tensor& residual, const core::Tensor& gamma,
                                 const core::Tensor& beta, const core::Tensor& y,
                                 const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                                 const core::Tensor& running_mean, const core::Tensor& running_var,
                                 const core::Tensor& relu_mask = core::Tensor());
void BatchNormActForwardInference(const BatchNormParams& p, bool relu, const core::Tensor& x,
                                  const core::Tensor& residual, const core::Tensor& gamma,
                                  const core::Tensor& beta, const core::Tensor& running_mean,
                                  const core::Tensor& running_var, const core::Tensor& y,
                                  const core::Tensor& relu_mask = core::Tensor());
void BatchNormActBackward(bool relu, const core::Tensor& x, const core::Tensor& y,
                          const core::Tensor& dy, const core::Tensor& gamma,
                          const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                          const core::Tensor& dx, const core::Tensor& dgamma,
                          const core::Tensor& dbeta, const core::Tensor& addend = core::Tensor(),
                          const core::Tensor& relu_mask = core::Tensor());

void InstanceNormForward(float epsilon, const core::Tensor& x, const core::Tensor& gamma,
                         const core::Tensor& beta, const core::Tensor& y,
                         const core::Tensor& save_mean, const core::Tensor& save_inv_std);
void InstanceNormBackward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& gamma,
                          const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                          const core::Tensor& dx, const core::Tensor& dgamma,
                          const core::Tensor& dbeta);
// Instance norm and a ReLU: channels-last in the own kernels' passes,
// channels-first as the two ops.
void InstanceNormReluForward(float epsilon, const core::Tensor& x, const core::Tensor& gamma,
                             const core::Tensor& beta, const core::Tensor& y,
                             const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                             const core::Tensor& relu_mask = core::Tensor());
void InstanceNormReluBackward(const core::Tensor& x, const core::Tensor& y, const core::Tensor& dy,
                              const core::Tensor& gamma, const core::Tensor& save_mean,
                              const core::Tensor& save_inv_std, const core::Tensor& dx,
                              const core::Tensor& dgamma, const core::Tensor& dbeta,
                              const core::Tensor& relu_mask = core::Tensor());

void LayerNormForward(float epsilon, const core::Tensor& x, const core::Tensor& gamma,
                      const core::Tensor& beta, const core::Tensor& y,
                      const core::Tensor& save_mean, const core::Tensor& save_inv_std);
void LayerNormBackward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& gamma,
                       const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                       const core::Tensor& dx, const core::Tensor& dgamma,
                       const core::Tensor& dbeta);

}  // namespace mlperf::cuda
