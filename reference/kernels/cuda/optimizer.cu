// Fused multi-tensor optimizer steps: the parameter arena is cut into chunks
// of at most kChunk elements, each tagged with its tensor (slice), and every
// pass over all tensors is one kernel launch with one block per chunk.
#include <algorithm>
#include <cstring>
#include <vector>

#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/ops/optimizer.h"

namespace mlperf::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 4096;

struct Chunk {
  int slice;
  int no_weight_decay;
  int no_trust_ratio;
  int pad;  // memcmp compares the whole struct
  long long begin;
  long long end;
};

// Device copies of the chunk table and of each slice's first chunk, plus
// the accumulators, all in the context's scratch. Norms are reduced in a
// fixed order (per chunk, then per slice, then over slices), never with
// atomics: a step must give the same bits every time it runs, or a recorded
// step could not reproduce the step as queued, nor a seeded run itself.
struct Plan {
  const Chunk* chunks;
  const int* slice_first;  // slice s has chunks [slice_first[s], slice_first[s + 1])
  float* chunk_sums;       // two floats per chunk
  float* slice_sums;       // two floats per slice
  float* global_sum;       // the second floats of every slice, summed
  int num_chunks;
  int num_slices;
};

bool SameChunks(const std::vector<Chunk>& a, const std::vector<Chunk>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Chunk)) == 0;
}

size_t Aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

Plan MakePlan(std::span<const TensorSlice> slices) {
  // Reused between steps, so it allocates only while it grows (warm-up).
  thread_local std::vector<Chunk> host, uploaded;
  thread_local std::vector<int> first, uploaded_first;
  thread_local char* uploaded_to = nullptr;
  host.clear();
  first.clear();
  for (size_t s = 0; s < slices.size(); ++s) {
    first.push_back(static_cast<int>(host.size()));
    for (int64_t b = slices[s].offset; b < slices[s].offset + slices[s].numel; b += kChunk)
      host.push_back({static_cast<int>(s), slices[s].no_weight_decay ? 1 : 0,
                      slices[s].no_trust_ratio ? 1 : 0, 0, b,
                      std::min(b + kChunk, slices[s].offset + slices[s].numel)});
  }
  first.push_back(static_cast<int>(host.size()));
  const size_t table = Aligned(host.size() * sizeof(Chunk));
  const size_t firsts = Aligned(first.size() * sizeof(int));
  const size_t chunk_sums = Aligned(2 * host.size() * sizeof(float));
  const size_t sums = (2 * slices.size() + 1) * sizeof(float);
  char* scratch = static_cast<char*>(Scratch(table + firsts + chunk_sums + sums));
  // The tables change only with the slices (only this plan uses the slot),
  // so a training step sends nothing from the host once they are there.
  if (scratch != uploaded_to || !SameChunks(host, uploaded) || first != uploaded_first) {
    CUDA_CHECK(cudaMemcpyAsync(scratch, host.data(), host.size() * sizeof(Chunk),
                               cudaMemcpyHostToDevice, Stream()));
    CUDA_CHECK(cudaMemcpyAsync(scratch + table, first.data(), first.size() * sizeof(int),
                               cudaMemcpyHostToDevice, Stream()));
    uploaded = host;
    uploaded_first = first;
    uploaded_to = scratch;
    NoteResourceChange();
  }
  float* f = reinterpret_cast<float*>(scratch + table + firsts + chunk_sums);
  return {reinterpret_cast<const Chunk*>(scratch),
          reinterpret_cast<const int*>(scratch + table),
          reinterpret_cast<float*>(scratch + table + firsts),
          f,
          f + 2 * slices.size(),
          static_cast<int>(host.size()),
          static_cast<int>(slices.size())};
}

__device__ bool Skip(const float* found_inf) { return found_inf != nullptr && *found_inf != 0.0f; }

template <typename Params>
__device__ float Rate(const Params& p) {
  return p.lr_at != nullptr ? *p.lr_at : p.lr;
}

__global__ void SgdKernel(SgdParams p, Plan plan, float* w, const float* g, float* buf,
                          const float* found_inf) {
  if (Skip(found_inf)) return;
  const Chunk c = plan.chunks[blockIdx.x];
  const float wd = c.no_weight_decay ? 0.0f : p.weight_decay;
  const float lr = Rate(p);
  for (long long i = c.begin + threadIdx.x; i < c.end; i += kThreads) {
    const float d = g[i] + wd * w[i];
    buf[i] = p.momentum * buf[i] + d;
    w[i] -= lr * (p.nesterov ? d + p.momentum * buf[i] : buf[i]);
  }
}

