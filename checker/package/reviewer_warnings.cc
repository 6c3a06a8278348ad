#include "checker/package/reviewer_warnings.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string_view>

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

uint64_t BodyFingerprint(const mllog::ParsedLog& log) {
  if (log.lines.empty()) return 0;
  uint64_t h = log.lines.size();
  for (const mllog::LogLine& line : log.lines) {
    // Rotate-multiply keeps the order of the lines in the hash.
    h = ((h << 5) | (h >> 59)) ^ std::hash<std::string_view>{}(line.text);
    h *= 0x9E3779B97F4A7C15ull;
  }
  return h == 0 ? 1 : h;
}

std::vector<std::string> DirectoryWarnings(const std::vector<const mllog::ParsedLog*>& logs,
                                           const std::vector<uint64_t>& fingerprints,
                                           const std::vector<std::vector<std::string>>& seeds,
                                           const std::string& benchmark) {
  std::vector<std::string> out;
  std::map<uint64_t, size_t> first_body;
  for (size_t i = 0; i < fingerprints.size() && i < logs.size(); ++i) {
    if (fingerprints[i] == 0) continue;
    auto [it, inserted] = first_body.emplace(fingerprints[i], i);
    if (!inserted) {
      out.push_back(fmt::format("{} and {} have identical MLLOG lines", logs[it->second]->path,
                                logs[i]->path));
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
                                    log->path, json::Dump(line.value).substr(0, 200), benchmark));
        }
        break;
      }
    }
  }
  return out;
}

}  // namespace mlperf::package
