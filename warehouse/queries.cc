#include "warehouse/queries.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "fmt/format.h"

namespace mlperf::warehouse {
namespace {

using Row = std::vector<DbValue>;

bool IsNull(const DbValue& v) { return std::holds_alternative<std::monostate>(v); }

int Compare(const DbValue& a, const DbValue& b) {
  if (IsNull(a) || IsNull(b)) return IsNull(a) == IsNull(b) ? 0 : IsNull(a) ? 1 : -1;
  const bool an = !std::holds_alternative<std::string>(a),
             bn = !std::holds_alternative<std::string>(b);
  if (an && bn) {
    const double x = ValueNumber(a), y = ValueNumber(b);
    return x < y ? -1 : y < x ? 1 : 0;
  }
  if (an != bn) return an ? -1 : 1;
  const int c = std::get<std::string>(a).compare(std::get<std::string>(b));
  return (c > 0) - (c < 0);
}

// The closed results that passed, with their systems: the base of the
// time-to-train questions.
constexpr std::string_view kPassedResults = R"sql(
SELECT p.round, r.benchmark, s.accelerators, r.score, p.submitter, r.system,
       s.accelerator_model_name
FROM results r
JOIN packages p ON p.package = r.package
JOIN systems s ON s.package = r.package AND s.system = r.system
WHERE r.verdict = 'PASS' AND r.score IS NOT NULL AND r.division = ?
  AND (? = '' OR r.benchmark = ?) AND (? = '' OR p.round = ?)
)sql";

absl::StatusOr<QueryResult> PassedResults(Database& db, const QueryFilters& f) {
  return db.Query(kPassedResults, {f.division, f.benchmark, f.benchmark, f.round, f.round});
}

// The fastest result per (round, benchmark, accelerator count); ties all kept.
absl::StatusOr<QueryResult> Best(Database& db, const QueryFilters& f) {
  absl::StatusOr<QueryResult> base = PassedResults(db, f);
  if (!base.ok()) return base;
  std::map<std::tuple<std::string, std::string, double>, double> best;
  for (const Row& r : base->rows) {
    auto key =
        std::make_tuple(ValueText(r[0]), ValueText(r[1]), IsNull(r[2]) ? -1.0 : ValueNumber(r[2]));
    auto [it, fresh] = best.emplace(key, ValueNumber(r[3]));
    if (!fresh) it->second = std::min(it->second, ValueNumber(r[3]));
  }
  QueryResult out{
      {"round", "benchmark", "accelerators", "minutes", "submitter", "system", "accelerator"}, {}};
  for (const Row& r : base->rows) {
    auto key =
        std::make_tuple(ValueText(r[0]), ValueText(r[1]), IsNull(r[2]) ? -1.0 : ValueNumber(r[2]));
    if (ValueNumber(r[3]) == best.at(key)) out.rows.push_back(r);
  }
  return out;
}

// Accelerator-minutes (time to train times accelerators; lower is better)
// and trainings per accelerator-hour, the best per round, benchmark and
// accelerator model.
absl::StatusOr<QueryResult> Throughput(Database& db, const QueryFilters& f) {
  absl::StatusOr<QueryResult> base = PassedResults(db, f);
  if (!base.ok()) return base;
  std::map<std::tuple<std::string, std::string, std::string>, Row> best;
  for (const Row& r : base->rows) {
    if (IsNull(r[2]) || ValueNumber(r[2]) <= 0) continue;
    const double acc_minutes = ValueNumber(r[3]) * ValueNumber(r[2]);
    Row row = {r[0], r[1], r[6], r[2], r[3], acc_minutes, FiniteOrNull(60.0 / acc_minutes),
               r[4], r[5]};
    auto key = std::make_tuple(ValueText(r[0]), ValueText(r[1]), ValueText(r[6]));
    auto it = best.find(key);
    if (it == best.end() || acc_minutes < ValueNumber(it->second[5]) ||
        (acc_minutes == ValueNumber(it->second[5]) && Compare(row[8], it->second[8]) < 0))
      best[key] = row;
  }
  QueryResult out{{"round", "benchmark", "accelerator", "accelerators", "minutes",
                   "accelerator_minutes", "trainings_per_accelerator_hour", "submitter", "system"},
                  {}};
  for (auto& [key, row] : best) out.rows.push_back(row);
  return out;
}

// Time to train against accelerator count: the best per count, with the
// speed-up and the efficiency against the smallest count of the same round.
absl::StatusOr<QueryResult> Scaling(Database& db, const QueryFilters& f) {
  absl::StatusOr<QueryResult> best = Best(db, f);
  if (!best.ok()) return best;
  std::map<std::pair<std::string, std::string>, std::pair<double, double>>
      smallest;  // acc, minutes
  // Systems without accelerators (CPU-only) have no count to scale over.
  const auto counted = [](const Row& r) { return !IsNull(r[2]) && ValueNumber(r[2]) > 0; };
  for (const Row& r : best->rows) {
    if (!counted(r)) continue;
    auto key = std::make_pair(ValueText(r[0]), ValueText(r[1]));
    auto it = smallest.find(key);
    if (it == smallest.end() || ValueNumber(r[2]) < it->second.first)
      smallest[key] = {ValueNumber(r[2]), ValueNumber(r[3])};
  }
  QueryResult out{{"round", "benchmark", "accelerators", "minutes", "speedup", "efficiency",
                   "submitter", "system"},
                  {}};
  for (const Row& r : best->rows) {
    if (!counted(r)) continue;
    const auto [acc0, t0] = smallest.at({ValueText(r[0]), ValueText(r[1])});
    const double speedup = t0 / ValueNumber(r[3]);
    out.rows.push_back({r[0], r[1], r[2], r[3], FiniteOrNull(speedup),
                        FiniteOrNull(speedup * acc0 / ValueNumber(r[2])), r[4], r[5]});
  }
  return out;
}

absl::StatusOr<QueryResult> History(Database& db, const QueryFilters& f) {
  if (f.system.empty() && f.submitter.empty())
    return absl::InvalidArgumentError("history: give --system or --submitter");
  return db.Query(R"sql(
SELECT p.round, p.submitter, r.system, r.benchmark, r.division, s.accelerators, r.verdict,
       r.runs, r.compliant_runs, r.score, r.rcp_status, r.rcp_scaling_factor
FROM results r
JOIN packages p ON p.package = r.package
LEFT JOIN systems s ON s.package = r.package AND s.system = r.system
WHERE (? = '' OR r.system = ? OR s.system_name = ?)
  AND (? = '' OR p.submitter = ? OR s.submitter = ?)
  AND (? = '' OR r.benchmark = ?)
)sql",
                  {f.system, f.system, f.system, f.submitter, f.submitter, f.submitter, f.benchmark,
                   f.benchmark});
}

