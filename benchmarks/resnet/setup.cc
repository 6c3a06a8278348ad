#include "benchmarks/resnet/setup.h"

#include <filesystem>
#include <utility>

#include "benchmarks/readme.h"
#include "benchmarks/resnet/pipeline.h"
#include "datasets/image_loader.h"
#include "datasets/index_cache.h"
#include "fmt/format.h"

namespace mlperf::benchmarks::resnet {

ResnetSetup::ResnetSetup(RunPlan plan, Recipe recipe, ModelShape shape,
                         datasets::SyntheticImageSetOptions generated, bool gpu_decode)
    : recipe_(recipe), shape_(shape), generated_(generated), gpu_decode_(gpu_decode) {
  plan_ = std::move(plan);
}

models::ResNetConfig ResnetSetup::ModelConfig(core::Device device) const {
  models::ResNetConfig c;
  c.base_width = shape_.base_width;
  c.blocks = shape_.blocks;
  c.num_classes = shape_.num_classes;
  c.image_size = shape_.image_size;
  c.label_smoothing = static_cast<float>(recipe_.label_smoothing);
  c.device = device;
  // On the GPU in fp32 NCHW: with the OIHW weights the model keeps, that is
  // cuDNN's native fp32 layout; in bf16/fp16 NHWC, the tensor cores' own
  // (PyTorch's channels_last recipe). On the CPU NHWC, the fast path
  // (bench/resnet).
  const bool fp32_gpu = device != core::Device::kCpu && plan_.precision == core::DType::kF32;
  c.layout = fp32_gpu ? core::Layout::kNCHW : core::Layout::kNHWC;
  return c;
}

std::unique_ptr<models::Model> ResnetSetup::MakeModel(const models::Placement& placement,
                                                      uint64_t seed) const {
  return std::make_unique<models::ResNet>(ModelConfig(placement.device), plan_.batch_per_rank,
                                          seed);
}

// Writes the generated set of the demonstration; then, for any data, the
// index files of both splits (the shards' record offsets, or the image
// files' listing), so that opening the data on the clock reads one file.
absl::Status ResnetSetup::PrepareData() const {
  if (plan_.demo) {
    if (absl::Status s = datasets::WriteSyntheticImageSet(plan_.data_root, generated_); !s.ok())
      return s;
  }
  for (const datasets::Split split : {datasets::Split::kTrain, datasets::Split::kVal}) {
    if (absl::StatusOr<datasets::DatasetIndex> index = Index(split); !index.ok())
      return index.status();
  }
  return absl::OkStatus();
}

// Both splits counted from their index files (written by PrepareData).
absl::Status ResnetSetup::CheckData() const {
  if (gpu_decode_) {
    if (!HaveDeviceDecoding()) {
      return absl::FailedPreconditionError(
          "--gpu_decode: this build has no GPU data path (it needs CUDA with nvJPEG; "
          "scripts/install_deps.sh installs nvJPEG)");
    }
    // Each micro-batch would need its own device buffer.
    if (plan_.gradient_accumulation_steps > 1) {
      return absl::FailedPreconditionError(
          fmt::format("--gpu_decode: the batch of {} per GPU is taken in {} micro-batches; device "
                      "decoding needs it in one",
                      plan_.batch_per_rank, plan_.gradient_accumulation_steps));
    }
  }
  for (const datasets::Split split : {datasets::Split::kTrain, datasets::Split::kVal}) {
    absl::StatusOr<datasets::DatasetIndex> index = Index(split);
    if (!index.ok()) return index.status();
    const bool train = split == datasets::Split::kTrain;
    const int64_t want = train ? plan_.train_samples : plan_.eval_samples;
    if (static_cast<int64_t>(index->entries.size()) != want) {
      return absl::FailedPreconditionError(fmt::format("{}: {} {} images, expected {}",
                                                       plan_.data_root, index->entries.size(),
                                                       train ? "training" : "validation", want));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DataPipeline>> ResnetSetup::OpenData(Split split, uint64_t seed,
                                                                    int rank) const {
  datasets::ImageLoaderOptions o;
  o.root = plan_.data_root;
  o.split = split == Split::kTrain ? datasets::Split::kTrain : datasets::Split::kVal;
  o.image_size = shape_.image_size;
  o.resize_shorter = shape_.resize_shorter;
  o.batch_size = static_cast<int>(plan_.batch_per_rank);
  o.rank = rank;
  o.world_size = plan_.world_size;
  o.seed = seed;
  o.layout = ModelConfig(plan_.options.gpus > 0 ? core::Device::kCuda : core::Device::kCpu).layout;
  o.threads = plan_.loader_threads;
  if (!plan_.demo) o.num_classes = shape_.num_classes;
  if (gpu_decode_) o.output = datasets::ImageOutput::kEncoded;
  o.index_file = IndexFile(o.split);
  absl::StatusOr<std::unique_ptr<datasets::ImageLoader>> loader = datasets::ImageLoader::Open(o);
  if (!loader.ok()) return loader.status();
  return MakeImagePipeline(std::move(*loader), o, gpu_decode_);
}

absl::Status ResnetSetup::FitToMemory(int64_t memory_bytes) {
  const models::ResNetConfig config = ModelConfig(core::Device::kCpu);
  const int64_t state = 2 * models::ResNet::ArenaBytes(config, 1);
  const int64_t image_bytes = 3 * int64_t{shape_.image_size} * shape_.image_size * 4;
  return FitMicroBatch(
      [&](int64_t batch) {
        return models::ResNet::ArenaBytes(config, batch) + state + 3 * batch * image_bytes;
      },
      memory_bytes, plan_);
}

std::string ResnetSetup::IndexFile(datasets::Split split) const {
  return (std::filesystem::path(plan_.cache_dir) / "imagenet-index" /
          (split == datasets::Split::kTrain ? "train.idx" : "val.idx"))
      .string();
}

absl::StatusOr<datasets::DatasetIndex> ResnetSetup::Index(datasets::Split split) const {
  return datasets::CachedIndex(plan_.data_root, datasets::DatasetFormat::kAuto, split,
                               plan_.demo ? 0 : shape_.num_classes, IndexFile(split));
}

std::string ResnetSetup::ReadmeSection() const {
  const Recipe& r = recipe_;
  const RunPlan& plan = plan_;
  return benchmarks::ReadmeSection(
      plan,
      {.benchmark = "resnet",
       .title = "ResNet-50",
       .data_name = "ImageNet",
       .member = fmt::format(
           "a small member of the ResNet family (base width {}, blocks {}-{}-{}-{}, {}x{} pixels, "
           "{} classes)",
           shape_.base_width, shape_.blocks[0], shape_.blocks[1], shape_.blocks[2],
           shape_.blocks[3], shape_.image_size, shape_.image_size, shape_.num_classes),
       .generated = fmt::format(
           "a generated image set ({} training and {} validation images written as JPEG files "
           "in the ImageNet folder layout)",
           plan.train_samples, plan.eval_samples),
       .rules_detail = fmt::format(
           "LARS or SGD keys, end LR 1e-4, poly power 2, evaluation every 4 epochs, target "
           "top-1 {}",
           plan.target.Describe()),
       .real_data = fmt::format("ImageNet ILSVRC-2012 ({} training / {} validation images)",
                                plan.train_samples, plan.eval_samples),
       .recipe = fmt::format(
           "Recipe: {} global batch {} ({} per process, {} processes), base LR {}, warm-up {} "
           "epochs,\ndecay horizon {} epochs, momentum {}, weight decay {}, label smoothing {}; "
           "evaluations after\nepochs {} + 4k. Every run logs its own seed (from /dev/urandom "
           "unless --seed was given).",
           r.lars ? "LARS" : "SGD", plan.global_batch_size, plan.batch_per_rank, plan.world_size,
           r.base_lr, r.warmup_epochs, r.decay_epochs, r.momentum, r.weight_decay,
           r.label_smoothing, plan.schedule.first_eval_epoch)});
}

}  // namespace mlperf::benchmarks::resnet