// Per-chunk sums of a^2 and b^2 (either may be null).
__global__ void ChunkSquares(Plan plan, const float* a, const float* b, const float* found_inf) {
  if (Skip(found_inf)) return;
  const Chunk c = plan.chunks[blockIdx.x];
  float sa = 0.0f, sb = 0.0f;
  for (long long i = c.begin + threadIdx.x; i < c.end; i += kThreads) {
    if (a) sa += a[i] * a[i];
    if (b) sb += b[i] * b[i];
  }
  sa = detail::BlockSum<kThreads>(sa);
  sb = detail::BlockSum<kThreads>(sb);
  if (threadIdx.x == 0) {
    plan.chunk_sums[2 * blockIdx.x] = sa;
    plan.chunk_sums[2 * blockIdx.x + 1] = sb;
  }
}

// One block per slice: the sums of its chunks' pairs.
__global__ void SliceSums(Plan plan, const float* found_inf) {
  if (Skip(found_inf)) return;
  const int s = blockIdx.x;
  float sa = 0.0f, sb = 0.0f;
  for (int k = plan.slice_first[s] + threadIdx.x; k < plan.slice_first[s + 1]; k += kThreads) {
    sa += plan.chunk_sums[2 * k];
    sb += plan.chunk_sums[2 * k + 1];
  }
  sa = detail::BlockSum<kThreads>(sa);
  sb = detail::BlockSum<kThreads>(sb);
  if (threadIdx.x == 0) {
    plan.slice_sums[2 * s] = sa;
    plan.slice_sums[2 * s + 1] = sb;
  }
}

// One block: the second sums of every slice (LAMB's global gradient norm).
__global__ void GlobalSum(Plan plan, const float* found_inf) {
  if (Skip(found_inf)) return;
  float sum = 0.0f;
  for (int s = threadIdx.x; s < plan.num_slices; s += kThreads) sum += plan.slice_sums[2 * s + 1];
  sum = detail::BlockSum<kThreads>(sum);
  if (threadIdx.x == 0) *plan.global_sum = sum;
}

// Chunk sums of (a^2, b^2), reduced per slice.
void QueueSliceSums(const Plan& plan, const float* a, const float* b, const float* found_inf) {
  ChunkSquares<<<plan.num_chunks, kThreads, 0, Stream()>>>(plan, a, b, found_inf);
  CUDA_CHECK_LAUNCH();
  SliceSums<<<plan.num_slices, kThreads, 0, Stream()>>>(plan, found_inf);
  CUDA_CHECK_LAUNCH();
}

__global__ void LarsKernel(LarsParams p, Plan plan, float* w, const float* g, float* v,
                           const float* found_inf) {
  if (Skip(found_inf)) return;
  const Chunk c = plan.chunks[blockIdx.x];
  const float lr = Rate(p);
  float scaled_lr = lr;
  const float wd = c.no_weight_decay ? 0.0f : p.weight_decay;
  if (!c.no_trust_ratio) {
    const float w_norm = sqrtf(plan.slice_sums[2 * c.slice]);
    const float g_norm = sqrtf(plan.slice_sums[2 * c.slice + 1]);
    const float trust = (w_norm > 0.0f && g_norm > 0.0f)
                            ? p.eeta * w_norm / (g_norm + wd * w_norm + p.epsilon)
                            : 1.0f;
    scaled_lr = lr * trust;
  }
  for (long long i = c.begin + threadIdx.x; i < c.end; i += kThreads) {
    v[i] = p.momentum * v[i] - scaled_lr * (g[i] + wd * w[i]);
    w[i] += v[i];
  }
}

__global__ void BumpStep(int32_t* step, const float* found_inf) {
  if (!Skip(found_inf)) ++*step;
}

__device__ float LambDirection(const LambParams& p, float m, float v, float w, float wd, float c1,
                               float c2) {
  return (m / c1) / (sqrtf(v / c2) + p.epsilon) + wd * w;
}

// Moments with the clipped gradient, and per-chunk sums of w^2 and u^2.
__global__ void LambMoments(LambParams p, Plan plan, const float* w, const float* g, float* m,
                            float* v, const int32_t* step, const float* found_inf) {
  if (Skip(found_inf)) return;
  const Chunk c = plan.chunks[blockIdx.x];
  const float norm = sqrtf(*plan.global_sum);
  const float clip =
      (p.max_grad_norm > 0.0f && norm > p.max_grad_norm) ? p.max_grad_norm / norm : 1.0f;
  const float c1 = 1.0f - powf(p.beta1, static_cast<float>(*step));
  const float c2 = 1.0f - powf(p.beta2, static_cast<float>(*step));
  const float wd = c.no_weight_decay ? 0.0f : p.weight_decay;
  float sw = 0.0f, su = 0.0f;
  for (long long i = c.begin + threadIdx.x; i < c.end; i += kThreads) {
    const float gi = g[i] * clip;
    m[i] = p.beta1 * m[i] + (1.0f - p.beta1) * gi;
    v[i] = p.beta2 * v[i] + (1.0f - p.beta2) * gi * gi;
    const float u = LambDirection(p, m[i], v[i], w[i], wd, c1, c2);
    sw += w[i] * w[i];
    su += u * u;
  }
  sw = detail::BlockSum<kThreads>(sw);
  su = detail::BlockSum<kThreads>(su);
  if (threadIdx.x == 0) {
    plan.chunk_sums[2 * blockIdx.x] = sw;
    plan.chunk_sums[2 * blockIdx.x + 1] = su;
  }
}

