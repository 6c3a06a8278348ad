// The normalisation ops of ops:: (batch norm with its fused residual add
// and ReLU, instance norm, layer norm), with the storage rounding of
// precision.h around both backends.
#include "reference/kernels/cpu/conv_bn.h"
#include "reference/kernels/cpu/norm.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/dispatch_backend.h"
#include "reference/kernels/precision.h"
#include "reference/kernels/precision_operands.h"

#ifdef MLPERF_HAVE_CUDA
#include "reference/kernels/cuda/conv.h"
#include "reference/kernels/cuda/conv_graph.h"
#include "reference/kernels/cuda/norm.h"
#include "reference/kernels/cuda/norm_channels_last.h"
#endif

namespace mlperf::ops {

using core::Tensor;
using detail::OnDevice;

void BatchNormForwardTraining(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                              const Tensor& beta, const Tensor& y, const Tensor& save_mean,
                              const Tensor& save_inv_std, const Tensor& running_mean,
                              const Tensor& running_var) {
  if (OnDevice(x, {&gamma, &y, &running_mean}))
    return MLPERF_CUDA_TWIN(BatchNormForwardTraining(p, x, gamma, beta, y, save_mean, save_inv_std,
                                                     running_mean, running_var));
  cpu::BatchNormForwardTraining(p, x, gamma, beta, y, save_mean, save_inv_std, running_mean,
                                running_var);
}

void BatchNormForwardInference(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, const Tensor& running_mean,
                               const Tensor& running_var, const Tensor& y) {
  if (OnDevice(x, {&gamma, &y, &running_mean}))
    return MLPERF_CUDA_TWIN(
        BatchNormForwardInference(p, x, gamma, beta, running_mean, running_var, y));
  cpu::BatchNormForwardInference(p, x, gamma, beta, running_mean, running_var, y);
}

void BatchNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                       const Tensor& save_mean, const Tensor& save_inv_std, const Tensor& dx,
                       const Tensor& dgamma, const Tensor& dbeta) {
  if (OnDevice(x, {&dy, &dx, &dgamma}))
    return MLPERF_CUDA_TWIN(
        BatchNormBackward(x, dy, gamma, save_mean, save_inv_std, dx, dgamma, dbeta));
  cpu::BatchNormBackward(x, dy, gamma, save_mean, save_inv_std, dx, dgamma, dbeta);
}

namespace {

// Under bf16/fp16 the normalised value is rounded before a residual is added
// (precision.h). The CUDA kernels round it so only as they store a y of the
// precision's type, so an fp32 y there takes the op in three: the batch
// norm, the rounded add, the ReLU. The CPU twin rounds at both points itself.
bool SplitsResidual(const Tensor& residual, const Tensor& y) {
  return !residual.empty() && y.dtype() == core::DType::kF32 &&
         ComputePrecision() != core::DType::kF32;
}

void AddResidualThenRelu(bool relu, const Tensor& residual, const Tensor& y) {
  AccumulateStored(residual, y);
  if (relu) ReluForward(y, y);  // exact on rounded values
}

bool ChannelsLast(const Tensor& t) {
  return t.layout() == core::Layout::kNHWC || t.layout() == core::Layout::kNDHWC;
}

}  // namespace

int64_t ReluMaskWords(const Tensor& y) {
  const int64_t channels = ChannelsLast(y) ? y.dim(y.shape().rank() - 1) : y.dim(1);
  return y.numel() / channels * ((channels + 31) / 32);
}

void BatchNormActForwardTraining(const BatchNormParams& p, bool relu, const Tensor& x,
                                 const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                                 const Tensor& y, const Tensor& save_mean,
                                 const Tensor& save_inv_std, const Tensor& running_mean,
                                 const Tensor& running_var, const Tensor& relu_mask) {
  if (OnDevice(x, {&residual, &gamma, &y, &running_mean, &relu_mask})) {
    if (SplitsResidual(residual, y)) {
      BatchNormActForwardTraining(p, false, x, Tensor(), gamma, beta, y, save_mean, save_inv_std,
                                  running_mean, running_var, Tensor());
      return AddResidualThenRelu(relu, residual, y);
    }
    MLPERF_CUDA_TWIN(BatchNormActForwardTraining(p, relu, x, residual, gamma, beta, y, save_mean,
                                                 save_inv_std, running_mean, running_var,
                                                 relu_mask));
    return RoundStored(y);
  }
  cpu::BatchNormActForwardTraining(p, relu, x, residual, gamma, beta, y, save_mean, save_inv_std,
                                   running_mean, running_var, StoredRounding(y));
}

