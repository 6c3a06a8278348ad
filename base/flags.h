// Reading a tool's command line into Abseil flags with the suite's exit codes:
// a usage error comes back as a status (the tool exits 2), where Abseil's own
// parser would exit 1, which reads as "check failed".
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace mlperf::base {

struct ParsedArgs {
  bool help = false;                    // -h, --help, -help, --helpfull seen
  bool version = false;                 // --version seen
  std::vector<std::string> positional;  // non-flag arguments, in order
  std::vector<std::string> given;       // names of the flags that appeared on the command line
};

// Sets the named Abseil flags (defined with ABSL_FLAG anywhere in the binary) from argv.
// Accepts --name=value, --name value, -name, bool flags as --name / --noname / --name=true.
// '-' and '_' in names are the same. Any flag not in `names` is an error
// "unknown flag '--x' (see --help)"; a flag without its value "flag '--x' needs a value";
// a bad value "flag '--x': <abseil's error>". Positional arguments are an error
// "unexpected argument 'x' (see --help)" unless allow_positional. "--" ends flags.
// `given` holds Abseil's names (with '_'), each once, in order of first appearance.
absl::StatusOr<ParsedArgs> ParseFlags(int argc, char** argv,
                                      std::span<const std::string_view> names,
                                      bool allow_positional);

// One line per flag: "  --name       help (default: value)", in the order of `names`,
// each name spelled as it is there; an empty default reads "none".
std::string FlagsHelp(std::span<const std::string_view> names);

}  // namespace mlperf::base
