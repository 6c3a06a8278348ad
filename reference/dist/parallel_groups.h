// Megatron's layout of tensor- and data-parallel ranks: the world in groups
// of `tensor` consecutive ranks, each group holding one model split over its
// ranks (tensor rank = rank % tensor); the ranks that hold the same slice
// (one from each group) form a data-parallel group, which averages that
// slice's gradients and shares the batch out (data rank = rank / tensor).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "reference/dist/communicator.h"

namespace mlperf::dist {

class ParallelGroups {
 public:
  // Collective over `world` (which must outlive the groups). Tensor 1: the
  // tensor group is this rank alone and the data group is `world` itself.
  // InvalidArgument when `tensor` does not divide the world;
  // FailedPrecondition when the backend cannot split.
  static absl::StatusOr<ParallelGroups> Split(Communicator& world, int tensor);

  Communicator& tensor() const { return *tensor_; }
  Communicator& data() const { return *data_; }

 private:
  std::unique_ptr<Communicator> owned_tensor_, owned_data_;
  Communicator* tensor_ = nullptr;
  Communicator* data_ = nullptr;
};

}  // namespace mlperf::dist