void BatchNormActForwardInference(const BatchNormParams& p, bool relu, const Tensor& x,
                                  const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                                  const Tensor& running_mean, const Tensor& running_var,
                                  const Tensor& y, const Tensor& relu_mask) {
  if (OnDevice(x, {&residual, &gamma, &y, &running_mean, &relu_mask})) {
    if (SplitsResidual(residual, y)) {
      BatchNormActForwardInference(p, false, x, Tensor(), gamma, beta, running_mean, running_var, y,
                                   Tensor());
      return AddResidualThenRelu(relu, residual, y);
    }
    MLPERF_CUDA_TWIN(BatchNormActForwardInference(p, relu, x, residual, gamma, beta, running_mean,
                                                  running_var, y, relu_mask));
    return RoundStored(y);
  }
  cpu::BatchNormActForwardInference(p, relu, x, residual, gamma, beta, running_mean, running_var, y,
                                    StoredRounding(y));
}

void ConvBatchNormActForwardInference(const ConvGeometry& g, const Tensor& x, const Tensor& w,
                                      const Tensor& z, const Tensor& workspace,
                                      const BatchNormParams& p, bool relu, const Tensor& residual,
                                      const Tensor& gamma, const Tensor& beta,
                                      const Tensor& running_mean, const Tensor& running_var,
                                      const Tensor& y, const Tensor& relu_mask) {
  const bool device = OnDevice(x, {&w, &z, &y, &residual, &gamma, &running_mean, &relu_mask});
  if (!device && cpu::FusesConvBatchNorm(x, y)) {
    // The convolution's output rounded as z would store it (in z's own type
    // where that is not fp32).
    const core::DType conv_round_to =
        z.dtype() == core::DType::kF32 ? StoredRounding(z) : z.dtype();
    return cpu::ConvBatchNormActForwardInference(g, GemmOperand(x, 0), GemmOperand(w, 1), workspace,
                                                 p, relu, residual, gamma, beta, running_mean,
                                                 running_var, y, conv_round_to, StoredRounding(y));
  }
#ifdef MLPERF_HAVE_CUDA
  // One cuDNN kernel: the normalisation, residual and ReLU in the
  // convolution's epilogue (no mask: nothing trains on an inference pass).
  const bool typed =
      y.dtype() == ComputePrecision() && (residual.empty() || residual.dtype() == y.dtype());
  if (device && InPrecisionType(x) && typed && ChannelsLast(y) && relu_mask.empty() &&
      cuda::ConvEpilogues()) {
    const int64_t k = g.out_channels;
    const float* scale_bias = cuda::InferenceScaleBias(gamma.f32(), beta.f32(), running_mean.f32(),
                                                       running_var.f32(), k, p.epsilon);
    if (cuda::ConvForwardScaleBiasAct(g, PrecisionTypeOperand(x, 0), PrecisionTypeOperand(w, 1),
                                      scale_bias, scale_bias + k, residual, relu, y))
      return;
  }
#endif
  ConvForward(g, x, w, z, workspace);
  BatchNormActForwardInference(p, relu, z, residual, gamma, beta, running_mean, running_var, y,
                               relu_mask);
}