__global__ void LambUpdate(LambParams p, Plan plan, const float* sums, float* w, const float* m,
                           const float* v, const int32_t* step, const float* found_inf) {
  if (Skip(found_inf)) return;
  const Chunk c = plan.chunks[blockIdx.x];
  const float c1 = 1.0f - powf(p.beta1, static_cast<float>(*step));
  const float c2 = 1.0f - powf(p.beta2, static_cast<float>(*step));
  const float wd = c.no_weight_decay ? 0.0f : p.weight_decay;
  const float w_norm = sqrtf(sums[2 * c.slice]), u_norm = sqrtf(sums[2 * c.slice + 1]);
  const float ratio =
      (!c.no_trust_ratio && w_norm > 0.0f && u_norm > 0.0f) ? w_norm / u_norm : 1.0f;
  const float lr = Rate(p);
  for (long long i = c.begin + threadIdx.x; i < c.end; i += kThreads)
    w[i] -= lr * ratio * LambDirection(p, m[i], v[i], w[i], wd, c1, c2);
}

// The CPU twin's arithmetic, element by element (no reductions).
__global__ void AdamKernel(AdamParams p, Plan plan, float* w, const float* g, float* m, float* v,
                           const int32_t* step, const float* found_inf) {
  if (Skip(found_inf)) return;
  const Chunk c = plan.chunks[blockIdx.x];
  const float c1 = 1.0f - powf(p.beta1, static_cast<float>(*step));
  const float c2 = 1.0f - powf(p.beta2, static_cast<float>(*step));
  const float wd = c.no_weight_decay ? 0.0f : p.weight_decay;
  const float decoupled = p.decoupled ? wd : 0.0f, coupled = p.decoupled ? 0.0f : wd;
  const float lr = Rate(p);
  float clip = 1.0f;
  if (p.max_grad_norm > 0.0f) {
    const float coef = p.max_grad_norm / (sqrtf(*plan.global_sum) + 1e-6f);
    clip = coef < 1.0f ? coef : 1.0f;
  }
  for (long long i = c.begin + threadIdx.x; i < c.end; i += kThreads) {
    const float gi = g[i] * clip + coupled * w[i];
    m[i] = p.beta1 * m[i] + (1.0f - p.beta1) * gi;
    v[i] = p.beta2 * v[i] + (1.0f - p.beta2) * gi * gi;
    const float u = (m[i] / c1) / (sqrtf(v[i] / c2) + p.epsilon) + decoupled * w[i];
    w[i] -= lr * u;
  }
}

__global__ void AdagradKernel(AdagradParams p, Plan plan, float* w, const float* g, float* sum,
                              const float* found_inf) {
  if (Skip(found_inf)) return;
  const Chunk c = plan.chunks[blockIdx.x];
  const float wd = c.no_weight_decay ? 0.0f : p.weight_decay;
  const float lr = Rate(p);
  for (long long i = c.begin + threadIdx.x; i < c.end; i += kThreads) {
    const float gi = g[i] + wd * w[i];
    sum[i] += gi * gi;
    w[i] -= lr * gi / (sqrtf(sum[i]) + p.epsilon);
  }
}

__global__ void Unscale(float* g, long long n, const float* loss_scale, float* found_inf) {
  const float inv = 1.0f / *loss_scale;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    g[i] *= inv;
    if (!isfinite(g[i])) *found_inf = 1.0f;  // every writer writes the same value
  }
}

__global__ void UpdateScale(LossScaleParams p, float* loss_scale, int32_t* tracker,
                            const float* found_inf) {
  if (*found_inf != 0.0f) {
    *loss_scale *= p.backoff_factor;
    *tracker = 0;
  } else if (++*tracker == p.growth_interval) {
    *loss_scale *= p.growth_factor;
    *tracker = 0;
  }
}

}  // namespace

void SgdStep(core::Device, const SgdParams& p, std::span<const TensorSlice> slices, float* w,
             const float* g, float* momentum, const float* found_inf) {
  const Plan plan = MakePlan(slices);
  if (plan.num_chunks == 0) return;
  SgdKernel<<<plan.num_chunks, kThreads, 0, Stream()>>>(p, plan, w, g, momentum, found_inf);
  CUDA_CHECK_LAUNCH();
}

