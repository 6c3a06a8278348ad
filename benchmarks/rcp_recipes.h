// The reference runs behind each RCP (quality_targets/rcp/<ruleset>/
// rcps_<benchmark>.json, embedded): their global batch sizes and the
// hyperparameters they used, from which closed recipes per scale are built,
// so no RCP number is typed into C++.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/json.h"
#include "benchmarks/plan.h"

namespace mlperf::benchmarks {

struct RcpReference {
  int64_t global_batch_size = 0;
  json::Value hyperparameters;  // an object, e.g. {"opt_base_learning_rate": 10.5, ...}

  // A numeric hyperparameter; NotFound naming the key and batch size if absent.
  absl::StatusOr<double> Number(std::string_view key) const;
};

// The references of `benchmark` in `ruleset`, in the table's order (at
// least one). An unknown, malformed or empty table is an error naming it.
absl::StatusOr<std::vector<RcpReference>> ReadRcpReferences(std::string_view ruleset,
                                                            std::string_view benchmark);

// The reference with the smallest global batch that `ranks` processes split
// evenly (null when none does), and the smallest of all.
const RcpReference* SmallestDividing(const std::vector<RcpReference>& refs, int ranks);
const RcpReference& Smallest(const std::vector<RcpReference>& refs);

// The RCP reference whose batch the closed recipe takes: the smallest batch
// `world_size` data-parallel ranks divide; else the smallest, its batch
// rounded up to a multiple of the ranks (the package then needs the
// bypass). Sets plan.global_batch_size and plan.rcp_batch_size.
absl::StatusOr<RcpReference> ChooseRcp(std::string_view benchmark, int world_size, RunPlan& plan);

}  // namespace mlperf::benchmarks
