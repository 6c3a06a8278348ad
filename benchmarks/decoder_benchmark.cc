#include "benchmarks/decoder_benchmark.h"

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "reference/models/decoder_memory.h"
#include "reference/optim/adam.h"
#include "reference/optim/schedules.h"
#include "reference/trainer/trainer.h"

// Shared by the decoder benchmarks that list it (BenchmarkInfo::flags).
ABSL_FLAG(bool, recompute, false,
          "recompute each layer's activations in the backward (Megatron's full recomputation), "
          "one layer's in memory; the memory plan turns it on by itself where only it fits");

namespace mlperf::benchmarks {

absl::Status FitDecoderMemory(std::string_view benchmark, models::DecoderConfig& member,
                              int world_size, int64_t limit, RunPlan& plan) {
  const auto layout = [&](int64_t micro_batch, bool recompute) {
    return models::DecoderLayout{
        .tp = plan.tensor_parallel,
        .dp = world_size,
        .micro_batch = micro_batch,
        .distributed_optimizer =
            plan.options.gpus == 0 && (world_size > 1 || plan.tensor_parallel > 1),
        .recompute = recompute};
  };
  for (const bool recompute : {false, true}) {
    if (member.recompute && !recompute) continue;  // --recompute
    RunPlan fitted = plan;
    if (FitMicroBatch(
            [&](int64_t b) {
              return models::PlanDecoderMemory(member, layout(b, recompute)).total();
            },
            limit, fitted)
            .ok()) {
      plan = std::move(fitted);
      member.recompute = recompute;
      return absl::OkStatus();
    }
  }
  constexpr double kGiB = 1 << 30;
  const models::DecoderPlan ours{.layout = layout(1, false),
                                 .memory = models::PlanDecoderMemory(member, layout(1, false))};
  std::vector<models::DecoderPlan> tried;
  absl::StatusOr<models::DecoderPlan> fits =
      models::ChooseDecoderLayout(member, plan.processes(), 1, limit, &tried);
  std::string alternative;
  if (fits.ok() && plan.options.gpus == 0) {
    alternative = fmt::format("{} ({:.1f} GiB) fits: pass --tensor_parallel {}",
                              models::DescribeDecoderPlan(*fits),
                              static_cast<double>(fits->memory.total()) / kGiB, fits->layout.tp);
  } else if (!fits.ok()) {
    alternative = std::string(fits.status().message());
  } else {
    alternative = fmt::format(
        "the plan's first layout that fits is {} ({:.1f} GiB), and the runs split the model on "
        "the CPU only yet",
        models::DescribeDecoderPlan(*fits), static_cast<double>(fits->memory.total()) / kGiB);
  }
  const int64_t recomputing = models::PlanDecoderMemory(member, layout(1, true)).total();
  return absl::ResourceExhaustedError(fmt::format(
      "{} needs {:.1f} GiB per {} ({}), {:.1f} recomputing activations, one has {:.1f} GiB; {}",
      benchmark, static_cast<double>(ours.memory.total()) / kGiB,
      plan.options.gpus > 0 ? "GPU" : "process", models::DescribeDecoderPlan(ours),
      static_cast<double>(recomputing) / kGiB, static_cast<double>(limit) / kGiB, alternative));
}

absl::Status CheckTensorSplit(const models::DecoderConfig& member, const RunPlan& plan) {
  const int tp = plan.tensor_parallel;
  if (member.kv_heads % tp == 0 && member.intermediate % tp == 0 && member.vocab_size % tp == 0)
    return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "--tensor_parallel={}: the model ({} key/value heads, SwiGLU width {}, vocabulary {}) does "
      "not split over {} ranks",
      tp, member.kv_heads, member.intermediate, member.vocab_size, tp));
}

std::unique_ptr<optim::Optimizer> DistributedDecoderOptimizer(const models::Model& model,
                                                              dist::Communicator& data_comm,
                                                              bool gpus, float clip,
                                                              optim::InnerOptimizerFactory shard) {
  const auto* decoder = dynamic_cast<const models::Decoder*>(&model);
  const bool split = decoder != nullptr && decoder->tensor_parallel() > 1;
  if ((data_comm.world_size() == 1 && !split) || gpus) return nullptr;
  optim::TensorParallelNorm tensor;
  if (split) {
    tensor.comm = decoder->tensor_comm();
    tensor.replicated = decoder->ReplicatedSlices();
  }
  return std::make_unique<optim::DistributedOptimizer>(data_comm, model.slices(), clip,
                                                       std::move(shard), std::move(tensor));
}

absl::Status PretrainDecoder(models::Decoder& model, DataPipeline& data, int64_t steps, double lr) {
  std::unique_ptr<dist::Communicator> one = dist::MakeSingleProcessCommunicator();
  train::Trainer trainer(
      model,
      std::make_unique<optim::Adam>(
          optim::AdamOptions{.beta2 = 0.95f, .weight_decay = 0.1f, .max_grad_norm = 1.0f},
          model.slices()),
      std::make_unique<optim::CosineWithWarmup>(optim::CosineWithWarmupParams{
          .max_lr = lr, .min_lr = lr / 10, .warmup_steps = 10, .decay_steps = steps}),
      train::TrainerConfig{}, *one);
  models::Batch batch;
  for (int64_t step = 0; step < steps; ++step) {
    absl::StatusOr<bool> got = data.Next(&batch);
    if (!got.ok()) return got.status();
    trainer.TrainStep(batch);
  }
  return absl::OkStatus();
}

}  // namespace mlperf::benchmarks