void LarsStep(core::Device, const LarsParams& p, std::span<const TensorSlice> slices, float* w,
              const float* g, float* momentum, const float* found_inf) {
  const Plan plan = MakePlan(slices);
  if (plan.num_chunks == 0) return;
  QueueSliceSums(plan, w, g, found_inf);
  LarsKernel<<<plan.num_chunks, kThreads, 0, Stream()>>>(p, plan, w, g, momentum, found_inf);
  CUDA_CHECK_LAUNCH();
}

void LambStep(core::Device, const LambParams& p, std::span<const TensorSlice> slices, float* w,
              const float* g, float* m, float* v, int32_t* step, const float* found_inf) {
  const Plan plan = MakePlan(slices);
  if (plan.num_chunks == 0) return;
  BumpStep<<<1, 1, 0, Stream()>>>(step, found_inf);
  CUDA_CHECK_LAUNCH();
  QueueSliceSums(plan, nullptr, g, found_inf);
  GlobalSum<<<1, kThreads, 0, Stream()>>>(plan, found_inf);
  CUDA_CHECK_LAUNCH();
  // The global gradient norm is complete; the chunk and slice sums are
  // reused for (w^2, u^2).
  LambMoments<<<plan.num_chunks, kThreads, 0, Stream()>>>(p, plan, w, g, m, v, step, found_inf);
  CUDA_CHECK_LAUNCH();
  SliceSums<<<plan.num_slices, kThreads, 0, Stream()>>>(plan, found_inf);
  CUDA_CHECK_LAUNCH();
  LambUpdate<<<plan.num_chunks, kThreads, 0, Stream()>>>(p, plan, plan.slice_sums, w, m, v, step,
                                                         found_inf);
  CUDA_CHECK_LAUNCH();
}

void AdamStep(core::Device, const AdamParams& p, std::span<const TensorSlice> slices, float* w,
              const float* g, float* m, float* v, int32_t* step, const float* found_inf) {
  const Plan plan = MakePlan(slices);
  if (plan.num_chunks == 0) return;
  BumpStep<<<1, 1, 0, Stream()>>>(step, found_inf);
  CUDA_CHECK_LAUNCH();
  if (p.max_grad_norm > 0.0f) {
    QueueSliceSums(plan, nullptr, g, found_inf);
    GlobalSum<<<1, kThreads, 0, Stream()>>>(plan, found_inf);
    CUDA_CHECK_LAUNCH();
  }
  AdamKernel<<<plan.num_chunks, kThreads, 0, Stream()>>>(p, plan, w, g, m, v, step, found_inf);
  CUDA_CHECK_LAUNCH();
}

void AdagradStep(core::Device, const AdagradParams& p, std::span<const TensorSlice> slices,
                 float* w, const float* g, float* sum, const float* found_inf) {
  const Plan plan = MakePlan(slices);
  if (plan.num_chunks == 0) return;
  AdagradKernel<<<plan.num_chunks, kThreads, 0, Stream()>>>(p, plan, w, g, sum, found_inf);
  CUDA_CHECK_LAUNCH();
}

void UnscaleAndCheckFinite(core::Device, float* g, int64_t n, const float* loss_scale,
                           float* found_inf) {
  CUDA_CHECK(cudaMemsetAsync(found_inf, 0, sizeof(float), Stream()));
  Unscale<<<Blocks(n), kThreads, 0, Stream()>>>(g, n, loss_scale, found_inf);
  CUDA_CHECK_LAUNCH();
}

void UpdateLossScale(core::Device, const LossScaleParams& p, float* loss_scale,
                     int32_t* growth_tracker, const float* found_inf) {
  UpdateScale<<<1, 1, 0, Stream()>>>(p, loss_scale, growth_tracker, found_inf);
  CUDA_CHECK_LAUNCH();
}

MLPERF_REGISTER_KERNEL(SgdStep, Cuda, SgdStep);
MLPERF_REGISTER_KERNEL(LarsStep, Cuda, LarsStep);
MLPERF_REGISTER_KERNEL(LambStep, Cuda, LambStep);
MLPERF_REGISTER_KERNEL(AdamStep, Cuda, AdamStep);
MLPERF_REGISTER_KERNEL(AdagradStep, Cuda, AdagradStep);
MLPERF_REGISTER_KERNEL(UnscaleAndCheckFinite, Cuda, UnscaleAndCheckFinite);
MLPERF_REGISTER_KERNEL(UpdateLossScale, Cuda, UpdateLossScale);

}  // namespace mlperf::cuda
