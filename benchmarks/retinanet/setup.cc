#include "benchmarks/retinanet/setup.h"

#include <filesystem>
#include <utility>

#include "base/check.h"
#include "base/files.h"
#include "benchmarks/readme.h"
#include "benchmarks/retinanet/evaluator.h"
#include "benchmarks/retinanet/pipeline.h"
#include "fmt/format.h"
#include "logging/mllog_keys.h"
#include "reference/dist/communicator.h"
#include "reference/optim/adam.h"
#include "reference/trainer/trainer.h"

namespace mlperf::benchmarks::retinanet {

namespace fs = std::filesystem;
namespace key = mllog::key;
namespace oi = datasets::openimages;

std::vector<Hyperparameter> HyperparametersOf(const Recipe& r, const RunPlan& plan) {
  std::vector<Hyperparameter> h;
  const auto add = [&h](std::string_view name, json::Value value) {
    h.emplace_back(std::string(name), std::move(value));
  };
  add(key::kGlobalBatchSize, plan.global_batch_size);
  add(key::kOptName, "adam");
  add(key::kOptBaseLearningRate, r.base_lr);
  add(key::kOptWeightDecay, 0);
  add(key::kOptLearningRateWarmupEpochs, r.warmup_epochs);
  add(key::kOptLearningRateWarmupFactor, r.warmup_factor);
  add(key::kGradientAccumulationSteps, plan.gradient_accumulation_steps);
  add(key::kTrainSamples, plan.train_samples);
  add(key::kEvalSamples, plan.eval_samples);
  return h;
}

RetinaNetSetup::RetinaNetSetup(RunPlan plan, Recipe recipe, models::RetinaNetConfig member,
                               std::string data, std::string backbone, Demo demo)
    : recipe_(recipe),
      member_(std::move(member)),
      data_(std::move(data)),
      backbone_(std::move(backbone)),
      demo_(std::move(demo)) {
  plan_ = std::move(plan);
}

std::unique_ptr<models::Model> RetinaNetSetup::MakeModel(const models::Placement& placement,
                                                         uint64_t seed) const {
  models::RetinaNetConfig c = member_;
  c.device = placement.device;
  return std::make_unique<models::RetinaNet>(c, plan_.batch_per_rank, seed);
}

absl::Status RetinaNetSetup::LoadStartingCheckpoint(models::Model& model) const {
  return static_cast<models::RetinaNet&>(model).LoadBackbone(backbone_);
}

std::unique_ptr<optim::Optimizer> RetinaNetSetup::MakeOptimizer(const models::Model& model) const {
  // torch.optim.Adam's defaults, no weight decay.
  return std::make_unique<optim::Adam>(
      optim::AdamOptions{.beta1 = 0.9f, .beta2 = 0.999f, .epsilon = 1e-8f, .decoupled = false},
      model.slices());
}

std::unique_ptr<optim::LearningRateSchedule> RetinaNetSetup::MakeSchedule() const {
  return std::make_unique<optim::LinearWarmupFromFactor>(
      recipe_.base_lr, recipe_.warmup_factor,
      recipe_.warmup_epochs * plan_.schedule.steps_per_epoch);
}

std::unique_ptr<eval::Evaluator> RetinaNetSetup::MakeEvaluator(models::Model& model) const {
  absl::StatusOr<std::shared_ptr<const oi::DetectionSet>> set = OpenSplit("validation");
  MLPERF_CHECK_MSG(set.ok(), "the validation set was checked before the runs");
  std::shared_ptr<const datasets::coco::Dataset> truth(*set, &(*set)->annotations());
  return std::make_unique<CocoMapEvaluator>(static_cast<models::RetinaNet&>(model), truth);
}

absl::StatusOr<std::shared_ptr<const oi::DetectionSet>> RetinaNetSetup::OpenSplit(
    const std::string& name) const {
  std::shared_ptr<const oi::DetectionSet>& cached = name == "train" ? train_ : validation_;
  if (cached != nullptr) return cached;
  absl::StatusOr<oi::DetectionSet> set = oi::DetectionSet::Open(fs::path(data_) / name);
  if (!set.ok()) return set.status();
  cached = std::make_shared<const oi::DetectionSet>(std::move(*set));
  return cached;
}

absl::Status RetinaNetSetup::Pretrain(const std::string& path) const {
  models::RetinaNetConfig c = member_;
  c.backbone.trainable_layers = 5;
  models::RetinaNet model(c, demo_.pretrain_batch, demo_.pretrain_seed);
  absl::StatusOr<oi::DetectionSet> set =
      oi::DetectionSet::Open(fs::path(data_) / "pretext" / "train");
  if (!set.ok()) return set.status();
  RunPlan plan = plan_;
  plan.world_size = 1;
  plan.global_batch_size = plan.batch_per_rank = demo_.pretrain_batch;
  plan.gradient_accumulation_steps = 1;
  std::unique_ptr<DataPipeline> data =
      MakeDetectionPipeline(std::make_shared<const oi::DetectionSet>(std::move(*set)),
                            /*eval=*/false, demo_.pretrain_seed, 0, plan,
                            {.image_size = c.backbone.image_size, .max_boxes = c.max_boxes});
  std::unique_ptr<dist::Communicator> one = dist::MakeSingleProcessCommunicator();
  train::Trainer trainer(
      model, std::make_unique<optim::Adam>(optim::AdamOptions{.decoupled = false}, model.slices()),
      std::make_unique<optim::LinearWarmupFromFactor>(demo_.pretrain_lr, 1e-3, 32),
      train::TrainerConfig{}, *one);
  models::Batch batch;
  for (int64_t step = 0; step < demo_.pretrain_steps; ++step) {
    absl::StatusOr<bool> got = data->Next(&batch);
    if (!got.ok()) return got.status();
    trainer.TrainStep(batch);
  }
  return model.SaveBackbone(path);
}

absl::Status RetinaNetSetup::PrepareData() const {
  if (!plan_.demo) return absl::OkStatus();
  const fs::path done = fs::path(data_) / ".generated";
  std::error_code ec;
  if (fs::exists(done, ec)) return absl::OkStatus();
  if (absl::Status s = oi::WriteGeneratedShapes(data_, demo_.shapes); !s.ok()) return s;
  if (absl::Status s = oi::WriteGeneratedShapes(fs::path(data_) / "pretext", demo_.pretext);
      !s.ok())
    return s;
  if (absl::Status s = Pretrain(backbone_); !s.ok()) return s;
  return base::WriteFileAtomically(done, "shapes");
}

absl::Status RetinaNetSetup::CheckData() const {
  std::error_code ec;
  if (!fs::is_regular_file(backbone_, ec))
    return absl::NotFoundError(fmt::format("{}: no backbone checkpoint", backbone_));
  for (const char* name : {"train", "validation"}) {
    absl::StatusOr<std::shared_ptr<const oi::DetectionSet>> set = OpenSplit(name);
    if (!set.ok()) return set.status();
    const int64_t want = std::string(name) == "train" ? plan_.train_samples : plan_.eval_samples;
    if ((*set)->size() != want)
      return absl::FailedPreconditionError(fmt::format(
          "{}/{}: {} images, the benchmark's set has {}", data_, name, (*set)->size(), want));
    if ((*set)->max_boxes() > member_.max_boxes)
      return absl::FailedPreconditionError(
          fmt::format("{}/{}: an image has {} boxes, the batches hold {}", data_, name,
                      (*set)->max_boxes(), member_.max_boxes));
    for (int64_t c : (*set)->annotations().category_ids)
      if (c < 0 || c >= member_.num_classes)
        return absl::FailedPreconditionError(
            fmt::format("{}/{}: category id {} is no class of the model's {}", data_, name, c,
                        member_.num_classes));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DataPipeline>> RetinaNetSetup::OpenData(Split split, uint64_t seed,
                                                                       int rank) const {
  const bool eval = split == Split::kEval;
  absl::StatusOr<std::shared_ptr<const oi::DetectionSet>> set =
      OpenSplit(eval ? "validation" : "train");
  if (!set.ok()) return set.status();
  return MakeDetectionPipeline(
      *set, eval, seed, rank, plan_,
      {.image_size = member_.backbone.image_size, .max_boxes = member_.max_boxes});
}

std::string RetinaNetSetup::ReadmeSection() const {
  const RunPlan& plan = plan_;
  const models::ResNeXtFpnConfig& b = member_.backbone;
  return benchmarks::ReadmeSection(
      plan,
      {.benchmark = "retinanet",
       .title = "RetinaNet",
       .data_name = "OpenImages (MLPerf subset)",
       .member = fmt::format(
           "a small member of the RetinaNet family: a ResNeXt body of stem width {}, {}/{}/{}/{} "
           "blocks, {} groups of width {} per group, frozen batch norms, the first {} stages "
           "frozen; a feature pyramid of {} channels over P3-P7; heads of {} convolutions; {} "
           "classes; {} x {} inputs. Its backbone starts from a body pre-trained here (untimed): "
           "the whole detector, every layer training, {} steps of {} images at rate {} on a "
           "pretext set of other shapes (rings, crosses, diamonds), as the reference's starts "
           "from ImageNet's",
           b.stem_width, b.blocks[0], b.blocks[1], b.blocks[2], b.blocks[3], b.groups,
           b.width_per_group, 5 - b.trainable_layers, b.fpn_channels, member_.head_convs,
           member_.num_classes, b.image_size, b.image_size, demo_.pretrain_steps,
           demo_.pretrain_batch, demo_.pretrain_lr),
       .generated = fmt::format(
           "generated images in the subset's layout: {} training and {} validation JPEGs of {} to "
           "{} pixels a side with {} to {} squares, discs or triangles (the classes) of random "
           "colours on a noisy background, their exact boxes in COCO-format annotations",
           demo_.shapes.train_images, demo_.shapes.validation_images, demo_.shapes.min_side,
           demo_.shapes.max_side, demo_.shapes.min_shapes, demo_.shapes.max_shapes),
       .rules_detail = fmt::format("target COCO mAP@[.5:.95] {}", plan.target.Describe()),
       .real_data =
           fmt::format("the MLPerf OpenImages subset in its download layout ({}), the backbone {}",
                       data_, backbone_),
       .recipe = fmt::format(
           "Recipe: Adam (beta 0.9/0.999, epsilon 1e-8, no weight decay), base learning rate {}, "
           "a linear warm-up from {} of it over the first {} epoch(s), then constant; global batch "
           "{} ({} per process, {} processes); horizontal flips with probability 0.5; images "
           "resized to {} x {}; COCO mAP (pycocotools' COCOeval numbers) over the {} validation "
           "images after every epoch. Every run logs its own seed.",
           recipe_.base_lr, recipe_.warmup_factor, recipe_.warmup_epochs, plan.global_batch_size,
           plan.batch_per_rank, plan.processes(), b.image_size, b.image_size, plan.eval_samples)});
}

}  // namespace mlperf::benchmarks::retinanet
