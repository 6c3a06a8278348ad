#include "reference/kernels/dispatch.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "reference/core/dtype.h"
#include "reference/kernels/cpu/attention.h"
#include "reference/kernels/cpu/conv.h"
#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/embedding.h"
#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/cpu/loss.h"
#include "reference/kernels/cpu/optimizer.h"
#include "reference/kernels/cpu/pool.h"
#include "reference/kernels/cpu/softmax.h"
#include "reference/kernels/dispatch_backend.h"
#include "reference/kernels/precision.h"
#include "reference/kernels/precision_operands.h"

#ifdef MLPERF_HAVE_CUDA
#include "reference/kernels/cuda/attention.h"
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/conv.h"
#include "reference/kernels/cuda/elementwise.h"
#include "reference/kernels/cuda/embedding.h"
#include "reference/kernels/cuda/loss.h"
#include "reference/kernels/cuda/optimizer.h"
#include "reference/kernels/cuda/pool.h"
#include "reference/kernels/cuda/softmax.h"
#endif

namespace mlperf::ops {

#ifndef MLPERF_HAVE_CUDA
namespace detail {
[[noreturn]] void NoCuda(const char* call) {
  std::fprintf(stderr, "ops::%s: device tensor in a build without CUDA\n", call);
  std::abort();
}
}  // namespace detail
#endif

using core::Device;
using core::Tensor;
using detail::OnDevice;

bool CudaAvailable() {
#ifdef MLPERF_HAVE_CUDA
  return cuda::DeviceAvailable();
#else
  return false;
#endif
}

int64_t ConvWorkspaceElements(const ConvGeometry& g, core::Layout layout, Device device) {
  if (device == Device::kCuda) {
#ifdef MLPERF_HAVE_CUDA
    return cuda::ConvWorkspaceElements(g, layout);
#else
    detail::NoCuda("ConvWorkspaceElements");
#endif
  }
  return cpu::ConvWorkspaceElements(g, layout);
}

void ReluForward(const Tensor& x, const Tensor& y) {
  if (OnDevice(x, {&y})) return MLPERF_CUDA_TWIN(ReluForward(x, y));
  cpu::ReluForward(x, y);
}

void ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
  if (OnDevice(y, {&dy, &dx})) return MLPERF_CUDA_TWIN(ReluBackward(y, dy, dx));
  cpu::ReluBackward(y, dy, dx);
}

void Add(const Tensor& a, const Tensor& b, const Tensor& y) {
  if (OnDevice(a, {&b, &y})) return MLPERF_CUDA_TWIN(Add(a, b, y));
  cpu::Add(a, b, y);
}

void Accumulate(const Tensor& x, const Tensor& y) {
  if (OnDevice(x, {&y})) return MLPERF_CUDA_TWIN(Accumulate(x, y));
  cpu::Accumulate(x, y);
}

void AccumulateStored(const Tensor& x, const Tensor& y) {
  if (OnDevice(x, {&y})) {
    MLPERF_CUDA_TWIN(Accumulate(x, y));
    return RoundStored(y);
  }
  cpu::Accumulate(x, y, StoredRounding(y));
}

void ConcatChannels(const Tensor& a, const Tensor& b, const Tensor& y) {
  if (OnDevice(y, {&a, &b})) return MLPERF_CUDA_TWIN(ConcatChannels(a, b, y));
  cpu::ConcatChannels(a, b, y);
}

void SplitChannels(const Tensor& y, const Tensor& a, const Tensor& b) {
  if (OnDevice(y, {&a, &b})) return MLPERF_CUDA_TWIN(SplitChannels(y, a, b));
  cpu::SplitChannels(y, a, b);
}

void Scale(const Tensor& x, float alpha) {
  if (OnDevice(x)) return MLPERF_CUDA_TWIN(Scale(x, alpha));
  cpu::Scale(x, alpha);
}

void ScaleBy(const Tensor& x, const float* alpha) {
  if (OnDevice(x)) return MLPERF_CUDA_TWIN(ScaleBy(x, alpha));
  cpu::ScaleBy(x, alpha);
}

void Fill(const Tensor& x, float value) {
  if (OnDevice(x)) return MLPERF_CUDA_TWIN(Fill(x, value));
  cpu::Fill(x, value);
}

void Cast(const Tensor& src, const Tensor& dst) {
  if (OnDevice(src, {&dst})) return MLPERF_CUDA_TWIN(Cast(src, dst));
  cpu::Cast(src, dst);
}

