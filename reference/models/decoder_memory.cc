#include "reference/models/decoder_memory.h"

#include "base/check.h"
#include "fmt/format.h"

namespace mlperf::models {

namespace {

constexpr double kGiB = 1 << 30;

bool Divides(int tp, const DecoderConfig& c) {
  return c.heads % tp == 0 && c.kv_heads % tp == 0 && c.intermediate % tp == 0 &&
         c.vocab_size % tp == 0;
}

}  // namespace

DecoderMemory PlanDecoderMemory(const DecoderConfig& config, const DecoderLayout& layout) {
  MLPERF_CHECK(layout.tp >= 1 && layout.dp >= 1 && layout.micro_batch >= 1);
  DecoderConfig c = config;
  c.recompute = layout.recompute;
  const Model::ArenaBytes whole = Decoder::Measure(c, layout.micro_batch, layout.tp);
  DecoderMemory m;
  m.weights = whole.params;
  m.frozen = whole.frozen;
  m.gradients = whole.grads;
  // AdamW's first and second moments, fp32, per trainable element.
  const int64_t state = 2 * whole.params;
  m.optimizer = layout.distributed_optimizer ? (state + layout.dp - 1) / layout.dp : state;
  m.activations = whole.activations;  // with recomputation, one layer's and every output
  return m;
}

std::vector<DecoderLayout> CandidateLayouts(const DecoderConfig& config, int ranks,
                                            int64_t micro_batch) {
  std::vector<DecoderLayout> out;
  for (int tp = 1; tp <= ranks; ++tp) {
    if (ranks % tp != 0 || !Divides(tp, config)) continue;
    for (bool recompute : {false, true})
      out.push_back({.tp = tp,
                     .dp = ranks / tp,
                     .micro_batch = micro_batch,
                     .distributed_optimizer = true,
                     .recompute = recompute});
  }
  return out;
}

absl::StatusOr<DecoderPlan> ChooseDecoderLayout(const DecoderConfig& config, int ranks,
                                                int64_t micro_batch, int64_t limit_bytes,
                                                std::vector<DecoderPlan>* tried) {
  std::vector<DecoderPlan> plans;
  for (const DecoderLayout& layout : CandidateLayouts(config, ranks, micro_batch)) {
    DecoderPlan plan{.layout = layout, .memory = PlanDecoderMemory(config, layout)};
    plan.fits = plan.memory.total() <= limit_bytes;
    plans.push_back(plan);
  }
  if (tried != nullptr) *tried = plans;
  for (const DecoderPlan& plan : plans)
    if (plan.fits) return plan;
  if (plans.empty())
    return absl::InvalidArgumentError(fmt::format(
        "no tensor-parallel degree dividing {} ranks divides the heads, key/value heads, SwiGLU "
        "width and vocabulary",
        ranks));
  const DecoderPlan* least = &plans.front();
  for (const DecoderPlan& plan : plans)
    if (plan.memory.total() < least->memory.total()) least = &plan;
  return absl::ResourceExhaustedError(
      fmt::format("no layout of {} rank{} fits {:.1f} GiB per rank; the smallest, {}, needs "
                  "{:.1f} GiB",
                  ranks, ranks == 1 ? "" : "s", static_cast<double>(limit_bytes) / kGiB,
                  DescribeDecoderPlan(*least), static_cast<double>(least->memory.total()) / kGiB));
}

std::string DescribeDecoderPlan(const DecoderPlan& plan) {
  const DecoderLayout& l = plan.layout;
  const DecoderMemory& m = plan.memory;
  const std::string weights =
      m.frozen > 0
          ? fmt::format("frozen base {:.1f} GiB, adapters {:.2f} GiB",
                        static_cast<double>(m.frozen) / kGiB, static_cast<double>(m.weights) / kGiB)
          : fmt::format("weights {:.1f} GiB", static_cast<double>(m.weights) / kGiB);
  return fmt::format(
      "tp {} x dp {}, micro batch {}{}: {}, gradients {:.1f} GiB, optimizer {:.1f} GiB, "
      "activations {:.1f} GiB",
      l.tp, l.dp, l.micro_batch, l.recompute ? ", recomputing activations" : "", weights,
      static_cast<double>(m.gradients) / kGiB, static_cast<double>(m.optimizer) / kGiB,
      static_cast<double>(m.activations) / kGiB);
}

}  // namespace mlperf::models
