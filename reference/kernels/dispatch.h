// The operations models call (ops::), on either backend by the tensors'
// device. Most are declared once in their family's header under ops/ and
// implemented by kernels the backends register (kernels/op.h); included
// here. The ones below are composed over both backends' kernels: the
// GEMM-class ops with the rounding points of mixed precision
// (dispatch_gemm.cc), the normalisations with their fused adds and stored
// rounding (dispatch_norm.cc), and the memory and device management. A
// device tensor in a build without CUDA is a programmer error and fails a
// check naming the op. All tensors of one call must share a device.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/device_runtime.h"
#include "reference/kernels/norm_params.h"
#include "reference/kernels/ops/attention.h"
#include "reference/kernels/ops/detection.h"
#include "reference/kernels/ops/elementwise.h"
#include "reference/kernels/ops/embedding.h"
#include "reference/kernels/ops/loss.h"
#include "reference/kernels/ops/optimizer.h"
#include "reference/kernels/ops/pool.h"
#include "reference/kernels/ops/recommendation.h"
#include "reference/kernels/ops/softmax.h"
#include "reference/kernels/optimizer_params.h"

namespace mlperf::ops {

using mlperf::BatchNormParams;

// True when this build has the CUDA twins and a device is present.
bool CudaAvailable();

// Convolution (cpu/conv.h, cuda/conv.h). The workspace size depends on the
// backend: the CUDA twins draw on the context's scratch and need none.
int64_t ConvWorkspaceElements(const ConvGeometry& g, core::Layout layout, core::Device device);
void ConvForward(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& w,
                 const core::Tensor& y, const core::Tensor& workspace);
void ConvBackwardData(const ConvGeometry& g, const core::Tensor& dy, const core::Tensor& w,
                      const core::Tensor& dx, const core::Tensor& workspace);
void ConvBackwardWeight(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& dy,
                        const core::Tensor& dw, const core::Tensor& workspace);

// Batch norm (cpu/norm.h).
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
// The fused norms' ReLU mask (optional, the last argument of the ops below):
// ReluMaskWords(y) int32 words that the forward fills with y > 0 and the
// backward reads instead of y. Only the CUDA channels-last kernels write and
// read it (a sixteenth of a bf16 y's bytes); elsewhere y is read, so a
// caller passes it to a backward only after a forward that was given it.
int64_t ReluMaskWords(const core::Tensor& y);

// Batch norm fused with the residual add and ReLU (cpu/norm.h). y, and the
// backward's dx, are stored: rounded as RoundStored rounds (on the CPU as
// they are written); with a residual under bf16/fp16, so is the normalised
// value before the add.
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
// ConvForward(g, x, w, z) then BatchNormActForwardInference on z. On the
// CPU in channels-last as one pass with the same bits, z never written
// (cpu/conv_bn.h). On a CUDA device under bf16/fp16 with y (and the
// residual) stored in that type, channels-last, no ReLU mask asked for and
// cuda::ConvEpilogues() on, as one cuDNN kernel where cuDNN fuses it: the
// normalisation in the convolution's epilogue on its unrounded fp32
// products, z not written. Elsewhere as the two ops, through z.
void ConvBatchNormActForwardInference(const ConvGeometry& g, const core::Tensor& x,
                                      const core::Tensor& w, const core::Tensor& z,
                                      const core::Tensor& workspace, const BatchNormParams& p,
                                      bool relu, const core::Tensor& residual,
                                      const core::Tensor& gamma, const core::Tensor& beta,
                                      const core::Tensor& running_mean,
                                      const core::Tensor& running_var, const core::Tensor& y,
                                      const core::Tensor& relu_mask = core::Tensor());
// With an addend, the output gradient is dy + addend (a residual unit's
// two branches), added and stored in dy (RoundStored) before the backward:
// within the first pass over dy on the CPU in channels-last and on a CUDA
// device where dy is stored in the precision's type; the same values either
// way.
void BatchNormActBackward(bool relu, const core::Tensor& x, const core::Tensor& y,
                          const core::Tensor& dy, const core::Tensor& gamma,
                          const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                          const core::Tensor& dx, const core::Tensor& dgamma,
                          const core::Tensor& dbeta, const core::Tensor& addend = core::Tensor(),
                          const core::Tensor& relu_mask = core::Tensor());

// Instance norm with affine scale and shift, statistics per (sample,
// channel), no running statistics (cpu/norm.h; 3D U-Net).
void InstanceNormForward(float epsilon, const core::Tensor& x, const core::Tensor& gamma,
                         const core::Tensor& beta, const core::Tensor& y,
                         const core::Tensor& save_mean, const core::Tensor& save_inv_std);
void InstanceNormBackward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& gamma,
                          const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                          const core::Tensor& dx, const core::Tensor& dgamma,
                          const core::Tensor& dbeta);
