#include "checker/package/seed_check.h"

#include <cmath>
#include <optional>

#include "absl/status/statusor.h"
#include "checker/py_ops.h"
#include "fmt/format.h"

namespace mlperf::package {
namespace {

struct SeedRecord {
  json::Value file;
  json::Value lineno;
  std::string seed;  // int(value) in decimal
};

// Python's int() on a JSON value: ints as they are, floats truncated toward
// zero, bools 0/1, strings of decimal digits; anything else raises.
absl::StatusOr<std::string> PythonInt(const json::Value& v) {
  if (v.is_bool()) return std::string(v.as_bool() ? "1" : "0");
  if (v.is_int()) return v.is_big_int() ? v.as_string() : std::to_string(v.as_int());
  if (v.is_float()) {
    const double d = v.as_float();
    if (!std::isfinite(d))
      return absl::InvalidArgumentError(
          fmt::format("cannot convert float {} to integer", json::Dump(v)));
    return fmt::format("{:.0f}", std::trunc(d));
  }
  if (v.is_string()) {
    std::string_view s = v.as_string();
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    std::string sign;
    if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
      if (s.front() == '-') sign = "-";
      s.remove_prefix(1);
    }
    bool digits = !s.empty();
    for (char c : s) digits = digits && c >= '0' && c <= '9';
    if (digits) {
      while (s.size() > 1 && s.front() == '0') s.remove_prefix(1);
      return (s == "0" ? "" : sign) + std::string(s);
    }
  }
  return absl::InvalidArgumentError(
      fmt::format("invalid literal for int() with base 10: {}", json::Dump(v)));
}

absl::StatusOr<std::vector<SeedRecord>> SeedRecords(const mllog::ParsedLog& log) {
  // The official checker re-parses the file and refuses it on any parse error.
  for (const mllog::Diagnostic& d : log.diagnostics) {
    if (d.outcome != mllog::OfficialOutcome::kKept) {
      return absl::InvalidArgumentError(
          fmt::format("Found parsing errors: {}", mllog::FormatDiagnostic(log, d)));
    }
  }
  std::vector<SeedRecord> records;
  for (const mllog::LogLine& line : log.lines) {
    if (!line.key_is_string || line.key != "seed") continue;
    const json::Value* file = line.metadata.Find("file");
    const json::Value* lineno = line.metadata.Find("lineno");
    if (!file || !lineno) {
      return absl::InvalidArgumentError(fmt::format("seed at file line {} has no metadata '{}'",
                                                    line.file_line, !file ? "file" : "lineno"));
    }
    absl::StatusOr<std::string> seed = PythonInt(line.value);
    if (!seed.ok()) return seed.status();
    records.push_back({*file, *lineno, *std::move(seed)});
  }
  return records;
}

std::string Shown(const json::Value& v) { return v.is_string() ? v.as_string() : json::Dump(v); }

}  // namespace

SeedCheck CheckSeeds(const std::vector<const mllog::ParsedLog*>& logs) {
  SeedCheck c;
  struct Seen {
    SeedRecord record;
    std::string path;
  };
  std::vector<Seen> seen;
  for (const mllog::ParsedLog* log : logs) {
    c.seeds.emplace_back();
    absl::StatusOr<std::vector<SeedRecord>> records = SeedRecords(*log);
    if (!records.ok()) {
      c.errors.push_back(fmt::format("{}: cannot read its seeds: {}", log->path,
                                     std::string(records.status().message())));
      continue;
    }
    if (records->empty())
      c.errors.push_back(
          fmt::format("{}: logs no seed (every run must log one through MLLOG)", log->path));
    if (records->size() > 1) {
      c.warnings.push_back(fmt::format("{}: logs {} seeds", log->path, records->size()));
    }
    for (SeedRecord& r : *records) {
      c.seeds.back().push_back(r.seed);
      const Seen* earlier = nullptr;
      for (const Seen& s : seen) {
        if (s.record.seed == r.seed && checker::py::Equals(s.record.file, r.file) &&
            checker::py::Equals(s.record.lineno, r.lineno)) {
          earlier = &s;
          break;
        }
      }
      if (earlier) {
        c.errors.push_back(fmt::format(
            "{}: seed {} logged from {}:{}, the same seed from the same source line as {}",
            log->path, r.seed, Shown(r.file), Shown(r.lineno), earlier->path));
      } else {
        seen.push_back({std::move(r), log->path});
      }
    }
  }
  return c;
}

}  // namespace mlperf::package
