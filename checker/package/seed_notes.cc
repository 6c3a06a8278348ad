#include "checker/package/seed_notes.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace mlperf::package {
namespace {

// Fewer runs than this cannot show a pattern.
constexpr size_t kMinRunsForPattern = 3;
// One seed in common between two systems happens by chance across a round
// (twice in v3.0's 16 organisations); shared implementations share more.
constexpr size_t kMinSharedSeeds = 2;

std::optional<long long> SeedValue(const std::string& s) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

int Major(const std::string& ruleset) {
  int major = 0;
  std::from_chars(ruleset.data(), ruleset.data() + ruleset.size(), major);
  return major;
}

// The first few values of a list, for a note.
template <typename T>
std::string FirstFew(const std::vector<T>& values) {
  constexpr size_t kListed = 5;
  const size_t n = std::min(values.size(), kListed);
  return absl::StrJoin(values.begin(), values.begin() + n, ", ") +
         (values.size() > n ? ", ..." : "");
}

}  // namespace

std::vector<std::string> DirectorySeedNotes(const BenchmarkDirReport& d,
                                            const std::string& ruleset) {
  std::vector<std::string> out;
  if (Major(ruleset) >= 6 && !d.seed_check_ran) {
    for (const RunDetail& r : d.runs) {
      if (r.seeds.empty() && !r.log.input_error) {
        out.push_back(fmt::format(
            "{} logs no seed; the {} training policies require every run to log its seed "
            "(mlcommons/training_policies #546), and the seed checker did not run here",
            r.stem, ruleset));
      }
    }
  }
  std::vector<long long> seeds;
  for (const RunDetail& r : d.runs) {
    if (r.seeds.size() != 1) continue;
    if (std::optional<long long> v = SeedValue(r.seeds[0])) seeds.push_back(*v);
  }
  std::sort(seeds.begin(), seeds.end());
  if (seeds.size() >= kMinRunsForPattern && seeds[1] != seeds[0]) {
    const long long step = seeds[1] - seeds[0];
    bool constant = true;
    for (size_t i = 2; i < seeds.size(); ++i) constant = constant && seeds[i] - seeds[i - 1] == step;
    if (constant) {
      out.push_back(fmt::format(
          "the {} runs' seeds ({}) step by {}: they look derived from one base seed rather than "
          "drawn for each run",
          seeds.size(), FirstFew(seeds), step));
    }
  }
  return out;
}

std::vector<std::string> SharedSeedNotes(const OrgReport& report) {
  // benchmark -> (seed -> systems logging it)
  std::map<std::string, std::map<std::string, std::set<std::string>>> by_benchmark;
  for (const BenchmarkDirReport& d : report.dirs) {
    if (d.skipped) continue;
    for (const RunDetail& r : d.runs) {
      for (const std::string& s : r.seeds) by_benchmark[d.benchmark][s].insert(d.system);
    }
  }
  std::vector<std::string> out;
  for (const auto& [benchmark, seeds] : by_benchmark) {
    // (system pair) -> shared seeds
    std::map<std::pair<std::string, std::string>, std::vector<std::string>> shared;
    for (const auto& [seed, systems] : seeds) {
      for (auto a = systems.begin(); a != systems.end(); ++a) {
        for (auto b = std::next(a); b != systems.end(); ++b) shared[{*a, *b}].push_back(seed);
      }
    }
    for (const auto& [pair, values] : shared) {
      if (values.size() < kMinSharedSeeds) continue;
      out.push_back(fmt::format(
          "{}: systems {} and {} log {} seed(s) in common ({}): runs of two implementations "
          "with the same seeds are not independent (mlcommons/logging #129)",
          benchmark, pair.first, pair.second, values.size(), FirstFew(values)));
    }
  }
  return out;
}

}  // namespace mlperf::package
