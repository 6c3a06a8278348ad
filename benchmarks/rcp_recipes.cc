#include "benchmarks/rcp_recipes.h"

#include <algorithm>

#include "absl/status/status.h"
#include "base/check.h"
#include "fmt/format.h"
#include "quality_targets/embedded_rcp.h"

namespace mlperf::benchmarks {

absl::StatusOr<double> RcpReference::Number(std::string_view key) const {
  const json::Value* v = hyperparameters.Find(key);
  if (v == nullptr || !v->is_number()) {
    return absl::NotFoundError(fmt::format(
        "RCP reference at global batch size {} has no numeric {}", global_batch_size, key));
  }
  return v->as_float();
}

absl::StatusOr<std::vector<RcpReference>> ReadRcpReferences(std::string_view ruleset,
                                                            std::string_view benchmark) {
  const std::string path = fmt::format("{}/rcps_{}.json", ruleset, benchmark);
  for (const EmbeddedFile& file : EmbeddedRcpTables()) {
    if (path != file.path) continue;
    absl::StatusOr<json::Value> doc = json::Parse(file.text);
    const json::Value* records = doc.ok() ? doc->Find("records") : nullptr;
    if (records == nullptr || !records->is_array())
      return absl::DataLossError(fmt::format("embedded RCP table {} is malformed", path));
    std::vector<RcpReference> out;
    for (const json::Value& r : records->as_array()) {
      const json::Value* bs = r.Find("global_batch_size");
      const json::Value* hp = r.Find("hyperparameters");
      if (bs == nullptr || !bs->is_int() || hp == nullptr || !hp->is_object())
        return absl::DataLossError(fmt::format("embedded RCP table {} is malformed", path));
      out.push_back({.global_batch_size = bs->as_int(), .hyperparameters = *hp});
    }
    if (out.empty())
      return absl::DataLossError(fmt::format("embedded RCP table {} is empty", path));
    return out;
  }
  return absl::NotFoundError(fmt::format("no RCP table {} is embedded", path));
}

const RcpReference* SmallestDividing(const std::vector<RcpReference>& refs, int ranks) {
  const RcpReference* chosen = nullptr;
  for (const RcpReference& r : refs) {
    if (r.global_batch_size % ranks == 0 &&
        (chosen == nullptr || r.global_batch_size < chosen->global_batch_size))
      chosen = &r;
  }
  return chosen;
}

const RcpReference& Smallest(const std::vector<RcpReference>& refs) {
  MLPERF_CHECK(!refs.empty());
  return *std::min_element(refs.begin(), refs.end(), [](const auto& a, const auto& b) {
    return a.global_batch_size < b.global_batch_size;
  });
}

absl::StatusOr<RcpReference> ChooseRcp(std::string_view benchmark, int world_size, RunPlan& plan) {
  absl::StatusOr<std::vector<RcpReference>> refs = ReadRcpReferences(plan.ruleset, benchmark);
  if (!refs.ok()) return refs.status();
  const RcpReference* chosen = SmallestDividing(*refs, world_size);
  plan.rcp_batch_size = chosen != nullptr;
  if (chosen == nullptr) chosen = &Smallest(*refs);
  plan.global_batch_size = (chosen->global_batch_size + world_size - 1) / world_size * world_size;
  return *chosen;
}

}  // namespace mlperf::benchmarks
