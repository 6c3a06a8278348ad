#include "closed_division/unet3d_benchmark.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "base/files.h"
#include "closed_division/rcp_recipes.h"
#include "datasets/kits19/eval_cases.h"
#include "datasets/kits19/generated.h"
#include "datasets/kits19/loader.h"
#include "datasets/kits19/prepare.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "logging/mllog_keys.h"
#include "quality_targets/benchmark_meta.h"
#include "reference/models/unet3d.h"

namespace mlperf::closed {
namespace {

namespace key = mllog::key;
namespace fs = std::filesystem;

// KiTS19 as the closed rules fix it (closed_unet3d: train_samples 168,
// eval_samples 42).
constexpr int64_t kTrainCases = 168;
constexpr int64_t kEvalCases = 42;
// Largest per-GPU micro-batch at 128^3 (NVIDIA: 7 per H100); larger
// per-rank batches accumulate gradients.
constexpr int64_t kMaxMicroBatchPerGpu = 7;

const BenchmarkInfo& Info() {
  static const BenchmarkInfo info = {
      .name = "unet3d",
      .summary = "3D U-Net on KiTS19 to mean DICE 0.908",
      // U-Net's last training ruleset: epoch_num counts samples (from 3.1).
      .ruleset = "4.0.0",
      .required_runs = *meta::ResultFiles("unet3d"),
      .allowed_missed_runs = meta::OlympicDropPerSide("unet3d"),
      .target = 0.908,  // closed_unet3d: eval_accuracy >= 0.908
      .metric = "mean DICE",
      // The reference stops a run whose mean DICE falls below 1e-6.
      .diverged_below = 1e-6};
  return info;
}

// Closed-division 3D U-Net hyperparameters (references.md 3.5), all logged.
struct UnetRecipe {
  double base_lr = 2.0;
  double init_lr = 1e-4;  // the reference's warm-up start
  double warmup_epochs = 1000;
  std::vector<int64_t> decay_epochs;  // none in the reference
  double decay_factor = 1.0;
  double momentum = 0.9;
  double weight_decay = 0.0;
};

struct UnetShape {
  std::vector<int64_t> filters = {32, 64, 128, 256, 320};
  int64_t roi = 128;
};

class UnetPipeline final : public DataPipeline {
 public:
  explicit UnetPipeline(std::unique_ptr<kits19::VolumeLoader> loader)
      : loader_(std::move(loader)) {}
  int64_t size() const override { return loader_->size(); }
  void StartEval() override { loader_->StartEval(); }
  absl::StatusOr<bool> Next(models::Batch* batch) override {
    kits19::VolumeBatch v;
    absl::StatusOr<bool> got = loader_->Next(&v);
    if (!got.ok() || !*got) return got;
    const auto [d, h, w] = v.shape;
    const int64_t n = v.count;
    batch->count = n;
    batch->inputs = {core::Tensor(const_cast<float*>(v.image), {n, 1, d, h, w}, core::DType::kF32),
                     core::Tensor(const_cast<void*>(v.labels), {n, d, h, w},
                                  v.labels_u8 ? core::DType::kU8 : core::DType::kI32)};
    return true;
  }

 private:
  std::unique_ptr<kits19::VolumeLoader> loader_;
};

class UnetSetup final : public BenchmarkSetup {
 public:
  UnetSetup(RunPlan plan, UnetRecipe recipe, UnetShape shape, fs::path raw_dir,
            kits19::GeneratedKits19Options generated)
      : recipe_(std::move(recipe)),
        shape_(std::move(shape)),
        raw_dir_(std::move(raw_dir)),
        generated_(generated) {
    plan_ = std::move(plan);
  }

  // Epoch counts are logged in samples, as the RCPs of ruleset 4.0.0.
  json::Value LoggedEpochs(double epochs) const {
    const double logged = plan_.schedule.log_samples
                              ? epochs * static_cast<double>(plan_.schedule.samples_per_epoch)
                              : epochs;
    if (logged == std::floor(logged)) return static_cast<int64_t>(logged);
    return logged;
  }

