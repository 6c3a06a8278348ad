// 3D U-Net configured for one invocation: the model, its recipe's optimizer
// and schedule, KiTS19 (prepared once into the cache when given raw) and the
// package README.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/benchmark.h"
#include "benchmarks/unet3d/recipe.h"
#include "datasets/kits19/generated.h"
#include "reference/models/unet3d.h"

namespace mlperf::benchmarks::unet3d {

class UnetSetup final : public BenchmarkSetup {
 public:
  // raw_dir: a NIfTI tree to prepare into plan.data_root; empty = prepared
  // .npy files given.
  UnetSetup(RunPlan plan, Recipe recipe, Shape shape, std::filesystem::path raw_dir,
            kits19::GeneratedKits19Options generated);

  std::vector<Hyperparameter> Hyperparameters() const override {
    return HyperparametersOf(recipe_, shape_, plan_);
  }
  std::unique_ptr<models::Model> MakeModel(const models::Placement& placement,
                                           uint64_t seed) const override;
  std::unique_ptr<optim::Optimizer> MakeOptimizer(const models::Model& model) const override {
    return unet3d::MakeOptimizer(recipe_, model);
  }
  std::unique_ptr<optim::LearningRateSchedule> MakeSchedule() const override {
    return unet3d::MakeSchedule(recipe_, plan_.schedule.steps_per_epoch);
  }
  absl::Status PrepareData() const override;
  absl::Status CheckData() const override;
  absl::StatusOr<std::unique_ptr<DataPipeline>> OpenData(Split split, uint64_t seed,
                                                         int rank) const override;
  std::string ReadmeSection() const override;

  // Gradient accumulation when a rank's batch does not fit: on the CPU its
  // memory (the model's arenas, twice a batch-1 model for the momentum and
  // accumulation sums, the loader's patches in flight); on a GPU micro-batches
  // of at most kMaxMicroBatchPerGpu.
  absl::Status FitMicroBatch(int64_t memory_bytes);

  // The host memory of this process (0 = unknown): the loader refuses
  // prepared cases that would not fit in it.
  void SetHostMemory(int64_t bytes) { host_memory_ = bytes; }

 private:
  models::UNet3DConfig ModelConfig(core::Device device) const;

  Recipe recipe_;
  Shape shape_;
  std::filesystem::path raw_dir_;
  kits19::GeneratedKits19Options generated_;
  int64_t host_memory_ = 0;
};

}  // namespace mlperf::benchmarks::unet3d
