// The BERT-Large (Wikipedia) registry entry: closed-division LAMB recipes
// per scale from the RCP references, the run starting from the reference's
// TensorFlow checkpoint (model.ckpt-28252), evaluations every FLOOR(0.05 *
// (230.23 * GBS + 3,000,000), 25000) samples, and the embedded
// demonstration (a small member of the family on a generated language
// written as TFRecords in the reference's schema, starting from a generated
// TensorFlow checkpoint).
#include <filesystem>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "benchmarks/bert/setup.h"
#include "fmt/format.h"

ABSL_FLAG(bool, packed, false,
          "BERT: train packed rows as NVIDIA's MLPerf BERT does (up to three samples a row, "
          "each attending to itself; half as many rows as samples), the samples trained "
          "counted as they come");

namespace mlperf::benchmarks::bert {
namespace {

namespace fs = std::filesystem;

// Where the reference's starting checkpoint may sit under --data.
absl::StatusOr<std::string> FindCheckpoint(const fs::path& data) {
  for (const fs::path& dir : {data, data / "phase1", data / "checkpoint"}) {
    const fs::path prefix = dir / kCheckpointName;
    const fs::path index = prefix.string() + ".index";
    std::error_code ec;
    const fs::file_status st = fs::status(index, ec);
    if (fs::is_regular_file(st)) return prefix.string();
    // There, but unusable: said as such, not as missing.
    if (fs::exists(st) || (ec && ec != std::errc::no_such_file_or_directory)) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: {}", index.string(), ec ? ec.message() : "exists but is not a regular file"));
    }
  }
  return absl::InvalidArgumentError(
      fmt::format("--data {}: no {}.index there or in phase1/ or checkpoint/ (BERT starts from the "
                  "reference's TensorFlow checkpoint)",
                  data.string(), kCheckpointName));
}

class BertBenchmark final : public Benchmark {
 public:
  const BenchmarkInfo& info() const override {
    static const BenchmarkInfo info = {.name = "bert",
                                       .summary = "BERT-Large on Wikipedia",
                                       .metric = "masked-LM accuracy",
                                       .train_samples_at_stop = true,
                                       .attention = true,
                                       .fp8 = true,
                                       .flags = {"packed"}};
    return info;
  }

 protected:
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> ConfigureFor(
      RunPlan plan, int world_size, const ProcessShare& share) const override {
    const RunnerOptions& options = plan.options;
    plan.data_name = "Wikipedia";
    plan.model_name = "BERT-Large";
    if (!options.optimizer.empty() && options.optimizer != "lamb") {
      return absl::InvalidArgumentError(fmt::format(
          "--optimizer={}: closed-division BERT trains with LAMB only", options.optimizer));
    }
    const bool packed = options.flags.contains("packed") && options.flags.at("packed") == "true";
    // Packed, the demonstration's samples run from 9 tokens to the whole row
    // (the default's fill half a row or more, which leaves nothing to pack).
    const datasets::bert::GeneratedBertOptions generated{.min_symbols = packed ? 6 : 0};
    models::BertConfig member;  // BERT-Large
    Recipe recipe;
    int64_t interval = 0;
    if (plan.small) {
      member = {.vocab_size = generated.vocab_size,
                .hidden = 64,
                .layers = 2,
                .heads = 4,
                .intermediate = 256,
                .max_positions = generated.seq_len,
                .seq_len = generated.seq_len,
                .max_predictions = generated.max_predictions};
      recipe = {.base_lr = 5e-2, .train_steps = 300, .warmup_steps = 40, .weight_decay = 0.01};
      plan.global_batch_size = 32;
      interval = 800;
    } else if (absl::Status s = WikipediaPlan(world_size, plan, recipe); !s.ok()) {
      return s;
    }
    if (packed) member.packed_sequences = 3;  // NVIDIA's: up to three samples a row
    plan.member_name =
        plan.small ? fmt::format(
                         "BERT, {} layers, hidden {}, {} heads, {} tokens (the embedded default's)",
                         member.layers, member.hidden, member.heads, member.seq_len)
                   : "BERT-Large (24 layers, hidden 1024, 16 heads), 512 tokens";
    if (options.batch_per_rank > 0) plan.global_batch_size = options.batch_per_rank * world_size;
    if (!plan.small) interval = EvalIntervalSamples(plan.global_batch_size);
    if (absl::Status s = CompletePlan(options, world_size, share.cores,
                                      fmt::format("generated-bert-{}", generated.Name()), plan);
        !s.ok())
      return s;
    plan.train_samples = plan.demo ? generated.train_samples : 0;
    plan.eval_samples = plan.demo ? generated.eval_samples : kEvalSamples;
    std::string checkpoint;
    if (plan.demo) {
      checkpoint = (fs::path(plan.data_root) / kCheckpointName).string();
    } else {
      absl::StatusOr<std::string> found = FindCheckpoint(options.data_dir);
      if (!found.ok()) return found.status();
      checkpoint = *found;
    }
    // Evaluations at the first step boundary at or past each multiple of the
    // interval; the run ends where the learning rate reaches 0.
    plan.schedule = {.log_samples = true,
                     .interval_samples = interval,
                     .samples_per_step = plan.global_batch_size};
    const int64_t limit = recipe.train_steps * plan.global_batch_size;
    plan.schedule.last_epoch = static_cast<int>((limit + interval - 1) / interval);
    auto setup =
        std::make_unique<BertSetup>(std::move(plan), recipe, member, checkpoint, generated);
    if (share.memory_bytes > 0) {
      if (absl::Status s = setup->FitMicroBatch(share.memory_bytes); !s.ok()) return s;
    }
    return setup;
  }
};

}  // namespace

std::unique_ptr<Benchmark> MakeBenchmark() { return std::make_unique<BertBenchmark>(); }

}  // namespace mlperf::benchmarks::bert
