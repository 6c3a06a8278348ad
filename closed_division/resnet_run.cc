#include "closed_division/resnet_run.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "closed_division/interrupt.h"
#include "closed_division/page_cache.h"
#include "closed_division/resnet_log.h"
#include "datasets/image_loader.h"
#include "fmt/format.h"
#include "logging/mllog.h"
#include "reference/models/resnet.h"
#include "reference/models/resnet_trainer.h"

namespace mlperf::closed {
namespace {

namespace key = mllog::key;
namespace meta = mllog::meta;
using Clock = std::chrono::steady_clock;

// Steps of the untimed warm-up on synthetic data (before run_start).
constexpr int kWarmUpSteps = 2;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

models::ResNetConfig ModelConfig(const RunPlan& plan) {
  models::ResNetConfig c;
  c.base_width = plan.model.base_width;
  for (int s = 0; s < 4; ++s) c.blocks[s] = plan.model.blocks[s];
  c.num_classes = plan.model.num_classes;
  c.image_size = plan.model.image_size;
  if (plan.options.gpus > 0) {
    // One GPU per process (the communicator selected it). NCHW: with fp32
    // and the OIHW weights the model keeps, that is cuDNN's native layout.
    c.device = core::Device::kCuda;
    c.layout = core::Layout::kNCHW;
  } else {
    c.layout = core::Layout::kNHWC;  // the fast CPU path (bench/resnet)
  }
  return c;
}

models::ResNetRecipe TrainerRecipe(const RunPlan& plan) {
  const ResnetRecipe& r = plan.recipe;
  models::ResNetRecipe m;
  m.optimizer =
      r.optimizer == Optimizer::kLars ? models::OptimizerKind::kLars : models::OptimizerKind::kSgd;
  m.global_batch_size = r.global_batch_size;
  m.base_lr = r.base_lr;
  m.end_lr = r.end_lr;
  m.poly_power = r.poly_power;
  m.warmup_epochs = r.warmup_epochs;
  m.train_epochs = r.decay_epochs;
  m.momentum = r.momentum;
  m.weight_decay = r.weight_decay;
  m.label_smoothing = r.label_smoothing;
  m.lars_eta = r.lars_eta;
  m.steps_per_epoch = plan.steps_per_epoch();
  return m;
}

datasets::ImageLoaderOptions LoaderOptions(const RunPlan& plan, const models::ResNetConfig& model,
                                           datasets::Split split, uint64_t seed, int rank) {
  datasets::ImageLoaderOptions o;
  o.root = plan.data_root;
  o.split = split;
  o.image_size = plan.model.image_size;
  o.resize_shorter = plan.model.resize_shorter;
  o.batch_size = static_cast<int>(plan.batch_per_rank);
  o.rank = rank;
  o.world_size = plan.world_size;
  o.seed = seed;
  o.layout = model.layout;
  o.threads = plan.loader_threads;
  if (!plan.demo) o.num_classes = plan.model.num_classes;
  return o;
}

// Every rank stops at the same step: an interrupt seen by any rank counts.
bool Interrupted(dist::Communicator& comm) {
  float flag = InterruptSignal() != 0 ? 1.0f : 0.0f;
  if (comm.world_size() > 1) comm.AllReduceSum(&flag, 1);
  return flag > 0;
}

}  // namespace

RunOutcome RunResnet(const RunPlan& plan, const RunRequest& request, dist::Communicator& comm,
                     ProgressReporter& progress) {
  RunOutcome out;
  const bool writer = comm.rank() == 0;
  absl::StatusOr<std::unique_ptr<mllog::Logger>> created =
      mllog::Logger::Create({.path = writer ? request.log_path : "", .enabled = writer});
  if (!created.ok()) {
    out.error = created.status();
    return out;
  }
  mllog::Logger& log = **created;

  // Untimed: submission information, cache flush, initialisation.
  LogSubmissionInfo(log, plan);
  log.Event(key::kCacheClear, DropPageCache());
  log.Start(key::kInitStart);
  log.Event(key::kSeed, static_cast<int64_t>(request.seed));
  LogHyperparameters(log, plan);
  const models::ResNetConfig config = ModelConfig(plan);
  models::ResNet model(config, plan.batch_per_rank);
  model.Initialize(request.seed);
  models::ResNetTrainer trainer(model, TrainerRecipe(plan),
                                request.gradient_comm != nullptr ? *request.gradient_comm : comm,
                                request.comm_stream);
  trainer.WarmUp(kWarmUpSteps);  // synthetic data; restores the initial state bit for bit
  comm.Barrier();
  log.End(key::kInitStop);

  // Timed from here: the data set is first touched after run_start.
  log.Start(key::kRunStart);
  const Clock::time_point run_start = Clock::now();
  progress.RunStarted(request.run);
  auto fail = [&](absl::Status error) {
    out.status = RunStatus::kFailed;
    out.error = std::move(error);
    out.seconds = Seconds(run_start);
    return out;
  };
  absl::StatusOr<std::unique_ptr<datasets::ImageLoader>> train = datasets::ImageLoader::Open(
      LoaderOptions(plan, config, datasets::Split::kTrain, request.seed, comm.rank()));
  if (!train.ok()) return fail(train.status());
  absl::StatusOr<std::unique_ptr<datasets::ImageLoader>> val = datasets::ImageLoader::Open(
      LoaderOptions(plan, config, datasets::Split::kVal, request.seed, comm.rank()));
  if (!val.ok()) return fail(val.status());
  if ((*train)->size() != plan.train_samples || (*val)->size() != plan.eval_samples) {
    return fail(absl::FailedPreconditionError(fmt::format(
        "{}: {} training and {} validation images, expected {} and {} (train_samples and "
        "eval_samples are logged before run_start)",
        plan.data_root, (*train)->size(), (*val)->size(), plan.train_samples,
        plan.eval_samples)));
  }

  const int last_epoch = plan.options.max_epochs > 0
                             ? std::min(plan.options.max_epochs, plan.last_epoch())
                             : plan.last_epoch();
  const int64_t steps_per_epoch = plan.steps_per_epoch();
  datasets::ImageBatch batch;
  bool in_block = false;
  int block_first = 0;
  bool reached = false;
  for (int epoch = 1; epoch <= last_epoch && !reached; ++epoch) {
    if (!in_block) {
      // A block runs up to the next evaluation (or the end of the run).
      int block_last = epoch;
      while (!plan.is_eval_epoch(block_last) && block_last < last_epoch) ++block_last;
      log.Start(key::kBlockStart, nullptr,
                {{meta::kFirstEpochNum, epoch}, {meta::kEpochCount, block_last - epoch + 1}});
      in_block = true;
      block_first = epoch;
    }
    log.Start(key::kEpochStart, nullptr, {{meta::kEpochNum, epoch}});
    const Clock::time_point epoch_start = Clock::now();
    for (int64_t step = 0; step < steps_per_epoch; ++step) {
      absl::StatusOr<bool> got = (*train)->Next(&batch);
      if (!got.ok()) return fail(got.status());
      trainer.TrainStep(batch.pixels.data(), batch.labels.data());
      if (Interrupted(comm)) {
        out.status = RunStatus::kInterrupted;
        out.epochs = epoch - 1;
        out.seconds = Seconds(run_start);
        return out;
      }
    }
    const double images_per_second =
        static_cast<double>(steps_per_epoch * plan.recipe.global_batch_size) / Seconds(epoch_start);
    log.End(key::kEpochStop, nullptr, {{meta::kEpochNum, epoch}});
    log.Event("throughput", images_per_second, {{meta::kEpochNum, epoch}});
    out.epochs = epoch;
    // A log that lost lines (a full disk) ends the run now, not at run_stop.
    if (absl::Status s = log.status(); !s.ok()) return fail(s);
    progress.EpochDone(request.run, epoch, images_per_second, Seconds(run_start));

    if (plan.is_eval_epoch(epoch)) {
      log.Start(key::kEvalStart, nullptr, {{meta::kEpochNum, epoch}});
      (*val)->StartEval();
      int64_t correct = 0, total = 0;
      while (true) {
        absl::StatusOr<bool> got = (*val)->Next(&batch);
        if (!got.ok()) return fail(got.status());
        if (!*got) break;
        correct += model.EvaluateBatch(batch.pixels.data(), batch.labels.data(), batch.count);
        total += batch.count;
      }
      out.last_accuracy = trainer.GlobalAccuracy(correct, total);
      log.End(key::kEvalStop, nullptr, {{meta::kEpochNum, epoch}});
      log.Event(key::kEvalAccuracy, out.last_accuracy, {{meta::kEpochNum, epoch}});
      progress.EvalDone(request.run, epoch, out.last_accuracy, Seconds(run_start));
      reached = out.last_accuracy >= kResnetTarget;
    }
    if (plan.is_eval_epoch(epoch) || epoch == last_epoch) {
      log.End(key::kBlockStop, nullptr, {{meta::kFirstEpochNum, block_first}});
      in_block = false;
    }
  }
  // Stop at the first evaluation at or above the target; a schedule that ends
  // first is a non-converged run (references.md 2.6).
  out.status = reached ? RunStatus::kSuccess : RunStatus::kAborted;
  log.End(key::kRunStop, nullptr,
          {{meta::kStatus, reached ? mllog::value::kSuccess : mllog::value::kAborted}});
  out.seconds = Seconds(run_start);
  progress.RunFinished(request.run, out.epochs, out.seconds, reached);
  if (absl::Status s = log.status(); !s.ok()) {
    out.status = RunStatus::kFailed;
    out.error = s;
  }
  return out;
}

}  // namespace mlperf::closed
