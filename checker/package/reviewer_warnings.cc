#include "checker/package/reviewer_warnings.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "fmt/format.h"

namespace mlperf::package {
namespace {

// Ranks that log the same event stamp it a few milliseconds apart; only a
// step back beyond that is a clock or ordering problem worth a look.
constexpr double kClockJitterMs = 1000;

// Where the eval sits in training: epoch_num, else samples_count.
std::optional<double> EvalPosition(const mllog::LogLine& line) {
  for (const char* key : {"epoch_num", "samples_count"}) {
    const json::Value* v = line.metadata.Find(key);
    if (v && v->is_number()) return v->as_float();
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> RunWarnings(const mllog::ParsedLog& log) {
  std::vector<std::string> out;
  int backwards = 0;
  double largest_step = 0;
  const mllog::LogLine* first_backwards = nullptr;
  const mllog::LogLine* first_block = nullptr;
  const mllog::LogLine* run_start = nullptr;
  std::vector<double> evals;
  for (size_t i = 0; i < log.lines.size(); ++i) {
    const mllog::LogLine& line = log.lines[i];
    if (i > 0 && line.time_ms < log.lines[i - 1].time_ms - kClockJitterMs) {
      if (backwards++ == 0) first_backwards = &line;
      largest_step = std::max(largest_step, log.lines[i - 1].time_ms - line.time_ms);
    }
    if (!line.key_is_string) continue;
    if (!first_block && (line.key == "block_start" || line.key == "epoch_start"))
      first_block = &line;
    if (!run_start && line.key == "run_start") run_start = &line;
    if (line.key == "eval_accuracy") {
      if (std::optional<double> pos = EvalPosition(line)) evals.push_back(*pos);
    }
  }
  if (first_backwards) {
    out.push_back(
        fmt::format("{}: time_ms goes back by more than {} ms {} time(s) (at most {} ms), first at "
                    "file line {}",
                    log.path, kClockJitterMs, backwards, largest_step, first_backwards->file_line));
  }
  if (run_start && first_block && run_start->index > first_block->index) {
    out.push_back(
        fmt::format("{}: run_start (file line {}) comes after the first {} (file line {})",
                    log.path, run_start->file_line, first_block->key, first_block->file_line));
  }
  // The usual interval is the most common one; a gap is one well above it
  // (a skipped evaluation). The interval before the first eval is not known.
  if (evals.size() >= 3) {
    std::map<double, int> freq;
    for (size_t i = 1; i < evals.size(); ++i) ++freq[evals[i] - evals[i - 1]];
    const auto usual = std::max_element(
        freq.begin(), freq.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    if (usual->second >= 2 && usual->first > 0) {
      for (size_t i = 1; i < evals.size(); ++i) {
        const double step = evals[i] - evals[i - 1];
        if (step > 1.5 * usual->first) {
          out.push_back(fmt::format("{}: evaluation gap from {} to {} (the run evaluates every {})",
                                    log.path, evals[i - 1], evals[i], usual->first));
        } else if (step <= 0) {
          out.push_back(fmt::format("{}: evaluation at {} does not advance past {}", log.path,
                                    evals[i], evals[i - 1]));
        }
      }
    }
  }
  return out;
}

std::vector<std::string> DirectoryWarnings(const std::vector<const mllog::ParsedLog*>& logs,
                                           const std::vector<std::vector<std::string>>& seeds,
                                           const std::string& benchmark) {
  std::vector<std::string> out;
  // Identical bodies: the same MLLOG lines in the same order. Candidates are
  // grouped by a hash of every 64th line (hashing all of a round's text is
  // slow), then compared in full.
  std::map<size_t, std::vector<size_t>> by_hash;
  for (size_t i = 0; i < logs.size(); ++i) {
    const std::vector<mllog::LogLine>& lines = logs[i]->lines;
    size_t h = lines.size();
    for (size_t k = 0; k < lines.size(); k += 64)
      h = h * 1000003u ^ std::hash<std::string>{}(lines[k].text);
    if (!lines.empty()) h = h * 1000003u ^ std::hash<std::string>{}(lines.back().text);
    by_hash[h].push_back(i);
  }
  for (const auto& [h, group] : by_hash) {
    for (size_t k = 1; k < group.size(); ++k) {
      const mllog::ParsedLog& a = *logs[group[0]];
      const mllog::ParsedLog& b = *logs[group[k]];
      const bool same = a.lines.size() == b.lines.size() &&
                        std::equal(a.lines.begin(), a.lines.end(), b.lines.begin(),
                                   [](const auto& x, const auto& y) { return x.text == y.text; });
      if (same && !a.lines.empty()) {
        out.push_back(fmt::format("{} and {} have identical MLLOG lines", a.path, b.path));
      }
    }
  }
  std::map<std::string, size_t> first_run;
  for (size_t i = 0; i < seeds.size() && i < logs.size(); ++i) {
    for (const std::string& s : seeds[i]) {
      auto [it, inserted] = first_run.emplace(s, i);
      if (!inserted && it->second != i) {
        out.push_back(
            fmt::format("{} reuses seed {} of {}", logs[i]->path, s, logs[it->second]->path));
      }
    }
  }
  for (const mllog::ParsedLog* log : logs) {
    for (const mllog::LogLine& line : log->lines) {
      if (line.key_is_string && line.key == "submission_benchmark") {
        if (!line.value.is_string() || line.value.as_string() != benchmark) {
          out.push_back(fmt::format("{}: submission_benchmark {} differs from the folder name {}",
                                    log->path, json::Dump(line.value), benchmark));
        }
        break;
      }
    }
  }
  return out;
}

}  // namespace mlperf::package
