#include "closed_division/flags.h"

#include <algorithm>
#include <string_view>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "base/files.h"
#include "base/flags.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

ABSL_FLAG(std::string, bench, "", "benchmark to run (see the list above); empty = the default one");
ABSL_FLAG(bool, list, false, "print the registered benchmarks, one name per line, and exit");
ABSL_FLAG(std::string, ruleset, "",
          "training ruleset the logs and the package follow (one whose round accepts the "
          "benchmark); empty = the newest such");
ABSL_FLAG(int, gpus, 0, "GPUs per node, one process each; 0 = train on the CPU");
ABSL_FLAG(int, nodes, 1, "nodes of the system (launch with mpirun or srun across them)");
ABSL_FLAG(int, tensor_parallel, 1,
          "processes each model is split over (Megatron's tensor parallelism, the decoder LLMs "
          "on the CPU); the rest are data parallel");
ABSL_FLAG(bool, preflight, false,
          "before the first run: the collectives at two sizes and every rank's link bandwidth "
          "(run_benchmark --comm's short form); refuse to start when a rank is slow");
ABSL_FLAG(double, preflight_min, 0.5,
          "with --preflight: a rank below this fraction of the median link bandwidth stops the "
          "job (0 = report only)");
ABSL_FLAG(int, collective_timeout, 60,
          "seconds a rank waits in a collective before it checks that every peer still "
          "answers; one that does not ends the job with its rank and node named (0 = off)");
ABSL_FLAG(std::string, data, "",
          "the benchmark's data set, as its section in docs/run_closed.md describes it; empty = "
          "the embedded demonstration on generated data");
ABSL_FLAG(int, runs, 0, "seeded runs to do; 0 = the number a package needs for the benchmark");
ABSL_FLAG(std::string, submitter, "mlperf-suite",
          "organisation: the package folder and submission_org");
ABSL_FLAG(std::string, system, "",
          "system name: results/<system>/ and systems/<system>.json; empty = derived from the "
          "configuration (the demo is cpu-demo-generated-data, or gpu-... with --gpus)");
ABSL_FLAG(std::string, out, "submissions", "where the package <submitter>/ is written");
ABSL_FLAG(std::string, cache_dir, "",
          "where the generated data set is kept between invocations; empty = <out>/.cache");
ABSL_FLAG(int64_t, seed, -1,
          "-1 = a fresh seed per run from /dev/urandom (as the rules want); N = run i uses "
          "N + i (reproductions)");
ABSL_FLAG(int, max_epochs, 0,
          "0 = the whole schedule; N = stop after N epochs (tests; a run stopped before the "
          "target ends with status aborted)");
ABSL_FLAG(std::string, optimizer, "",
          "one of the benchmark's closed-division optimizers (its section in "
          "docs/run_closed.md); empty = its default");
ABSL_FLAG(std::string, precision, "fp32",
          "arithmetic of convolutions, linear layers and attention products: fp32, bf16 or fp16 "
          "(fp32 master weights, optimizer, norms and losses; fp16 adds dynamic loss scaling), "
          "or fp8: bf16 with the transformer blocks' linear layers in FP8 (BERT, the decoders)");
ABSL_FLAG(bool, cuda_graph, false,
          "with --gpus: record each training step once as a CUDA graph and replay it (one "
          "launch per step instead of one per kernel)");
ABSL_FLAG(int, threads, 0,
          "compute (OpenMP/BLAS) threads per process; 0 = chosen from the cores per process");

