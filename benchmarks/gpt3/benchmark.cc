// The GPT-3 registry entry. Its reference resumes GPT-3 175B from a
// checkpoint (Megatron's, in Zarr arrays) on a blend of two C4 shards over
// pipeline- and tensor-parallel ranks; what runs here is the embedded
// demonstration: a small member of the GPT family on a generated language
// in Megatron's token files, resumed from a checkpoint of its own in the
// reference's format, under the rules' recipe (Adam at 2e-5 or 3e-5,
// clipping at 1.0, the cosine schedule resumed at the checkpoint's step)
// and its target window.
#include <memory>
#include <string>

#include "benchmarks/gpt3/setup.h"
#include "fmt/format.h"

namespace mlperf::benchmarks::gpt3 {
namespace {

// The demonstration: its own batch (no RCP exists for it), an evaluation
// after every step, at most kDemoSteps of them.
constexpr int64_t kDemoBatch = 4;
constexpr int kDemoSteps = 200;

class Gpt3Benchmark final : public Benchmark {
 public:
  const BenchmarkInfo& info() const override {
    static const BenchmarkInfo info = {
        .name = "gpt3",
        .summary = "GPT-3 175B on C4, from the reference's checkpoint",
        .metric = "log perplexity",
        .train_samples_at_stop = true,
        .attention = true,
        .fp8 = true};
    return info;
  }

 protected:
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> ConfigureFor(
      RunPlan plan, int world_size, const ProcessShare& share) const override {
    const RunnerOptions& options = plan.options;
    plan.data_name = "C4";
    plan.model_name = "GPT-3 175B";
    if (!options.optimizer.empty() && options.optimizer != "adam") {
      return absl::InvalidArgumentError(fmt::format(
          "--optimizer={}: closed-division GPT-3 trains with Adam only", options.optimizer));
    }
    if (!plan.small) {
      return absl::UnimplementedError(
          "gpt3 runs its small member only (the embedded default, without --data): the "
          "reference's 175B model needs pipeline parallelism and its data the blend of two C4 "
          "shards (Megatron's BlendedDataset), neither built yet");
    }
    Demo demo;
    demo.train = {.vocab_size = 256,
                  .documents = 8000,
                  .min_length = 24,
                  .max_length = 56,
                  .successors = 12,
                  .uniform = true,
                  .seed = 20261};
    demo.validation = demo.train;
    demo.validation.documents = 1200;
    demo.validation.document_seed = 20262;
    demo.eval_count = 16;
    demo.pretrain_steps = 180;
    demo.pretrain_batch = 4;
    demo.pretrain_lr = 1e-2;
    demo.pretrain_seed = 4000;
    const models::DecoderConfig member = {.vocab_size = demo.train.vocab_size,
                                          .hidden = 64,
                                          .layers = 1,
                                          .heads = 4,
                                          .kv_heads = 4,
                                          .intermediate = 256,
                                          .seq_len = 2048,
                                          .attention_chunk = 256,
                                          .rope_scaling = {},
                                          .tie_embeddings = true,
                                          .layer_norm = true,
                                          .learned_positions = 2048,
                                          .gelu = true,
                                          .bias = true};
    const Recipe recipe = {.base_lr = 3e-5,
                           .end_lr = 3e-6,
                           .warmup_steps = 8,
                           .decay_steps = 20000,
                           .checkpoint_step = demo.pretrain_steps};
    plan.global_batch_size = kDemoBatch;
    plan.rcp_batch_size = false;
    plan.member_name = fmt::format(
        "GPT, {} layer, hidden {}, {} heads, {} tokens in chunks of {} (the embedded default's)",
        member.layers, member.hidden, member.heads, member.seq_len, member.attention_chunk);
    if (options.batch_per_rank > 0) plan.global_batch_size = options.batch_per_rank * world_size;
    if (absl::Status s = CompletePlan(options, world_size, share.cores,
                                      fmt::format("generated-gpt-{}-d{}-ckpt{}", demo.train.Name(),
                                                  demo.validation.documents, demo.pretrain_steps),
                                      plan);
        !s.ok())
      return s;
    plan.train_samples = 0;  // logged at run_stop: the samples trained
    plan.eval_samples = demo.eval_count;
    // An evaluation after every step; epoch_num counts tokens.
    plan.schedule = {.last_epoch = kDemoSteps,
                     .interval_samples = plan.global_batch_size,
                     .samples_per_step = plan.global_batch_size,
                     .tokens_per_sample = member.seq_len};
    return std::make_unique<Gpt3Setup>(std::move(plan), recipe, member, std::move(demo));
  }
};

}  // namespace

std::unique_ptr<Benchmark> MakeBenchmark() { return std::make_unique<Gpt3Benchmark>(); }

}  // namespace mlperf::benchmarks::gpt3
