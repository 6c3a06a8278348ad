// describe_system: the system description of this machine (a package's
// systems/<system>.json) for a submitter to complete, checked as the official
// system description checker checks it (docs/describe_system.md).
//
// Exit codes: 0 written and valid; 1 written but not valid for the ruleset;
// 2 usage or input error, or the description could not be written.

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_join.h"
#include "base/exit_codes.h"
#include "base/flags.h"
#include "base/json.h"
#include "base/output.h"
#include "base/version.h"
#include "checker/package/system_desc.h"
#include "checker/rule_library.h"
#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"
#include "runtime/system_info.h"

ABSL_FLAG(std::string, submitter, "mlperf-suite", "the submitting organization");
ABSL_FLAG(std::string, system, "",
          "system_name; empty = the name run_closed gives the system: <nodes>xnode-<gpus>xgpu, "
          "or <nodes>xnode-cpu");
ABSL_FLAG(std::string, division, "closed", "closed or open");
ABSL_FLAG(std::string, status, "Research, Development, or Internal (RDI)",
          "availability (the values the ruleset allows are listed above)");
ABSL_FLAG(int, nodes, 1, "nodes of the system, 1 to 65536");
ABSL_FLAG(int, gpus, 0, "GPUs per node, 0 to 1024; 0 = training on the CPU");
ABSL_FLAG(std::string, storage, ".",
          "a folder on the storage to describe (where the training data lives)");
ABSL_FLAG(std::string, ruleset, "",
          "training ruleset to check against, e.g. 4.0.0; empty = the newest one known");
ABSL_FLAG(std::string, output, "", "write the description to this file (-o), not to stdout");

