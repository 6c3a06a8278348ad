// The decoder LLMs' pieces on the CPU (kernels/ops/decoder.h).
#include "reference/kernels/ops/decoder.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/check.h"
#include "reference/kernels/cpu/parallel.h"
#include "reference/kernels/cpu/vec_math.h"

namespace mlperf::cpu {

using core::Tensor;

namespace {

int64_t Features(const Tensor& x) { return x.dim(x.shape().rank() - 1); }

float Sigmoid(float g) { return 1.0f / (1.0f + std::exp(-g)); }

}  // namespace

void RmsNormForward(float epsilon, const Tensor& x, const Tensor& weight, const Tensor& y,
                    const Tensor& inv_rms) {
  const int64_t n = Features(x), rows = x.numel() / n;
  MLPERF_CHECK(weight.numel() == n && y.numel() == x.numel() && inv_rms.numel() == rows);
  const float *px = x.f32(), *w = weight.f32();
  float *py = y.f32(), *pr = inv_rms.f32();
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = px + r * n;
    double squares = 0.0;
    for (int64_t f = 0; f < n; ++f) squares += double{xr[f]} * xr[f];
    const float inv = static_cast<float>(1.0 / std::sqrt(squares / n + epsilon));
    pr[r] = inv;
    float* yr = py + r * n;
    for (int64_t f = 0; f < n; ++f) yr[f] = xr[f] * inv * w[f];
  }
}

void RmsNormBackward(const Tensor& x, const Tensor& dy, const Tensor& weight, const Tensor& inv_rms,
                     const Tensor& dx, const Tensor& dweight) {
  const int64_t n = Features(x), rows = x.numel() / n;
  MLPERF_CHECK(dy.numel() == x.numel() && dx.numel() == x.numel() && dweight.numel() == n);
  MLPERF_CHECK(dx.data() != dy.data());
  const float *px = x.f32(), *pdy = dy.f32(), *w = weight.f32(), *pr = inv_rms.f32();
  float* pdx = dx.f32();
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = px + r * n, *dyr = pdy + r * n;
    double dot = 0.0;
    for (int64_t f = 0; f < n; ++f) dot += double{w[f] * dyr[f]} * xr[f];
    const float inv = pr[r];
    const float k = static_cast<float>(dot / n) * inv * inv * inv;
    float* dxr = pdx + r * n;
    for (int64_t f = 0; f < n; ++f) dxr[f] = inv * w[f] * dyr[f] - k * xr[f];
  }
  // dweight: column sums, a block of columns per iteration (rows read along
  // contiguous memory).
  constexpr int64_t kBlock = 256;
  float* pdw = dweight.f32();
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t width = begin + kBlock < n ? kBlock : n - begin;
    double sum[kBlock] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float *xr = px + r * n + begin, *dyr = pdy + r * n + begin;
      for (int64_t f = 0; f < width; ++f) sum[f] += double{dyr[f] * xr[f] * pr[r]};
    }
    for (int64_t f = 0; f < width; ++f) pdw[begin + f] = static_cast<float>(sum[f]);
  }
}

void RotaryEmbedding(bool inverse, const Tensor& x, const Tensor& cos, const Tensor& sin,
                     const Tensor& y) {
  const int64_t t = x.dim(2), d = x.dim(3), half = d / 2;
  const int64_t vectors = x.numel() / d;
  MLPERF_CHECK(d % 2 == 0 && y.numel() == x.numel() && cos.numel() >= t * half &&
               sin.numel() == cos.numel());
  const float *px = x.f32(), *pc = cos.f32(), *ps = sin.f32();
  float* py = y.f32();
  const float sign = inverse ? -1.0f : 1.0f;
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t v = 0; v < vectors; ++v) {
    const int64_t position = v % t;
    const float *c = pc + position * half, *s = ps + position * half;
    const float* xv = px + v * d;
    float* yv = py + v * d;
    for (int64_t i = 0; i < half; ++i) {
      const float a = xv[i], b = xv[i + half], si = sign * s[i];
      yv[i] = a * c[i] - b * si;
      yv[i + half] = b * c[i] + a * si;
    }
  }
}

void SwiGluForward(const Tensor& gate, const Tensor& up, const Tensor& y) {
  MLPERF_CHECK(gate.numel() == up.numel() && up.numel() == y.numel());
  const float *g = gate.f32(), *u = up.f32();
  float* out = y.f32();
  const int64_t n = y.numel();
#pragma omp parallel for if (WorthParallel(n))
  for (int64_t i = 0; i < n; ++i) out[i] = g[i] * Sigmoid(g[i]) * u[i];
}

void SwiGluBackward(const Tensor& gate, const Tensor& up, const Tensor& dy, const Tensor& dgate,
                    const Tensor& dup) {
  const int64_t n = dy.numel();
  MLPERF_CHECK(gate.numel() == n && up.numel() == n && dgate.numel() == n && dup.numel() == n);
  const float *g = gate.f32(), *u = up.f32(), *pdy = dy.f32();
  float *pdg = dgate.f32(), *pdu = dup.f32();
#pragma omp parallel for if (WorthParallel(n))
  for (int64_t i = 0; i < n; ++i) {
    const float s = Sigmoid(g[i]), silu = g[i] * s, grad = pdy[i], value = u[i];
    pdg[i] = grad * value * s * (1.0f + g[i] * (1.0f - s));
    pdu[i] = grad * silu;
  }
}

