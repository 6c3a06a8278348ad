// The RetinaNet registry entry: the closed recipe per scale from the RCP
// references (the smallest RCP batch the processes divide, its rate and
// warm-up), an evaluation after every epoch up to the reference's 26, and
// the embedded demonstration: a small RetinaNet on generated shapes.
#include <filesystem>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "benchmarks/rcp_recipes.h"
#include "benchmarks/retinanet/setup.h"
#include "fmt/format.h"

ABSL_FLAG(std::string, backbone, "",
          "retinanet: the ImageNet-trained ResNeXt50-32x4d body the runs start from: torchvision's "
          "state dict, the .pth the reference downloads (resnext50_32x4d-7cdf4587.pth) or "
          "safetensors");

namespace mlperf::benchmarks::retinanet {
namespace {

namespace fs = std::filesystem;

// The MLPerf OpenImages subset.
constexpr int64_t kTrainImages = 1170301;
constexpr int64_t kEvalImages = 24781;
constexpr int kEpochs = 26;  // the reference's --epochs
// The most boxes a batch holds per image.
constexpr int64_t kMaxBoxes = 1024;

// The demonstration: its own recipe at its own batch.
constexpr int64_t kDemoBatch = 8;
constexpr double kDemoLearningRate = 1e-3;
constexpr int kDemoEpochs = 40;
constexpr int64_t kDemoPretrainSteps = 600;
constexpr double kDemoPretrainRate = 1e-3;

absl::Status RcpRecipe(int world_size, RunPlan& plan, Recipe& recipe) {
  absl::StatusOr<RcpReference> rcp = ChooseRcp("retinanet", world_size, plan);
  if (!rcp.ok()) return rcp.status();
  absl::StatusOr<double> lr = rcp->Number("opt_base_learning_rate");
  if (!lr.ok()) return lr.status();
  absl::StatusOr<double> warmup = rcp->Number("opt_learning_rate_warmup_epochs");
  if (!warmup.ok()) return warmup.status();
  absl::StatusOr<double> factor = rcp->Number("opt_learning_rate_warmup_factor");
  if (!factor.ok()) return factor.status();
  recipe = {.base_lr = *lr, .warmup_epochs = static_cast<int>(*warmup), .warmup_factor = *factor};
  return absl::OkStatus();
}

class RetinaNetBenchmark final : public Benchmark {
 public:
  const BenchmarkInfo& info() const override {
    static const BenchmarkInfo info = {
        .name = "retinanet",
        .summary = "RetinaNet (ResNeXt50-32x4d FPN) on the MLPerf OpenImages subset",
        .metric = "mAP",
        .flags = {"backbone"}};
    return info;
  }

