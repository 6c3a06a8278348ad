#include "checker/package/power_energy.h"

#include <algorithm>
#include <numeric>

#include "checker/package/layout.h"
#include "fmt/format.h"

namespace mlperf::package {
namespace {

namespace fs = std::filesystem;

// value["value"] of a power line; lines whose value is not a number add nothing.
double Reading(const mllog::LogLine& line) { return line.value.is_number() ? line.value.as_float() : 0; }

absl::StatusOr<double> NodeEnergy(const fs::path& path, double time_to_train_ms) {
  absl::StatusOr<mllog::ParsedLog> log = ParseResultLog(path);
  if (!log.ok()) return log.status();
  std::vector<const mllog::LogLine*> lines;
  for (const mllog::LogLine& l : log->lines) lines.push_back(&l);
  std::stable_sort(lines.begin(), lines.end(),
                   [](const auto* a, const auto* b) { return a->time_ms < b->time_ms; });
  double start = 0, stop = 0, previous = 0, last = 0, sum = 0, efficiency = 1.0;
  bool started = false, stopped = false;
  for (const mllog::LogLine* l : lines) {
    if (l->key == "power_measurement_start") {
      start = previous = l->time_ms;
      started = true;
    }
    if (l->key == "power_reading" && started && !stopped) {
      sum += Reading(*l) * (l->time_ms - previous);
      previous = l->time_ms;
      last = std::max(last, l->time_ms);
    }
    if (l->key == "power_measurement_stop") {
      stop = l->time_ms;
      stopped = true;
    }
    if (l->key == "conversion_eff") efficiency = Reading(*l);
  }
  if (!started)
    return absl::InvalidArgumentError(
        fmt::format("{}: no power_measurement_start", DisplayPath(path)));
  if (!stopped) stop = last;
  if (stop == start)
    return absl::InvalidArgumentError(
        fmt::format("{}: the power measurement lasts no time", DisplayPath(path)));
  return efficiency * sum * time_to_train_ms / (stop - start) / 1000;
}

absl::StatusOr<double> SwitchEnergy(const fs::path& path, double time_to_train_ms) {
  absl::StatusOr<mllog::ParsedLog> log = ParseResultLog(path);
  if (!log.ok()) return log.status();
  double power = 0, efficiency = 1.0;
  for (const mllog::LogLine& l : log->lines) {
    if (l.key == "conversion_eff") efficiency = Reading(l);
    if (l.key == "interconnect_power_est") {
      power = Reading(l);
      break;
    }
  }
  return efficiency * power * time_to_train_ms / 1000;
}

}  // namespace

absl::StatusOr<double> RunEnergy(const fs::path& power_dir, const std::string& stem,
                                 double time_to_train_ms) {
  absl::StatusOr<std::vector<DirEntry>> files = ListDir(power_dir / stem);
  if (!files.ok()) return files.status();
  double total = 0;
  int nodes = 0;
  for (const DirEntry& f : *files) {
    const bool node = f.name.starts_with("node_") && f.name.ends_with(".txt");
    const bool sw = f.name.starts_with("sw_") && f.name.ends_with(".txt");
    if (!(node || sw) || !f.is_regular) continue;
    absl::StatusOr<double> e = node ? NodeEnergy(power_dir / stem / f.name, time_to_train_ms)
                                    : SwitchEnergy(power_dir / stem / f.name, time_to_train_ms);
    if (!e.ok()) return e.status();
    total += *e;
    nodes += node ? 1 : 0;
  }
  if (nodes == 0)
    return absl::NotFoundError(
        fmt::format("{}: no node_*.txt power log", DisplayPath(power_dir / stem)));
  return total;
}

std::optional<double> OlympicEnergy(const std::vector<double>& energies,
                                    const std::vector<double>& minutes, int dropped,
                                    int max_dropped) {
  std::vector<size_t> order(minutes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return minutes[a] < minutes[b]; });
  const long long end = static_cast<long long>(energies.size()) - (max_dropped - dropped);
  if (end <= max_dropped) return std::nullopt;
  double sum = 0;
  for (long long i = max_dropped; i < end; ++i) sum += energies[order[i]];
  return sum / static_cast<double>(end - max_dropped);
}

}  // namespace mlperf::package
