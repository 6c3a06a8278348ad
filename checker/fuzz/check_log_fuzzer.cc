// libFuzzer target: arbitrary bytes as a result log, through the MLLOG parser
// and the rule engine under one of the embedded rulesets (the first byte picks
// which). Any crash, sanitizer report or hang is a bug: the checker must turn
// every input into a verdict. See docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "checker/engine.h"
#include "checker/report_format.h"
#include "checker/rule_library.h"
#include "logging/mllog_parser.h"

namespace {

const mlperf::checker::RuleLibrary& Rules() {
  static const mlperf::checker::RuleLibrary* rules = [] {
    auto lib = mlperf::checker::RuleLibrary::Embedded();
    if (!lib.ok()) std::abort();  // the embedded rules are tested; this is a build defect
    return new mlperf::checker::RuleLibrary(*std::move(lib));
  }();
  return *rules;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& rules = Rules();
  static const std::vector<std::string> rulesets = rules.Rulesets();
  const std::string& ruleset = rulesets[data[0] % rulesets.size()];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  mlperf::mllog::ParsedLog log = mlperf::mllog::ParseText(text, "fuzz.txt");
  mlperf::checker::LogReport report = mlperf::checker::CheckLog(log, rules, ruleset);
  // Formatting is part of what must never crash.
  std::string out =
      mlperf::checker::FormatJson(ruleset, {report}) + mlperf::checker::FormatHuman(report);
  if (out.empty()) std::abort();
  return 0;
}