  std::vector<Hyperparameter> Hyperparameters() const override {
    const UnetRecipe& r = recipe_;
    std::vector<Hyperparameter> h;
    const auto add = [&h](std::string_view name, json::Value value) {
      h.emplace_back(std::string(name), std::move(value));
    };
    const json::Value roi = json::Array{shape_.roi, shape_.roi, shape_.roi};
    json::Array boundaries;
    for (int64_t e : r.decay_epochs) boundaries.push_back(LoggedEpochs(static_cast<double>(e)));
    add(key::kGlobalBatchSize, plan_.global_batch_size);
    add(key::kGradientAccumulationSteps, plan_.gradient_accumulation_steps);
    add("samples_per_epoch", plan_.schedule.samples_per_epoch);
    // SGD with Nesterov momentum, as the reference's torch.optim.SGD.
    add(key::kOptName, mllog::optimizer::kSgd);
    add(key::kOptBaseLearningRate, r.base_lr);
    add("opt_initial_learning_rate", r.init_lr);
    add(key::kOptLearningRateWarmupEpochs, LoggedEpochs(r.warmup_epochs));
    add(key::kOptLearningRateDecayBoundaryEpochs, std::move(boundaries));
    add(key::kOptLearningRateDecayFactor, r.decay_factor);
    add(key::kOptWeightDecay, r.weight_decay);
    add(key::kOptMomentum, r.momentum);
    add(key::kOversampling, 0.4);
    add(key::kTrainingInputShape, roi);
    add(key::kValidationInputShape, roi);
    add(key::kValidationOverlap, 0.5);
    add(key::kTrainSamples, plan_.train_samples);
    add(key::kEvalSamples, plan_.eval_samples);
    return h;
  }

  models::UNet3DConfig ModelConfig(core::Device device) const {
    models::UNet3DConfig c;
    c.filters = shape_.filters;
    c.roi = shape_.roi;
    c.device = device;
    // On the CPU NDHWC, the faster layout there (bench/unet3d); on the GPU
    // NCDHW, cuDNN's native one for fp32 with the model's OIDHW weights.
    c.layout = device == core::Device::kCpu ? core::Layout::kNDHWC : core::Layout::kNCDHW;
    return c;
  }

  std::unique_ptr<models::Model> MakeModel(core::Device device, uint64_t seed) const override {
    return std::make_unique<models::UNet3D>(ModelConfig(device), plan_.batch_per_rank, seed);
  }

  train::TrainerConfig TrainerConfig() const override {
    const UnetRecipe& r = recipe_;
    return {.optimizer = train::OptimizerKind::kNesterov,
            .global_batch_size = plan_.global_batch_size,
            .base_lr = r.base_lr,
            .warmup_epochs = r.warmup_epochs,
            .momentum = r.momentum,
            .weight_decay = r.weight_decay,
            .schedule = train::ScheduleKind::kUnetEpochs,
            .unet_init_lr = r.init_lr,
            .unet_decay_epochs = r.decay_epochs,
            .unet_decay_factor = r.decay_factor,
            .steps_per_epoch = plan_.schedule.steps_per_epoch,
            .gradient_accumulation_steps = plan_.gradient_accumulation_steps};
  }

