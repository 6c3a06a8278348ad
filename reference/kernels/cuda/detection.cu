// CUDA kernels of ops/detection.h, twins of cpu/detection.cc.
#include <cmath>

#include "base/check.h"
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/ops/detection.h"

namespace mlperf::cuda {
namespace {

using core::Tensor;

__device__ long long NearestSource(long long i, long long in, long long out) {
  if (out == in) return i;
  if (out == 2 * in) return i >> 1;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const long long src = static_cast<long long>(floorf(static_cast<float>(i) * scale));
  return src < in - 1 ? src : in - 1;
}

__global__ void UpsampleKernel(const float* x, float* y, long long planes, long long ih,
                               long long iw, long long oh, long long ow) {
  const long long total = planes * oh * ow;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long j = e % ow, i = (e / ow) % oh, p = e / (oh * ow);
    y[e] = x[(p * ih + NearestSource(i, ih, oh)) * iw + NearestSource(j, iw, ow)];
  }
}

// One thread per source pixel sums the outputs that read it, in the CPU
// twin's order (rows, then columns): the same bits.
__global__ void UpsampleBackwardKernel(const float* dy, float* dx, long long planes, long long ih,
                                       long long iw, long long oh, long long ow) {
  const long long total = planes * ih * iw;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long sj = e % iw, si = (e / iw) % ih, p = e / (ih * iw);
    float sum = 0.0f;
    for (long long i = 0; i < oh; ++i) {
      if (NearestSource(i, ih, oh) != si) continue;
      for (long long j = 0; j < ow; ++j)
        if (NearestSource(j, iw, ow) == sj) sum += dy[(p * oh + i) * ow + j];
    }
    dx[e] = sum;
  }
}

__global__ void FrozenBnBackwardKernel(const float* dy, const float* weight, const float* var,
                                       float epsilon, float* dx, long long c, long long inner,
                                       long long total) {
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long ch = (e / inner) % c;
    const float scale = weight[ch] * (1.0f / sqrtf(var[ch] + epsilon));
    dx[e] = dy[e] * scale;
  }
}

// One block of 64 threads per (row block, column block) of the matrix: the
// column block's boxes in shared memory, each thread its row's word. The
// products and sums are rounded one by one (no fused multiply-add), as the
// CPU twin rounds them.
__global__ void NmsMaskKernel(const float* boxes, long long n, double iou_threshold,
                              unsigned long long* mask, long long words) {
  __shared__ float column[64 * 4];
  const long long first = blockIdx.x * 64LL, i = blockIdx.y * 64LL + threadIdx.x;
  const long long count = n - first < 64 ? n - first : 64;
  if (threadIdx.x < count)
    for (int k = 0; k < 4; ++k) column[threadIdx.x * 4 + k] = boxes[(first + threadIdx.x) * 4 + k];
  __syncthreads();
  if (i >= n) return;
  const float* p = boxes + 4 * i;
  const float area_p = __fmul_rn(p[2] - p[0], p[3] - p[1]);
  unsigned long long bits = 0;
  for (long long c = 0; c < count; ++c) {
    if (first + c <= i) continue;
    const float* q = column + 4 * c;
    const float area_q = __fmul_rn(q[2] - q[0], q[3] - q[1]);
    const float width = fmaxf(0.0f, fminf(p[2], q[2]) - fmaxf(p[0], q[0]));
    const float height = fmaxf(0.0f, fminf(p[3], q[3]) - fmaxf(p[1], q[1]));
    const float inter = __fmul_rn(width, height);
    const float overlap = __fdiv_rn(inter, __fsub_rn(__fadd_rn(area_p, area_q), inter));
    if (static_cast<double>(overlap) > iou_threshold) bits |= 1ULL << c;
  }
  mask[i * words + blockIdx.x] = bits;
}

void NmsMask(const Tensor& boxes, double iou_threshold, const Tensor& mask) {
  const long long n = boxes.numel() / 4, words = (n + 63) / 64;
  MLPERF_CHECK(boxes.numel() == 4 * n && boxes.dtype() == core::DType::kF32);
  MLPERF_CHECK(mask.numel() == n * words && mask.dtype() == core::DType::kI64);
  if (n == 0) return;
  NmsMaskKernel<<<dim3(static_cast<unsigned>(words), static_cast<unsigned>(words)), 64, 0,
                  Stream()>>>(boxes.f32(), n, iou_threshold,
                              static_cast<unsigned long long*>(mask.data()), words);
  CUDA_CHECK_LAUNCH();
}

void UpsampleNearest(const Tensor& x, const Tensor& y) {
  MLPERF_CHECK(x.shape().rank() == 4 && y.shape().rank() == 4 && x.dim(0) == y.dim(0) &&
               x.dim(1) == y.dim(1));
  const long long planes = x.dim(0) * x.dim(1);
  UpsampleKernel<<<Blocks(y.numel()), 256, 0, Stream()>>>(x.f32(), y.f32(), planes, x.dim(2),
                                                          x.dim(3), y.dim(2), y.dim(3));
  CUDA_CHECK_LAUNCH();
}

void UpsampleNearestBackward(const Tensor& dy, const Tensor& dx) {
  MLPERF_CHECK(dx.shape().rank() == 4 && dy.shape().rank() == 4 && dx.dim(0) == dy.dim(0) &&
               dx.dim(1) == dy.dim(1));
  const long long planes = dx.dim(0) * dx.dim(1);
  UpsampleBackwardKernel<<<Blocks(dx.numel()), 256, 0, Stream()>>>(
      dy.f32(), dx.f32(), planes, dx.dim(2), dx.dim(3), dy.dim(2), dy.dim(3));
  CUDA_CHECK_LAUNCH();
}

void FrozenBatchNormBackward(const Tensor& dy, const Tensor& weight, const Tensor& running_var,
                             float epsilon, const Tensor& dx) {
  MLPERF_CHECK(dy.numel() == dx.numel() && dy.shape().rank() >= 2);
  const long long n = dy.dim(0), c = dy.dim(1), inner = dy.numel() / (n * c);
  FrozenBnBackwardKernel<<<Blocks(dy.numel()), 256, 0, Stream()>>>(
      dy.f32(), weight.f32(), running_var.f32(), epsilon, dx.f32(), c, inner, dy.numel());
  CUDA_CHECK_LAUNCH();
}

}  // namespace

MLPERF_REGISTER_KERNEL(NmsMask, Cuda, NmsMask);
MLPERF_REGISTER_KERNEL(UpsampleNearest, Cuda, UpsampleNearest);
MLPERF_REGISTER_KERNEL(UpsampleNearestBackward, Cuda, UpsampleNearestBackward);
MLPERF_REGISTER_KERNEL(FrozenBatchNormBackward, Cuda, FrozenBatchNormBackward);

}  // namespace mlperf::cuda