// Published scores against ours: every published score whose package is
// stored and whose recomputed score is missing or differs by more than the
// tolerance (minutes, as compliance_check --claims compares).
absl::StatusOr<QueryResult> ScoreDiffs(Database& db, const QueryFilters& f) {
  absl::StatusOr<QueryResult> base = db.Query(R"sql(
SELECT ps.round, ps.submitter, ps.system, ps.benchmark, ps.minutes, r.score,
       r.rcp_scaling_factor, r.olympic_mean, r.verdict, ps.source
FROM published_scores ps
JOIN packages p ON p.round = ps.round AND p.submitter = ps.submitter
LEFT JOIN results r ON r.package = p.package AND r.system = ps.system
                   AND r.benchmark = ps.benchmark
WHERE (? = '' OR ps.benchmark = ?) AND (? = '' OR ps.round = ?)
)sql",
                                              {f.benchmark, f.benchmark, f.round, f.round});
  if (!base.ok()) return base;
  QueryResult out{{"round", "submitter", "system", "benchmark", "published", "recomputed",
                   "difference", "relative", "rcp_scaling_factor", "unscaled", "verdict", "source"},
                  {}};
  for (const Row& r : base->rows) {
    const double published = ValueNumber(r[4]), ours = ValueNumber(r[5]);
    const double diff = ours - published;
    const double rel = diff / std::abs(published);
    if (!IsNull(r[5]) && std::abs(diff) <= f.tolerance) continue;
    out.rows.push_back({r[0], r[1], r[2], r[3], r[4], r[5], FiniteOrNull(diff), FiniteOrNull(rel),
                        r[6], r[7], r[8], r[9]});
  }
  return out;
}

