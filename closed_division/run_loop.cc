#include "closed_division/run_loop.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "closed_division/page_cache.h"
#include "fmt/format.h"
#include "logging/mllog.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "runtime/interrupt.h"

namespace mlperf::closed {
namespace {

namespace key = mllog::key;
namespace meta = mllog::meta;
using benchmarks::BenchmarkInfo;
using benchmarks::BenchmarkSetup;
using benchmarks::DataPipeline;
using benchmarks::RunPlan;
using benchmarks::Schedule;
using benchmarks::Split;
using Clock = std::chrono::steady_clock;

// Steps of the untimed warm-up on synthetic data (before run_start).
constexpr int kWarmUpSteps = 2;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Every rank stops at the same step: an interrupt seen by any rank counts.
bool Interrupted(dist::Communicator& comm) {
  float flag = runtime::InterruptSignal() != 0 ? 1.0f : 0.0f;
  if (comm.world_size() > 1) comm.AllReduceSum(&flag, 1);
  return flag > 0;
}

void LogSubmissionInfo(mllog::Logger& log, const BenchmarkInfo& info, const RunPlan& plan) {
  log.Event(key::kSubmissionBenchmark, info.name);
  log.Event(key::kSubmissionOrg, plan.options.submitter);
  log.Event(key::kSubmissionDivision, mllog::value::kClosed);
  // A demonstration or a run of our own code on our own machine: research.
  log.Event(key::kSubmissionStatus, mllog::value::kResearch);
  log.Event(key::kSubmissionPlatform, plan.system_name);
}

// One evaluation pass over the whole split, the metric over every rank.
absl::StatusOr<double> Evaluate(DataPipeline& data, eval::Evaluator& evaluator,
                                dist::Communicator& comm) {
  data.StartEval();
  evaluator.Start();
  models::Batch batch;
  while (true) {
    absl::StatusOr<bool> got = data.Next(&batch);
    if (!got.ok()) return got.status();
    if (!*got) break;
    evaluator.Add(batch);
  }
  return evaluator.Finish(comm);
}

}  // namespace

RunOutcome RunOnce(const BenchmarkInfo& info, const BenchmarkSetup& setup,
                   const RunRequest& request, dist::Communicator& comm,
                   ProgressReporter& progress) {
  const RunPlan& plan = setup.plan();
  // This run's copy: packed rows fill in the samples each epoch trains.
  Schedule schedule = plan.schedule;
  const ops::PrecisionScope precision(plan.precision, plan.fp8);
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
  LogSubmissionInfo(log, info, plan);
  log.Event(key::kCacheClear, DropPageCache());
  log.Start(key::kInitStart);
  log.Event(key::kSeed, static_cast<int64_t>(request.seed));
  for (const auto& [name, value] : setup.Hyperparameters()) log.Event(name, value);
  // The precision keys of the newer rulesets (optional there, unknown to
  // older ones, which ignore them). Gradients are all-reduced in fp32;
  // under fp8 attention's products stay bf16.
  log.Event(key::kLowestNumericalPrecisionInLinear,
            std::string(benchmarks::MlperfPrecisionName(plan.precision, plan.fp8)));
  if (info.attention) {
    log.Event(key::kLowestNumericalPrecisionInAttn,
              std::string(benchmarks::MlperfPrecisionName(plan.precision)));
  }
  log.Event(key::kLowestNumericalPrecisionInComm, std::string("fp32"));
  // The layout keys (required from 6.1.0, optional before): data parallel,
  // the model whole on each process or split over plan.tensor_parallel of
  // them; one micro-batch per process.
  log.Event(key::kTensorParallelism, int64_t{plan.tensor_parallel});
  for (std::string_view layout :
       {key::kPipelineParallelism, key::kContextParallelism, key::kExpertParallelism})
    log.Event(layout, int64_t{1});
  log.Event(key::kMicroBatchSize, plan.batch_per_rank);
  log.Event(key::kConfigFilename, "run_closed --bench " + info.name);
  dist::Communicator& model_comm = request.gradient_comm != nullptr ? *request.gradient_comm : comm;
  // Gradients are averaged, batches shared out and evaluations summed over
  // the data-parallel ranks: every process without tensor parallelism.
  dist::Communicator& data_comm = request.data_comm != nullptr ? *request.data_comm : model_comm;
  dist::Communicator& eval_comm = request.data_comm != nullptr ? *request.data_comm : comm;
  const std::unique_ptr<models::Model> model = setup.MakeModel(
      {.device = plan.options.gpus > 0 ? core::Device::kCuda : core::Device::kCpu,
       .rank = comm.rank(),
       .world_size = comm.world_size(),
       .comm = &model_comm,
       .comm_stream = request.comm_stream,
       .tensor_rank = request.tensor_comm != nullptr ? request.tensor_comm->rank() : 0,
       .tensor_size = request.tensor_comm != nullptr ? request.tensor_comm->world_size() : 1,
       .tensor_comm = request.tensor_comm},
      request.seed);
  if (absl::Status s = setup.LoadStartingCheckpoint(*model); !s.ok()) {
    out.error = std::move(s);
    return out;
  }
  train::Trainer trainer(*model, setup.MakeOptimizerFor(*model, data_comm), setup.MakeSchedule(),
                         benchmarks::TrainerConfigFor(plan), data_comm, request.comm_stream);
  const std::unique_ptr<eval::Evaluator> evaluator = setup.MakeEvaluator(*model);
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
  absl::StatusOr<std::unique_ptr<DataPipeline>> train =
      setup.OpenData(Split::kTrain, request.seed, eval_comm.rank());
  if (!train.ok()) return fail(train.status());
  absl::StatusOr<std::unique_ptr<DataPipeline>> eval =
      setup.OpenData(Split::kEval, request.seed, eval_comm.rank());
  if (!eval.ok()) return fail(eval.status());
  // train_samples 0: the data set decides (shards that hold no fixed count).
  if ((plan.train_samples > 0 && (*train)->size() != plan.train_samples) ||
      (*eval)->size() != plan.eval_samples) {
    return fail(absl::FailedPreconditionError(fmt::format(
        "{}: {} training and {} evaluation samples, expected {} and {} (train_samples and "
        "eval_samples are logged before run_start)",
        plan.data_root, (*train)->size(), (*eval)->size(), plan.train_samples, plan.eval_samples)));
  }

  const int last_epoch = plan.last_epoch();
  const int accumulation = plan.gradient_accumulation_steps;
  if ((*train)->GlobalSamples(0, 1) >= 0) {
    schedule.trained.assign(1, 0);
    for (int e = 1; e <= last_epoch; ++e) {
      schedule.trained.push_back(
          schedule.trained.back() +
          (*train)->GlobalSamples(schedule.steps_through(e - 1) * accumulation,
                                  schedule.steps_in(e) * accumulation));
    }
  }
  std::vector<models::Batch> micro_batches(static_cast<size_t>(accumulation));
  // With accumulation each micro-batch needs its own memory: the pipeline's
  // batch is only valid until its next call, so those are copied.
  std::vector<models::OwnedBatch> held(static_cast<size_t>(accumulation > 1 ? accumulation : 0));
  bool in_block = false;
  int block_first = 0;
  bool reached = false, diverged = false;
  for (int epoch = 1; epoch <= last_epoch && !reached && !diverged; ++epoch) {
    if (!in_block) {
      // A block runs up to the next evaluation (or the end of the run).
      int block_last = epoch;
      while (!schedule.is_eval_epoch(block_last) && block_last < last_epoch) ++block_last;
      json::Object where;
      if (schedule.samples_count) {
        where = schedule.At(epoch - 1);
      } else {
        const json::Value first = schedule.EpochNum(epoch);
        const json::Value count =
            first.is_float()
                ? json::Value(schedule.EpochNum(block_last).as_float() -
                              schedule.EpochNum(epoch - 1).as_float())
                : json::Value(schedule.logged(block_last) - schedule.logged(epoch - 1));
        where = {{meta::kFirstEpochNum, first}, {meta::kEpochCount, count}};
      }
      log.Start(key::kBlockStart, nullptr, std::move(where));
      in_block = true;
      block_first = epoch;
    }
    if (schedule.epoch_lines) {
      log.Start(key::kEpochStart, nullptr,
                schedule.samples_count ? schedule.At(epoch - 1) : schedule.At(epoch));
    }
    const Clock::time_point epoch_start = Clock::now();
    for (int64_t step = 0; step < schedule.steps_in(epoch); ++step) {
      for (int m = 0; m < accumulation; ++m) {
        absl::StatusOr<bool> got = (*train)->Next(&micro_batches[m]);
        if (!got.ok()) return fail(got.status());
        if (accumulation > 1) micro_batches[m] = CopyBatch(micro_batches[m], held[m]);
      }
      // Queued: the host stages the next batch while the device trains.
      trainer.QueueStep(micro_batches);
      if (Interrupted(comm)) {
        out.status = RunStatus::kInterrupted;
        out.epochs = epoch - 1;
        out.seconds = Seconds(run_start);
        return out;
      }
    }
    ops::Synchronize(model->device());  // the epoch's steps done, for its time
    const int64_t trained = schedule.trained.empty()
                                ? schedule.steps_in(epoch) * plan.global_batch_size
                                : schedule.logged(epoch) - schedule.logged(epoch - 1);
    const double samples_per_second = static_cast<double>(trained) / Seconds(epoch_start);
    if (schedule.epoch_lines) log.End(key::kEpochStop, nullptr, schedule.At(epoch));
    log.Event("throughput", samples_per_second, schedule.At(epoch));
    out.epochs = epoch;
    // A log that lost lines (a full disk) ends the run now, not at run_stop.
    if (absl::Status s = log.status(); !s.ok()) return fail(s);
    progress.EpochDone(request.run, epoch, samples_per_second, Seconds(run_start));

    if (schedule.is_eval_epoch(epoch)) {
      log.Start(key::kEvalStart, nullptr, schedule.At(epoch));
      absl::StatusOr<double> metric = Evaluate(**eval, *evaluator, eval_comm);
      if (!metric.ok()) return fail(metric.status());
      out.last_metric = *metric;
      log.End(key::kEvalStop, nullptr, schedule.At(epoch));
      log.Event(key::kEvalAccuracy, out.last_metric, schedule.At(epoch));
      progress.EvalDone(request.run, epoch, out.last_metric, Seconds(run_start));
      // As the checker decides: every bound of the rules' target holds.
      reached = plan.target.Reached(out.last_metric);
      // A diverged run ends here, not converged (the reference's abort).
      diverged = out.last_metric < info.diverged_below;
      if (&eval_comm != &comm) {
        // Each data-parallel group summed its own metric: every rank
        // follows the logging rank's decision.
        float decided[2] = {reached ? 1.0f : 0.0f, diverged ? 1.0f : 0.0f};
        comm.Broadcast(decided, 2, 0);
        reached = decided[0] != 0.0f;
        diverged = decided[1] != 0.0f;
      }
    }
    if (schedule.is_eval_epoch(epoch) || epoch == last_epoch) {
      log.End(key::kBlockStop, nullptr,
              schedule.samples_count
                  ? schedule.At(epoch)
                  : json::Object{{meta::kFirstEpochNum, schedule.EpochNum(block_first)}});
      in_block = false;
    }
  }
  // Stop at the first evaluation that reaches the target; a schedule that
  // ends first is a non-converged run.
  out.status = reached ? RunStatus::kSuccess : RunStatus::kAborted;
  if (info.train_samples_at_stop)
    log.Event(key::kTrainSamples, schedule.logged(out.epochs) / schedule.tokens_per_sample);
  log.End(key::kRunStop, nullptr,
          {{meta::kStatus, reached ? mllog::value::kSuccess : mllog::value::kAborted}});
  out.seconds = Seconds(run_start);
  progress.RunFinished(request.run, out.epochs, out.seconds, reached);
  if (absl::Status s = log.status(); !s.ok()) {
    out.status = RunStatus::kFailed;
    out.error = s;
    return out;
  }
  if (absl::Status s = setup.AfterRun(*model, request.run, data_comm.rank()); !s.ok()) {
    out.status = RunStatus::kFailed;
    out.error = s;
  }
  return out;
}

}  // namespace mlperf::closed