 protected:
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> ConfigureFor(
      RunPlan plan, int world_size, const ProcessShare& share) const override {
    const RunnerOptions& options = plan.options;
    plan.data_name = "OpenImages";
    plan.model_name = "RetinaNet";
    if (!options.optimizer.empty() && options.optimizer != "adam") {
      return absl::InvalidArgumentError(fmt::format(
          "--optimizer={}: closed-division RetinaNet trains with Adam only", options.optimizer));
    }
    models::RetinaNetConfig member;
    member.max_boxes = kMaxBoxes;
    Recipe recipe;
    Demo demo;
    int epochs = kEpochs;
    if (plan.small) {
      member.backbone = {.stem_width = 16,
                         .blocks = {1, 1, 1, 1},
                         .groups = 4,
                         .width_per_group = 8,
                         .trainable_layers = 3,
                         .fpn_channels = 64,
                         .image_size = 64};
      member.num_classes = datasets::openimages::kGeneratedClasses;
      demo.shapes = {.train_images = 256, .min_fraction = 0.35f, .max_fraction = 0.65f};
      demo.pretext = demo.shapes;
      demo.pretext.pretext = true;
      demo.pretext.seed = 1;
      demo.pretext.train_images = 512;
      demo.pretext.validation_images = 0;
      demo.pretrain_steps = kDemoPretrainSteps;
      demo.pretrain_batch = kDemoBatch;
      demo.pretrain_lr = kDemoPretrainRate;
      demo.pretrain_seed = 9000;
      member.max_boxes = demo.shapes.max_shapes;
      plan.global_batch_size = kDemoBatch;
      recipe = {.base_lr = kDemoLearningRate, .warmup_epochs = 1, .warmup_factor = 1e-3};
      plan.rcp_batch_size = false;
      epochs = kDemoEpochs;
    } else if (absl::Status s = RcpRecipe(world_size, plan, recipe); !s.ok()) {
      return s;
    }
    const models::ResNeXtFpnConfig& b = member.backbone;
    plan.member_name = plan.small
                           ? fmt::format(
                                 "RetinaNet, ResNeXt stem {} with {} groups, FPN {}, {} x {} "
                                 "(the embedded default's)",
                                 b.stem_width, b.groups, b.fpn_channels, b.image_size, b.image_size)
                           : "RetinaNet over ResNeXt50-32x4d and FPN P3-P7, 264 classes, 800 x 800";
    if (options.batch_per_rank > 0) plan.global_batch_size = options.batch_per_rank * world_size;
    if (absl::Status s =
            CompletePlan(options, world_size, share.cores,
                         fmt::format("generated-shapes-{}x{}-s{}-f{}-{}-{}px-base-p{}x{}-lr{}-s{}",
                                     demo.shapes.train_images, demo.shapes.validation_images,
                                     demo.shapes.seed, demo.shapes.min_fraction,
                                     demo.shapes.max_fraction, b.image_size, demo.pretrain_steps,
                                     demo.pretrain_batch, demo.pretrain_lr, demo.pretrain_seed),
                         plan);
        !s.ok())
      return s;
    plan.train_samples = plan.demo ? demo.shapes.train_images : kTrainImages;
    plan.eval_samples = plan.demo ? demo.shapes.validation_images : kEvalImages;
    std::string backbone;
    if (auto it = options.flags.find("backbone"); it != options.flags.end()) backbone = it->second;
    if (plan.demo) {
      backbone = (fs::path(plan.data_root) / "backbone.safetensors").string();
    } else if (backbone.empty()) {
      return absl::InvalidArgumentError(
          "retinanet with --data needs --backbone FILE: the ImageNet-trained ResNeXt50-32x4d body");
    }
    if (plan.train_samples < plan.global_batch_size)
      return absl::InvalidArgumentError(
          fmt::format("a global batch of {} is more than the {} training images",
                      plan.global_batch_size, plan.train_samples));
    plan.schedule = {.steps_per_epoch = plan.train_samples / plan.global_batch_size,
                     .first_eval_epoch = 1,
                     .eval_every_epochs = 1,
                     .last_epoch = epochs};
    // The CPU's memory is known (a GPU's is left to the device): the rank's
    // batch in as few micro-batches as fit, the optimizer's two moments and
    // the pipeline's images beside the model.
    if (options.gpus == 0) {
      const int64_t image_bytes = 3 * member.backbone.image_size * member.backbone.image_size * 4;
      const int64_t state = 2 * models::RetinaNet::ArenaBytes(member, 1);
      if (absl::Status s = FitMicroBatch(
              [&](int64_t batch) {
                return models::RetinaNet::ArenaBytes(member, batch) + state +
                       2 * batch * image_bytes;
              },
              share.memory_bytes, plan);
          !s.ok())
        return s;
    }
    std::string data = plan.data_root;
    return std::make_unique<RetinaNetSetup>(std::move(plan), recipe, std::move(member),
                                            std::move(data), std::move(backbone), std::move(demo));
  }
};

}  // namespace

std::unique_ptr<Benchmark> MakeBenchmark() { return std::make_unique<RetinaNetBenchmark>(); }

}  // namespace mlperf::benchmarks::retinanet
