#include "base/check.h"
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"

namespace mlperf::cuda {
namespace {

struct ThreadContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  void* scratch[kNumScratchSlots] = {};
  size_t scratch_bytes[kNumScratchSlots] = {};
  uint64_t generation = 0;
  ~ThreadContext() {
    for (void* p : scratch)
      if (p) cudaFree(p);
    if (cudnn) cudnnDestroy(cudnn);
    if (cublas) cublasDestroy(cublas);
    if (stream) cudaStreamDestroy(stream);
  }
};

ThreadContext& Get() {
  thread_local ThreadContext ctx;
  if (ctx.stream == nullptr) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&ctx.cublas));
    CUBLAS_CHECK(cublasSetStream(ctx.cublas, ctx.stream));
    // fp32 GEMMs stay fp32 (no TF32) so that they compare tightly with the
    // CPU twin; TF32 is a separate, explicit choice.
    CUBLAS_CHECK(cublasSetMathMode(ctx.cublas, CUBLAS_PEDANTIC_MATH));
    CUDNN_CHECK(cudnnCreate(&ctx.cudnn));
    CUDNN_CHECK(cudnnSetStream(ctx.cudnn, ctx.stream));
  }
  return ctx;
}

}  // namespace

bool DeviceAvailable() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

cudaStream_t Stream() { return Get().stream; }
cublasHandle_t Cublas() { return Get().cublas; }
cudnnHandle_t Cudnn() { return Get().cudnn; }

void* Scratch(size_t bytes, int slot) {
  MLPERF_CHECK(slot >= 0 && slot < kNumScratchSlots);
  ThreadContext& ctx = Get();
  if (bytes > ctx.scratch_bytes[slot]) {
    // Work queued on the stream may still read the old buffer.
    CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    if (ctx.scratch[slot]) CUDA_CHECK(cudaFree(ctx.scratch[slot]));
    CUDA_CHECK(cudaMalloc(&ctx.scratch[slot], bytes));
    ctx.scratch_bytes[slot] = bytes;
    ++ctx.generation;
  }
  return ctx.scratch[slot];
}

uint64_t ResourceGeneration() { return Get().generation; }
void NoteResourceChange() { ++Get().generation; }

void Synchronize() { CUDA_CHECK(cudaStreamSynchronize(Stream())); }

}  // namespace mlperf::cuda
