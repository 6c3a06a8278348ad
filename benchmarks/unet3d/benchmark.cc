// The 3D U-Net registry entry: closed-division recipes per scale from the RCP
// references, KiTS19 raw or prepared, and the embedded demonstration (a
// small U-Net on generated KiTS19-like cases).
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>

#include "benchmarks/unet3d/setup.h"
#include "datasets/kits19/loader.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace mlperf::benchmarks::unet3d {
namespace {

namespace fs = std::filesystem;

// Errors (a loop of links, permissions) read as "no": the data checks that
// follow name the folder and the cause.
bool IsRawKits19Tree(const fs::path& dir, int depth = 0) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code entry_ec;
    if (it->is_directory(entry_ec) && it->path().filename().string().starts_with("case_") &&
        fs::exists(it->path() / "imaging.nii.gz", entry_ec))
      return true;
  }
  return depth == 0 && fs::is_directory(dir / "data", ec) && IsRawKits19Tree(dir / "data", 1);
}

class UnetBenchmark final : public Benchmark {
 public:
  const BenchmarkInfo& info() const override {
    static const BenchmarkInfo info = {
        .name = "unet3d",
        .summary = "3D U-Net on KiTS19",
        .metric = "mean DICE",
        // The reference stops a run whose mean DICE falls below 1e-6.
        .diverged_below = 1e-6};
    return info;
  }

 protected:
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> ConfigureFor(
      RunPlan plan, int world_size, const ProcessShare& share) const override {
    const RunnerOptions& options = plan.options;
    plan.data_name = "KiTS19";
    plan.model_name = "3D U-Net";
    plan.train_samples = kTrainCases;
    plan.eval_samples = kEvalCases;
    Recipe recipe;
    Shape shape;
    // The embedded default: 210 generated cases of about 18^3 voxels after
    // preparation, a three-level U-Net of 4-8-16 filters on 16^3 patches:
    // a 2-core CPU trains it past the target in a few seconds per run.
    const kits19::GeneratedKits19Options generated;
    if (!options.optimizer.empty() && options.optimizer != "sgd") {
      return absl::InvalidArgumentError(fmt::format(
          "--optimizer={}: 3D U-Net trains with SGD (Nesterov momentum) only", options.optimizer));
    }
    if (plan.small) {
      shape = {.filters = {4, 8, 16}, .roi = 16};
      recipe = {.base_lr = 1.0, .warmup_epochs = 2};
      plan.global_batch_size = 2;
    } else if (absl::Status s = KitsPlan(world_size, options.gpus > 0, plan, recipe); !s.ok()) {
      return s;
    }
    plan.member_name = plan.small
                           ? fmt::format("3D U-Net, filters {}, {}^3 (the embedded default's)",
                                         fmt::join(shape.filters, "-"), shape.roi)
                           : "3D U-Net (filters 32-64-128-256-320), 128^3";
    if (options.batch_per_rank > 0) plan.global_batch_size = options.batch_per_rank * world_size;
    if (absl::Status s = CompletePlan(options, world_size, share.cores,
                                      fmt::format("generated-kits19-{}", generated.Name()), plan);
        !s.ok())
      return s;
    // The small member's patches take microseconds to cut: the loader thread
    // idles, so the model gets every core (1.6x faster on 2 cores).
    if (plan.small && options.threads == 0) plan.compute_threads = std::max(1, share.cores);
    fs::path raw_dir;
    if (plan.demo) {
      raw_dir = fs::path(plan.data_root) / "raw";
      plan.data_root = (fs::path(plan.data_root) / "prepared").string();
    } else if (IsRawKits19Tree(options.data_dir)) {
      // A NIfTI tree is prepared once into the cache (untimed).
      raw_dir = options.data_dir;
      plan.data_root = (fs::path(plan.cache_dir) / "kits19-prepared").string();
    }
    // Samples per epoch as the reference's loaders give them (drop_last on
    // the sampler and the loader); evaluations from ceil(1000 * 168 / spe)
    // epochs every ceil(20 * 168 / spe), the run aborted at ceil(10000 * 168
    // / spe) (references.md 3.6). The demo evaluates early and often.
    const int64_t spe = kits19::SamplesPerEpoch(
        kTrainCases, plan.world_size,
        static_cast<int>(plan.batch_per_rank * plan.gradient_accumulation_steps));
    if (spe == 0) {
      return absl::InvalidArgumentError(
          fmt::format("global batch size {} is larger than the {} training cases",
                      plan.global_batch_size, kTrainCases));
    }
    auto epochs_for = [&](int64_t reference_epochs) {
      return static_cast<int>((reference_epochs * kTrainCases + spe - 1) / spe);
    };
    plan.schedule = {.steps_per_epoch = spe / plan.global_batch_size,
                     .first_eval_epoch = plan.small ? 2 : epochs_for(1000),
                     .eval_every_epochs = plan.small ? 1 : epochs_for(20),
                     .log_samples = true,
                     .samples_per_epoch = spe};
    plan.schedule.last_epoch = plan.schedule.RoundUpToEval(plan.small ? 40 : epochs_for(10000));
    const bool fit = options.gpus > 0 || share.memory_bytes > 0;
    auto setup = std::make_unique<UnetSetup>(std::move(plan), recipe, shape, raw_dir, generated);
    setup->SetHostMemory(share.memory_bytes);
    if (fit) {
      if (absl::Status s = setup->FitMicroBatch(share.memory_bytes); !s.ok()) return s;
    }
    return setup;
  }
};

}  // namespace

std::unique_ptr<Benchmark> MakeBenchmark() { return std::make_unique<UnetBenchmark>(); }

}  // namespace mlperf::benchmarks::unet3d
