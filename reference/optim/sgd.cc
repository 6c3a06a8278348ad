#include "reference/optim/sgd.h"

#include <algorithm>
#include <utility>

#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"

namespace mlperf::optim {

Sgd::Sgd(const SgdOptions& options, std::vector<TensorSlice> slices)
    : options_(options), slices_(std::move(slices)) {}

void Sgd::Allocate(core::Arena& arena, int64_t count) { momentum_ = arena.AllocateZeroed({count}); }

std::vector<StateTensor> Sgd::State() const { return {{"momentum", momentum_, true}}; }

void Sgd::Step(const StepArgs& a) {
  ops::SgdStep(a.device,
               {.lr = a.lr,
                .lr_at = a.lr_at,
                .momentum = options_.momentum,
                .weight_decay = options_.weight_decay,
                .nesterov = options_.nesterov},
               slices_, a.w, a.g, momentum_.f32(), a.found_inf);
}

KerasSgd::KerasSgd(const KerasSgdOptions& options, std::vector<TensorSlice> slices,
                   std::vector<TensorSlice> l2_slices)
    : options_(options), plain_(std::move(slices)), l2_slices_(std::move(l2_slices)) {
  // Plain TF momentum is LARS's update with neither trust ratio nor decay.
  for (TensorSlice& s : plain_) s.no_weight_decay = s.no_trust_ratio = true;
}

void KerasSgd::Allocate(core::Arena& arena, int64_t count) {
  momentum_ = arena.AllocateZeroed({count});
  int64_t largest = 1;
  for (const TensorSlice& s : l2_slices_) largest = std::max(largest, s.numel);
  l2_scratch_ = arena.Allocate({largest});
  l2_sums_ = arena.Allocate({std::max<int64_t>(1, static_cast<int64_t>(l2_slices_.size()))});
}

std::vector<StateTensor> KerasSgd::State() const { return {{"momentum", momentum_, true}}; }

double KerasSgd::AddL2Gradient(float* w, float* g) const {
  const float wd = options_.weight_decay;
  double sum_sq = 0.0;
  for (const TensorSlice& s : l2_slices_)
    for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
      sum_sq += static_cast<double>(w[i]) * w[i];
      g[i] += 2.0f * wd * w[i];
    }
  return wd * sum_sq;
}

void KerasSgd::QueueL2Gradient(core::Device device, float* w, float* g) const {
  // Per slice a dot product w.w (a 1x1 GEMM, in fp32 whatever the compute
  // precision) into l2_sums_, and g += (2 wd) w through the scratch copy.
  const float wd = options_.weight_decay;
  const ops::PrecisionScope fp32(core::DType::kF32);
  for (size_t k = 0; k < l2_slices_.size(); ++k) {
    const TensorSlice& s = l2_slices_[k];
    const core::Tensor ws(w + s.offset, {1, s.numel}, core::DType::kF32, device);
    const core::Tensor gs(g + s.offset, {s.numel}, core::DType::kF32, device);
    const core::Tensor scratch(l2_scratch_.data(), {s.numel}, core::DType::kF32, device);
    ops::LinearForward(ws, ws, core::Tensor(),
                       core::Tensor(l2_sums_.f32() + k, {1, 1}, core::DType::kF32, device));
    ops::Copy(ws.Reshaped({s.numel}), scratch);
    ops::Scale(scratch, 2.0f * wd);
    ops::Accumulate(scratch, gs);
  }
}

void KerasSgd::Step(const StepArgs& a) {
  float* g = a.g;
  if (a.device == core::Device::kCpu) {
    host_l2_loss_ = AddL2Gradient(a.w, g);
  } else {
    QueueL2Gradient(a.device, a.w, g);
  }
  ops::LarsStep(a.device,
                {.lr = a.lr, .lr_at = a.lr_at, .momentum = options_.momentum, .weight_decay = 0.0f},
                plain_, a.w, g, momentum_.f32(), a.found_inf);
}

double KerasSgd::LossTerm(core::Device device) const {
  if (device == core::Device::kCpu) return host_l2_loss_;
  std::vector<float> sums(l2_slices_.size());
  ops::CopyBytes(sums.data(), core::Device::kCpu, l2_sums_.data(), device,
                 sums.size() * sizeof(float));
  double sum_sq = 0.0;
  for (float v : sums) sum_sq += v;
  return options_.weight_decay * sum_sq;  // as AddL2Gradient's
}

}  // namespace mlperf::optim
