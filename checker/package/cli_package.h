// compliance_check's package mode: PATHs that are directories (a
// results/<system>[/<benchmark>] folder, an organisation folder, or a folder
// of organisation folders), checked as the official package checker and
// result summarizer would, with --csv, --html, --claims and --write-scaling.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checker/rule_library.h"

namespace mlperf::package {

struct CliOptions {
  std::optional<std::string> ruleset;  // given on the command line; else from a vN.M folder name
  std::string default_ruleset;         // for plain log files when none was given
  bool json = false;
  bool werror = false;
  int jobs = 0;
};

// Whether any path is a directory (then main hands over to RunPackageCli).
bool AnyDirectory(const std::vector<std::string>& paths);

// The package flags, defined in cli_package.cc; main reads them with its own.
inline constexpr std::string_view kPackageFlags[] = {
    "csv",         "results-table",       "results-table-json", "html",
    "claims",      "rcp-bypass",          "seed-checker-bypass", "write-scaling"};
// Of those, the ones that also apply to plain log files.
inline constexpr std::string_view kLogFileFlags[] = {"html"};

// Checks every path (log files as the per-log mode does) and prints the
// report; returns the exit status (0 pass, 1 fail, 2 usage or input error).
int RunPackageCli(const std::vector<std::string>& paths, const CliOptions& options,
                  const checker::RuleLibrary& rules);

}  // namespace mlperf::package
