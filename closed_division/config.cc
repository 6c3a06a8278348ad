#include "closed_division/config.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace mlperf::closed {
namespace {

// The hyperparameters of the RCP runs at each batch size (rcps_resnet.json,
// training 4.0.0; references.md 2.6). The decay horizon is the RCP's
// opt_learning_rate_decay_steps in epochs.
struct ScaleRecipe {
  int64_t global_batch_size;
  double base_lr;
  double warmup_epochs;
  double weight_decay;
  double momentum;
  int64_t decay_epochs;
};
constexpr ScaleRecipe kRcpRecipes[] = {
    {1632, 7.4, 2, 5e-5, 0.9, 35},     {3264, 10.5, 2, 5e-5, 0.9, 37},
    {4096, 10.0, 5, 2e-4, 0.9, 42},    {8192, 17.0, 5, 2e-4, 0.9, 39},
    {13056, 12.8, 9, 2.5e-5, 0.9, 48}, {32768, 21.2, 16, 2.5e-5, 0.94, 58},
};
// Largest per-rank batch the recipes use (NVIDIA: 408 images per H100).
constexpr int64_t kMaxBatchPerRank = 408;

// The embedded default: ResNet-50 v1.5's depth (3, 4, 6, 3 bottlenecks) at
// 1/8 of its width and 32x32 pixels, on a generated image set that a 2-core
// CPU trains to the target in well under a minute per run. Hyperparameters
// keep every closed-division constraint; the batch size has no RCP.
RunPlan DemoPlan() {
  RunPlan p;
  p.demo = true;
  p.model.base_width = 8;
  p.model.num_classes = 10;
  p.model.image_size = 32;
  p.model.resize_shorter = 32;
  p.generated = {.num_classes = 10, .train_per_class = 200, .val_per_class = 50,
                 .image_size = 32, .seed = 1};
  p.recipe = {.optimizer = Optimizer::kLars,
              .global_batch_size = 64,
              .base_lr = 2.0,
              .warmup_epochs = 2,
              .decay_epochs = 20,
              .momentum = 0.9,
              .weight_decay = 1e-4,
              .label_smoothing = 0.1,
              .first_eval_epoch = 3,
              .eval_every_epochs = 4};
  p.train_samples = int64_t{p.generated.num_classes} * p.generated.train_per_class;
  p.eval_samples = int64_t{p.generated.num_classes} * p.generated.val_per_class;
  p.system_name = "cpu-demo-generated-data";
  return p;
}

RunPlan ImagenetPlan(int ranks) {
  RunPlan p;
  const ScaleRecipe* chosen = nullptr;
  for (const ScaleRecipe& r : kRcpRecipes) {
    if (r.global_batch_size % ranks == 0 && r.global_batch_size / ranks <= kMaxBatchPerRank)
      chosen = &r;  // the largest that fits
  }
  ScaleRecipe recipe;
  if (chosen != nullptr) {
    recipe = *chosen;
    p.rcp_batch_size = true;
  } else {
    // No RCP batch size splits evenly: full per-rank batches and the
    // hyperparameters of the nearest RCP batch size.
    const int64_t gbs = kMaxBatchPerRank * ranks;
    const ScaleRecipe* nearest = &kRcpRecipes[0];
    for (const ScaleRecipe& r : kRcpRecipes) {
      if (std::llabs(r.global_batch_size - gbs) < std::llabs(nearest->global_batch_size - gbs))
        nearest = &r;
    }
    recipe = *nearest;
    recipe.global_batch_size = gbs;
  }
  p.recipe = {.optimizer = Optimizer::kLars,
              .global_batch_size = recipe.global_batch_size,
              .base_lr = recipe.base_lr,
              .warmup_epochs = recipe.warmup_epochs,
              .decay_epochs = recipe.decay_epochs,
              .momentum = recipe.momentum,
              .weight_decay = recipe.weight_decay,
              .label_smoothing = 0.1,
              .first_eval_epoch = 3,
              .eval_every_epochs = 4};
  p.train_samples = kImagenetTrainImages;
  p.eval_samples = kImagenetValImages;
  return p;
}

}  // namespace

