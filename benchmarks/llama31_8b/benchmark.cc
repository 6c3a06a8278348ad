// The Llama 3.1 8B registry entry: the closed recipe per scale from the RCP
// references (the peak rate and warm-up of the smallest RCP batch the
// processes divide, decayed to a tenth), evaluations every 12,288 samples
// over 1,024 logged with samples_count, the memory plan before anything is
// allocated, and the embedded demonstration: a small member of the family on
// a generated language in Megatron's token files.
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/decoder_benchmark.h"
#include "benchmarks/llama31_8b/setup.h"
#include "benchmarks/rcp_recipes.h"
#include "fmt/format.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::benchmarks::llama31_8b {
namespace {

namespace fs = std::filesystem;

// The reference's evaluation: every 12,288 training samples, over 1,024.
constexpr int64_t kEvalEverySamples = 12288;
constexpr int64_t kEvalSamples = 1024;
// The reference's data: one C4 shard for training, the validation subset.
constexpr const char* kTrainPrefix = "c4-train.en_6_text_document";
constexpr const char* kValidationPrefix = "c4-validation-91205-samples.en_text_document";

// The demonstration: its own recipe at its own batch (no RCP exists for it).
constexpr int64_t kDemoBatch = 2;
constexpr int64_t kDemoEvalEverySamples = 8;
constexpr int kDemoEvaluations = 40;
constexpr int64_t kDemoDistinctEval = 16;

absl::Status RcpRecipe(int world_size, RunPlan& plan, Recipe& recipe) {
  absl::StatusOr<RcpReference> rcp = ChooseRcp("llama31_8b", world_size, plan);
  if (!rcp.ok()) return rcp.status();
  absl::StatusOr<double> lr = rcp->Number("opt_base_learning_rate");
  if (!lr.ok()) return lr.status();
  absl::StatusOr<double> warmup = rcp->Number("opt_learning_rate_warmup_samples");
  if (!warmup.ok()) return warmup.status();
  recipe = {.base_lr = *lr,
            .end_lr = *lr * 0.1,
            .warmup_steps = static_cast<int64_t>(
                std::ceil(*warmup / static_cast<double>(rcp->global_batch_size)))};
  return absl::OkStatus();
}

class Llama31Benchmark final : public Benchmark {
 public:
  const BenchmarkInfo& info() const override {
    static const BenchmarkInfo info = {.name = "llama31_8b",
                                       .summary = "Llama 3.1 8B pre-training on C4",
                                       .metric = "log perplexity",
                                       .train_samples_at_stop = true,
                                       .attention = true,
                                       .tensor_parallel = true,
                                       .fp8 = true,
                                       .flags = {"recompute"}};
    return info;
  }

 protected:
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> ConfigureFor(
      RunPlan plan, int world_size, const ProcessShare& share) const override {
    const RunnerOptions& options = plan.options;
    plan.data_name = "C4";
    plan.model_name = "Llama 3.1 8B";
    if (!options.optimizer.empty() && options.optimizer != "adamw") {
      return absl::InvalidArgumentError(
          fmt::format("--optimizer={}: closed-division Llama 3.1 8B trains with AdamW only",
                      options.optimizer));
    }
    models::DecoderConfig member = models::Llama31_8B();
    Recipe recipe;
    TokenFiles files;
    int64_t interval = kEvalEverySamples;
    int evaluations = 0;
    if (plan.small) {
      // Training and validation documents of one language.
      files.generated_train = {.documents = 4000};
      files.generated_validation = {.documents = 2500, .document_seed = 20252};
      member = {.vocab_size = files.generated_train.vocab_size,
                .hidden = 64,
                .layers = 1,
                .heads = 4,
                .kv_heads = 2,
                .intermediate = 128,
                .seq_len = 8192,
                .attention_chunk = 64,
                .rope_theta = 10000.0,
                .rope_scaling = {}};
      recipe = {.base_lr = 3e-3, .end_lr = 3e-4, .warmup_steps = 8};
      plan.global_batch_size = kDemoBatch;
      plan.rcp_batch_size = false;
      interval = kDemoEvalEverySamples;
      evaluations = kDemoEvaluations;
      files.distinct_eval = kDemoDistinctEval;
    } else if (absl::Status s = RcpRecipe(world_size, plan, recipe); !s.ok()) {
      return s;
    }
    plan.member_name =
        plan.small ? fmt::format(
                         "Llama, {} layer, hidden {}, {} heads, {} tokens in chunks of {} (the "
                         "embedded default's)",
                         member.layers, member.hidden, member.heads, member.seq_len,
                         member.attention_chunk)
                   : "Llama 3.1 8B (32 layers, hidden 4096, 32 query / 8 key-value heads), "
                     "8192 tokens";
    if (absl::Status s = CheckTensorSplit(member, plan); !s.ok()) return s;
    if (options.batch_per_rank > 0) plan.global_batch_size = options.batch_per_rank * world_size;
    if (absl::Status s =
            CompletePlan(options, world_size, share.cores,
                         fmt::format("generated-tokens-{}-d{}", files.generated_train.Name(),
                                     files.generated_validation.documents),
                         plan);
        !s.ok())
      return s;
    if (plan.demo) {
      files.train = (fs::path(plan.data_root) / "train").string();
      files.validation = (fs::path(plan.data_root) / "validation").string();
    } else {
      files.train = (fs::path(plan.data_root) / kTrainPrefix).string();
      files.validation = (fs::path(plan.data_root) / kValidationPrefix).string();
    }
    plan.train_samples = 0;  // logged at run_stop: the samples trained
    plan.eval_samples = kEvalSamples;
    // Evaluations at the first step boundary at or past each multiple of the
    // interval, up to the rules' max_steps (the demonstration: its own cap).
    if (evaluations == 0)
      evaluations = static_cast<int>(kMaxSteps * plan.global_batch_size / interval);
    plan.schedule = {.last_epoch = evaluations,
                     .interval_samples = interval,
                     .samples_per_step = plan.global_batch_size,
                     .samples_count = true};
    member.recompute =
        options.flags.contains("recompute") && options.flags.at("recompute") == "true";
    if (!plan.small) {
      if (absl::Status s = FitDecoderMemory(
              "llama31_8b", member, world_size,
              options.gpus > 0 ? ops::DeviceMemoryTotalBytes() : share.memory_bytes, plan);
          !s.ok())
        return s;
    }
    return std::make_unique<Llama31Setup>(std::move(plan), recipe, std::move(member),
                                          std::move(files));
  }
};

}  // namespace

std::unique_ptr<Benchmark> MakeBenchmark() { return std::make_unique<Llama31Benchmark>(); }

}  // namespace mlperf::benchmarks::llama31_8b