void RepeatHeads(const Tensor& x, const Tensor& y) {
  const int64_t b = x.dim(0), kv = x.dim(1), block = x.dim(2) * x.dim(3), h = y.dim(1);
  MLPERF_CHECK(y.dim(0) == b && h % kv == 0 && y.numel() == b * h * block);
  const float* px = x.f32();
  float* py = y.f32();
  const int64_t group = h / kv;
#pragma omp parallel for if (WorthParallel(y.numel()))
  for (int64_t i = 0; i < b * h; ++i) {
    const float* from = px + ((i / h) * kv + (i % h) / group) * block;
    float* to = py + i * block;
    for (int64_t j = 0; j < block; ++j) to[j] = from[j];
  }
}

void SumHeadGroups(const Tensor& dy, const Tensor& dx) {
  const int64_t b = dx.dim(0), kv = dx.dim(1), block = dx.dim(2) * dx.dim(3), h = dy.dim(1);
  MLPERF_CHECK(dy.dim(0) == b && h % kv == 0 && dy.numel() == b * h * block);
  const float* pdy = dy.f32();
  float* pdx = dx.f32();
  const int64_t group = h / kv;
#pragma omp parallel for if (WorthParallel(dx.numel()))
  for (int64_t i = 0; i < b * kv; ++i) {
    float* to = pdx + i * block;
    const float* first = pdy + ((i / kv) * h + (i % kv) * group) * block;
    for (int64_t j = 0; j < block; ++j) {
      float sum = 0.0f;
      for (int64_t g = 0; g < group; ++g) sum += first[g * block + j];
      to[j] = sum;
    }
  }
}

void TokenCrossEntropy(float normalizer, const Tensor& logits, const Tensor& labels,
                       const Tensor& loss, const Tensor& dlogits) {
  const int64_t vocab = Features(logits), rows = logits.numel() / vocab;
  MLPERF_CHECK(labels.numel() == rows && labels.dtype() == core::DType::kI32 &&
               dlogits.numel() == logits.numel() && normalizer > 0.0f);
  const float* z = logits.f32();
  const int32_t* label = labels.as<int32_t>();
  float* dz = dlogits.f32();
  double total = 0.0;
#pragma omp parallel for reduction(+ : total) if (WorthParallel(logits.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float* zr = z + r * vocab;
    float* dr = dz + r * vocab;
    if (label[r] == ops::kIgnoreLabel) {
      std::fill(dr, dr + vocab, 0.0f);
      continue;
    }
    MLPERF_CHECK(label[r] >= 0 && label[r] < vocab);
    float max = zr[0];
    for (int64_t j = 1; j < vocab; ++j) max = max < zr[j] ? zr[j] : max;
    for (int64_t j = 0; j < vocab; ++j) dr[j] = zr[j] - max;
    ExpInPlace(dr, vocab);
    double sum = 0.0;
    for (int64_t j = 0; j < vocab; ++j) sum += dr[j];
    total += std::log(sum) + max - zr[label[r]];
    const float scale = static_cast<float>(1.0 / (sum * normalizer));
    for (int64_t j = 0; j < vocab; ++j) dr[j] *= scale;
    dr[label[r]] -= 1.0f / normalizer;
  }
  loss.f32()[0] = static_cast<float>(total / normalizer);
}

void VocabShardEmbedding(int64_t first, const Tensor& ids, const Tensor& table, const Tensor& y) {
  const int64_t rows = ids.numel(), entries = table.dim(0), width = table.dim(1);
  MLPERF_CHECK(ids.dtype() == core::DType::kI32 && y.numel() == rows * width);
  const int32_t* id = ids.as<int32_t>();
  const float* t = table.f32();
  float* out = y.f32();
#pragma omp parallel for if (WorthParallel(y.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = id[r] - first;
    float* dst = out + r * width;
    if (row < 0 || row >= entries) {
      for (int64_t f = 0; f < width; ++f) dst[f] = 0.0f;
    } else {
      for (int64_t f = 0; f < width; ++f) dst[f] = t[row * width + f];
    }
  }
}

void VocabShardEmbeddingBackward(int64_t first, const Tensor& ids, const Tensor& dy,
                                 const Tensor& dtable, bool accumulate) {
  const int64_t rows = ids.numel(), entries = dtable.dim(0), width = dtable.dim(1);
  MLPERF_CHECK(ids.dtype() == core::DType::kI32 && dy.numel() == rows * width);
  const int32_t* id = ids.as<int32_t>();
  const float* grad = dy.f32();
  float* table = dtable.f32();
  if (!accumulate) {
#pragma omp parallel for if (WorthParallel(dtable.numel()))
    for (int64_t i = 0; i < entries * width; ++i) table[i] = 0.0f;
  }
  // Repeated ids collide: each thread owns a range of columns and walks
  // every row in order (the sums in row order, as on one thread).
#pragma omp parallel if (WorthParallel(dy.numel()))
  {
    const int64_t t = omp_get_thread_num(), team = omp_get_num_threads();
    const int64_t begin = width * t / team, end = width * (t + 1) / team;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t row = id[r] - first;
      if (row < 0 || row >= entries) continue;
      float* dst = table + row * width;
      const float* src = grad + r * width;
      for (int64_t f = begin; f < end; ++f) dst[f] += src[f];
    }
  }
}

