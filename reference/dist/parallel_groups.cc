#include "reference/dist/parallel_groups.h"

#include "fmt/format.h"

namespace mlperf::dist {

absl::StatusOr<ParallelGroups> ParallelGroups::Split(Communicator& world, int tensor) {
  const int ranks = world.world_size(), rank = world.rank();
  if (tensor < 1 || ranks % tensor != 0) {
    return absl::InvalidArgumentError(fmt::format(
        "{} tensor-parallel ranks do not divide the {} processes launched", tensor, ranks));
  }
  ParallelGroups groups;
  if (tensor == 1) {
    groups.owned_tensor_ = MakeSingleProcessCommunicator();
    groups.tensor_ = groups.owned_tensor_.get();
    groups.data_ = &world;
    return groups;
  }
  // Every rank calls both splits, in the same order.
  groups.owned_tensor_ = world.Split(/*colour=*/rank / tensor, /*key=*/rank % tensor);
  groups.owned_data_ = world.Split(/*colour=*/rank % tensor, /*key=*/rank / tensor);
  if (groups.owned_tensor_ == nullptr || groups.owned_data_ == nullptr) {
    return absl::FailedPreconditionError(
        "tensor parallelism needs communicators that split (the CPU's MPI); NCCL's groups are "
        "not built yet");
  }
  groups.tensor_ = groups.owned_tensor_.get();
  groups.data_ = groups.owned_data_.get();
  return groups;
}

}  // namespace mlperf::dist
