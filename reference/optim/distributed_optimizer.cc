#include "reference/optim/distributed_optimizer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/check.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::optim {

std::vector<TensorSlice> ShardSlices(const std::vector<TensorSlice>& slices, int64_t begin,
                                     int64_t end) {
  std::vector<TensorSlice> out;
  for (const TensorSlice& s : slices) {
    const int64_t from = std::max(begin, s.offset), to = std::min(end, s.offset + s.numel);
    if (from >= to) continue;
    TensorSlice part = s;
    part.offset = from - begin;
    part.numel = to - from;
    out.push_back(part);
  }
  return out;
}

DistributedOptimizer::DistributedOptimizer(dist::Communicator& comm,
                                           std::vector<TensorSlice> slices, float max_grad_norm,
                                           const InnerOptimizerFactory& make,
                                           TensorParallelNorm tensor)
    : comm_(comm),
      slices_(std::move(slices)),
      max_grad_norm_(max_grad_norm),
      factory_(make),
      tensor_(std::move(tensor)) {}

void DistributedOptimizer::Allocate(core::Arena& arena, int64_t count) {
  const int world = comm_.world_size();
  chunk_ = (count + world - 1) / world;
  begin_ = std::min(count, comm_.rank() * chunk_);
  end_ = std::min(count, begin_ + chunk_);
  inner_ = factory_(ShardSlices(slices_, begin_, end_));
  MLPERF_CHECK_MSG(!inner_->ReadsGlobalGradientNorm(),
                   "the distributed optimizer clips itself; its inner optimizer must not");
  inner_->Allocate(arena, end_ - begin_);
  padded_ = arena.AllocateZeroed({chunk_ * world});
  grad_shard_ = arena.AllocateZeroed({chunk_});
  weight_shard_ = arena.AllocateZeroed({chunk_});
  host_grads_.assign(max_grad_norm_ > 0.0f ? chunk_ : 0, 0.0f);
  if (max_grad_norm_ > 0.0f && tensor_.comm != nullptr && tensor_.comm->rank() != 0) {
    counted_.assign(static_cast<size_t>(end_ - begin_), 1);
    for (const TensorSlice& s : ShardSlices(tensor_.replicated, begin_, end_))
      std::fill_n(counted_.begin() + s.offset, s.numel, uint8_t{0});
  }
}

std::vector<StateTensor> DistributedOptimizer::State() const {
  std::vector<StateTensor> state = inner_->State();
  for (StateTensor& s : state) s.per_element = false;  // the shard's, not the arena's layout
  return state;
}

void DistributedOptimizer::Step(const StepArgs& a) {
  const int world = comm_.world_size();
  const core::Device device = a.device;
  const int64_t shard = end_ - begin_;
  // The gradients' shards, summed over the ranks, then averaged.
  ops::CopyBytes(padded_.data(), device, a.g, device, a.count * sizeof(float));
  comm_.ReduceScatterSum(padded_.f32(), grad_shard_.f32(), chunk_);
  const core::Tensor grads(grad_shard_.data(), {shard}, core::DType::kF32, device);
  if (shard > 0) ops::Scale(grads, 1.0f / static_cast<float>(world));
  if (max_grad_norm_ > 0.0f) {
    // The global norm from every shard's squared norm.
    ops::CopyBytes(host_grads_.data(), core::Device::kCpu, grads.data(), device,
                   shard * sizeof(float));
    double squares = 0.0;
    for (int64_t i = 0; i < shard; ++i) {
      if (counted_.empty() || counted_[i] != 0)
        squares += static_cast<double>(host_grads_[i]) * host_grads_[i];
    }
    float total = static_cast<float>(squares);
    comm_.AllReduceSum(&total, 1);
    if (tensor_.comm != nullptr) tensor_.comm->AllReduceSum(&total, 1);
    const double coef = max_grad_norm_ / (std::sqrt(static_cast<double>(total)) + 1e-6);
    if (coef < 1.0 && shard > 0) ops::Scale(grads, static_cast<float>(coef));
  }
  // This rank's weights stepped, then every rank's gathered.
  ops::CopyBytes(weight_shard_.data(), device, a.w + begin_, device, shard * sizeof(float));
  StepArgs inner = a;
  inner.w = weight_shard_.f32();
  inner.g = grad_shard_.f32();
  inner.count = shard;
  inner_->Step(inner);
  comm_.AllGather(weight_shard_.data(), padded_.data(), chunk_ * sizeof(float));
  ops::CopyBytes(a.w, device, padded_.data(), device, a.count * sizeof(float));
}

}  // namespace mlperf::optim
