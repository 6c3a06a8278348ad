// Prints, for each log file given, what our parser made of it as one JSON
// line: the MLLOG indices it kept, how often each key occurs, the indices it
// skipped as parse errors, and whether the official parser would stop.
// check_parser.py compares this with the official parser.
#include <iostream>
#include <map>

#include "base/json.h"
#include "logging/mllog_parser.h"

namespace json = mlperf::json;
namespace mllog = mlperf::mllog;

int main(int argc, char** argv) {
  int status = 0;
  for (int i = 1; i < argc; ++i) {
    auto log = mllog::ParseFile(argv[i]);
    if (!log.ok()) {
      std::cerr << log.status().message() << "\n";
      status = 2;
      continue;
    }
    json::Array kept, skipped;
    std::map<std::string, int64_t> keys;
    for (const auto& line : log->lines) {
      kept.emplace_back(line.index);
      ++keys[line.key];
    }
    bool crash = false;
    for (const auto& d : log->diagnostics) {
      if (d.outcome == mllog::OfficialOutcome::kSkipped) skipped.emplace_back(d.index);
      if (d.outcome == mllog::OfficialOutcome::kCrash) crash = true;
    }
    json::Object key_counts;
    for (const auto& [k, n] : keys) key_counts.emplace_back(k, n);
    std::cout << json::Dump(json::Value(json::Object{{"path", argv[i]},
                                                     {"kept", kept},
                                                     {"skipped", skipped},
                                                     {"keys", key_counts},
                                                     {"crash", crash}}))
              << "\n";
  }
  return status;
}
