#include "checker/package/rcp_health.h"

#include <algorithm>
#include <set>

#include "checker/package/numpy_stats.h"
#include "fmt/format.h"

namespace mlperf::package {
namespace {

std::string Num(double v) { return fmt::format("{:.6g}", v); }

// The pruned records the verdict compared with: the one at the package's
// batch size, or the two an interpolation stands between.
std::vector<const RcpRecord*> Compared(const RcpTable& table, const RcpRecord& record) {
  std::vector<const RcpRecord*> out;
  const RcpRecord* lo = nullptr;
  const RcpRecord* hi = nullptr;
  for (const RcpRecord& r : table.pruned()) {
    if (!record.interpolated) {
      if (r.global_batch_size == record.global_batch_size) return {&r};
      continue;
    }
    if (r.global_batch_size < record.global_batch_size &&
        (!lo || r.global_batch_size > lo->global_batch_size))
      lo = &r;
    if (r.global_batch_size > record.global_batch_size &&
        (!hi || r.global_batch_size < hi->global_batch_size))
      hi = &r;
  }
  if (lo && hi) out = {lo, hi};
  return out;
}

// The band of reference runs at the package's batch size: the fastest and
// slowest run of the record, or those of its two neighbours interpolated.
// Only convergence below it is noted: slower runs cost the submitter time,
// they do not flatter a score.
std::optional<std::pair<double, double>> Band(const RcpRecord& record,
                                              const std::vector<const RcpRecord*>& compared) {
  auto range = [](const RcpRecord& r) {
    return std::make_pair(*std::min_element(r.converge.begin(), r.converge.end()),
                          *std::max_element(r.converge.begin(), r.converge.end()));
  };
  for (const RcpRecord* r : compared) {
    if (r->converge.empty()) return std::nullopt;
  }
  if (compared.size() == 1) return range(*compared[0]);
  if (compared.size() != 2) return std::nullopt;
  const auto [lo_min, lo_max] = range(*compared[0]);
  const auto [hi_min, hi_max] = range(*compared[1]);
  const double x = static_cast<double>(record.global_batch_size);
  const double x0 = static_cast<double>(compared[0]->global_batch_size);
  const double x1 = static_cast<double>(compared[1]->global_batch_size);
  return std::make_pair(NumpyInterp(x, x0, x1, lo_min, hi_min),
                        NumpyInterp(x, x0, x1, lo_max, hi_max));
}

void BandNote(const RcpVerdict& v, const std::vector<const RcpRecord*>& compared,
              std::vector<std::string>& out) {
  if (!v.record || !v.submission_mean) return;
  const std::optional<std::pair<double, double>> band = Band(*v.record, compared);
  if (!band) return;
  const double mean = *v.submission_mean;
  const RcpRecord& r = *v.record;
  // "RCP not found but slower ...": a record at a smaller batch size, no band.
  if (!r.interpolated && (!v.global_batch_size.is_number() ||
                          v.global_batch_size.as_float() != static_cast<double>(r.global_batch_size)))
    return;
  const std::string against =
      fmt::format("RCP mean {} at batch size {}{}; {:+.1f}% from it{}", Num(r.mean),
                  r.global_batch_size, r.interpolated ? " (interpolated)" : "",
                  100.0 * (mean - r.mean) / r.mean,
                  r.stdev > 0 ? fmt::format(", {:+.1f} reference stdev", (mean - r.mean) / r.stdev)
                              : "");
  if (mean < band->first) {
    out.push_back(fmt::format(
        "converges faster than every reference run: olympic mean {} against the fastest "
        "reference run's {} ({}); a reference band this far off is worth a look "
        "(mlcommons/training #838)",
        Num(mean), Num(band->first), against));
  }
}

// The dropped records that would have taken part in this comparison: those
// between the kept records next below and above the package's batch size.
void DroppedRecordsNote(const RcpTable& table, const json::Value& batch_size,
                        std::vector<std::string>& out) {
  if (!batch_size.is_number()) return;
  const double bs = batch_size.as_float();
  double below = -1, above = 1e300;
  for (const RcpRecord& r : table.pruned()) {
    const double rbs = static_cast<double>(r.global_batch_size);
    if (rbs <= bs) below = std::max(below, rbs);
    if (rbs >= bs) above = std::min(above, rbs);
  }
  std::string list;
  for (const PrunedRecord& p : table.removed()) {
    const double rbs = static_cast<double>(p.record.global_batch_size);
    if (rbs < below || rbs > above) continue;
    if (!list.empty()) list += "; ";
    list += p.below_fastest
                ? fmt::format("{} (mean {}: below the batch size of the fastest-converging record)",
                              p.record.global_batch_size, Num(p.record.mean))
                : fmt::format("{} (mean {}: slower than the line from {} to {}, which gives {})",
                              p.record.global_batch_size, Num(p.record.mean), p.lo_batch_size,
                              p.hi_batch_size, Num(p.predicted_mean));
  }
  if (list.empty()) return;
  out.push_back(fmt::format(
      "the pruned RCP set of {} {} drops what this batch size would be compared with: {} "
      "(mlcommons/logging #367, #368)",
      table.ruleset(), table.benchmark(), list));
}

void HyperparameterNote(const RcpTable& table, const std::vector<const RcpRecord*>& compared,
                        std::vector<std::string>& out) {
  std::set<std::string> all;
  for (const RcpRecord& r : table.full()) {
    if (!r.hyperparameters.is_object()) continue;
    for (const auto& [k, v] : r.hyperparameters.as_object()) all.insert(k);
  }
  for (const RcpRecord* r : compared) {
    std::string missing;
    for (const std::string& k : all) {
      if (!r->hyperparameters.is_object() || !r->hyperparameters.Find(k))
        missing += (missing.empty() ? "" : ", ") + k;
    }
    if (!r->hyperparameters.is_object() || r->hyperparameters.as_object().empty()) {
      out.push_back(fmt::format(
          "RCP record {} lists no hyperparameters (mlcommons/logging #142): what the reference "
          "ran at batch size {} cannot be compared",
          r->name, r->global_batch_size));
    } else if (!missing.empty()) {
      out.push_back(fmt::format(
          "RCP record {} does not list {}, which other records of the table give "
          "(mlcommons/logging #142): the reference's setting at batch size {} is unknown",
          r->name, missing, r->global_batch_size));
    }
  }
}

}  // namespace

std::vector<std::string> RcpHealthNotes(const RcpVerdict& verdict, const std::string& ruleset) {
  std::vector<std::string> out;
  absl::StatusOr<RcpTable> table = RcpTable::Embedded(ruleset, verdict.benchmark);
  if (!table.ok()) return out;
  const std::vector<const RcpRecord*> compared =
      verdict.record ? Compared(*table, *verdict.record) : std::vector<const RcpRecord*>{};
  BandNote(verdict, compared, out);
  DroppedRecordsNote(*table, verdict.global_batch_size, out);
  HyperparameterNote(*table, compared, out);
  return out;
}

}  // namespace mlperf::package
