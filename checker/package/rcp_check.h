// The RCP verdict for one benchmark directory (spec 6.5, check_directory,
// HEAD): is the submission's olympic mean convergence at or above the
// minimum acceptable mean of the matching (or interpolated) RCP, and by what
// factor must its score be normalised when it converges faster than the RCP
// mean.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checker/package/rcp_convergence.h"
#include "checker/package/rcp_table.h"

namespace mlperf::package {

// Official --rcp_pass pruned_rcps | full_rcps; kEnvelope: the lower convex
// envelope (RcpTable::envelope), for the report's pruning note only.
enum class RcpPass { kPruned, kFull, kEnvelope };

struct RcpCheckOptions {
  std::string ruleset;
  RcpPass pass = RcpPass::kPruned;  // package_checker and result_summarizer use pruned
  bool bypass = false;              // --rcp-bypass (package_checker_params "rcp-bypass")
  bool bert_train_samples = false;
};

struct RcpVerdict {
  bool passed = false;
  // The official message: "RCP found", "RCP Interpolation", "RCP not found but
  // slower convergence on smaller batch size", "Missing RCP, please submit RCP
  // with BS = <bs>", "Cannot find any RCPs", "Could not detect
  // global_batch_size", "Insufficient convergence"; plus " passed using
  // rcp_bypass" when the bypass turned a failure into a pass.
  std::string message;
  // RCP mean / submission mean, at least 1 (check_directory's third value).
  double normalization_factor = 1.0;
  // The record compared with, when there was one; the submission's olympic mean.
  std::optional<RcpRecord> record;
  std::optional<double> submission_mean;
  // Whether the comparison ran. Under package_checker it then deletes the
  // directory's scaling.json and writes `scaling_factor_written` if set (pass
  // and faster than the RCP mean); otherwise any scaling.json stays untouched.
  bool compared = false;
  std::optional<double> scaling_factor_written;

  json::Value global_batch_size = json::Value(-1);
  std::string benchmark;
  std::vector<double> run_epochs;  // per run, in file order; 1e9 when not converged
  int unconverged_runs = 0;
  std::vector<std::string> warnings;  // the official WARNING lines, our wording
};

// `result_files` are the directory's result_*.txt, in the order to read them.
// An error where the official tool raises instead of returning a verdict
// (mismatched batch sizes or benchmarks, an unknown benchmark, no RCP file for
// it, an unsupported ruleset, a log the convergence reader cannot take).
absl::StatusOr<RcpVerdict> CheckRcpDirectory(const std::vector<std::string>& result_files,
                                             const RcpCheckOptions& options);

// The same over logs already parsed.
absl::StatusOr<RcpVerdict> CheckRcpLogs(const std::vector<const mllog::ParsedLog*>& logs,
                                        const RcpCheckOptions& options);
absl::StatusOr<RcpVerdict> CheckRcpLogs(const std::vector<mllog::ParsedLog>& logs,
                                        const RcpCheckOptions& options);

// Where the directory's RCP table prunes differently when kept points are
// re-tested (RcpTable::envelope): the batch sizes only the official pruning
// keeps, and the verdict against the envelope instead. A note for reviewers;
// the official verdict stands.
struct PruningNote {
  std::vector<int64_t> kept_above_envelope;
  RcpVerdict envelope;
  bool verdict_differs = false;
  bool factor_differs = false;
};

// nullopt when both prunings keep the same records, or the table is missing.
std::optional<PruningNote> CheckPruningNote(const std::vector<const mllog::ParsedLog*>& logs,
                                            const RcpVerdict& official,
                                            const RcpCheckOptions& options);

}  // namespace mlperf::package
