// Batch and instance norm over channels-last activations, own kernels
// (cuda/norm routes NHWC/NDHWC tensors here). In the third GPU check
// cuDNN's legacy batch norm took 0.88 s of a 1.0 s bf16 NHWC ResNet-50 step
// at batch 256 on an H200, these kernels (one channel a thread then) 26 ms on
// an H100. They read a row of channels with one coalesced load per warp (now
// two channels a thread in bf16/fp16, so that a warp reads 128 bytes; not
// yet run on a GPU) and pass over the data as few times as the maths allows
// (statistics: one read; normalise: one read, one write; backward: two
// reads of x and dy, one write).
//
// x is seen as [groups, rows, channels]: batch norm is one group of
// N * spatial rows, instance norm N groups of spatial rows. Statistics are
// per (group, channel) in fp32: each thread sums its rows in fp32 (shifted
// by the group's first value, so the one-pass variance does not cancel),
// and the blocks' partial sums are added in fp64 in a fixed order, so a run
// gives the same bits every time. x, y, dy, dx and the residual share one
// dtype (fp32, bf16 or fp16); the statistics, gamma and beta are fp32.
#pragma once

#include <cstdint>

#include "reference/core/tensor.h"

namespace mlperf::cuda {

struct ChannelsLastGroups {
  int64_t groups = 1, rows = 0, channels = 0;
};

// Whether cuda/norm sends channels-last batch and instance norms here
// (default: yes, unless MLPERF_CUDNN_BATCHNORM=1 asks for cuDNN's batch norm
// and the one-block-per-group instance norm); tests and benchmarks set it.
void SetChannelsLastNormKernels(bool on);
bool ChannelsLastNormKernels();

// Whether they take 16 bytes of channels a thread (8 of bf16/fp16, where the
// channel count is a multiple of 8 and the tensors 16-byte aligned), a warp
// then covering 2, 4 or 8 rows of 128, 64 or 32 channels, rather than 4 bytes
// (default: yes, unless MLPERF_NORM_WIDE=0; the sixth GPU check measured
// ResNet-50's bf16 step 46.3 -> 38.4 ms and the 3D U-Net's 132.1 -> 113.3
// ms with them). The sums' order changes with it, so the statistics' last
// bits do.
void SetWideNormKernels(bool on);
bool WideNormKernels();

// Mean and 1/sqrt(var + epsilon) (biased variance) per (group, channel)
// into save_mean and save_inv_std ([groups * channels]). With running_mean
// given (one group only), also the running statistics, as the CPU twin:
// weight `momentum` on the batch value, the unbiased variance.
void ChannelsLastMoments(const ChannelsLastGroups& s, const core::Tensor& x, float epsilon,
                         float momentum, float* save_mean, float* save_inv_std, float* running_mean,
                         float* running_var);

// inv_std = 1/sqrt(running_var + epsilon) per channel, in scratch (the
// inference statistics for ChannelsLastNormalize).
const float* InferenceInvStd(const float* running_var, int64_t channels, float epsilon);

// The inference batch norm as one affine map per channel, y = x * scale +
// bias: scale (channels floats) then bias in scratch, for an epilogue that
// folds the batch norm into the convolution before it
// (cuda/conv's ConvForwardScaleBiasAct).
const float* InferenceScaleBias(const float* gamma, const float* beta, const float* running_mean,
                                const float* running_var, int64_t channels, float epsilon);

// The ReLU's mask as bits, one per element, for the backward to read
// instead of y (a sixteenth of a bf16 y's bytes): rows of channels padded
// to 32, ReluMaskWords(s) 32-bit words.
int64_t ReluMaskWords(const ChannelsLastGroups& s);

// y = act(r(gamma * (x - mean) * inv_std + beta) + residual), where r rounds
// to y's dtype (a typed batch norm writes its output before the add, as
// cuDNN's and PyTorch's do), the residual is optional and act is a ReLU or
// nothing. mean and inv_std are per (group, channel); y may be x. With the
// ReLU and relu_mask (int32 or uint32, at least ReluMaskWords), also the
// mask y > 0.
void ChannelsLastNormalize(const ChannelsLastGroups& s, const core::Tensor& x, const float* mean,
                           const float* inv_std, const float* gamma, const float* beta,
                           const core::Tensor& residual, bool relu, const core::Tensor& y,
                           const core::Tensor& relu_mask = core::Tensor());

// The backward of ChannelsLastNormalize with the batch's statistics. The
// output gradient is dy, or dy + addend (rounded to dy's dtype once; a
// residual unit's two branches' gradients) where an addend is given; with
// relu it is zeroed where y <= 0 (read from relu_mask, the forward's, when
// given; y is then not read); dy is left holding it (in place, as the CPU
// twin leaves it). Then dx = gamma * inv_std * (dy - mean(dy) - xhat *
// mean(dy * xhat)) per (group, channel), dgamma = sum(dy * xhat) and dbeta
// = sum(dy) per channel over all groups. dx may be dy or the addend.
void ChannelsLastNormBackward(const ChannelsLastGroups& s, bool relu, const core::Tensor& x,
                              const core::Tensor& y, const core::Tensor& dy, const float* gamma,
                              const float* mean, const float* inv_std, const core::Tensor& dx,
                              float* dgamma, float* dbeta,
                              const core::Tensor& addend = core::Tensor(),
                              const core::Tensor& relu_mask = core::Tensor());

}  // namespace mlperf::cuda