// A package's convergence against the reference band: the olympic mean of
// its runs' epochs (or samples) to converge, the RCP record's fastest
// accepted mean (rcp_min_epochs) and mean, and each run's convergence.
absl::StatusOr<QueryResult> Rcp(Database& db, const QueryFilters& f) {
  if (f.package.empty())
    return absl::InvalidArgumentError("rcp: give --package (e.g. v3.0/NVIDIA)");
  absl::StatusOr<QueryResult> base = db.Query(R"sql(
SELECT r.package, r.system, r.benchmark, r.global_batch_size, r.runs, r.convergence_mean,
       r.rcp_record, r.rcp_min_epochs, r.rcp_mean, r.rcp_stdev, r.rcp_status, r.rcp_message,
       r.rcp_scaling_factor
FROM results r WHERE r.package = ? AND (? = '' OR r.benchmark = ?)
)sql",
                                              {f.package, f.benchmark, f.benchmark});
  if (!base.ok()) return base;
  absl::StatusOr<QueryResult> runs = db.Query(
      "SELECT system, benchmark, run, convergence FROM runs WHERE package = ?", {f.package});
  if (!runs.ok()) return runs;
  SortRows(*runs);
  QueryResult out{
      {"package", "system", "benchmark", "global_batch_size", "runs", "convergence_mean",
       "rcp_record", "rcp_min_epochs", "rcp_mean", "rcp_stdev", "mean_over_rcp", "rcp_status",
       "rcp_message", "rcp_scaling_factor", "run_convergence"},
      {}};
  for (const Row& r : base->rows) {
    std::string each;
    for (const Row& run : runs->rows) {
      if (ValueText(run[0]) != ValueText(r[1]) || ValueText(run[1]) != ValueText(r[2])) continue;
      each += fmt::format("{}{}={}", each.empty() ? "" : " ", ValueText(run[2]),
                          IsNull(run[3]) ? "-" : ValueText(run[3]));
    }
    Row row(r.begin(), r.begin() + 10);
    row.push_back(FiniteOrNull(ValueNumber(r[5]) / ValueNumber(r[8])));
    row.insert(row.end(), {r[10], r[11], r[12], each});
    out.rows.push_back(std::move(row));
  }
  return out;
}

}  // namespace

const std::vector<NamedQuery>& NamedQueries() {
  static const std::vector<NamedQuery> kQueries = {
      {"best", "the fastest passing result per round, benchmark and accelerator count",
       "--benchmark --round --division"},
      {"throughput",
       "accelerator-minutes and trainings per accelerator-hour, best per round, benchmark and "
       "accelerator model",
       "--benchmark --round --division"},
      {"history", "one system's or submitter's results over the rounds",
       "--system or --submitter, --benchmark"},
      {"scaling", "time to train against accelerator count, speed-up and efficiency per round",
       "--benchmark --round --division"},
      {"score-diffs", "published scores that differ from the recomputed ones (results_db publish)",
       "--benchmark --round --tolerance"},
      {"rcp", "a package's convergence against the RCP reference band", "--package, --benchmark"},
  };
  return kQueries;
}

absl::StatusOr<QueryResult> RunNamedQuery(Database& db, std::string_view name,
                                          const QueryFilters& filters) {
  absl::StatusOr<QueryResult> r;
  if (name == "best")
    r = Best(db, filters);
  else if (name == "throughput")
    r = Throughput(db, filters);
  else if (name == "history")
    r = History(db, filters);
  else if (name == "scaling")
    r = Scaling(db, filters);
  else if (name == "score-diffs")
    r = ScoreDiffs(db, filters);
  else if (name == "rcp")
    r = Rcp(db, filters);
  else {
    std::string names;
    for (const NamedQuery& q : NamedQueries())
      names += fmt::format("{}{}", names.empty() ? "" : ", ", q.name);
    return absl::InvalidArgumentError(fmt::format("unknown query '{}'; known: {}", name, names));
  }
  if (r.ok()) SortRows(*r);
  return r;
}

void SortRows(QueryResult& result) {
  std::stable_sort(result.rows.begin(), result.rows.end(), [](const Row& a, const Row& b) {
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (int c = Compare(a[i], b[i]); c != 0) return c < 0;
    }
    return false;
  });
}

}  // namespace mlperf::warehouse
