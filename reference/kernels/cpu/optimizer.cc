#include "reference/kernels/ops/optimizer.h"

#include <cmath>

#include "reference/kernels/cpu/parallel.h"

namespace mlperf::cpu {
namespace {

bool Skipped(const float* found_inf) { return found_inf != nullptr && *found_inf != 0.0f; }

template <typename Params>
float Rate(const Params& p) {
  return p.lr_at != nullptr ? *p.lr_at : p.lr;
}

// simd: the reduction may be reordered into vector lanes (fp64 partials, so
// the order changes nothing that matters for a trust ratio).
double SquaredNorm(const float* x, int64_t n) {
  double s = 0.0;
#pragma omp parallel for simd reduction(+ : s) if (WorthParallel(n))
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

// Both LARS norms in one pass (one fork/join per slice, not two).
void SquaredNorms(const float* w, const float* g, int64_t n, double* w_sq, double* g_sq) {
  double sw = 0.0, sg = 0.0;
#pragma omp parallel for simd reduction(+ : sw, sg) if (WorthParallel(n))
  for (int64_t i = 0; i < n; ++i) {
    sw += static_cast<double>(w[i]) * w[i];
    sg += static_cast<double>(g[i]) * g[i];
  }
  *w_sq = sw;
  *g_sq = sg;
}

}  // namespace

void SgdStep(core::Device, const SgdParams& p, std::span<const TensorSlice> slices, float* w,
             const float* g, float* momentum, const float* found_inf) {
  if (Skipped(found_inf)) return;
  const float lr = Rate(p);
  for (const TensorSlice& s : slices) {
    const float wd = s.no_weight_decay ? 0.0f : p.weight_decay;
#pragma omp parallel for if (WorthParallel(s.numel))
    for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
      const float d = g[i] + wd * w[i];
      momentum[i] = p.momentum * momentum[i] + d;
      w[i] -= lr * (p.nesterov ? d + p.momentum * momentum[i] : momentum[i]);
    }
  }
}

void LarsStep(core::Device, const LarsParams& p, std::span<const TensorSlice> slices, float* w,
              const float* g, float* momentum, const float* found_inf) {
  if (Skipped(found_inf)) return;
  const float lr = Rate(p);
  for (const TensorSlice& s : slices) {
    float scaled_lr = lr;
    const float wd = s.no_weight_decay ? 0.0f : p.weight_decay;
    if (!s.no_trust_ratio) {
      double w_sq, g_sq;
      SquaredNorms(w + s.offset, g + s.offset, s.numel, &w_sq, &g_sq);
      const double w_norm = std::sqrt(w_sq), g_norm = std::sqrt(g_sq);
      const double trust = (w_norm > 0.0 && g_norm > 0.0)
                               ? p.eeta * w_norm / (g_norm + wd * w_norm + p.epsilon)
                               : 1.0;
      scaled_lr = static_cast<float>(lr * trust);
    }
#pragma omp parallel for if (WorthParallel(s.numel))
    for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
      momentum[i] = p.momentum * momentum[i] - scaled_lr * (g[i] + wd * w[i]);
      w[i] += momentum[i];
    }
  }
}

void LambStep(core::Device, const LambParams& p, std::span<const TensorSlice> slices, float* w,
              const float* g, float* m, float* v, int32_t* step, const float* found_inf) {
  if (Skipped(found_inf)) return;
  const float lr = Rate(p);
  const int32_t t = ++*step;
  double global_sq = 0.0;
  for (const TensorSlice& s : slices) global_sq += SquaredNorm(g + s.offset, s.numel);
  const double global_norm = std::sqrt(global_sq);
  // tf.clip_by_global_norm: g * clip / max(norm, clip).
  const float clip = (p.max_grad_norm > 0.0f && global_norm > p.max_grad_norm)
                         ? static_cast<float>(p.max_grad_norm / global_norm)
                         : 1.0f;
  const float c1 = 1.0f - std::pow(p.beta1, static_cast<float>(t));
  const float c2 = 1.0f - std::pow(p.beta2, static_cast<float>(t));
  for (const TensorSlice& s : slices) {
    const float wd = s.no_weight_decay ? 0.0f : p.weight_decay;
    double w_sq = 0.0, u_sq = 0.0;
    // First pass: moments and norms. The update u is recomputed in the second
    // pass instead of being stored, so no scratch arena is needed.
#pragma omp parallel for reduction(+ : w_sq, u_sq) if (WorthParallel(s.numel))
    for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
      const float gi = g[i] * clip;
      m[i] = p.beta1 * m[i] + (1.0f - p.beta1) * gi;
      v[i] = p.beta2 * v[i] + (1.0f - p.beta2) * gi * gi;
      const float u = (m[i] / c1) / (std::sqrt(v[i] / c2) + p.epsilon) + wd * w[i];
      w_sq += static_cast<double>(w[i]) * w[i];
      u_sq += static_cast<double>(u) * u;
    }
    const double w_norm = std::sqrt(w_sq), u_norm = std::sqrt(u_sq);
    const double ratio =
        (!s.no_trust_ratio && w_norm > 0.0 && u_norm > 0.0) ? w_norm / u_norm : 1.0;
    const float step_size = static_cast<float>(lr * ratio);
#pragma omp parallel for if (WorthParallel(s.numel))
    for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
      const float u = (m[i] / c1) / (std::sqrt(v[i] / c2) + p.epsilon) + wd * w[i];
      w[i] -= step_size * u;
    }
  }
}

