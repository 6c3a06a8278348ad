#include "checker/package/ruleset_guess.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_join.h"
#include "checker/engine.h"
#include "checker/package/layout.h"
#include "checker/package/system_desc.h"
#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"

namespace mlperf::package {
namespace {

// Logs re-checked under every other ruleset: one failing log per directory,
// at most this many, so that the note costs a bounded time.
constexpr size_t kMaxSampledLogs = 8;

bool Allows(const std::string& ruleset, const std::string& benchmark) {
  const std::vector<std::string> allowed = meta::AllowedBenchmarks(ruleset);
  return std::find(allowed.begin(), allowed.end(), benchmark) != allowed.end();
}

}  // namespace

std::optional<std::string> RulesetGuessNote(const OrgReport& report,
                                            const checker::RuleLibrary& rules) {
  std::set<std::string> benchmarks;
  for (const BenchmarkDirReport& d : report.dirs) benchmarks.insert(d.benchmark);
  if (benchmarks.empty()) return std::nullopt;
  const std::string& given = report.ruleset;
  std::vector<std::string> not_allowed;
  for (const std::string& b : benchmarks) {
    if (!Allows(given, b)) not_allowed.push_back(b);
  }
  // A few failing logs are the package's own problem; most of them failing
  // here and the sampled ones complying there point to another round.
  int runs = 0, failing = 0;
  for (const BenchmarkDirReport& d : report.dirs) {
    for (const RunDetail& r : d.runs) {
      if (r.log.input_error) continue;
      ++runs;
      failing += r.log.compliant() ? 0 : 1;
    }
  }
  if (not_allowed.empty() && 2 * failing < runs) return std::nullopt;

  // The rulesets that allow every benchmark folder of the package.
  std::vector<std::string> fitting;
  for (const std::string& r : rules.Rulesets()) {
    if (r != given && std::all_of(benchmarks.begin(), benchmarks.end(),
                                  [&](const std::string& b) { return Allows(r, b); }))
      fitting.push_back(r);
  }
  if (fitting.empty()) return std::nullopt;

  // One log per directory that fails here or was skipped, parsed once and
  // re-checked under each fitting ruleset, one log in memory at a time.
  std::vector<int> complying(fitting.size(), 0);
  int sampled = 0;
  std::string first_sampled;
  for (const BenchmarkDirReport& d : report.dirs) {
    if (sampled >= static_cast<int>(kMaxSampledLogs)) break;
    std::optional<std::string> name;
    if (d.skipped) {
      absl::StatusOr<std::vector<DirEntry>> files = ListDir(d.location);
      if (files.ok()) {
        for (const DirEntry& f : *files) {
          if (IsResultLogName(f.name) && f.is_regular && (!name || f.name < *name)) name = f.name;
        }
      }
    } else {
      for (const RunDetail& r : d.runs) {
        if (!r.log.compliant() && !r.log.input_error) {
          name = r.stem + ".txt";
          break;
        }
      }
    }
    if (!name) continue;
    absl::StatusOr<mllog::ParsedLog> log = ParseResultLog(d.location / *name);
    if (!log.ok()) continue;
    if (sampled++ == 0) first_sampled = DisplayPath(d.location / *name);
    for (size_t i = 0; i < fitting.size(); ++i)
      complying[i] += checker::CheckLog(*log, rules, fitting[i]).compliant() ? 1 : 0;
  }
  // Descriptions valid under a ruleset break ties (a 3.x "onprem" status
  // fails from 4.0.0 on).
  auto valid_descriptions = [&](const std::string& ruleset) {
    int n = 0;
    for (const SystemReport& sys : report.systems)
      n += sys.desc_loaded && CheckSystemDesc(sys.desc, ruleset).valid ? 1 : 0;
    return n;
  };
  std::vector<std::string> best;
  std::pair<int, int> best_score{-1, -1};
  for (size_t i = 0; i < fitting.size(); ++i) {
    const std::pair<int, int> score{complying[i], valid_descriptions(fitting[i])};
    if (score > best_score) best.clear();
    if (score >= best_score) {
      best.push_back(fitting[i]);
      best_score = score;
    }
  }
  const int best_complying = best_score.first;
  const bool one = best.size() == 1;
  const std::string names = one ? "ruleset " + best[0] : "rulesets " + absl::StrJoin(best, ", ");
  if (!not_allowed.empty()) {
    return fmt::format(
        "{} {} this package better than {}: {} does not allow {} (skipped), {} every "
        "benchmark folder{}",
        names, one ? "fits" : "fit equally", given, given, absl::StrJoin(not_allowed, ", "),
        one ? "it allows" : "each allows",
        sampled == 0 ? ""
                     : fmt::format(", and {} of {} sampled log(s) comply under {}", best_complying,
                                   sampled, one ? "it" : "each"));
  }
  if (sampled > 0 && best_complying == sampled) {
    return fmt::format(
        "{} may be the package's round: the {} sampled log(s) that fail under {} comply under "
        "{} (first: {})",
        names, sampled, given, one ? "it" : "each", first_sampled);
  }
  return std::nullopt;
}

}  // namespace mlperf::package
