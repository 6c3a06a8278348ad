#include "closed_division/flags.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "fmt/format.h"

ABSL_FLAG(std::string, bench, "resnet", "benchmark to run (resnet)");
ABSL_FLAG(int, gpus, 0, "GPUs per node, one process each; 0 = train on the CPU");
ABSL_FLAG(int, nodes, 1, "nodes of the system (launch with mpirun or srun across them)");
ABSL_FLAG(std::string, data, "",
          "ImageNet folder (train/<class>/*.JPEG, val/...) or TFRecord folder; empty = the "
          "embedded demonstration on generated data");
ABSL_FLAG(int, runs, mlperf::closed::kResnetRequiredRuns,
          "seeded runs to do (a package needs 5 for resnet)");
ABSL_FLAG(std::string, submitter, "mlperf-suite",
          "organisation: the package folder and submission_org");
ABSL_FLAG(std::string, system, "",
          "system name: results/<system>/ and systems/<system>.json; empty = derived from the "
          "configuration (the demo is cpu-demo-generated-data)");
ABSL_FLAG(std::string, out, "submissions", "where the package <submitter>/ is written");
ABSL_FLAG(std::string, cache_dir, "",
          "where the generated data set is kept between invocations; empty = <out>/.cache");
ABSL_FLAG(int64_t, seed, -1,
          "-1 = a fresh seed per run from /dev/urandom (as the rules want); N = run i uses "
          "N + i (reproductions)");
ABSL_FLAG(int, max_epochs, 0,
          "0 = the whole schedule; N = stop after N epochs (tests; a run stopped before the "
          "target ends with status aborted)");
ABSL_FLAG(std::string, optimizer, "lars", "lars or sgd (both closed-division recipes)");
ABSL_FLAG(int, threads, 0,
          "compute (OpenMP/BLAS) threads per process; 0 = chosen from the cores per process");

namespace mlperf::closed {
namespace {

constexpr const char* kFlagNames[] = {"bench",     "gpus",      "nodes", "data", "runs",
                                      "submitter", "system",    "out",   "cache_dir",
                                      "seed",      "max_epochs", "optimizer", "threads"};

bool IsOurs(std::string_view name) {
  return std::find(std::begin(kFlagNames), std::end(kFlagNames), name) != std::end(kFlagNames);
}

absl::Status Validate(const RunnerOptions& o) {
  if (o.gpus < 0) return absl::InvalidArgumentError(fmt::format("--gpus={}: must be >= 0", o.gpus));
  if (o.nodes < 1)
    return absl::InvalidArgumentError(fmt::format("--nodes={}: must be >= 1", o.nodes));
  if (o.runs < 1) return absl::InvalidArgumentError(fmt::format("--runs={}: must be >= 1", o.runs));
  if (o.max_epochs < 0)
    return absl::InvalidArgumentError(fmt::format("--max_epochs={}: must be >= 0", o.max_epochs));
  if (o.threads < 0)
    return absl::InvalidArgumentError(fmt::format("--threads={}: must be >= 0", o.threads));
  if (o.seed < -1) return absl::InvalidArgumentError(fmt::format("--seed={}: must be >= -1", o.seed));
  // Names become folder and file names of the package.
  for (const auto& [flag, value] :
       {std::pair<const char*, const std::string&>{"submitter", o.submitter}, {"system", o.system}}) {
    if (value.empty() && std::string_view(flag) == "system") continue;
    const bool ok = !value.empty() && value != "." && value != ".." &&
                    std::all_of(value.begin(), value.end(), [](char c) {
                      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
                             c == '_' || c == '.';
                    });
    if (!ok) {
      return absl::InvalidArgumentError(fmt::format(
          "--{}='{}': use letters, digits, '-', '_' and '.' only (it names a folder)", flag, value));
    }
  }
  if (o.out_dir.empty()) return absl::InvalidArgumentError("--out: must not be empty");
  return absl::OkStatus();
}

}  // namespace

std::string UsageText() {
  std::string text =
      "Usage: run_closed --bench resnet [--gpus N] [--nodes M] [--data DIR] [--runs 5]\n"
      "                  [--submitter ORG] [--system NAME] [--out submissions/]\n"
      "\n"
      "Runs the closed-division MLPerf Training benchmark the required number of times, each\n"
      "run with its own seed, and writes a submission package:\n"
      "  <out>/<submitter>/results/<system>/resnet/result_<i>.txt   one MLLOG log per run\n"
      "  <out>/<submitter>/systems/<system>.json                   gathered from this machine\n"
      "Existing results are never overwritten: run_closed refuses (exit 2) instead.\n"
      "\n"
      "Without --data it trains a small ResNet on a generated image set (real JPEG files in\n"
      "the ImageNet layout) to top-1 0.759: a demonstration package, labelled as such, that\n"
      "passes the checkers with --rcp-bypass (no RCP exists for its batch size).\n"
      "Data parallel: launch one process per GPU (or several CPU processes) with mpirun or\n"
      "srun; only rank 0 writes.  Progress goes to stderr, one line per epoch and evaluation.\n"
      "Ctrl-C keeps every finished run; the unfinished log is left as result_<i>.txt.incomplete.\n"
      "\n"
      "Exit status: 0 runs done, 1 a run or write failed, was interrupted, or too many runs\n"
      "missed the target, 2 usage or input error.\n"
      "\nFlags:\n";
  for (const char* name : kFlagNames) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    const std::string value = flag->DefaultValue();
    text += fmt::format("  --{:<11} {} (default: {})\n", name, flag->Help(),
                        value.empty() ? "none" : value);
  }
  return text;
}

