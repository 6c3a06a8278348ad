// What the checker found in one log.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlperf::checker {

struct Finding {
  std::string key;        // the log key it is about; empty when not about one key
  int64_t line = -1;      // 0-based MLLOG line index; -1 when not about one line
  int64_t file_line = 0;  // 1-based line in the file; 0 when not about one line
  std::string rule;       // where the rule is written, e.g. "3.0.0/closed_resnet_lars.rules:12"
  std::string message;    // what was expected and what was found, one line
  std::string quote;      // the offending log line, if any
};

struct LogReport {
  std::string path;
  std::string ruleset;
  std::optional<std::string> benchmark;  // submission_benchmark, when the log names one
  std::optional<std::string> division;   // submission_division
  std::vector<Finding> errors;
  std::vector<Finding> warnings;
  bool input_error = false;  // the file could not be read (usage/input error, exit 2)

  bool compliant() const { return errors.empty() && !input_error; }
};

}  // namespace mlperf::checker
