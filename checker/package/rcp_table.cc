#include "checker/package/rcp_table.h"

#include <algorithm>

#include "base/json.h"
#include "checker/package/numpy_stats.h"
#include "checker/package/olympic_mean.h"
#include "checker/package/rcp_min_epochs.h"
#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"
#include "quality_targets/embedded_rcp.h"

namespace mlperf::package {
namespace {

void ComputeStats(RcpRecord& r, int submission_runs) {
  std::sort(r.converge.begin(), r.converge.end());
  const int drop = meta::OlympicDropPerSide(r.benchmark);
  r.mean = OlympicMean(r.converge, drop);
  r.stdev = NumpyPopulationStdev(r.converge);
  const int n_ref = static_cast<int>(r.converge.size()) - 2 * drop;
  r.min_epochs = RcpMinEpochs(r.mean, r.stdev, n_ref, submission_runs);
  r.max_speedup = r.mean / r.min_epochs;
}

// The records from the first fastest-converging one on (by batch size).
std::vector<const RcpRecord*> FastestOnward(const std::vector<RcpRecord>& full) {
  auto fastest =
      std::min_element(full.begin(), full.end(),
                       [](const RcpRecord& a, const RcpRecord& b) { return a.mean < b.mean; });
  std::vector<const RcpRecord*> out;
  for (const RcpRecord& r : full) {
    if (r.global_batch_size >= fastest->global_batch_size) out.push_back(&r);
  }
  return out;
}

// Whether `mid` converges slower than the line between its neighbours.
bool AboveLine(const RcpTable& table, const RcpRecord& mid, const RcpRecord& lo,
               const RcpRecord& hi) {
  return mid.mean > table.Interpolate(mid.global_batch_size, lo, hi).mean;
}

// The official tool keeps every record whose (benchmark, batch size)
// survived, so duplicates of a kept batch size stay too.
std::vector<RcpRecord> RecordsAt(const std::vector<RcpRecord>& full,
                                 const std::vector<const RcpRecord*>& kept) {
  std::vector<RcpRecord> out;
  for (const RcpRecord& r : full) {
    for (const RcpRecord* k : kept) {
      if (k->benchmark == r.benchmark && k->global_batch_size == r.global_batch_size) {
        out.push_back(r);
        break;
      }
    }
  }
  return out;
}

absl::Status Invalid(const std::string& source, const std::string& what) {
  return absl::InvalidArgumentError(fmt::format("{}: {}", source, what));
}

}  // namespace

bool RcpCheckerSupportsRuleset(const std::string& ruleset) {
  const std::vector<std::string>& known = meta::RcpRulesets();
  return std::find(known.begin(), known.end(), ruleset) != known.end();
}

absl::StatusOr<RcpTable> RcpTable::FromJson(std::string_view text, const std::string& source) {
  absl::StatusOr<json::Value> doc = json::Parse(text, {.encoding = json::Encoding::kUtf8});
  if (!doc.ok()) return Invalid(source, std::string(doc.status().message()));
  const json::Value* ruleset = doc->Find("ruleset");
  const json::Value* benchmark = doc->Find("benchmark");
  const json::Value* records = doc->Find("records");
  if (!ruleset || !ruleset->is_string() || !benchmark || !benchmark->is_string() || !records ||
      !records->is_array()) {
    return Invalid(source,
                   "expected an object with string 'ruleset', 'benchmark' and array 'records'");
  }
  RcpTable table;
  table.ruleset_ = ruleset->as_string();
  table.benchmark_ = benchmark->as_string();
  std::optional<int> runs = meta::RcpRuns(table.benchmark_);
  if (!runs) {
    return Invalid(source, fmt::format("no submission run count for benchmark '{}' (the official "
                                       "RCP checker fails on it too)",
                                       table.benchmark_));
  }
  table.submission_runs_ = *runs;
  for (size_t i = 0; i < records->as_array().size(); ++i) {
    const json::Value& rec = records->as_array()[i];
    const json::Value* name = rec.Find("name");
    const json::Value* rec_benchmark = rec.Find("benchmark");
    const json::Value* bs = rec.Find("global_batch_size");
    const json::Value* converge = rec.Find("converge");
    if (!name || !name->is_string() || !rec_benchmark || !rec_benchmark->is_string() || !bs ||
        !bs->is_int() || bs->is_big_int() || !converge || !converge->is_array()) {
      return Invalid(source,
                     fmt::format("record {}: expected string 'name' and 'benchmark', integer "
                                 "'global_batch_size' and array 'converge'",
                                 i));
    }
    RcpRecord r{.name = name->as_string(),
                .benchmark = rec_benchmark->as_string(),
                .global_batch_size = bs->as_int()};
    if (const json::Value* h = rec.Find("hyperparameters"); h && h->is_object())
      r.hyperparameters = *h;
    for (const json::Value& v : converge->as_array()) {
      if (!v.is_number())
        return Invalid(source, fmt::format("record {}: 'converge' holds a non-number", i));
      r.converge.push_back(v.as_float());
    }
    ComputeStats(r, table.submission_runs_);
    table.full_.push_back(std::move(r));
  }
  std::stable_sort(table.full_.begin(), table.full_.end(),
                   [](const RcpRecord& a, const RcpRecord& b) {
                     return a.global_batch_size < b.global_batch_size;
                   });

  if (!table.full_.empty()) {
    // Pruning (spec 6.4, HEAD): drop batch sizes below the fastest-converging
    // record, then every record slower than the interpolation of its
    // neighbours, without going back after a removal.
    std::vector<const RcpRecord*> kept = FastestOnward(table.full_);
    std::vector<PrunedRecord> removed;
    for (const RcpRecord& r : table.full_) {
      if (r.global_batch_size < kept.front()->global_batch_size)
        removed.push_back({.record = r, .below_fastest = true});
    }
    for (size_t i = 1; i + 1 < kept.size();) {
      if (AboveLine(table, *kept[i], *kept[i - 1], *kept[i + 1])) {
        removed.push_back({.record = *kept[i],
                           .lo_batch_size = kept[i - 1]->global_batch_size,
                           .hi_batch_size = kept[i + 1]->global_batch_size,
                           .predicted_mean = table.Interpolate(kept[i]->global_batch_size,
                                                               *kept[i - 1], *kept[i + 1])
                                                 .mean});
        kept.erase(kept.begin() + i);
      } else {
        ++i;
      }
    }
    table.pruned_ = RecordsAt(table.full_, kept);
    // A duplicate of a kept batch size stays (RecordsAt), so it is not removed.
    std::erase_if(removed, [&](const PrunedRecord& p) {
      return std::any_of(kept.begin(), kept.end(), [&](const RcpRecord* k) {
        return k->global_batch_size == p.record.global_batch_size;
      });
    });
    std::stable_sort(removed.begin(), removed.end(), [](const auto& a, const auto& b) {
      return a.record.global_batch_size < b.record.global_batch_size;
    });
    table.removed_ = std::move(removed);

    // The lower convex envelope: the same test, repeated on the last kept
    // point whenever a new one arrives (Andrew's monotone chain).
    std::vector<const RcpRecord*> hull;
    for (const RcpRecord* r : FastestOnward(table.full_)) {
      while (hull.size() >= 2 && AboveLine(table, *hull.back(), *hull[hull.size() - 2], *r))
        hull.pop_back();
      hull.push_back(r);
    }
    table.envelope_ = RecordsAt(table.full_, hull);
  }
  return table;
}

absl::StatusOr<RcpTable> RcpTable::Embedded(const std::string& ruleset,
                                            const std::string& benchmark) {
  const std::string path = fmt::format("{}/rcps_{}.json", ruleset, benchmark);
  for (const EmbeddedFile& f : ::mlperf::EmbeddedRcpTables()) {
    if (path == f.path) return FromJson(f.text, "quality_targets/rcp/" + path);
  }
  return absl::NotFoundError(
      fmt::format("no RCP data for benchmark '{}' in ruleset {}", benchmark, ruleset));
}

RcpRecord RcpTable::Interpolate(int64_t global_batch_size, const RcpRecord& lo,
                                const RcpRecord& hi) const {
  const double x = static_cast<double>(global_batch_size);
  const double x0 = static_cast<double>(lo.global_batch_size);
  const double x1 = static_cast<double>(hi.global_batch_size);
  RcpRecord r{.name = fmt::format("{}_interp_{}", benchmark_, global_batch_size),
              .benchmark = benchmark_,
              .global_batch_size = global_batch_size,
              .interpolated = true};
  r.mean = NumpyInterp(x, x0, x1, lo.mean, hi.mean);
  r.stdev = NumpyInterp(x, x0, x1, lo.stdev, hi.stdev);
  r.min_epochs = RcpMinEpochs(r.mean, r.stdev, 2 * submission_runs_, submission_runs_);
  r.max_speedup = r.mean / r.min_epochs;
  return r;
}

std::vector<std::pair<std::string, std::string>> EmbeddedRcpTables() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const EmbeddedFile& f : ::mlperf::EmbeddedRcpTables()) {
    const std::string_view path = f.path;  // "<ruleset>/rcps_<benchmark>.json"
    const size_t slash = path.find('/');
    const std::string_view file = path.substr(slash + 1);
    constexpr std::string_view kPrefix = "rcps_", kSuffix = ".json";
    out.emplace_back(
        std::string(path.substr(0, slash)),
        std::string(file.substr(kPrefix.size(), file.size() - kPrefix.size() - kSuffix.size())));
  }
  return out;
}

}  // namespace mlperf::package