namespace {

namespace fs = std::filesystem;
using mlperf::kExitFailed;
using mlperf::kExitOk;
using mlperf::kExitUsage;

constexpr std::string_view kFlagNames[] = {"submitter", "system",  "division", "status", "nodes",
                                           "gpus",      "storage", "ruleset",  "output"};

std::string UsageText() {
  const mlperf::meta::SystemDescriptionRules& rules = mlperf::meta::SystemDescription();
  std::string text = fmt::format(
      "Usage: describe_system [--submitter ORG] [--system NAME] [--division closed|open]\n"
      "                       [--status S] [--nodes N] [--gpus N] [--storage DIR]\n"
      "                       [--ruleset X.Y.Z] [-o FILE]\n"
      "       describe_system --help | --version\n"
      "\n"
      "Writes the system description of this machine, a submission package's\n"
      "systems/<system>.json, one field per line: CPUs and memory from /proc, the storage\n"
      "under --storage and the network interfaces from /sys, GPUs from the CUDA runtime,\n"
      "the software versions built in. What it cannot detect is \"unknown\", and stderr\n"
      "names those fields (\"fill in by hand: ...\"). The description is checked as the\n"
      "official system description checker checks it under --ruleset.\n"
      "\n"
      "From ruleset {} on, --status is one of:\n",
      rules.status_checked_from);
  for (const std::string& s : rules.status_values) text += fmt::format("  \"{}\"\n", s);
  text +=
      "\n"
      "Exit status: 0 written and valid, 1 written but not valid for the ruleset, 2 usage or\n"
      "input error or the description could not be written.\n"
      "\nFlags:\n";
  return text + mlperf::base::FlagsHelp(kFlagNames);
}

// argv with -o spelled as --output.
std::vector<std::string> Unaliased(int argc, char** argv) {
  std::vector<std::string> out(argv, argv + argc);
  for (size_t i = 1; i < out.size() && out[i] != "--"; ++i) {
    if (out[i] == "-o" || out[i].starts_with("-o=")) out[i] = "--output" + out[i].substr(2);
  }
  return out;
}

// The flags' values and the ruleset, or a one-line usage error.
absl::Status CheckRequest(const mlperf::runtime::SystemRequest& r, const std::string& ruleset) {
  const auto range = [](const char* flag, int v, int lo, int hi) -> absl::Status {
    if (v >= lo && v <= hi) return absl::OkStatus();
    return absl::InvalidArgumentError(fmt::format("--{}={}: must be {} to {}", flag, v, lo, hi));
  };
  for (absl::Status s :
       {range("nodes", r.nodes, 1, 65536), range("gpus", r.gpus_per_node, 0, 1024)})
    if (!s.ok()) return s;
  if (r.division != "closed" && r.division != "open")
    return absl::InvalidArgumentError(
        fmt::format("--division={}: expected closed or open", r.division));
  for (const auto& [flag, value] :
       {std::pair<const char*, const std::string&>{"submitter", r.submitter},
        {"system", r.system_name},
        {"status", r.status}}) {
    if (value.empty())
      return absl::InvalidArgumentError(fmt::format("--{}: must not be empty", flag));
  }
  std::error_code ec;
  if (!fs::is_directory(r.storage_folder, ec))
    return absl::InvalidArgumentError(fmt::format("--storage={}: not a folder", r.storage_folder));
  // The status rule is the official checker's, read from benchmarks.json.
  const mlperf::meta::SystemDescriptionRules& rules = mlperf::meta::SystemDescription();
  const std::vector<std::string>& allowed = rules.status_values;
  if (mlperf::meta::RulesetAtLeast(ruleset, rules.status_checked_from) &&
      std::find(allowed.begin(), allowed.end(), r.status) == allowed.end()) {
    return absl::InvalidArgumentError(fmt::format("--status='{}': ruleset {} allows only '{}'",
                                                  r.status, ruleset,
                                                  absl::StrJoin(allowed, "', '")));
  }
  return absl::OkStatus();
}

int Usage(absl::string_view message) {
  std::fprintf(stderr, "describe_system: %.*s\n", static_cast<int>(message.size()), message.data());
  return kExitUsage;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args = Unaliased(argc, argv);
  std::vector<char*> ptrs;
  for (std::string& a : args) ptrs.push_back(a.data());
  absl::StatusOr<mlperf::base::ParsedArgs> parsed = mlperf::base::ParseFlags(
      static_cast<int>(ptrs.size()), ptrs.data(), kFlagNames, /*allow_positional=*/false);
  if (!parsed.ok()) return Usage(parsed.status().message());
  if (parsed->help) return mlperf::base::WriteStdout(UsageText()).ok() ? kExitOk : kExitUsage;
  if (parsed->version) {
    const std::string line = mlperf::base::VersionLine("describe_system");
    return mlperf::base::WriteStdout(line).ok() ? kExitOk : kExitUsage;
  }

  // The rulesets compliance_check knows; the newest by default, as there.
  absl::StatusOr<mlperf::checker::RuleLibrary> rules = mlperf::checker::RuleLibrary::Embedded();
  if (!rules.ok()) return Usage(rules.status().message());
  std::string ruleset = absl::GetFlag(FLAGS_ruleset);
  if (ruleset.empty() && !rules->Rulesets().empty()) ruleset = rules->Rulesets().back();
  if (!rules->HasRuleset(ruleset)) {
    return Usage(fmt::format("--ruleset={}: unknown; known training rulesets: {}", ruleset,
                             absl::StrJoin(rules->Rulesets(), ", ")));
  }

  mlperf::runtime::SystemRequest request{
      .submitter = absl::GetFlag(FLAGS_submitter),
      .system_name = absl::GetFlag(FLAGS_system),
      .division = absl::GetFlag(FLAGS_division),
      .status = absl::GetFlag(FLAGS_status),
      .nodes = absl::GetFlag(FLAGS_nodes),
      .gpus_per_node = absl::GetFlag(FLAGS_gpus),
      .storage_folder = absl::GetFlag(FLAGS_storage),
      .probe_hardware = true,
  };
  const bool system_given =
      std::find(parsed->given.begin(), parsed->given.end(), "system") != parsed->given.end();
  if (!system_given) {
    request.system_name = request.gpus_per_node > 0
                              ? fmt::format("{}xnode-{}xgpu", request.nodes, request.gpus_per_node)
                              : fmt::format("{}xnode-cpu", request.nodes);
  }
  if (absl::Status s = CheckRequest(request, ruleset); !s.ok()) return Usage(s.message());

  // The output is checked before anything is gathered: a folder or a path in
  // a missing folder is refused, and nothing is half written.
  const std::string output = absl::GetFlag(FLAGS_output);
  mlperf::base::OutputGuard guard;
  if (!output.empty()) {
    if (absl::Status s = guard.Claim("output", output); !s.ok()) return Usage(s.message());
  }

  const mlperf::runtime::SystemDescription description = mlperf::runtime::DescribeSystem(request);
  const std::string text = mlperf::runtime::SystemDescriptionText(description);
  // Checked as written: the document is parsed back, as the checker reads it.
  absl::StatusOr<mlperf::json::Value> doc =
      mlperf::json::Parse(text, {.encoding = mlperf::json::Encoding::kUtf8});
  if (!doc.ok())
    return Usage(fmt::format("internal error: {}", std::string(doc.status().message())));
  const mlperf::package::SystemDescCheck check = mlperf::package::CheckSystemDesc(*doc, ruleset);

  const absl::Status written =
      output.empty() ? mlperf::base::WriteStdout(text) : mlperf::base::WriteOutput(output, text);
  if (!written.ok()) return Usage(written.message());  // it names the path
  if (!description.undetected.empty()) {
    std::fprintf(stderr, "fill in by hand: %s\n",
                 absl::StrJoin(description.undetected, ", ").c_str());
  }
  for (const std::string& reason : check.reasons) {
    std::fprintf(stderr, "describe_system: not valid for ruleset %s: %s\n", ruleset.c_str(),
                 reason.c_str());
  }
  return check.valid ? kExitOk : kExitFailed;
}

}  // namespace

int main(int argc, char** argv) {
  return mlperf::base::RunTool("describe_system", [&] { return Main(argc, argv); });
}