// The same followed by a ReLU (3D U-Net's units), y = relu(norm(x)), y
// stored: rounded as RoundStored rounds; the backward first zeroes dy where
// y <= 0, in place, as ReluBackward leaves it. In one pass on the CPU and,
// channels-last, on CUDA.
void InstanceNormReluForward(float epsilon, const core::Tensor& x, const core::Tensor& gamma,
                             const core::Tensor& beta, const core::Tensor& y,
                             const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                             const core::Tensor& relu_mask = core::Tensor());
void InstanceNormReluBackward(const core::Tensor& x, const core::Tensor& y, const core::Tensor& dy,
                              const core::Tensor& gamma, const core::Tensor& save_mean,
                              const core::Tensor& save_inv_std, const core::Tensor& dx,
                              const core::Tensor& dgamma, const core::Tensor& dbeta,
                              const core::Tensor& relu_mask = core::Tensor());

// Per-channel bias of a convolution's output and its gradient (cpu/conv.h).
void BiasAddChannels(const core::Tensor& bias, const core::Tensor& y);
void BiasBackwardChannels(const core::Tensor& dy, const core::Tensor& dbias);

// Layer norm over the last dimension (cpu/norm.h).
void LayerNormForward(float epsilon, const core::Tensor& x, const core::Tensor& gamma,
                      const core::Tensor& beta, const core::Tensor& y,
                      const core::Tensor& save_mean, const core::Tensor& save_inv_std);
void LayerNormBackward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& gamma,
                       const core::Tensor& save_mean, const core::Tensor& save_inv_std,
                       const core::Tensor& dx, const core::Tensor& dgamma,
                       const core::Tensor& dbeta);

// y += x (gradient accumulation where a tensor feeds two consumers).
void Accumulate(const core::Tensor& x, const core::Tensor& y);
// y += x where y is a stored activation or gradient: the sum rounded as
// RoundStored rounds (on the CPU in the same pass).
void AccumulateStored(const core::Tensor& x, const core::Tensor& y);

// Batched GEMM over raw pointers on `device` (cpu/gemm.h): the i-th of
// `batch` products at a + i*stride_a, b + i*stride_b, c + i*stride_c.
void GemmStridedBatched(core::Device device, bool trans_a, bool trans_b, int64_t m, int64_t n,
                        int64_t k, float alpha, const float* a, int64_t stride_a, const float* b,
                        int64_t stride_b, float beta, float* c, int64_t stride_c, int64_t batch);

// Fully connected layer (cpu/linear.h).
void LinearForward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& bias,
                   const core::Tensor& y);
void LinearBackward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& dy,
                    const core::Tensor& dx, const core::Tensor& dw, const core::Tensor& dbias);

// Byte copies between any two devices (same byte size, checked). On the GPU
// they are queued on the ops stream; copies to the host wait for it so the
// data can be read on return.
void Copy(const core::Tensor& src, const core::Tensor& dst);
void CopyBytes(void* dst, core::Device dst_device, const void* src, core::Device src_device,
               size_t bytes);
// A host-to-host copy shared by SetHostCopyThreads' threads, for a batch on
// its way to pinned staging: one core's memcpy moves a fraction of the
// memory bandwidth (7 GB/s on our 2-core machine), and a batch of 256
// ImageNet crops in fp32 is 154 MB. Call it from the thread that runs the
// ops, outside OpenMP regions.
void ParallelHostCopy(void* dst, const void* src, size_t bytes);
// A float tensor of any device copied to the host as fp32 (bf16/fp16
// widened exactly).
std::vector<float> ToHostFloats(const core::Tensor& t);
// Zeroes `bytes` at `dst` (tensor padding, gradient arenas).
void ZeroBytes(void* dst, core::Device device, size_t bytes);
// Waits for all queued device work of this thread (no-op on the CPU).
void Synchronize(core::Device device);

// Host threads of the CPU kernels (OpenMP and BLAS) in this process.
void SetHostThreads(int threads);
// Threads of ParallelHostCopy (0, the default: SetHostThreads' count). A
// GPU run computes on one host thread and decodes on the others, but its
// staging copy holds up the device: it takes the process's cores.
void SetHostCopyThreads(int threads);

// Bytes of the current device's memory in use by every process (total minus
// free, as nvidia-smi counts it); 0 without CUDA.
int64_t DeviceMemoryInUseBytes();
// The current device's memory; 0 without CUDA or a device.
int64_t DeviceMemoryTotalBytes();

// Makes device (local_rank modulo the visible devices) current for this
// thread: one process per GPU. No-op without CUDA.
void SelectDevice(int local_rank);

}  // namespace mlperf::ops