// The bias is an input of its convolution and the sum that convolution's
// output (precision.h): under bf16/fp16 y = round(round(conv) + round(b)), as
// PyTorch's autocast adds a cuDNN convolution's bias, and db is rounded.
void BiasAddChannels(const Tensor& bias, const Tensor& y) {
  const Tensor rb = RoundedOperand(bias, 0);
  if (OnDevice(y, {&bias})) {
    MLPERF_CUDA_TWIN(BiasAddChannels(rb, y));  // stores a typed y rounded
    return RoundOutput(y);
  }
  cpu::BiasAddChannels(rb, y, StoredRounding(y));
}

void BiasBackwardChannels(const Tensor& dy, const Tensor& dbias) {
  if (OnDevice(dy, {&dbias})) {
    MLPERF_CUDA_TWIN(BiasBackwardChannels(dy, dbias));
  } else {
    cpu::BiasBackwardChannels(dy, dbias);
  }
  RoundOutput(dbias);
}

void EmbeddingForward(const Tensor& ids, const Tensor& table, const Tensor& y) {
  if (OnDevice(table, {&ids, &y})) return MLPERF_CUDA_TWIN(EmbeddingForward(ids, table, y));
  cpu::EmbeddingForward(ids, table, y);
}

void EmbeddingBackward(const Tensor& ids, const Tensor& dy, const Tensor& dtable, bool accumulate) {
  if (OnDevice(dtable, {&ids, &dy}))
    return MLPERF_CUDA_TWIN(EmbeddingBackward(ids, dy, dtable, accumulate));
  cpu::EmbeddingBackward(ids, dy, dtable, accumulate);
}

void GeluForward(const Tensor& x, const Tensor& y) {
  if (OnDevice(x, {&y})) return MLPERF_CUDA_TWIN(GeluForward(x, y));
  cpu::GeluForward(x, y);
}

void GeluBackward(const Tensor& x, const Tensor& dy, const Tensor& dx) {
  if (OnDevice(x, {&dy, &dx})) return MLPERF_CUDA_TWIN(GeluBackward(x, dy, dx));
  cpu::GeluBackward(x, dy, dx);
}

void TanhForward(const Tensor& x, const Tensor& y) {
  if (OnDevice(x, {&y})) return MLPERF_CUDA_TWIN(TanhForward(x, y));
  cpu::TanhForward(x, y);
}

void TanhBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
  if (OnDevice(y, {&dy, &dx})) return MLPERF_CUDA_TWIN(TanhBackward(y, dy, dx));
  cpu::TanhBackward(y, dy, dx);
}

void SplitHeads(const Tensor& rows, int64_t column, const Tensor& heads) {
  if (OnDevice(rows, {&heads})) return MLPERF_CUDA_TWIN(SplitHeads(rows, column, heads));
  cpu::SplitHeads(rows, column, heads);
}

void MergeHeads(const Tensor& heads, const Tensor& rows, int64_t column) {
  if (OnDevice(heads, {&rows})) return MLPERF_CUDA_TWIN(MergeHeads(heads, rows, column));
  cpu::MergeHeads(heads, rows, column);
}

void DiceCrossEntropy(const Tensor& logits, const Tensor& labels, const Tensor& loss,
                      const Tensor& dlogits, const Tensor& workspace) {
  if (OnDevice(logits, {&labels, &loss, &dlogits, &workspace}))
    return MLPERF_CUDA_TWIN(DiceCrossEntropy(logits, labels, loss, dlogits, workspace));
  cpu::DiceCrossEntropy(logits, labels, loss, dlogits, workspace);
}

void MaskedLmLoss(const Tensor& logits, const Tensor& labels, const Tensor& weights,
                  const Tensor& loss, const Tensor& dlogits) {
  if (OnDevice(logits, {&labels, &weights, &loss, &dlogits}))
    return MLPERF_CUDA_TWIN(MaskedLmLoss(logits, labels, weights, loss, dlogits));
  cpu::MaskedLmLoss(logits, labels, weights, loss, dlogits);
}

void ArgmaxRows(const Tensor& logits, const Tensor& argmax) {
  if (OnDevice(logits, {&argmax})) return MLPERF_CUDA_TWIN(ArgmaxRows(logits, argmax));
  cpu::ArgmaxRows(logits, argmax);
}

void SoftmaxForward(const Tensor& x, const Tensor& y) {
  if (OnDevice(x, {&y})) return MLPERF_CUDA_TWIN(SoftmaxForward(x, y));
  cpu::SoftmaxForward(x, y);
}

void SoftmaxBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
  if (OnDevice(y, {&dy, &dx})) return MLPERF_CUDA_TWIN(SoftmaxBackward(y, dy, dx));
  cpu::SoftmaxBackward(y, dy, dx);
}

void DropoutForward(float p, uint64_t seed, uint64_t offset, const Tensor& x, const Tensor& y,
                    const int64_t* offset_base) {
  if (OnDevice(x, {&y}))
    return MLPERF_CUDA_TWIN(DropoutForward(p, seed, offset, x, y, offset_base));
  cpu::DropoutForward(p, seed, offset, x, y, offset_base);
}

void DropoutBackward(float p, uint64_t seed, uint64_t offset, const Tensor& dy, const Tensor& dx,
                     const int64_t* offset_base) {
  if (OnDevice(dy, {&dx}))
    return MLPERF_CUDA_TWIN(DropoutBackward(p, seed, offset, dy, dx, offset_base));
  cpu::DropoutBackward(p, seed, offset, dy, dx, offset_base);
}

void AddInt64(const Tensor& x, int64_t amount) {
  MLPERF_CHECK(x.dtype() == core::DType::kI64);
  if (OnDevice(x)) return MLPERF_CUDA_TWIN(AddInt64(x, amount));
  cpu::AddInt64(x, amount);
}

void AddKeyPaddingMask(const Tensor& scores, const Tensor& mask) {
  if (OnDevice(scores, {&mask})) return MLPERF_CUDA_TWIN(AddKeyPaddingMask(scores, mask));
  cpu::AddKeyPaddingMask(scores, mask);
}

void MaxPoolForward(const ConvGeometry& g, const Tensor& x, const Tensor& y) {
  if (OnDevice(x, {&y})) return MLPERF_CUDA_TWIN(MaxPoolForward(g, x, y));
  cpu::MaxPoolForward(g, x, y);
}

void MaxPoolBackward(const ConvGeometry& g, const Tensor& x, const Tensor& dy, const Tensor& dx) {
  if (OnDevice(x, {&dy, &dx})) return MLPERF_CUDA_TWIN(MaxPoolBackward(g, x, dy, dx));
  cpu::MaxPoolBackward(g, x, dy, dx);
}

void GlobalAvgPoolForward(const Tensor& x, const Tensor& y) {
  if (OnDevice(x, {&y})) return MLPERF_CUDA_TWIN(GlobalAvgPoolForward(x, y));
  cpu::GlobalAvgPoolForward(x, y);
}

void GlobalAvgPoolBackward(const Tensor& dy, const Tensor& dx) {
  if (OnDevice(dy, {&dx})) return MLPERF_CUDA_TWIN(GlobalAvgPoolBackward(dy, dx));
  cpu::GlobalAvgPoolBackward(dy, dx);
}

void SoftmaxCrossEntropy(float label_smoothing, float normalizer, const Tensor& logits,
                         const Tensor& labels, const Tensor& loss, const Tensor& dlogits) {
  if (OnDevice(logits, {&labels, &loss, &dlogits}))
    return MLPERF_CUDA_TWIN(
        SoftmaxCrossEntropy(label_smoothing, normalizer, logits, labels, loss, dlogits));
  cpu::SoftmaxCrossEntropy(label_smoothing, normalizer, logits, labels, loss, dlogits);
}

void SgdStep(Device device, const SgdParams& p, std::span<const TensorSlice> slices, float* w,
             const float* g, float* momentum, const float* found_inf) {
  if (device == Device::kCuda)
    return MLPERF_CUDA_TWIN(SgdStep(p, slices, w, g, momentum, found_inf));
  cpu::SgdStep(p, slices, w, g, momentum, found_inf);
}

void LarsStep(Device device, const LarsParams& p, std::span<const TensorSlice> slices, float* w,
              const float* g, float* momentum, const float* found_inf) {
  if (device == Device::kCuda)
    return MLPERF_CUDA_TWIN(LarsStep(p, slices, w, g, momentum, found_inf));
  cpu::LarsStep(p, slices, w, g, momentum, found_inf);
}

void LambStep(Device device, const LambParams& p, std::span<const TensorSlice> slices, float* w,
              const float* g, float* m, float* v, int32_t* step, const float* found_inf) {
  if (device == Device::kCuda)
    return MLPERF_CUDA_TWIN(LambStep(p, slices, w, g, m, v, step, found_inf));
  cpu::LambStep(p, slices, w, g, m, v, step, found_inf);
}

