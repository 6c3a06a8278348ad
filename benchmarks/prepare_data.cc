#include "benchmarks/prepare_data.h"

#include <filesystem>

#include "base/file_lock.h"
#include "fmt/format.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::benchmarks {

namespace fs = std::filesystem;

absl::Status PrepareDataOnce(const BenchmarkSetup& setup,
                             const std::function<void(const std::string&)>& info) {
  const RunPlan& plan = setup.plan();
  // On the plan's threads: a demonstration's pre-training on every core
  // beside other processes stalls in OpenMP's barriers.
  ops::SetHostThreads(plan.compute_threads);
  // Data read where it is: nothing to write, so no lock beside the user's folder.
  if (!plan.demo && plan.data_root == plan.options.data_dir) return setup.PrepareData();
  const fs::path root = plan.data_root;
  std::error_code ec;
  fs::create_directories(root.parent_path(), ec);
  if (ec) return absl::PermissionDeniedError(fmt::format("{}: {}", root.string(), ec.message()));
  const fs::path lock_path = root.string() + ".lock";
  absl::StatusOr<base::FileLock> lock = base::FileLock::TryAcquire(lock_path);
  if (!lock.ok() && absl::IsFailedPrecondition(lock.status())) {
    info(fmt::format("waiting for the data set: {}", std::string(lock.status().message())));
    lock = base::FileLock::Acquire(lock_path);
  }
  if (!lock.ok()) return lock.status();
  info(
      fmt::format("{}: {}", plan.demo ? "generated data set" : "prepared data set", root.string()));
  return setup.PrepareData();
}

}  // namespace mlperf::benchmarks