void AdamStep(core::Device, const AdamParams& p, std::span<const TensorSlice> slices, float* w,
              const float* g, float* m, float* v, int32_t* step, const float* found_inf) {
  if (Skipped(found_inf)) return;
  const float lr = Rate(p);
  const int32_t t = ++*step;
  const float c1 = 1.0f - std::pow(p.beta1, static_cast<float>(t));
  const float c2 = 1.0f - std::pow(p.beta2, static_cast<float>(t));
  float clip = 1.0f;
  if (p.max_grad_norm > 0.0f) {
    double global_sq = 0.0;
    for (const TensorSlice& s : slices) global_sq += SquaredNorm(g + s.offset, s.numel);
    const double coef = p.max_grad_norm / (std::sqrt(global_sq) + 1e-6);
    clip = coef < 1.0 ? static_cast<float>(coef) : 1.0f;
  }
  for (const TensorSlice& s : slices) {
    const float wd = s.no_weight_decay ? 0.0f : p.weight_decay;
    const float decoupled = p.decoupled ? wd : 0.0f, coupled = p.decoupled ? 0.0f : wd;
#pragma omp parallel for if (WorthParallel(s.numel))
    for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
      const float gi = g[i] * clip + coupled * w[i];
      m[i] = p.beta1 * m[i] + (1.0f - p.beta1) * gi;
      v[i] = p.beta2 * v[i] + (1.0f - p.beta2) * gi * gi;
      const float u = (m[i] / c1) / (std::sqrt(v[i] / c2) + p.epsilon) + decoupled * w[i];
      w[i] -= lr * u;
    }
  }
}

void AdagradStep(core::Device, const AdagradParams& p, std::span<const TensorSlice> slices,
                 float* w, const float* g, float* sum, const float* found_inf) {
  if (Skipped(found_inf)) return;
  const float lr = Rate(p);
  for (const TensorSlice& s : slices) {
    const float wd = s.no_weight_decay ? 0.0f : p.weight_decay;
#pragma omp parallel for if (WorthParallel(s.numel))
    for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
      const float gi = g[i] + wd * w[i];
      sum[i] += gi * gi;
      w[i] -= lr * gi / (std::sqrt(sum[i]) + p.epsilon);
    }
  }
}

void UnscaleAndCheckFinite(core::Device, float* g, int64_t n, const float* loss_scale,
                           float* found_inf) {
  const float inv = 1.0f / *loss_scale;
  int any = 0;
#pragma omp parallel for reduction(| : any) if (WorthParallel(n))
  for (int64_t i = 0; i < n; ++i) {
    g[i] *= inv;
    any |= std::isfinite(g[i]) ? 0 : 1;
  }
  *found_inf = any ? 1.0f : 0.0f;
}

void UpdateLossScale(core::Device, const LossScaleParams& p, float* loss_scale,
                     int32_t* growth_tracker, const float* found_inf) {
  if (*found_inf != 0.0f) {
    *loss_scale *= p.backoff_factor;
    *growth_tracker = 0;
    return;
  }
  if (++*growth_tracker == p.growth_interval) {
    *loss_scale *= p.growth_factor;
    *growth_tracker = 0;
  }
}

MLPERF_REGISTER_KERNEL(SgdStep, Cpu, SgdStep);
MLPERF_REGISTER_KERNEL(LarsStep, Cpu, LarsStep);
MLPERF_REGISTER_KERNEL(LambStep, Cpu, LambStep);
MLPERF_REGISTER_KERNEL(AdamStep, Cpu, AdamStep);
MLPERF_REGISTER_KERNEL(AdagradStep, Cpu, AdagradStep);
MLPERF_REGISTER_KERNEL(UnscaleAndCheckFinite, Cpu, UnscaleAndCheckFinite);
MLPERF_REGISTER_KERNEL(UpdateLossScale, Cpu, UpdateLossScale);

}  // namespace mlperf::cpu