// One row's log-sum-exp: the exponentials in fp32 into `scratch`, the sum in
// fp64.
double RowLse(const float* z, int64_t n, float* scratch) {
  float max = z[0];
  for (int64_t j = 1; j < n; ++j) max = max < z[j] ? z[j] : max;
  for (int64_t j = 0; j < n; ++j) scratch[j] = z[j] - max;
  ExpInPlace(scratch, n);
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) sum += scratch[j];
  return max + std::log(sum);
}

void RowLogSumExp(const Tensor& logits, const Tensor& lse) {
  const int64_t n = Features(logits), rows = logits.numel() / n;
  MLPERF_CHECK(lse.numel() == rows);
  const float* z = logits.f32();
  float* out = lse.f32();
#pragma omp parallel
  {
    std::vector<float> scratch(n);
#pragma omp for
    for (int64_t r = 0; r < rows; ++r)
      out[r] = static_cast<float>(RowLse(z + r * n, n, scratch.data()));
  }
}

void CombineLogSumExp(const Tensor& gathered, const Tensor& lse) {
  const int64_t rows = lse.numel(), ranks = gathered.numel() / rows;
  MLPERF_CHECK(gathered.numel() == ranks * rows);
  const float* g = gathered.f32();
  float* out = lse.f32();
  for (int64_t r = 0; r < rows; ++r) {
    float max = g[r];
    for (int64_t k = 1; k < ranks; ++k) max = std::max(max, g[k * rows + r]);
    double sum = 0.0;
    for (int64_t k = 0; k < ranks; ++k) sum += std::exp(double{g[k * rows + r]} - max);
    out[r] = static_cast<float>(max + std::log(sum));
  }
}

void ShardedTokenCrossEntropy(float normalizer, int64_t first, bool add_lse, const Tensor& logits,
                              const Tensor& labels, const Tensor& lse, const Tensor& loss,
                              const Tensor& dlogits) {
  const int64_t n = Features(logits), rows = logits.numel() / n;
  MLPERF_CHECK(labels.numel() == rows && labels.dtype() == core::DType::kI32 &&
               lse.numel() == rows && dlogits.numel() == logits.numel() && normalizer > 0.0f);
  const float *z = logits.f32(), *l = lse.f32();
  const int32_t* label = labels.as<int32_t>();
  float* dz = dlogits.f32();
  double total = 0.0;
#pragma omp parallel for reduction(+ : total) if (WorthParallel(logits.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    float* dr = dz + r * n;
    if (label[r] == ops::kIgnoreLabel) {
      std::fill(dr, dr + n, 0.0f);
      continue;
    }
    for (int64_t j = 0; j < n; ++j) dr[j] = z[r * n + j] - l[r];
    ExpInPlace(dr, n);
    for (int64_t j = 0; j < n; ++j) dr[j] /= normalizer;
    const int64_t column = label[r] - first;
    if (column >= 0 && column < n) {
      dr[column] -= 1.0f / normalizer;
      total -= z[r * n + column];
    }
    if (add_lse) total += l[r];
  }
  loss.f32()[0] = static_cast<float>(total / normalizer);
}

MLPERF_REGISTER_KERNEL(TokenCrossEntropy, Cpu, TokenCrossEntropy);
MLPERF_REGISTER_KERNEL(VocabShardEmbedding, Cpu, VocabShardEmbedding);
MLPERF_REGISTER_KERNEL(VocabShardEmbeddingBackward, Cpu, VocabShardEmbeddingBackward);
MLPERF_REGISTER_KERNEL(RowLogSumExp, Cpu, RowLogSumExp);
MLPERF_REGISTER_KERNEL(CombineLogSumExp, Cpu, CombineLogSumExp);
MLPERF_REGISTER_KERNEL(ShardedTokenCrossEntropy, Cpu, ShardedTokenCrossEntropy);
MLPERF_REGISTER_KERNEL(RmsNormForward, Cpu, RmsNormForward);
MLPERF_REGISTER_KERNEL(RmsNormBackward, Cpu, RmsNormBackward);
MLPERF_REGISTER_KERNEL(RotaryEmbedding, Cpu, RotaryEmbedding);
MLPERF_REGISTER_KERNEL(SwiGluForward, Cpu, SwiGluForward);
MLPERF_REGISTER_KERNEL(SwiGluBackward, Cpu, SwiGluBackward);
MLPERF_REGISTER_KERNEL(RepeatHeads, Cpu, RepeatHeads);
MLPERF_REGISTER_KERNEL(SumHeadGroups, Cpu, SumHeadGroups);

}  // namespace mlperf::cpu
