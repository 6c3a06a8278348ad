#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"

namespace mlperf::cuda {
namespace {

struct ThreadContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  void* scratch = nullptr;
  size_t scratch_bytes = 0;
  ~ThreadContext() {
    if (scratch) cudaFree(scratch);
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

void* Scratch(size_t bytes) {
  ThreadContext& ctx = Get();
  if (bytes > ctx.scratch_bytes) {
    if (ctx.scratch) CUDA_CHECK(cudaFree(ctx.scratch));
    CUDA_CHECK(cudaMalloc(&ctx.scratch, bytes));
    ctx.scratch_bytes = bytes;
  }
  return ctx.scratch;
}

void Synchronize() { CUDA_CHECK(cudaStreamSynchronize(Stream())); }

}  // namespace mlperf::cuda