void BatchNormActBackward(bool relu, const Tensor& x, const Tensor& y, const Tensor& dy,
                          const Tensor& gamma, const Tensor& save_mean, const Tensor& save_inv_std,
                          const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                          const Tensor& addend, const Tensor& relu_mask) {
  // The CUDA twin rounds the sum to dy's type: enough unless dy is fp32
  // under a reduced precision, where RoundStored rounds it apart. The CPU
  // twin rounds it to the precision itself.
  const bool device = OnDevice(x, {&y, &dy, &dx, &dgamma, &addend, &relu_mask});
  if (!addend.empty() && device && dy.dtype() != ComputePrecision()) {
    AccumulateStored(addend, dy);
    return BatchNormActBackward(relu, x, y, dy, gamma, save_mean, save_inv_std, dx, dgamma, dbeta,
                                Tensor(), relu_mask);
  }
  if (device) {
    MLPERF_CUDA_TWIN(BatchNormActBackward(relu, x, y, dy, gamma, save_mean, save_inv_std, dx,
                                          dgamma, dbeta, addend, relu_mask));
    return RoundStored(dx);
  }
  cpu::BatchNormActBackward(relu, x, y, dy, gamma, save_mean, save_inv_std, dx, dgamma, dbeta,
                            StoredRounding(dx), addend);
}

void InstanceNormForward(float epsilon, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                         const Tensor& y, const Tensor& save_mean, const Tensor& save_inv_std) {
  if (OnDevice(x, {&gamma, &y}))
    return MLPERF_CUDA_TWIN(
        InstanceNormForward(epsilon, x, gamma, beta, y, save_mean, save_inv_std));
  cpu::InstanceNormForward(epsilon, x, gamma, beta, y, save_mean, save_inv_std);
}

void InstanceNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                          const Tensor& save_mean, const Tensor& save_inv_std, const Tensor& dx,
                          const Tensor& dgamma, const Tensor& dbeta) {
  if (OnDevice(x, {&dy, &dx}))
    return MLPERF_CUDA_TWIN(
        InstanceNormBackward(x, dy, gamma, save_mean, save_inv_std, dx, dgamma, dbeta));
  cpu::InstanceNormBackward(x, dy, gamma, save_mean, save_inv_std, dx, dgamma, dbeta);
}

void InstanceNormReluForward(float epsilon, const Tensor& x, const Tensor& gamma,
                             const Tensor& beta, const Tensor& y, const Tensor& save_mean,
                             const Tensor& save_inv_std, const Tensor& relu_mask) {
  if (OnDevice(x, {&gamma, &y, &relu_mask})) {
    MLPERF_CUDA_TWIN(
        InstanceNormReluForward(epsilon, x, gamma, beta, y, save_mean, save_inv_std, relu_mask));
    return RoundStored(y);
  }
  cpu::InstanceNormForward(epsilon, x, gamma, beta, y, save_mean, save_inv_std, true,
                           StoredRounding(y));
}

void InstanceNormReluBackward(const Tensor& x, const Tensor& y, const Tensor& dy,
                              const Tensor& gamma, const Tensor& save_mean,
                              const Tensor& save_inv_std, const Tensor& dx, const Tensor& dgamma,
                              const Tensor& dbeta, const Tensor& relu_mask) {
  if (OnDevice(x, {&y, &dy, &dx, &relu_mask}))
    return MLPERF_CUDA_TWIN(InstanceNormReluBackward(x, y, dy, gamma, save_mean, save_inv_std, dx,
                                                     dgamma, dbeta, relu_mask));
  cpu::InstanceNormBackward(x, dy, gamma, save_mean, save_inv_std, dx, dgamma, dbeta, y);
}

void LayerNormForward(float epsilon, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                      const Tensor& y, const Tensor& save_mean, const Tensor& save_inv_std) {
  if (OnDevice(x, {&gamma, &y}))
    return MLPERF_CUDA_TWIN(LayerNormForward(epsilon, x, gamma, beta, y, save_mean, save_inv_std));
  cpu::LayerNormForward(epsilon, x, gamma, beta, y, save_mean, save_inv_std);
}

void LayerNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                       const Tensor& save_mean, const Tensor& save_inv_std, const Tensor& dx,
                       const Tensor& dgamma, const Tensor& dbeta) {
  if (OnDevice(x, {&dy, &dx}))
    return MLPERF_CUDA_TWIN(
        LayerNormBackward(x, dy, gamma, save_mean, save_inv_std, dx, dgamma, dbeta));
  cpu::LayerNormBackward(x, dy, gamma, save_mean, save_inv_std, dx, dgamma, dbeta);
}

}  // namespace mlperf::ops