int RunPlan::last_epoch() const {
  int last = recipe.first_eval_epoch;
  while (last < recipe.decay_epochs) last += recipe.eval_every_epochs;
  return last;
}

bool RunPlan::is_eval_epoch(int epoch) const {
  return epoch >= recipe.first_eval_epoch &&
         (epoch - recipe.first_eval_epoch) % recipe.eval_every_epochs == 0;
}

absl::StatusOr<RunPlan> MakeRunPlan(const RunnerOptions& options, int world_size,
                                    int cores_per_process) {
  if (options.benchmark != kBenchmarkResnet) {
    return absl::InvalidArgumentError(fmt::format(
        "--bench={}: not supported (run_closed runs: {})", options.benchmark, kBenchmarkResnet));
  }
  const int accelerators = options.gpus * options.nodes;
  if (options.gpus > 0 && accelerators != world_size) {
    return absl::InvalidArgumentError(fmt::format(
        "--gpus={} --nodes={} means {} processes (one per GPU), but {} were launched; start "
        "with mpirun -np {} or srun --ntasks={}",
        options.gpus, options.nodes, accelerators, world_size, accelerators, accelerators));
  }
  RunPlan plan = options.data_dir.empty() ? DemoPlan() : ImagenetPlan(world_size);
  plan.options = options;
  plan.world_size = world_size;
  if (options.optimizer == "sgd") {
    // SGD with momentum and polynomial decay (closed_resnet_sgd): the base LR
    // must be a multiple of 0.001; LARS learning rates are far above what SGD
    // tolerates, so use the reference's linear scaling 0.1 per 256 images.
    plan.recipe.optimizer = Optimizer::kSgd;
    const double lr = 0.1 * static_cast<double>(plan.recipe.global_batch_size) / 256.0;
    plan.recipe.base_lr = std::max(0.001, std::round(lr * 1000.0) / 1000.0);
    plan.recipe.weight_decay = 1e-4;
  } else if (options.optimizer != "lars") {
    return absl::InvalidArgumentError(
        fmt::format("--optimizer={}: expected lars or sgd", options.optimizer));
  }
  if (plan.recipe.global_batch_size % world_size != 0) {
    return absl::InvalidArgumentError(fmt::format(
        "global batch size {} does not split over {} processes; launch a divisor of it",
        plan.recipe.global_batch_size, world_size));
  }
  plan.batch_per_rank = plan.recipe.global_batch_size / world_size;
  if (plan.demo) {
    const std::string cache =
        options.cache_dir.empty()
            ? (std::filesystem::path(options.out_dir) / ".cache").string()
            : options.cache_dir;
    const GeneratedDataShape& g = plan.generated;
    plan.data_root = (std::filesystem::path(cache) /
                      fmt::format("generated-imagenet-c{}-t{}-v{}-px{}-seed{}", g.num_classes,
                                  g.train_per_class, g.val_per_class, g.image_size, g.seed))
                         .string();
  } else {
    plan.data_root = options.data_dir;
    plan.system_name = options.gpus > 0
                           ? fmt::format("{}xnode-{}xgpu", options.nodes, options.gpus)
                           : fmt::format("{}xnode-cpu-{}proc", options.nodes, world_size);
  }
  // The small demo model trains fastest on one thread next to one decode
  // thread; ImageNet decoding needs about as many threads as the model.
  const int cores = std::max(1, cores_per_process);
  if (plan.demo) {
    plan.compute_threads = cores <= 2 ? 1 : cores - 1;
    plan.loader_threads = 1;
  } else {
    plan.compute_threads = std::max(1, cores / 2);
    plan.loader_threads = std::max(1, cores - plan.compute_threads);
  }
  if (options.gpus > 0) {
    // The GPU computes; the host thread only queues kernels, so the cores
    // go to JPEG decoding and augmentation.
    plan.compute_threads = 1;
    plan.loader_threads = std::max(1, cores - 1);
  }
  if (options.threads > 0) plan.compute_threads = options.threads;
  if (!options.system.empty()) {
    plan.system_name = options.system;
    // A demonstration package must never pass for an ImageNet result.
    if (plan.demo && plan.system_name.find("demo") == std::string::npos)
      plan.system_name += "-demo-generated-data";
  }
  return plan;
}

}  // namespace mlperf::closed
