#include "benchmarks/unet3d/setup.h"

#include <algorithm>
#include <array>
#include <utility>

#include "base/files.h"
#include "benchmarks/readme.h"
#include "datasets/kits19/eval_cases.h"
#include "datasets/kits19/loader.h"
#include "datasets/kits19/prepare.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace mlperf::benchmarks::unet3d {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

UnetSetup::UnetSetup(RunPlan plan, Recipe recipe, Shape shape, fs::path raw_dir,
                     kits19::GeneratedKits19Options generated)
    : recipe_(std::move(recipe)),
      shape_(std::move(shape)),
      raw_dir_(std::move(raw_dir)),
      generated_(generated) {
  plan_ = std::move(plan);
}

models::UNet3DConfig UnetSetup::ModelConfig(core::Device device) const {
  models::UNet3DConfig c;
  c.filters = shape_.filters;
  c.roi = shape_.roi;
  c.device = device;
  // On the CPU NDHWC, the faster layout there (bench/unet3d); on the GPU
  // NCDHW, cuDNN's native one for fp32 with the model's OIDHW weights.
  c.layout = device == core::Device::kCpu ? core::Layout::kNDHWC : core::Layout::kNCDHW;
  return c;
}

std::unique_ptr<models::Model> UnetSetup::MakeModel(const models::Placement& placement,
                                                    uint64_t seed) const {
  return std::make_unique<models::UNet3D>(ModelConfig(placement.device), plan_.batch_per_rank,
                                          seed);
}

// Untimed, as the rules allow for the offline preprocessing: a demo first
// writes its NIfTI tree; a raw KiTS19 tree (case_XXXXX/imaging.nii.gz) is
// prepared into the cache once. The marker names the tree it was prepared
// from, so that a cache never serves one tree's volumes for another.
absl::Status UnetSetup::PrepareData() const {
  if (raw_dir_.empty()) return absl::OkStatus();
  const fs::path done = fs::path(plan_.data_root) / ".prepared";
  std::error_code ec;
  const std::string source = plan_.demo ? "" : fs::weakly_canonical(raw_dir_, ec).string();
  if (fs::exists(done, ec)) {
    absl::StatusOr<std::string> from = base::ReadSmallFile(done, 1 << 20);
    if (!from.ok()) return from.status();
    if (*from == source) return absl::OkStatus();
    return absl::FailedPreconditionError(
        fmt::format("{} holds the volumes prepared from {}; give another --cache_dir for {}",
                    plan_.data_root, from->empty() ? "another tree" : *from, source));
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
absl::Status UnetSetup::CheckData() const {
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

absl::StatusOr<std::unique_ptr<DataPipeline>> UnetSetup::OpenData(Split split, uint64_t seed,
                                                                  int rank) const {
  kits19::VolumeLoaderOptions o;
  o.root = plan_.data_root;
  o.train = split == Split::kTrain;
  o.batch_size = static_cast<int>(plan_.batch_per_rank);
  o.rank = rank;
  o.world_size = plan_.world_size;
  o.seed = seed;
  o.threads = plan_.loader_threads;
  o.augment.patch = {shape_.roi, shape_.roi, shape_.roi};
  o.memory_budget = host_memory_;
  absl::StatusOr<std::unique_ptr<kits19::VolumeLoader>> loader = kits19::VolumeLoader::Open(o);
  if (!loader.ok()) return loader.status();
  return std::make_unique<UnetPipeline>(std::move(*loader));
}

absl::Status UnetSetup::FitMicroBatch(int64_t memory_bytes) {
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
  return benchmarks::FitMicroBatch(
      [&](int64_t batch) {
        return models::UNet3D::ArenaBytes(config, batch) + state + 3 * batch * patch_bytes;
      },
      memory_bytes, plan_);
}

std::string UnetSetup::ReadmeSection() const {
  const Recipe& r = recipe_;
  const RunPlan& plan = plan_;
  return benchmarks::ReadmeSection(
      plan,
      {.benchmark = "unet3d",
       .title = "3D U-Net",
       .data_name = "KiTS19",
       .member = fmt::format("a small member of the 3D U-Net family (filters {}, {}^3 voxels)",
                             fmt::join(shape_.filters, "-"), shape_.roi),
       .generated = fmt::format(
           "{} generated volumes with \"kidney\" and \"tumour\" shapes ({} training, {} "
           "evaluation cases), written as NIfTI files and prepared as KiTS19 is (resampling, "
           "clipping, normalisation, padding)",
           plan.train_samples + plan.eval_samples, plan.train_samples, plan.eval_samples),
       .rules_detail =
           fmt::format("epoch_num in samples, target mean DICE {}", plan.target.Describe()),
       .real_data = fmt::format("KiTS19 ({} training / {} evaluation cases)", plan.train_samples,
                                plan.eval_samples),
       .recipe = fmt::format(
           "Recipe: SGD with Nesterov momentum {}, global batch {} ({} per process, {} processes, "
           "{} accumulation step(s)),\nbase LR {} warmed up linearly from {} over {} epochs, "
           "weight decay {}; evaluations after epochs {} + {}k\n({} samples per epoch), sliding "
           "window {}^3 with overlap 0.5. Every run logs its own seed.",
           r.momentum, plan.global_batch_size, plan.batch_per_rank, plan.world_size,
           plan.gradient_accumulation_steps, r.base_lr, r.init_lr, r.warmup_epochs, r.weight_decay,
           plan.schedule.first_eval_epoch, plan.schedule.eval_every_epochs,
           plan.schedule.samples_per_epoch, shape_.roi)});
}

}  // namespace mlperf::benchmarks::unet3d