absl::StatusOr<CommandLine> ParseCommandLine(int argc, char** argv) {
  CommandLine cl;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help" || arg == "-help" || arg == "--helpfull") {
      cl.help = true;
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      return absl::InvalidArgumentError(
          fmt::format("unexpected argument '{}' (flags only; see --help)", arg));
    }
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    std::string name(arg.substr(0, arg.find('=')));
    std::replace(name.begin(), name.end(), '-', '_');
    std::optional<std::string> value;
    if (arg.find('=') != std::string_view::npos) value = std::string(arg.substr(arg.find('=') + 1));
    absl::CommandLineFlag* flag = IsOurs(name) ? absl::FindCommandLineFlag(name) : nullptr;
    if (flag == nullptr)
      return absl::InvalidArgumentError(fmt::format("unknown flag '{}' (see --help)", argv[i]));
    if (!value.has_value()) {
      if (i + 1 >= argc)
        return absl::InvalidArgumentError(fmt::format("flag '{}' needs a value", argv[i]));
      value = argv[++i];
    }
    std::string error;
    if (!flag->ParseFrom(*value, &error))
      return absl::InvalidArgumentError(fmt::format("flag '--{}': {}", name, error));
  }
  RunnerOptions& o = cl.options;
  o.benchmark = absl::GetFlag(FLAGS_bench);
  o.gpus = absl::GetFlag(FLAGS_gpus);
  o.nodes = absl::GetFlag(FLAGS_nodes);
  o.data_dir = absl::GetFlag(FLAGS_data);
  o.runs = absl::GetFlag(FLAGS_runs);
  o.submitter = absl::GetFlag(FLAGS_submitter);
  o.system = absl::GetFlag(FLAGS_system);
  o.out_dir = absl::GetFlag(FLAGS_out);
  o.cache_dir = absl::GetFlag(FLAGS_cache_dir);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.max_epochs = absl::GetFlag(FLAGS_max_epochs);
  o.optimizer = absl::GetFlag(FLAGS_optimizer);
  o.threads = absl::GetFlag(FLAGS_threads);
  if (!cl.help) {
    if (absl::Status s = Validate(o); !s.ok()) return s;
  }
  return cl;
}

}  // namespace mlperf::closed