  // Untimed, as the rules allow for the offline preprocessing: a demo first
  // writes its NIfTI tree; a raw KiTS19 tree (case_XXXXX/imaging.nii.gz) is
  // prepared into the cache once. The marker names the tree it was prepared
  // from, so that a cache never serves one tree's volumes for another.
  absl::Status PrepareData() const override {
    if (raw_dir_.empty()) return absl::OkStatus();
    const fs::path done = fs::path(plan_.data_root) / ".prepared";
    std::error_code ec;
    const std::string source = plan_.demo ? "" : fs::weakly_canonical(raw_dir_, ec).string();
    if (fs::exists(done)) {
      std::ifstream in(done);
      const std::string from((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      if (from == source) return absl::OkStatus();
      return absl::FailedPreconditionError(
          fmt::format("{} holds the volumes prepared from {}; give another --cache_dir for {}",
                      plan_.data_root, from.empty() ? "another tree" : from, source));
    }
    if (plan_.demo) {
      if (absl::Status s = kits19::WriteGeneratedKits19(raw_dir_, generated_); !s.ok()) return s;
    }
    kits19::PrepareOptions prepare;
    if (plan_.demo) prepare.min_size = shape_.roi;
    if (absl::Status s =
            kits19::PrepareTree(raw_dir_, plan_.data_root, prepare,
                                std::max(1, plan_.loader_threads + plan_.compute_threads));
        !s.ok())
      return s;
    return base::WriteFileAtomically(done, source);
  }

  // The split has the reference's counts, and every case is a pair of
  // regular files whose headers hold a whole volume of the right dtypes and
  // shapes (a training case at least the patch on every axis); the volumes
  // themselves are read on the clock.
  absl::Status CheckData() const override {
    absl::StatusOr<kits19::CaseSplit> split = kits19::ListPreparedCases(plan_.data_root);
    if (!split.ok()) return split.status();
    if (static_cast<int64_t>(split->train.size()) != plan_.train_samples ||
        static_cast<int64_t>(split->eval.size()) != plan_.eval_samples) {
      return absl::FailedPreconditionError(fmt::format(
          "{}: {} training and {} evaluation cases, expected {} and {} (--data takes prepared "
          "case_XXXXX_x.npy/_y.npy files or the raw case_XXXXX/imaging.nii.gz tree)",
          plan_.data_root, split->train.size(), split->eval.size(), plan_.train_samples,
          plan_.eval_samples));
    }
    for (const auto* names : {&split->train, &split->eval}) {
      for (const std::string& name : *names) {
        const fs::path x = fs::path(plan_.data_root) / (name + "_x.npy");
        const fs::path y = fs::path(plan_.data_root) / (name + "_y.npy");
        for (const fs::path& file : {x, y}) {
          std::error_code ec;
          if (!fs::is_regular_file(file, ec))
            return absl::InvalidArgumentError(fmt::format("{}: not a regular file", file.string()));
        }
        absl::StatusOr<std::array<int64_t, 3>> shape = kits19::CheckPreparedCase(x, y);
        if (!shape.ok()) return shape.status();
        if (names == &split->train && std::ranges::min(*shape) < shape_.roi) {
          return absl::InvalidArgumentError(
              fmt::format("{}: shape {} is smaller than the {}^3 training patch on some axis",
                          x.string(), fmt::join(*shape, "x"), shape_.roi));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<DataPipeline>> OpenData(Split split, uint64_t seed,
                                                         int rank) const override {
    kits19::VolumeLoaderOptions o;
    o.root = plan_.data_root;
    o.train = split == Split::kTrain;
    o.batch_size = static_cast<int>(plan_.batch_per_rank);
    o.rank = rank;
    o.world_size = plan_.world_size;
    o.seed = seed;
    o.threads = plan_.loader_threads;
    o.augment.patch = {shape_.roi, shape_.roi, shape_.roi};
    absl::StatusOr<std::unique_ptr<kits19::VolumeLoader>> loader = kits19::VolumeLoader::Open(o);
    if (!loader.ok()) return loader.status();
    return std::make_unique<UnetPipeline>(std::move(*loader));
  }

  std::string ReadmeSection() const override;

  // Gradient accumulation when a rank's batch does not fit: on the CPU its
  // memory (the model's arenas, twice a batch-1 model for the momentum and
  // accumulation sums, the loader's patches in flight); on a GPU micro-batches
  // of at most kMaxMicroBatchPerGpu.
  absl::Status FitMicroBatch(int64_t memory_bytes) {
    if (plan_.options.gpus > 0) {
      const int64_t per_rank = plan_.batch_per_rank;
      int64_t steps = 1;
      while (per_rank % steps != 0 || per_rank / steps > kMaxMicroBatchPerGpu) ++steps;
      plan_.gradient_accumulation_steps = static_cast<int>(steps);
      plan_.batch_per_rank = per_rank / steps;
      return absl::OkStatus();
    }
    const models::UNet3DConfig config = ModelConfig(core::Device::kCpu);
    const int64_t state = 2 * models::UNet3D::ArenaBytes(config, 1);
    const int64_t patch_bytes = shape_.roi * shape_.roi * shape_.roi * 8;
    return closed::FitMicroBatch(
        [&](int64_t batch) {
          return models::UNet3D::ArenaBytes(config, batch) + state + 3 * batch * patch_bytes;
        },
        memory_bytes, plan_);
  }

 private:
  UnetRecipe recipe_;
  UnetShape shape_;
  fs::path raw_dir_;  // a NIfTI tree to prepare into data_root; empty = prepared .npy given
  kits19::GeneratedKits19Options generated_;
};

std::string UnetSetup::ReadmeSection() const {
  const UnetRecipe& r = recipe_;
  const RunPlan& plan = plan_;
  std::string text;
  if (plan.demo) {
    text += fmt::format(
        "# {0}: DEMONSTRATION on generated data, not KiTS19\n\n"
        "The results in `results/{0}/unet3d/` come from `run_closed --bench unet3d` with no "
        "`--data`: a small\n"
        "member of the 3D U-Net family (filters {1}, {2}^3 voxels) trained on {3} generated "
        "volumes with\n"
        "\"kidney\" and \"tumour\" shapes ({4} training, {5} evaluation cases), written as NIfTI "
        "files and\n"
        "prepared as KiTS19 is (resampling, clipping, normalisation, padding). They are NOT a 3D "
        "U-Net /\n"
        "KiTS19 result and must never be reported as one. The logs follow the closed-division "
        "3D U-Net\n"
        "rules of training ruleset {6} (epoch_num in samples, target mean DICE 0.908).\n\n",
        plan.system_name, fmt::join(shape_.filters, "-"), shape_.roi,
        plan.train_samples + plan.eval_samples, plan.train_samples, plan.eval_samples,
        Info().ruleset);
  } else {
    text += fmt::format(
        "# {}: 3D U-Net, closed division\n\n"
        "Produced by `run_closed --bench unet3d` on KiTS19 ({} training / {} evaluation "
        "cases), ruleset {}.\n\n",
        plan.system_name, plan.train_samples, plan.eval_samples, Info().ruleset);
  }
  text += fmt::format(
      "Recipe: SGD with Nesterov momentum {}, global batch {} ({} per process, {} processes, "
      "{} accumulation step(s)),\n"
      "base LR {} warmed up linearly from {} over {} epochs, weight decay {}; evaluations "
      "after epochs {} + {}k\n"
      "({} samples per epoch), sliding window {}^3 with overlap 0.5. Every run logs its own "
      "seed.\n\n",
      r.momentum, plan.global_batch_size, plan.batch_per_rank, plan.world_size,
      plan.gradient_accumulation_steps, r.base_lr, r.init_lr, r.warmup_epochs, r.weight_decay,
      plan.schedule.first_eval_epoch, plan.schedule.eval_every_epochs,
      plan.schedule.samples_per_epoch, shape_.roi);
  return text + RcpBypassNote(plan);
}

// The recipe of an RCP reference run. Its warm-up is logged in samples
// (ruleset 4.0.0), turned into epochs of the 168 training cases.
absl::StatusOr<UnetRecipe> RecipeOf(const RcpReference& ref) {
  UnetRecipe r;
  for (const auto& [field, name] :
       {std::pair<double*, const char*>{&r.base_lr, "opt_base_learning_rate"},
        {&r.momentum, "opt_momentum"},
        {&r.warmup_epochs, "opt_learning_rate_warmup_epochs"},
        {&r.init_lr, "opt_initial_learning_rate"},
        {&r.decay_factor, "opt_learning_rate_decay_factor"},
        {&r.weight_decay, "opt_weight_decay"}}) {
    absl::StatusOr<double> v = ref.Number(name);
    if (!v.ok()) return v.status();
    *field = *v;
  }
  r.warmup_epochs /= static_cast<double>(kTrainCases);
  if (const json::Value* b = ref.hyperparameters.Find("opt_learning_rate_decay_boundary_epochs");
      b != nullptr && b->is_array()) {
    for (const json::Value& e : b->as_array()) r.decay_epochs.push_back(e.as_int() / kTrainCases);
  }
  return r;
}

// KiTS19 at `ranks` processes: the largest RCP batch size that splits over
// the ranks (on GPUs preferring one whose per-rank batch needs no
// accumulation); else the nearest RCP's recipe at the closest batch that splits.
absl::Status KitsPlan(int ranks, bool gpus, RunPlan& plan, UnetRecipe& recipe) {
  absl::StatusOr<std::vector<RcpReference>> refs = ReadRcpReferences(Info().ruleset, "unet3d");
  if (!refs.ok()) return refs.status();
  const RcpReference* chosen = nullptr;
  auto better = [&](const RcpReference& r) {
    if (chosen == nullptr) return true;
    const bool fits = r.global_batch_size / ranks <= kMaxMicroBatchPerGpu;
    const bool chosen_fits = chosen->global_batch_size / ranks <= kMaxMicroBatchPerGpu;
    if (gpus && fits != chosen_fits) return fits;
    // Fewer accumulation steps first, then the smaller batch (faster to converge).
    return gpus && fits ? r.global_batch_size > chosen->global_batch_size
                        : r.global_batch_size < chosen->global_batch_size;
  };
  for (const RcpReference& r : *refs) {
    if (r.global_batch_size % ranks == 0 && better(r)) chosen = &r;
  }
  plan.rcp_batch_size = chosen != nullptr;
  if (chosen == nullptr) {
    // No RCP batch splits: one sample per rank at the smallest RCP's recipe.
    chosen = &refs->front();
    for (const RcpReference& r : *refs)
      if (r.global_batch_size < chosen->global_batch_size) chosen = &r;
    plan.global_batch_size = ranks;
  } else {
    plan.global_batch_size = chosen->global_batch_size;
  }
  absl::StatusOr<UnetRecipe> r = RecipeOf(*chosen);
  if (!r.ok()) return r.status();
  recipe = *r;
  return absl::OkStatus();
}

bool IsRawKits19Tree(const fs::path& dir) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory() && e.path().filename().string().starts_with("case_") &&
        fs::exists(e.path() / "imaging.nii.gz"))
      return true;
  }
  return fs::exists(dir / "data") && IsRawKits19Tree(dir / "data");
}

class UnetBenchmark final : public Benchmark {
 public:
  const BenchmarkInfo& info() const override { return Info(); }

  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> Configure(
      const RunnerOptions& options, int world_size, const ProcessShare& share) const override {
    RunPlan plan;
    plan.options = options;
    plan.demo = options.data_dir.empty();
    plan.data_name = "KiTS19";
    plan.model_name = "3D U-Net";
    plan.train_samples = kTrainCases;
    plan.eval_samples = kEvalCases;
    UnetRecipe recipe;
    UnetShape shape;
    // The embedded default: 210 generated cases of about 18^3 voxels after
    // preparation, a three-level U-Net of 4-8-16 filters on 16^3 patches:
    // a 2-core CPU trains it past the target in a few seconds per run.
    const kits19::GeneratedKits19Options generated;
    if (options.member != "" && options.member != "full" && options.member != "small") {
      return absl::InvalidArgumentError(
          fmt::format("model size '{}': expected full or small", options.member));
    }
    if (!options.optimizer.empty() && options.optimizer != "sgd") {
      return absl::InvalidArgumentError(fmt::format(
          "--optimizer={}: 3D U-Net trains with SGD (Nesterov momentum) only", options.optimizer));
    }
    const bool small = options.member.empty() ? plan.demo : options.member == "small";
    if (small) {
      shape = {.filters = {4, 8, 16}, .roi = 16};
      recipe = {.base_lr = 1.0, .warmup_epochs = 2};
      plan.global_batch_size = 2;
    } else if (absl::Status s = KitsPlan(world_size, options.gpus > 0, plan, recipe); !s.ok()) {
      return s;
    }
    plan.member_name = small ? fmt::format("3D U-Net, filters {}, {}^3 (the embedded default's)",
                                           fmt::join(shape.filters, "-"), shape.roi)
                             : "3D U-Net (filters 32-64-128-256-320), 128^3";
    if (options.batch_per_rank > 0) plan.global_batch_size = options.batch_per_rank * world_size;
    if (absl::Status s = CompletePlan(options, world_size, share.cores,
                                      fmt::format("generated-kits19-{}", generated.Name()), plan);
        !s.ok())
      return s;
    // The small member's patches take microseconds to cut: the loader thread
    // idles, so the model gets every core (1.6x faster on 2 cores).
    if (small && options.threads == 0) plan.compute_threads = std::max(1, share.cores);
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
                     .first_eval_epoch = small ? 2 : epochs_for(1000),
                     .eval_every_epochs = small ? 1 : epochs_for(20),
                     .log_samples = true,
                     .samples_per_epoch = spe};
    plan.schedule.last_epoch = plan.schedule.RoundUpToEval(small ? 40 : epochs_for(10000));
    auto setup = std::make_unique<UnetSetup>(std::move(plan), recipe, shape, raw_dir, generated);
    if (options.gpus > 0 || share.memory_bytes > 0) {
      if (absl::Status s = setup->FitMicroBatch(share.memory_bytes); !s.ok()) return s;
    }
    return setup;
  }
};

}  // namespace

std::unique_ptr<Benchmark> MakeUnet3dBenchmark() { return std::make_unique<UnetBenchmark>(); }

}  // namespace mlperf::closed
