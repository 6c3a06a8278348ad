// All rule files the checker knows, parsed once: the ones embedded at build
// time, or a directory tree given with --rules-dir.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "checker/rules.h"

namespace mlperf::checker {

struct RuleSource {
  std::string path;  // relative to quality_targets/, e.g. "training/3.0.0/common.rules"
  std::string text;
};

class RuleLibrary {
 public:
  // Files outside training/<ruleset>/<name>.rules are ignored; a file that
  // does not parse is an error naming it and its line.
  static absl::StatusOr<RuleLibrary> FromSources(const std::vector<RuleSource>& sources);
  static absl::StatusOr<RuleLibrary> Embedded();
  // `dir` is a quality_targets/ directory (it contains training/).
  static absl::StatusOr<RuleLibrary> FromDirectory(const std::string& dir);

  // Rulesets with a common.rules entry point, oldest first.
  std::vector<std::string> Rulesets() const;
  bool HasRuleset(const std::string& ruleset) const;
  // "<ruleset>/<name>", or null.
  const RuleFile* Find(const std::string& id) const;

 private:
  std::map<std::string, RuleFile> files_;
};

// "1.10.0" sorts after "1.9.0".
bool RulesetLess(const std::string& a, const std::string& b);

}  // namespace mlperf::checker