void AdamStep(Device device, const AdamParams& p, std::span<const TensorSlice> slices, float* w,
              const float* g, float* m, float* v, int32_t* step, const float* found_inf) {
  if (device == Device::kCuda)
    return MLPERF_CUDA_TWIN(AdamStep(p, slices, w, g, m, v, step, found_inf));
  cpu::AdamStep(p, slices, w, g, m, v, step, found_inf);
}

void UnscaleAndCheckFinite(Device device, float* g, int64_t n, const float* loss_scale,
                           float* found_inf) {
  if (device == Device::kCuda)
    return MLPERF_CUDA_TWIN(UnscaleAndCheckFinite(g, n, loss_scale, found_inf));
  cpu::UnscaleAndCheckFinite(g, n, loss_scale, found_inf);
}

void UpdateLossScale(Device device, const LossScaleParams& p, float* loss_scale,
                     int32_t* growth_tracker, const float* found_inf) {
  if (device == Device::kCuda)
    return MLPERF_CUDA_TWIN(UpdateLossScale(p, loss_scale, growth_tracker, found_inf));
  cpu::UpdateLossScale(p, loss_scale, growth_tracker, found_inf);
}

void CopyBytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0) return;
  if (dst_device == Device::kCpu && src_device == Device::kCpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef MLPERF_HAVE_CUDA
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cuda::Stream()));
  if (dst_device == Device::kCpu) cuda::Synchronize();
#else
  MLPERF_CHECK_MSG(false, "ops::CopyBytes: device memory in a build without CUDA");
#endif
}

namespace {
int g_copy_threads = 0;
}  // namespace

void ParallelHostCopy(void* dst, const void* src, size_t bytes) {
  constexpr size_t kBlock = size_t{1} << 20;
  const int64_t blocks = static_cast<int64_t>((bytes + kBlock - 1) / kBlock);
  const int threads = g_copy_threads > 0 ? g_copy_threads : omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(threads) if (blocks >= 8)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t at = static_cast<size_t>(b) * kBlock;
    std::memcpy(static_cast<char*>(dst) + at, static_cast<const char*>(src) + at,
                std::min(kBlock, bytes - at));
  }
}

std::vector<float> ToHostFloats(const Tensor& t) {
  std::vector<float> host(static_cast<size_t>(t.numel()));
  if (t.dtype() == core::DType::kF32) {
    CopyBytes(host.data(), Device::kCpu, t.data(), t.device(), t.bytes());
    return host;
  }
  MLPERF_CHECK(t.dtype() == core::DType::kBF16 || t.dtype() == core::DType::kF16);
  std::vector<uint16_t> half(host.size());
  CopyBytes(half.data(), Device::kCpu, t.data(), t.device(), t.bytes());
  for (size_t i = 0; i < half.size(); ++i)
    host[i] =
        t.dtype() == core::DType::kBF16 ? core::Bf16ToFloat(half[i]) : core::HalfToFloat(half[i]);
  return host;
}

void Copy(const Tensor& src, const Tensor& dst) {
  MLPERF_CHECK(src.bytes() == dst.bytes());
  CopyBytes(dst.data(), dst.device(), src.data(), src.device(), src.bytes());
}

void ZeroBytes(void* dst, Device device, size_t bytes) {
  if (bytes == 0) return;
  if (device == Device::kCpu) {
    std::memset(dst, 0, bytes);
    return;
  }
#ifdef MLPERF_HAVE_CUDA
  CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, cuda::Stream()));
#else
  MLPERF_CHECK_MSG(false, "ops::ZeroBytes: device memory in a build without CUDA");
#endif
}

void Synchronize(Device device) {
  if (device == Device::kCpu) return;
#ifdef MLPERF_HAVE_CUDA
  cuda::Synchronize();
#endif
}

void SetHostThreads(int threads) { cpu::SetComputeThreads(threads); }
void SetHostCopyThreads(int threads) { g_copy_threads = threads; }

int64_t DeviceMemoryInUseBytes() {
#ifdef MLPERF_HAVE_CUDA
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return static_cast<int64_t>(total_bytes - free_bytes);
#else
  return 0;
#endif
}

void SelectDevice(int local_rank) {
#ifdef MLPERF_HAVE_CUDA
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  MLPERF_CHECK_MSG(count > 0, "ops::SelectDevice: no CUDA device");
  CUDA_CHECK(cudaSetDevice(local_rank % count));
#else
  (void)local_rank;
#endif
}

}  // namespace mlperf::ops
