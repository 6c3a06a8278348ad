// The DLRM-dcnv2 (Criteo 1TB multi-hot) registry entry: the closed recipe
// per scale from the RCP references (Adagrad at the reference's rate for
// the smallest RCP batch the processes divide), evaluations every twentieth
// of the one epoch logged as fractions of it, the tables sharded over the
// processes (refused when a rank's share does not fit its memory), and the
// embedded demonstration: a small member of the family on generated click
// logs in the reference's day-file layout.
#include <algorithm>
#include <memory>
#include <string>

#include "benchmarks/dlrm_dcnv2/setup.h"
#include "benchmarks/rcp_recipes.h"
#include "fmt/format.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::benchmarks::dlrm_dcnv2 {
namespace {

// The reference's data set: days 0-22 train, half of day 23 validates.
constexpr int64_t kTrainSamples = 4195197692;
constexpr int64_t kEvalSamples = 89137319;
constexpr int kEvaluationsPerEpoch = 20;

// The demonstration: the reference's multi-hot sizes and recipe, tables of
// at most kDemoRows rows, a narrow model and a small batch.
constexpr int64_t kDemoRows = 2000;
constexpr int64_t kDemoBatch = 512;

absl::Status RcpRecipe(int world_size, RunPlan& plan, Recipe& recipe) {
  absl::StatusOr<std::vector<RcpReference>> refs = ReadRcpReferences(plan.ruleset, "dlrm_dcnv2");
  if (!refs.ok()) return refs.status();
  const RcpReference* chosen = SmallestDividing(*refs, world_size);
  plan.rcp_batch_size = chosen != nullptr;
  if (chosen == nullptr) chosen = &Smallest(*refs);
  plan.global_batch_size = plan.rcp_batch_size ? chosen->global_batch_size : world_size * 4096;
  absl::StatusOr<double> lr = chosen->Number("opt_base_learning_rate");
  if (!lr.ok()) return lr.status();
  absl::StatusOr<double> eps = chosen->Number("opt_adagrad_epsilon");
  if (!eps.ok()) return eps.status();
  recipe = {.base_lr = *lr, .epsilon = *eps};
  return absl::OkStatus();
}

// Every rank's arenas (Dlrm::PlanMemory) against what one process may use:
// its share of host memory, or its GPU's memory (unknown: not checked).
absl::Status CheckMemory(const models::DlrmConfig& member, const RunPlan& plan, int world_size,
                         int64_t limit) {
  if (limit <= 0) return absl::OkStatus();
  constexpr double kGiB = 1 << 30;
  for (int rank = 0; rank < world_size; ++rank) {
    const models::DlrmMemory m =
        models::Dlrm::PlanMemory(member, plan.batch_per_rank, rank, world_size);
    if (m.total() <= limit) continue;
    return absl::ResourceExhaustedError(fmt::format(
        "dlrm_dcnv2: rank {} of {} needs {:.1f} GiB (embedding tables and their Adagrad sums "
        "{:.1f}, dense layers {:.1f}, activations {:.1f}), one {} has {:.1f} GiB; run more "
        "processes to shard the tables further",
        rank, world_size, static_cast<double>(m.total()) / kGiB,
        static_cast<double>(m.embeddings) / kGiB, static_cast<double>(m.dense) / kGiB,
        static_cast<double>(m.activations) / kGiB, plan.options.gpus > 0 ? "GPU" : "process",
        static_cast<double>(limit) / kGiB));
  }
  return absl::OkStatus();
}

class DlrmBenchmark final : public Benchmark {
 public:
  const BenchmarkInfo& info() const override {
    static const BenchmarkInfo info = {
        .name = "dlrm_dcnv2", .summary = "DLRM-dcnv2 on Criteo 1TB multi-hot", .metric = "AUC"};
    return info;
  }

 protected:
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> ConfigureFor(
      RunPlan plan, int world_size, const ProcessShare& share) const override {
    const RunnerOptions& options = plan.options;
    plan.data_name = "Criteo 1TB multi-hot";
    plan.model_name = "DLRM-dcnv2";
    if (!options.optimizer.empty() && options.optimizer != "adagrad") {
      return absl::InvalidArgumentError(
          fmt::format("--optimizer={}: closed-division DLRM-dcnv2 trains with Adagrad only",
                      options.optimizer));
    }
    if (options.precision == "fp16") {
      return absl::InvalidArgumentError(
          "--precision=fp16: DLRM-dcnv2 steps its tables inside the backward pass, where fp16's "
          "loss scaling would reach them; use fp32 or bf16");
    }
    models::DlrmConfig member = models::DlrmConfig::Reference();
    Recipe recipe;
    criteo::GeneratedCriteoOptions generated;
    if (absl::Status s = RcpRecipe(world_size, plan, recipe); !s.ok()) return s;
    if (plan.small) {
      for (int64_t& rows : member.table_rows) rows = std::min(rows, kDemoRows);
      member.embedding_dim = 16;
      member.bottom_mlp = {64, 16};
      member.low_rank = 16;
      member.top_mlp = {64, 32, 1};
      generated.table_rows = member.table_rows;
      generated.multi_hot = member.multi_hot;
      // Sharded as the full-size tables would be on as many ranks.
      const models::EmbeddingSharding full =
          models::PlanEmbeddingSharding(models::DlrmConfig::Reference().table_rows, world_size);
      for (int64_t t = 0; t < full.tables(); ++t)
        if (full.row_wise(t)) member.row_wise_tables.push_back(t);
      plan.global_batch_size = kDemoBatch;
      plan.rcp_batch_size = false;
    }
    plan.member_name = plan.small
                           ? fmt::format(
                                 "DLRM-dcnv2, embedding width {}, tables of at most {} rows (the "
                                 "embedded default's)",
                                 member.embedding_dim, kDemoRows)
                           : "DLRM-dcnv2 (26 tables of width 128, 3 cross layers of rank 512)";
    if (options.batch_per_rank > 0) plan.global_batch_size = options.batch_per_rank * world_size;
    if (absl::Status s = CompletePlan(options, world_size, share.cores,
                                      fmt::format("generated-criteo-{}", generated.Name()), plan);
        !s.ok())
      return s;
    plan.train_samples = plan.small ? (generated.days - 1) * generated.rows_per_day : kTrainSamples;
    // The rules check the reference's evaluation set size; the demonstration
    // tiles its generated validation samples to it (DlrmSetup::TiledTo).
    plan.eval_samples = kEvalSamples;
    // Evaluations every twentieth of the epoch in whole steps, as the
    // reference's validation_freq_within_epoch; one epoch in all.
    const int64_t steps = plan.train_samples / plan.global_batch_size;
    const int64_t every = std::max<int64_t>(1, steps / kEvaluationsPerEpoch);
    plan.schedule = {.last_epoch = static_cast<int>(steps / every),
                     .interval_samples = every * plan.global_batch_size,
                     .samples_per_step = plan.global_batch_size,
                     .epoch_samples = plan.train_samples};
    if (absl::Status s =
            CheckMemory(member, plan, world_size,
                        options.gpus > 0 ? ops::DeviceMemoryTotalBytes() : share.memory_bytes);
        !s.ok())
      return s;
    return std::make_unique<DlrmSetup>(std::move(plan), recipe, std::move(member),
                                       std::move(generated));
  }
};

}  // namespace

std::unique_ptr<Benchmark> MakeBenchmark() { return std::make_unique<DlrmBenchmark>(); }

}  // namespace mlperf::benchmarks::dlrm_dcnv2
