#include "base/flags.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <span>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "base/environment.h"
#include "base/files.h"
#include "fmt/format.h"
#include "throughput/flags.h"

ABSL_FLAG(std::string, bench, "", "model to measure (see the list above); empty = the default one");
ABSL_FLAG(std::string, mode, "train", "train (forward, backward, optimizer) or infer (forward)");
ABSL_FLAG(std::string, devices, "1",
          "device counts, comma separated (-n); on the CPU each device is one process");
ABSL_FLAG(std::string, batch_sizes, "",
          "batch sizes per device, comma separated (-b); empty = the closed recipe's batch for "
          "one process");
ABSL_FLAG(std::string, dtype, "fp32",
          "precisions, comma separated: fp32, bf16, fp16, fp8 (bf16 with FP8 linear layers)");
ABSL_FLAG(int, warmup, 20, "untimed steps before the measured ones (-w)");
ABSL_FLAG(int, iters, 100, "measured steps per repeat (-i)");
ABSL_FLAG(int, repeats, 7, "measured repeats per configuration; the median is the headline (-r)");
ABSL_FLAG(std::string, data, "",
          "the model's data set, read through its loader (throughput includes loading and "
          "augmentation)");
ABSL_FLAG(bool, synthetic, false,
          "one synthetic batch, reused: compute only (the default without --data/--generated)");
ABSL_FLAG(bool, generated, false,
          "the embedded generated data set (as run_closed writes it) through the loader; "
          "with --size small");
ABSL_FLAG(std::string, size, "full",
          "member of the model family: full (the benchmark's full-size model) or small (the "
          "one run_closed's embedded default trains)");
ABSL_FLAG(std::string, device, "cpu", "cpu or gpu (one process per GPU)");
ABSL_FLAG(bool, cuda_graph, false,
          "with --device gpu --mode train: record each training step once as a CUDA graph and "
          "replay it (run_closed --cuda_graph)");
ABSL_FLAG(int, threads, 0, "compute threads per process; 0 = the process's share of the cores");
ABSL_FLAG(int, tensor_parallel, 1,
          "processes each model is split over (run_closed --tensor_parallel; the decoder LLMs on "
          "the CPU); every device count must be a multiple of it");
ABSL_FLAG(std::string, cache_dir, "",
          "where --generated data is kept; empty = $XDG_CACHE_HOME/mlperf-suite or "
          "~/.cache/mlperf-suite");
ABSL_FLAG(std::string, json, "",
          "JSON report (-o): DeepLearningExamples benchmark.py's keys plus every statistic");
ABSL_FLAG(std::string, dllogger, "", "DLLogger JSON lines (DLLL {...}), one record per step");
ABSL_FLAG(std::string, markdown, "", "the Markdown tables also written to this file");
ABSL_FLAG(std::string, plot, "", "folder for SVG charts (throughput, scaling, latency)");
ABSL_FLAG(std::string, launcher, "",
          "command that starts N processes, {n} replaced by the count; empty = mpirun -np {n}");
ABSL_FLAG(int, collective_timeout, 60,
          "seconds a process waits in a collective before it checks that every peer still "
          "answers; one that does not ends the job with its rank and node named (0 = off)");
ABSL_FLAG(bool, comm, false,
          "collective bandwidth of the processes run_benchmark was started in (mpirun -np N "
          "run_benchmark --comm), nccl-tests' algbw and busbw, instead of a model");
ABSL_FLAG(std::string, collectives, "all",
          "with --comm: all, or some of all_reduce,all_gather,reduce_scatter,all_to_all");
ABSL_FLAG(std::string, minbytes, "8", "with --comm: smallest message (bytes; K, M, G suffixes)");
ABSL_FLAG(std::string, maxbytes, "1G", "with --comm: largest message (bytes; K, M, G suffixes)");
ABSL_FLAG(int, stepfactor, 2, "with --comm: each message size is the previous times this");
ABSL_FLAG(std::string, worker_out, "", "internal: measure one configuration, write it here");