namespace mlperf::closed {
namespace {

using benchmarks::BenchmarkRegistry;
using benchmarks::RunnerOptions;

constexpr std::string_view kFlagNames[] = {"bench",
                                           "list",
                                           "ruleset",
                                           "gpus",
                                           "nodes",
                                           "preflight",
                                           "preflight_min",
                                           "collective_timeout",
                                           "data",
                                           "runs",
                                           "submitter",
                                           "system",
                                           "out",
                                           "cache_dir",
                                           "seed",
                                           "max_epochs",
                                           "optimizer",
                                           "precision",
                                           "cuda_graph",
                                           "threads",
                                           "tensor_parallel"};

absl::Status Validate(const RunnerOptions& o) {
  // Counts within what any real system and package can use; beyond them a
  // typo, never a request (and seed + run must not overflow).
  const auto check_range = [](const char* flag, int64_t value, int64_t lo,
                              int64_t hi) -> absl::Status {
    if (value >= lo && value <= hi) return absl::OkStatus();
    return absl::InvalidArgumentError(
        fmt::format("--{}={}: must be {} to {}", flag, value, lo, hi));
  };
  for (absl::Status s :
       {check_range("gpus", o.gpus, 0, 1024), check_range("nodes", o.nodes, 1, 65536),
        check_range("tensor_parallel", o.tensor_parallel, 1, 1024),
        check_range("collective_timeout", o.collective_timeout_s, 0, 86400),
        check_range("runs", o.runs, 0, 1000), check_range("max_epochs", o.max_epochs, 0, 100000),
        check_range("seed", o.seed, -1, int64_t{1} << 62)}) {
    if (!s.ok()) return s;
  }
  if (o.threads < 0)
    return absl::InvalidArgumentError(fmt::format("--threads={}: must be >= 0", o.threads));
  if (!(o.preflight_min >= 0 && o.preflight_min <= 1)) {
    return absl::InvalidArgumentError(
        fmt::format("--preflight_min={}: must be a fraction from 0 to 1", o.preflight_min));
  }
  // More compute threads than cores stalls every OpenMP barrier for good.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (o.threads > cores) {
    return absl::InvalidArgumentError(
        fmt::format("--threads={}: this machine has {} cores; use 0 (automatic) or 1 to {}",
                    o.threads, cores, cores));
  }
  // Names become folder and file names of the package.
  for (const auto& [flag, value] :
       {std::pair<const char*, const std::string&>{"submitter", o.submitter},
        {"system", o.system}}) {
    if (value.empty() && std::string_view(flag) == "system") continue;
    if (value.empty() || value == "." || value == "..") {
      return absl::InvalidArgumentError(fmt::format(
          "--{}='{}': names a folder of the package, so it cannot be empty, '.' or '..'", flag,
          value));
    }
    const bool ok = std::all_of(value.begin(), value.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
    if (!ok) {
      return absl::InvalidArgumentError(
          fmt::format("--{}='{}': use letters, digits, '-', '_' and '.' only (it names a folder)",
                      flag, value));
    }
  }
  if (o.out_dir.empty()) return absl::InvalidArgumentError("--out: must not be empty");
  for (const auto& [flag, dir] :
       {std::pair<const char*, const std::string&>{"out", o.out_dir}, {"cache_dir", o.cache_dir}}) {
    if (absl::Status s = base::CheckFolderOrAbsent(flag, dir); !dir.empty() && !s.ok()) return s;
  }
  core::DType precision;
  if (bool fp8; !benchmarks::PrecisionFromName(o.precision, &precision, &fp8)) {
    return absl::InvalidArgumentError(
        fmt::format("--precision={}: expected fp32, bf16, fp16 or fp8", o.precision));
  }
  if (o.cuda_graph && o.gpus == 0)
    return absl::InvalidArgumentError("--cuda_graph: CUDA graphs need --gpus (the CPU has none)");
  return absl::OkStatus();
}

// Every registered benchmark's own flags.
std::vector<std::string_view> BenchmarkFlagNames(const BenchmarkRegistry& registry) {
  std::vector<std::string_view> names;
  for (const std::unique_ptr<benchmarks::Benchmark>& b : registry.benchmarks())
    for (const std::string& flag : b->info().flags)
      if (std::find(names.begin(), names.end(), flag) == names.end()) names.push_back(flag);
  return names;
}

}  // namespace

std::string UsageText(const BenchmarkRegistry& registry) {
  std::string text =
      "Usage: run_closed [--bench NAME] [--ruleset R] [--gpus N] [--nodes M] [--preflight]\n"
      "                  [--tensor_parallel T] [--data DIR]\n"
      "                  [--runs N] [--submitter ORG] [--system NAME] [--out DIR]\n"
      "                  [--cache_dir DIR] [--seed N] [--max_epochs N] [--optimizer NAME]\n"
      "                  [--precision P] [--cuda_graph] [--threads N] [benchmark flags]\n"
      "       run_closed --help | --version | --list\n"
      "\n"
      "Runs a closed-division MLPerf Training benchmark the required number of times, each\n"
      "run with its own seed, and writes a submission package:\n"
      "  <out>/<submitter>/results/<system>/<bench>/result_<i>.txt   one MLLOG log per run\n"
      "  <out>/<submitter>/systems/<system>.json                    gathered from this machine\n"
      "Existing results are never overwritten: run_closed refuses (exit 2) instead.\n"
      "\n"
      "Benchmarks:\n";
  for (const std::unique_ptr<benchmarks::Benchmark>& b : registry.benchmarks()) {
    const benchmarks::BenchmarkInfo& i = b->info();
    benchmarks::RunPlan rules;
    const bool known = benchmarks::ReadRules(i, {}, rules).ok();
    text +=
        fmt::format("  {:<8} {}{}{}\n", i.name, i.summary,
                    known ? fmt::format(" to {} {} ({} runs, ruleset {})", i.metric,
                                        rules.target.Describe(), rules.required_runs, rules.ruleset)
                          : "",
                    b.get() == registry.Default() ? "; the default" : "");
  }
  text +=
      "\n"
      "Without --data each trains a small member of its family on a generated data set to the\n"
      "benchmark's target: a demonstration package, labelled as such, that passes the checkers\n"
      "with --rcp-bypass (no RCP exists for its batch size).\n"
      "Data parallel: launch one process per GPU (or several CPU processes) with mpirun or\n"
      "srun; only rank 0 writes.  Progress goes to stderr, one line per epoch and evaluation.\n"
      "Ctrl-C keeps every finished run; the unfinished log is left as result_<i>.txt.incomplete.\n"
      "\n"
      "Exit status: 0 runs done, 1 a run or write failed, was interrupted, or too many runs\n"
      "missed the target, 2 usage or input error.\n"
      "\nFlags:\n";
  text += base::FlagsHelp(kFlagNames);
  for (const std::unique_ptr<benchmarks::Benchmark>& b : registry.benchmarks()) {
    const std::vector<std::string_view> own(b->info().flags.begin(), b->info().flags.end());
    if (!own.empty())
      text += fmt::format("\n{}'s flags:\n{}", b->info().name, base::FlagsHelp(own));
  }
  return text;
}

absl::StatusOr<CommandLine> ParseCommandLine(int argc, char** argv,
                                             const BenchmarkRegistry& registry) {
  std::vector<std::string_view> names(std::begin(kFlagNames), std::end(kFlagNames));
  const std::vector<std::string_view> own = BenchmarkFlagNames(registry);
  names.insert(names.end(), own.begin(), own.end());
  absl::StatusOr<base::ParsedArgs> parsed =
      base::ParseFlags(argc, argv, names, /*allow_positional=*/false);
  if (!parsed.ok()) return parsed.status();
  CommandLine cl;
  cl.help = parsed->help;
  cl.version = parsed->version;
  cl.list = absl::GetFlag(FLAGS_list);
  RunnerOptions& o = cl.options;
  o.benchmark = absl::GetFlag(FLAGS_bench);
  if (o.benchmark.empty() && registry.Default() != nullptr)
    o.benchmark = registry.Default()->info().name;
  o.ruleset = absl::GetFlag(FLAGS_ruleset);
  o.gpus = absl::GetFlag(FLAGS_gpus);
  o.nodes = absl::GetFlag(FLAGS_nodes);
  o.tensor_parallel = absl::GetFlag(FLAGS_tensor_parallel);
  o.preflight = absl::GetFlag(FLAGS_preflight);
  o.preflight_min = absl::GetFlag(FLAGS_preflight_min);
  o.collective_timeout_s = absl::GetFlag(FLAGS_collective_timeout);
  o.data_dir = absl::GetFlag(FLAGS_data);
  o.runs = absl::GetFlag(FLAGS_runs);
  o.submitter = absl::GetFlag(FLAGS_submitter);
  o.system = absl::GetFlag(FLAGS_system);
  o.out_dir = absl::GetFlag(FLAGS_out);
  o.cache_dir = absl::GetFlag(FLAGS_cache_dir);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.max_epochs = absl::GetFlag(FLAGS_max_epochs);
  o.optimizer = absl::GetFlag(FLAGS_optimizer);
  o.precision = absl::GetFlag(FLAGS_precision);
  o.cuda_graph = absl::GetFlag(FLAGS_cuda_graph);
  o.threads = absl::GetFlag(FLAGS_threads);
  // A benchmark's own flags reach it as typed; one of another benchmark's is
  // a mistake worth naming.
  for (const std::string& name : parsed->given) {
    const std::vector<const benchmarks::Benchmark*> owners = registry.FlagOwners(name);
    if (owners.empty()) continue;
    std::vector<std::string> owner_names;
    for (const benchmarks::Benchmark* b : owners) owner_names.push_back(b->info().name);
    if (std::find(owner_names.begin(), owner_names.end(), o.benchmark) == owner_names.end()) {
      return absl::InvalidArgumentError(fmt::format("--{}: a flag of {}, not of {}", name,
                                                    fmt::join(owner_names, " and "), o.benchmark));
    }
    o.flags[name] = absl::FindCommandLineFlag(name)->CurrentValue();
  }
  if (!cl.help && !cl.version && !cl.list) {
    if (absl::Status s = Validate(o); !s.ok()) return s;
  }
  return cl;
}

}  // namespace mlperf::closed
