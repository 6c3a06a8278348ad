#include "checker/package/power_check.h"

#include <algorithm>
#include <map>
#include <optional>

#include "fmt/format.h"

namespace mlperf::package {
namespace {

namespace fs = std::filesystem;

// int() of the text after the last '_' of the name without its extension;
// nullopt where the official checker's int() raises.
std::optional<long> IndexOf(const std::string& name) {
  std::string stem = fs::path(name).stem().string();
  std::string digits = stem.substr(stem.rfind('_') == std::string::npos ? 0 : stem.rfind('_') + 1);
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return std::stol(digits);
}

// check_range as the official code has it: indices in [0, n); duplicates are
// not caught (its `seen` set is never filled).
bool InRange(const std::vector<long>& idx, size_t n) {
  return std::all_of(idx.begin(), idx.end(),
                     [&](long i) { return i >= 0 && i < static_cast<long>(n); });
}

// Positions whose count differs from the most common one (ties: the first
// count seen, as Python's max over an insertion-ordered dict).
std::vector<size_t> Deviating(const std::vector<size_t>& counts) {
  std::vector<std::pair<size_t, int>> freq;
  for (size_t c : counts) {
    auto it = std::find_if(freq.begin(), freq.end(), [&](auto& p) { return p.first == c; });
    if (it == freq.end())
      freq.push_back({c, 1});
    else
      ++it->second;
  }
  auto best = freq.begin();
  for (auto it = freq.begin(); it != freq.end(); ++it) {
    if (it->second > best->second) best = it;
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] != best->first) out.push_back(i);
  }
  return out;
}

}  // namespace

PowerCheck CheckPower(const fs::path& power_dir, const std::vector<std::string>& result_stems) {
  PowerCheck c;
  std::vector<size_t> node_counts, sw_counts;
  for (const std::string& stem : result_stems) {
    const fs::path run_dir = power_dir / stem;
    std::error_code ec;
    if (!fs::exists(run_dir, ec)) {
      c.warnings.push_back(fmt::format("{}: no power results for {}", power_dir.string(), stem));
      c.failed_runs.insert(stem);
      continue;
    }
    std::vector<long> nodes, sws;
    size_t total = 0;
    for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      ++total;
      if (!name.starts_with("node") && !name.starts_with("sw")) continue;
      std::optional<long> i = IndexOf(name);
      if (!i) {
        c.errors.push_back(
            fmt::format("{}: power file name has no numeric index", (run_dir / name).string()));
        continue;
      }
      (name.starts_with("node") ? nodes : sws).push_back(*i);
    }
    if (ec) c.errors.push_back(fmt::format("{}: {}", run_dir.string(), ec.message()));
    if (total > nodes.size() + sws.size()) {
      c.warnings.push_back(
          fmt::format("{}: files other than node_<i> and sw_<i>", run_dir.string()));
    }
    if (!InRange(nodes, nodes.size()) || !InRange(sws, sws.size())) {
      c.warnings.push_back(
          fmt::format("{}: node/sw power files must be numbered 0..count-1", run_dir.string()));
      c.failed_runs.insert(stem);
    }
    node_counts.push_back(nodes.size());
    sw_counts.push_back(sws.size());
  }
  if (node_counts.empty()) {
    c.errors.push_back(fmt::format("{}: no run has power results", power_dir.string()));
    return c;
  }
  // The official checker maps positions among runs *with* power folders back
  // onto all result files; we keep that indexing.
  for (const auto* counts : {&node_counts, &sw_counts}) {
    for (size_t i : Deviating(*counts)) {
      c.warnings.push_back(
          fmt::format("{}: {} has a different number of {} power files than most runs",
                      power_dir.string(), result_stems[i], counts == &node_counts ? "node" : "sw"));
      c.failed_runs.insert(result_stems[i]);
    }
  }
  return c;
}

}  // namespace mlperf::package
