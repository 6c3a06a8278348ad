// The Llama 2 70B LoRA registry entry: the closed recipe per scale from the
// RCP references (their base rate and max_steps for the smallest RCP batch
// the processes divide), evaluations every 384 samples after the
// reference's delay over the 173 validation samples, the memory plan before
// anything is allocated, and the embedded demonstration: a small Llama 2
// with the reference's adapters over a base pre-trained here, on a
// generated summarisation task in the converted GovReport layout.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "benchmarks/decoder_benchmark.h"
#include "benchmarks/llama2_70b_lora/setup.h"
#include "benchmarks/rcp_recipes.h"
#include "fmt/format.h"
#include "reference/kernels/dispatch.h"

ABSL_FLAG(std::string, base_model, "",
          "llama2_70b_lora: the base checkpoint, a folder of Hugging Face safetensors shards "
          "(model.safetensors.index.json; q/k/v projections or the reference's fused qkv_proj)");

ABSL_FLAG(std::string, save_adapters, "",
          "llama2_70b_lora: after each run, its trained adapters as peft saves them "
          "(adapter_model.safetensors, adapter_config.json) in DIR/run_<N>, N as result_<N>.txt; "
          "DIR must not hold them already");

namespace mlperf::benchmarks::llama2_70b_lora {
namespace {

namespace fs = std::filesystem;

// The reference's set: GovReport's samples as MLCommons tokenized them.
constexpr int64_t kTrainSamples = 3901;
constexpr int64_t kEvalSamples = 173;
// Evaluations every 384 samples (48 steps of 8), from the first past the
// reference's delay of int(0.125 x batch + 2) intervals.
constexpr int64_t kEvalEverySamples = 384;

// The demonstration: its own recipe at the reference's batch of 8.
constexpr int64_t kDemoBatch = 8;
constexpr int64_t kDemoEvalEverySamples = 32;
constexpr int64_t kDemoTrainingSteps = 512;
constexpr double kDemoLearningRate = 1e-2;

int FirstEvalEpoch(int64_t global_batch_size) {
  return static_cast<int>(0.125 * static_cast<double>(global_batch_size) + 2) + 1;
}

absl::Status RcpRecipe(int world_size, RunPlan& plan, Recipe& recipe) {
  absl::StatusOr<RcpReference> rcp = ChooseRcp("llama2_70b_lora", world_size, plan);
  if (!rcp.ok()) return rcp.status();
  absl::StatusOr<double> lr = rcp->Number("opt_base_learning_rate");
  if (!lr.ok()) return lr.status();
  absl::StatusOr<double> steps = rcp->Number("max_steps");
  if (!steps.ok()) return steps.status();
  recipe.base_lr = *lr;
  recipe.training_steps = static_cast<int64_t>(*steps);
  return absl::OkStatus();
}

class LoraBenchmark final : public Benchmark {
 public:
  const BenchmarkInfo& info() const override {
    static const BenchmarkInfo info = {.name = "llama2_70b_lora",
                                       .summary = "Llama 2 70B LoRA fine-tuning on GovReport",
                                       .metric = "eval loss",
                                       .attention = true,
                                       .tensor_parallel = true,
                                       .fp8 = true,
                                       .flags = {"base_model", "recompute", "save_adapters"}};
    return info;
  }

