// Reads MLPerf result logs the way the official compliance checker does, and
// says precisely what is wrong with every line it cannot take.
//
// Only lines containing ":::MLLOG " count; everything up to the last such
// token on a line is dropped; lines are numbered from 0 among those lines (the
// numbers the official tools print), and each line also keeps its 1-based line
// number in the file for humans.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/json.h"

namespace mlperf::mllog {

struct LogLine {
  int64_t index = 0;      // 0-based among ":::MLLOG " lines (official numbering)
  int64_t file_line = 0;  // 1-based line number in the file
  std::string text;       // ":::MLLOG {...}", leading garbage and outer whitespace removed
  double time_ms = 0;     // float(time_ms), as the official parser converts it
  std::string key;        // for a non-string key: its JSON text, and key_is_string false
  bool key_is_string = true;
  json::Value value;
  json::Value metadata;
};

// What the official checker does with a line we report on.
enum class OfficialOutcome {
  kKept,     // the line is used; the note is ours
  kSkipped,  // a parse error: line dropped, and the log fails ("Log lines had parsing errors.")
  kCrash,    // the official tool stops with a traceback; the log fails
};

enum class Problem {
  kMalformedJson,    // not valid JSON (includes a truncated line)
  kNotAnObject,      // valid JSON, but not an object
  kMissingField,     // one of time_ms, key, value, metadata is absent
  kBadTimestamp,     // time_ms is not convertible by float()
  kBadKey,           // key is a list or an object: no rule can match the line
  kNonFiniteNumber,  // NaN or Infinity somewhere in the line
  kBigInteger,       // an integer outside the 64-bit range
  kInvalidUtf8,      // bytes that are not UTF-8 (read as latin-1, like the official parser)
  kNoMllogLines,     // the file has no ":::MLLOG " line at all
};

struct Diagnostic {
  int64_t file_line = 0;  // 0 for whole-file diagnostics
  int64_t index = -1;     // MLLOG line index, -1 for whole-file diagnostics
  Problem problem = Problem::kMalformedJson;
  OfficialOutcome outcome = OfficialOutcome::kKept;
  std::string reason;  // one line, e.g. "expected ',' or '}' at column 57"
};

struct ParsedLog {
  std::string path;
  std::vector<LogLine> lines;  // the lines the official checker would use, in order
  std::vector<Diagnostic> diagnostics;
  int64_t mllog_line_count = 0;  // all ":::MLLOG " lines, usable or not
  int64_t bytes = 0;

  bool official_crash() const;        // any diagnostic with OfficialOutcome::kCrash
  bool official_parse_error() const;  // any diagnostic with OfficialOutcome::kSkipped
};

// "path:file_line: [index N] reason", the one-line form used everywhere.
std::string FormatDiagnostic(const ParsedLog& log, const Diagnostic& d);

// Reads a whole file; only an unreadable file is an error. Parsing problems
// are diagnostics, and parsing goes on past them.
absl::StatusOr<ParsedLog> ParseFile(const std::string& path);

// The same over text already in memory; path is used in messages only.
ParsedLog ParseText(std::string_view text, std::string path);

}  // namespace mlperf::mllog
