// What a run_benchmark invocation asks for (the command line, validated) and
// one configuration of it: a device count, a batch size per device and a
// precision.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mlperf::throughput {

enum class Mode { kTrain, kInfer };
// Where the batches come from: one synthetic batch reused (compute only), the
// benchmark's data set through its loader ("total" throughput: loading and
// augmentation included), or the embedded generated data set through it.
enum class DataMode { kSynthetic, kData, kGenerated };

struct BenchOptions {
  std::string benchmark;  // "" = the registry's default
  Mode mode = Mode::kTrain;
  std::vector<int> devices = {1};    // -n: device counts (CPU: processes)
  std::vector<int64_t> batch_sizes;  // -b: per device; empty = the recipe's for one process
  std::vector<std::string> dtypes = {"fp32"};
  int warmup = 20, iters = 100, repeats = 7;
  DataMode data = DataMode::kSynthetic;
  std::string data_dir;
  std::string size = "full";  // the family member: full or small
  bool gpu = false;
  bool cuda_graph = false;  // training steps recorded once as CUDA graphs and replayed
  int threads = 0;          // compute threads per process; 0 = the process's share of the cores
  // Processes each model is split over (the decoder LLMs on the CPU); a
  // device count is then that many times the data-parallel ranks.
  int tensor_parallel = 1;
  std::string cache_dir;    // for --generated; "" = $XDG_CACHE_HOME/mlperf-suite (~/.cache/...)
  std::string json_path, dllogger_path, markdown_path, plot_dir;
  std::string launcher;  // prefix that starts N processes; "{n}" is replaced
  // Seconds in a collective before the peers are checked (0 = never;
  // runtime/collective_watchdog.h).
  int collective_timeout_s = 60;
  // --comm: collective bandwidth of the launched processes instead of a
  // model (runtime/collective_bench.h): which collectives, the size sweep.
  bool comm = false;
  std::string collectives = "all";
  int64_t min_bytes = 8, max_bytes = int64_t{1} << 30, step_factor = 2;
  // Internal: this process group measures exactly one configuration and rank
  // 0 writes its result here (the driver reads it).
  std::string worker_out;
};

struct Config {
  int devices = 1;
  int64_t batch = 0;  // per device
  std::string dtype = "fp32";
  int nodes = 1;  // distinct hosts among its processes
};

// "train" or "infer"; "synthetic", "data" or "generated".
const char* ModeName(Mode mode);
const char* DataModeName(DataMode data);

}  // namespace mlperf::throughput