 protected:
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> ConfigureFor(
      RunPlan plan, int world_size, const ProcessShare& share) const override {
    const RunnerOptions& options = plan.options;
    plan.data_name = "GovReport";
    plan.model_name = "Llama 2 70B LoRA";
    if (!options.optimizer.empty() && options.optimizer != "adamw") {
      return absl::InvalidArgumentError(
          fmt::format("--optimizer={}: closed-division Llama 2 70B LoRA trains with AdamW only",
                      options.optimizer));
    }
    models::DecoderConfig member = models::Llama2_70B_Lora();
    Recipe recipe;
    Demo demo;
    int64_t interval = kEvalEverySamples;
    const auto flag = [&options](const std::string& name) {
      auto it = options.flags.find(name);
      return it == options.flags.end() ? std::string() : it->second;
    };
    if (plan.small) {
      demo.task = {
          .train_samples = 1024, .validation_samples = 48, .min_report = 40, .max_report = 100};
      demo.pretrain_steps = 1000;
      demo.pretrain_batch = 16;
      demo.pretrain_lr = 1e-2;
      demo.pretrain_seed = 7000;
      const models::DecoderConfig full = member;
      member = {.vocab_size = demo.task.vocab_size,
                .hidden = 64,
                .layers = 2,
                .heads = 4,
                .kv_heads = 2,
                .intermediate = 176,
                .seq_len = 128,
                .attention_block = 32,
                .rope_theta = 10000.0,
                .rope_scaling = {}};
      member.lora = full.lora;
      member.lora_fused_qkv = full.lora_fused_qkv;
      member.frozen_dtype = full.frozen_dtype;
      recipe = {.base_lr = kDemoLearningRate, .training_steps = kDemoTrainingSteps};
      plan.global_batch_size = kDemoBatch;
      plan.rcp_batch_size = false;
      interval = kDemoEvalEverySamples;
    } else if (absl::Status s = RcpRecipe(world_size, plan, recipe); !s.ok()) {
      return s;
    }
    member.sample_mean_loss = true;
    plan.member_name =
        plan.small ? fmt::format(
                         "Llama 2, {} layers, hidden {}, {} heads, LoRA rank {} (the embedded "
                         "default's)",
                         member.layers, member.hidden, member.heads, member.lora.rank)
                   : "Llama 2 70B (80 layers, hidden 8192, 64 query / 8 key-value heads) with LoRA "
                     "rank 16 on qkv_proj and o_proj, 8192 tokens";
    if (absl::Status s = CheckTensorSplit(member, plan); !s.ok()) return s;
    if (options.batch_per_rank > 0) plan.global_batch_size = options.batch_per_rank * world_size;
    // The cache's folder names the task and the base pre-trained on it.
    if (absl::Status s = CompletePlan(
            options, world_size, share.cores,
            fmt::format("generated-govreport-{}-base-h{}-l{}-i{}-p{}x{}-lr{}-s{}", demo.task.Name(),
                        member.hidden, member.layers, member.intermediate, demo.pretrain_steps,
                        demo.pretrain_batch, demo.pretrain_lr, demo.pretrain_seed),
            plan);
        !s.ok())
      return s;
    std::string base = flag("base_model");
    if (plan.demo) {
      base = (fs::path(plan.data_root) / "base").string();
      plan.train_samples = demo.task.train_samples;
      plan.eval_samples = demo.task.validation_samples;
    } else {
      if (base.empty()) {
        return absl::InvalidArgumentError(
            "llama2_70b_lora with --data needs --base_model DIR: the Llama 2 70B checkpoint");
      }
      plan.train_samples = kTrainSamples;
      plan.eval_samples = kEvalSamples;
    }
    // Evaluations from the first past the delay, up to the training steps
    // (the reference's max_steps, where an unconverged run stops).
    plan.schedule = {
        .first_eval_epoch = FirstEvalEpoch(plan.global_batch_size),
        .last_epoch = static_cast<int>(recipe.training_steps * plan.global_batch_size / interval),
        .interval_samples = interval,
        .samples_per_step = plan.global_batch_size,
        .samples_count = true,
        .epoch_lines = false};
    member.recompute = flag("recompute") == "true";
    if (!plan.small) {
      if (absl::Status s = FitDecoderMemory(
              "llama2_70b_lora", member, world_size,
              options.gpus > 0 ? ops::DeviceMemoryTotalBytes() : share.memory_bytes, plan);
          !s.ok())
        return s;
    }
    std::string data = plan.data_root;
    return std::make_unique<LoraSetup>(std::move(plan), recipe, std::move(member), std::move(data),
                                       std::move(base), std::move(demo), flag("save_adapters"));
  }
};

}  // namespace

std::unique_ptr<Benchmark> MakeBenchmark() { return std::make_unique<LoraBenchmark>(); }

}  // namespace mlperf::benchmarks::llama2_70b_lora
