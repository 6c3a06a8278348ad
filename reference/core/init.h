// Parameter initialisers matching the references. They run on the host once
// before training (the device copy is a plain memcpy), so every backend starts
// from the same bits for the same seed.
#pragma once

#include <cstdint>

#include "reference/core/tensor.h"

namespace mlperf::core {

// Stream position of an initialiser: the seed and a per-tensor offset, so
// tensors draw independent numbers and adding one does not shift the others.
struct RngStream {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

void FillConstant(const Tensor& t, float value);
// U[lo, hi). Element k of t takes element first + k of the stream (a shard
// of a larger tensor drawn whole).
void FillUniform(const Tensor& t, float lo, float hi, RngStream rng, int64_t first = 0);
// N(mean, stddev) by Box-Muller on pairs of Philox lanes.
void FillNormal(const Tensor& t, float mean, float stddev, RngStream rng);
// N(0, stddev) re-drawn outside +-2 stddev, as tf.random.truncated_normal.
void FillTruncatedNormal(const Tensor& t, float stddev, RngStream rng);

// tf.keras he_normal (TF >= 2): truncated normal, stddev sqrt(2/fan_in)/0.8796
// so that the truncated distribution has variance 2/fan_in (ResNet conv kernels).
void HeNormalTruncated(const Tensor& t, int64_t fan_in, RngStream rng);
// Untruncated He normal N(0, 2/fan_in) (MXNet Xavier gaussian, magnitude 2).
void HeNormal(const Tensor& t, int64_t fan_in, RngStream rng);
// PyTorch default for Linear/Conv weights and biases: kaiming_uniform with
// a=sqrt(5), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (3D U-Net, all layers).
void TorchDefaultUniform(const Tensor& t, int64_t fan_in, RngStream rng);

}  // namespace mlperf::core
