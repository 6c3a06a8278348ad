// Hyperparameters of the fused optimizer updates, shared by both backends.
// Parameters, gradients and optimizer state live in flat arenas with the
// same layout; a TensorSlice names one parameter tensor inside them.
//
// lr_at: when set, the rate is read from there (a float in the step's
// device memory) when the step runs, and `lr` is ignored. A step captured
// once in a CUDA graph then replays with each step's rate.
#pragma once

#include <cstdint>

namespace mlperf {

struct TensorSlice {
  int64_t offset = 0;
  int64_t numel = 0;
  // Two properties of a parameter, apart: BN gamma/beta, biases and
  // LayerNorm have both (LARS skip_list ['batch_normalization', 'bias',
  // 'bn']; LAMB excludes 'LayerNorm', 'layer_norm', 'bias').
  bool no_weight_decay = false;
  bool no_trust_ratio = false;
};

// torch.optim.SGD: d = g + wd*w; buf = momentum*buf + d; w -= lr*(nesterov ?
// d + momentum*buf : buf). 3D U-Net uses nesterov=true, wd=0.
struct SgdParams {
  float lr = 0.0f;
  const float* lr_at = nullptr;
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

// ResNet reference lars_optimizer.py, TF-style momentum with lr inside the buffer:
//   trust = eeta*|w| / (|g| + wd*|w| + epsilon)   (1 if |w| or |g| is 0)
//   v = momentum*v - lr*trust*(g + wd*w);  w += v
// no_trust_ratio slices: trust = 1; no_weight_decay slices: wd = 0 (both:
// v = momentum*v - lr*g). The reference passes lars_epsilon=0
// but `epsilon or backend_config.epsilon()` turns it into 1e-7; we match the
// behaviour (the logged lars_epsilon stays 0.0).
struct LarsParams {
  float lr = 0.0f;
  const float* lr_at = nullptr;
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  float eeta = 0.001f;
  float epsilon = 1e-7f;
};

// BERT reference lamb_optimizer_v1.py, bias-corrected:
//   m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2
//   u = (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps) + wd*w   (wd = 0 if no_weight_decay)
//   r = |w|/|u| (1 if either is 0 or no_trust_ratio);  w -= lr*r*u
// after clip_by_global_norm(max_grad_norm) of all gradients (0 disables it).
struct LambParams {
  float lr = 0.0f;
  const float* lr_at = nullptr;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-6f;
  float weight_decay = 0.01f;
  float max_grad_norm = 1.0f;
};

// Adam with bias correction (the fused Adam of apex and TransformerEngine):
//   decoupled (AdamW): u = m'/(sqrt(v')+eps) + wd*w;  w -= lr*u
//   otherwise (Adam, L2): g += wd*w before the moments;  w -= lr*m'/(sqrt(v')+eps)
// with m' = m/(1-b1^t), v' = v/(1-b2^t); no weight decay on no_weight_decay
// slices. With max_grad_norm > 0 the gradients are first scaled by
// max_grad_norm / (||g|| + 1e-6) when that is below 1, ||g|| over every
// slice (torch.nn.utils.clip_grad_norm_, Megatron's clip_grad_norm_fp32).
struct AdamParams {
  float lr = 0.0f;
  const float* lr_at = nullptr;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  float weight_decay = 0.0f;
  bool decoupled = true;
  float max_grad_norm = 0.0f;
};

// Adagrad as torch.optim.Adagrad with lr_decay 0 and initial accumulator 0:
//   g += wd*w (not on no_weight_decay slices);  sum += g^2;
//   w -= lr * g / (sqrt(sum) + eps)
struct AdagradParams {
  float lr = 0.0f;
  const float* lr_at = nullptr;
  float epsilon = 1e-10f;
  float weight_decay = 0.0f;
};

// torch.cuda.amp.GradScaler's dynamic loss scaling.
struct LossScaleParams {
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  int32_t growth_interval = 2000;
};

}  // namespace mlperf