namespace mlperf::throughput {
namespace {

constexpr std::string_view kFlagNames[] = {
    "bench",    "mode",       "devices",    "batch_sizes",        "dtype",     "warmup",
    "iters",    "repeats",    "data",       "synthetic",          "generated", "size",
    "device",   "cuda_graph", "threads",    "cache_dir",          "json",      "dllogger",
    "markdown", "plot",       "launcher",   "collective_timeout", "comm",      "collectives",
    "minbytes", "maxbytes",   "stepfactor", "tensor_parallel",    "worker_out"};
// Flags --help lists: all but the internal one, which comes last.
constexpr std::span<const std::string_view> kHelpNames(kFlagNames, std::size(kFlagNames) - 1);

// The spellings users of DeepLearningExamples' and DLPerf's scripts type.
const std::map<std::string, std::string, std::less<>>& Aliases() {
  static const std::map<std::string, std::string, std::less<>> aliases = {
      {"n", "devices"},
      {"ngpus", "devices"},
      {"b", "batch_sizes"},
      {"bs", "batch_sizes"},
      {"batch-sizes", "batch_sizes"},
      {"i", "iters"},
      {"benchmark-iters", "iters"},
      {"benchmark_iters", "iters"},
      {"w", "warmup"},
      {"r", "repeats"},
      {"o", "json"},
      {"output", "json"}};
  return aliases;
}

// argv with every alias spelled as its flag's name.
std::vector<std::string> Unaliased(int argc, char** argv) {
  std::vector<std::string> out(argv, argv + argc);
  for (size_t i = 1; i < out.size(); ++i) {
    std::string& arg = out[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    const size_t dashes = arg[1] == '-' ? 2 : 1;
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(dashes, eq == std::string::npos ? eq : eq - dashes);
    if (auto it = Aliases().find(name); it != Aliases().end())
      arg = "--" + it->second + (eq == std::string::npos ? "" : arg.substr(eq));
  }
  return out;
}

// "8", "64K", "16M", "1G" (powers of 1024), as nccl-tests reads its sizes.
absl::StatusOr<int64_t> Bytes(const char* flag, std::string text) {
  int64_t unit = 1;
  if (!text.empty()) {
    const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
    const int shift = last == 'K' ? 10 : last == 'M' ? 20 : last == 'G' ? 30 : 0;
    if (shift > 0) {
      unit = int64_t{1} << shift;
      text.pop_back();
    }
  }
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < 1 || v > (int64_t{16} << 30) / unit) {
    return absl::InvalidArgumentError(fmt::format(
        "--{}: expected a size from 1 byte to 16G (a number with an optional K, M or G)", flag));
  }
  return v * unit;
}

// --comm measures collectives, not a model: the model's flags do not apply,
// and the warm-up and iteration counts default to nccl-tests' 5 and 20.
absl::Status ApplyCommFlags(const std::vector<std::string>& given, BenchOptions& o) {
  for (const char* model_flag :
       {"bench", "mode", "batch_sizes", "dtype", "repeats", "data", "synthetic", "generated",
        "size", "cuda_graph", "threads", "cache_dir", "dllogger", "plot", "tensor_parallel"}) {
    if (std::find(given.begin(), given.end(), model_flag) != given.end()) {
      return absl::InvalidArgumentError(
          fmt::format("--{} is for models; --comm measures collectives only", model_flag));
    }
  }
  const auto was_given = [&](const char* f) {
    return std::find(given.begin(), given.end(), f) != given.end();
  };
  if (!was_given("warmup")) o.warmup = 5;
  if (!was_given("iters")) o.iters = 20;
  absl::StatusOr<int64_t> lo = Bytes("minbytes", absl::GetFlag(FLAGS_minbytes));
  if (!lo.ok()) return lo.status();
  absl::StatusOr<int64_t> hi = Bytes("maxbytes", absl::GetFlag(FLAGS_maxbytes));
  if (!hi.ok()) return hi.status();
  if (*lo > *hi) {
    return absl::InvalidArgumentError(fmt::format("--minbytes={} is larger than --maxbytes={}",
                                                  absl::GetFlag(FLAGS_minbytes),
                                                  absl::GetFlag(FLAGS_maxbytes)));
  }
  o.min_bytes = *lo;
  o.max_bytes = *hi;
  o.step_factor = absl::GetFlag(FLAGS_stepfactor);
  if (o.step_factor < 2 || o.step_factor > 1024)
    return absl::InvalidArgumentError(
        fmt::format("--stepfactor={}: must be 2 to 1024", o.step_factor));
  o.collectives = absl::GetFlag(FLAGS_collectives);
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<std::vector<T>> IntList(const char* flag, const std::string& text, int64_t lo,
                                       int64_t hi) {
  std::vector<T> out;
  if (text.empty()) return out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < lo || v > hi) {
      return absl::InvalidArgumentError(fmt::format(
          "--{}={}: expected comma-separated integers from {} to {}", flag, text, lo, hi));
    }
    if (std::find(out.begin(), out.end(), static_cast<T>(v)) == out.end())
      out.push_back(static_cast<T>(v));
  }
  return out;
}

absl::Status Validate(const BenchOptions& o) {
  const auto range = [](const char* flag, int64_t v, int64_t lo, int64_t hi) -> absl::Status {
    if (v >= lo && v <= hi) return absl::OkStatus();
    return absl::InvalidArgumentError(fmt::format("--{}={}: must be {} to {}", flag, v, lo, hi));
  };
  for (absl::Status s : {range("warmup", o.warmup, 0, 1000000), range("iters", o.iters, 1, 1000000),
                         range("collective_timeout", o.collective_timeout_s, 0, 86400),
                         range("repeats", o.repeats, 1, 1000), range("threads", o.threads, 0, 4096),
                         range("tensor_parallel", o.tensor_parallel, 1, 1024)}) {
    if (!s.ok()) return s;
  }
  // Warm-up steps are never timed; DeepLearningExamples counts them inside
  // the iterations, and users who carry that habit over would measure nothing.
  if (o.warmup >= o.iters && !o.comm) {
    return absl::InvalidArgumentError(fmt::format(
        "--warmup={} must be less than --iters={} (warm-up steps come before the {} measured "
        "ones and are never timed)",
        o.warmup, o.iters, o.iters));
  }
  if (o.size != "full" && o.size != "small")
    return absl::InvalidArgumentError(fmt::format("--size={}: expected full or small", o.size));
  if (o.data == DataMode::kGenerated && o.size != "small") {
    return absl::InvalidArgumentError(
        "--generated: the generated data set fits the small member only; add --size small");
  }
  if (o.data == DataMode::kData && o.size == "small") {
    return absl::InvalidArgumentError(
        "--size small runs on --synthetic or --generated data; --data needs --size full");
  }
  if (o.gpu && o.threads > 0) {
    return absl::InvalidArgumentError(
        "--threads is for --device cpu (on GPUs the host threads go to the loader)");
  }
  if (o.cuda_graph && (!o.gpu || o.mode != Mode::kTrain))
    return absl::InvalidArgumentError(
        "--cuda_graph records training steps on GPUs: it needs --device gpu and --mode train");
  for (const auto& [flag, dir] :
       {std::pair<const char*, const std::string&>{"cache_dir", o.cache_dir},
        {"plot", o.plot_dir}}) {
    if (absl::Status s = base::CheckFolderOrAbsent(flag, dir); !dir.empty() && !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

std::string UsageText(const benchmarks::BenchmarkRegistry& registry) {
  std::string text =
      "Usage: run_benchmark [--bench NAME] [--mode train|infer] [-n 1,2,4,8] [-b 32,64,128]\n"
      "                     [--dtype fp32,bf16,fp16,fp8] [-w 20] [-i 100] [-r 7]\n"
      "                     [--data DIR | --synthetic | --generated] [--size full|small]\n"
      "                     [--device cpu|gpu] [--cuda_graph] [--tensor_parallel T]\n"
      "                     [-o report.json]\n"
      "                     [--dllogger log.json] [--markdown FILE] [--plot DIR]\n"
      "       mpirun -np N run_benchmark --comm [--collectives all] [--minbytes 8]\n"
      "                     [--maxbytes 1G] [--stepfactor 2] [-w 5] [-i 20] [--device gpu]\n"
      "       run_benchmark --help | --version\n"
      "\n"
      "Measures training or inference throughput (and inference latency) of a model for every\n"
      "combination of device count, batch size per device and precision. Each configuration\n"
      "runs in its own processes (mpirun for more than one): warm-up steps, never timed, then\n"
      "--repeats windows of --iters steps. Throughput = samples of a window over all devices /\n"
      "its wall time (the slowest process's); the headline is the median over the windows.\n"
      "Latency (infer) = wall time of each batch: mean and true percentiles p50/p90/p95/p99.\n"
      "Weak scaling = median(n devices) / median(1 device) at the same batch per device.\n"
      "One summary for the whole job goes to stdout (Markdown tables), progress to stderr;\n"
      "the reports are rewritten after every configuration, so an interrupted job keeps\n"
      "what it measured. Under srun/mpirun the processes are the devices (on the CPU -n may\n"
      "list fewer: each configuration on the first n processes, for scaling across nodes).\n"
      "--comm measures the collectives of the processes it was started in instead (algorithm\n"
      "and bus bandwidth as nccl-tests defines them, every result checked) and each rank's\n"
      "link bandwidth to the other nodes.\n"
      "\n"
      "Models:\n";
  for (const std::unique_ptr<benchmarks::Benchmark>& b : registry.benchmarks())
    text += fmt::format("  {:<8} {}\n", b->info().name, b->info().summary);
  text +=
      "\n"
      "Exit status: 0 every configuration measured, 1 a configuration failed or the job was\n"
      "interrupted (the reports keep the rest), 2 usage or input error or a report that could\n"
      "not be written.\n"
      "\nFlags:\n";
  return text + base::FlagsHelp(kHelpNames);
}

absl::StatusOr<CommandLine> ParseCommandLine(int argc, char** argv) {
  std::vector<std::string> args = Unaliased(argc, argv);
  std::vector<char*> ptrs;
  for (std::string& a : args) ptrs.push_back(a.data());
  absl::StatusOr<base::ParsedArgs> parsed = base::ParseFlags(
      static_cast<int>(ptrs.size()), ptrs.data(), kFlagNames, /*allow_positional=*/false);
  if (!parsed.ok()) return parsed.status();
  CommandLine cl;
  cl.help = parsed->help;
  cl.version = parsed->version;
  if (cl.help || cl.version) return cl;
  BenchOptions& o = cl.options;
  o.benchmark = absl::GetFlag(FLAGS_bench);
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode == "train") {
    o.mode = Mode::kTrain;
  } else if (mode == "infer" || mode == "inference" || mode == "val") {
    o.mode = Mode::kInfer;
  } else {
    return absl::InvalidArgumentError(fmt::format("--mode={}: expected train or infer", mode));
  }
  absl::StatusOr<std::vector<int>> devices =
      IntList<int>("devices", absl::GetFlag(FLAGS_devices), 1, 4096);
  if (!devices.ok()) return devices.status();
  if (devices->empty()) return absl::InvalidArgumentError("--devices: give at least one count");
  o.devices = *devices;
  absl::StatusOr<std::vector<int64_t>> batches =
      IntList<int64_t>("batch_sizes", absl::GetFlag(FLAGS_batch_sizes), 1, 1 << 20);
  if (!batches.ok()) return batches.status();
  o.batch_sizes = *batches;
  o.dtypes.clear();
  for (absl::string_view d : absl::StrSplit(absl::GetFlag(FLAGS_dtype), ',')) {
    if (d != "fp32" && d != "bf16" && d != "fp16" && d != "fp8") {
      return absl::InvalidArgumentError(
          fmt::format("--dtype={}: expected fp32, bf16, fp16 or fp8 (comma separated)",
                      absl::GetFlag(FLAGS_dtype)));
    }
    if (std::find(o.dtypes.begin(), o.dtypes.end(), d) == o.dtypes.end())
      o.dtypes.emplace_back(d.data(), d.size());
  }
  o.warmup = absl::GetFlag(FLAGS_warmup);
  o.iters = absl::GetFlag(FLAGS_iters);
  o.repeats = absl::GetFlag(FLAGS_repeats);
  o.data_dir = absl::GetFlag(FLAGS_data);
  const bool synthetic = absl::GetFlag(FLAGS_synthetic), generated = absl::GetFlag(FLAGS_generated);
  if (int(!o.data_dir.empty()) + int(synthetic) + int(generated) > 1)
    return absl::InvalidArgumentError("--data, --synthetic and --generated exclude each other");
  o.data = !o.data_dir.empty() ? DataMode::kData
           : generated         ? DataMode::kGenerated
                               : DataMode::kSynthetic;
  o.size = absl::GetFlag(FLAGS_size);
  const std::string device = absl::GetFlag(FLAGS_device);
  if (device != "cpu" && device != "gpu")
    return absl::InvalidArgumentError(fmt::format("--device={}: expected cpu or gpu", device));
  o.gpu = device == "gpu";
  o.cuda_graph = absl::GetFlag(FLAGS_cuda_graph);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.tensor_parallel = absl::GetFlag(FLAGS_tensor_parallel);
  o.cache_dir = absl::GetFlag(FLAGS_cache_dir);
  if (o.cache_dir.empty()) {
    const char* xdg = base::GetEnv("XDG_CACHE_HOME");
    const char* home = base::GetEnv("HOME");
    o.cache_dir = xdg != nullptr && *xdg != '\0' ? fmt::format("{}/mlperf-suite", xdg)
                  : home != nullptr              ? fmt::format("{}/.cache/mlperf-suite", home)
                                                 : std::string(".mlperf-suite-cache");
  }
  o.json_path = absl::GetFlag(FLAGS_json);
  o.dllogger_path = absl::GetFlag(FLAGS_dllogger);
  o.markdown_path = absl::GetFlag(FLAGS_markdown);
  o.plot_dir = absl::GetFlag(FLAGS_plot);
  o.launcher = absl::GetFlag(FLAGS_launcher);
  o.worker_out = absl::GetFlag(FLAGS_worker_out);
  o.collective_timeout_s = absl::GetFlag(FLAGS_collective_timeout);
  o.comm = absl::GetFlag(FLAGS_comm);
  if (o.comm) {
    if (absl::Status s = ApplyCommFlags(parsed->given, o); !s.ok()) return s;
  } else {
    for (const char* comm_flag : {"collectives", "minbytes", "maxbytes", "stepfactor"}) {
      if (std::find(parsed->given.begin(), parsed->given.end(), comm_flag) != parsed->given.end())
        return absl::InvalidArgumentError(fmt::format("--{} needs --comm", comm_flag));
    }
  }
  if (absl::Status s = Validate(o); !s.ok()) return s;
  return cl;
}

}  // namespace mlperf::throughput
