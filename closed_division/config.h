// What a run_closed invocation does: the options from the command line and
// the closed-division ResNet-50 configuration they select (recipe per scale,
// or the embedded demonstration on generated data).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace mlperf::closed {

inline constexpr char kBenchmarkResnet[] = "resnet";
// Required result files per benchmark (package_checker benchmark_meta).
inline constexpr int kResnetRequiredRuns = 5;
// ResNet's last training ruleset; the logs and the package target it.
inline constexpr char kResnetRuleset[] = "4.0.0";
// Top-1 target (closed_resnet rules: 0.759 <= v < 1.0).
inline constexpr double kResnetTarget = 0.759;
// ImageNet ILSVRC-2012 split sizes (reference imagenet_preprocessing.py).
inline constexpr int64_t kImagenetTrainImages = 1281167;
inline constexpr int64_t kImagenetValImages = 50000;

// The command line, validated (flags.cc).
struct RunnerOptions {
  std::string benchmark = kBenchmarkResnet;
  int gpus = 0;   // per node; 0 = CPU
  int nodes = 1;
  std::string data_dir;  // "" = the embedded generated data set
  int runs = kResnetRequiredRuns;
  std::string submitter = "mlperf-suite";
  std::string system;  // "" = derived from the configuration
  std::string out_dir = "submissions";
  std::string cache_dir;  // "" = <out>/.cache
  int64_t seed = -1;      // -1 = fresh seeds from /dev/urandom; else run i uses seed + i
  int max_epochs = 0;     // 0 = the whole schedule; else a cap (tests)
  std::string optimizer = "lars";
  int threads = 0;  // compute threads per process; 0 = chosen from the cores per process
};

enum class Optimizer { kLars, kSgd };

// Closed-division ResNet hyperparameters (references.md 2.4-2.6), all of
// which are logged.
struct ResnetRecipe {
  Optimizer optimizer = Optimizer::kLars;
  int64_t global_batch_size = 3264;
  double base_lr = 10.5;
  double end_lr = 1e-4;  // fixed by the rules
  double poly_power = 2.0;  // fixed by the rules
  double warmup_epochs = 2;
  int64_t decay_epochs = 37;  // the schedule's horizon (NVIDIA's NUMEPOCHS)
  double momentum = 0.9;
  double weight_decay = 5e-5;  // 1e-4 * 2^k
  double label_smoothing = 0.1;  // 0 or 0.1
  double lars_eta = 0.001;
  // Evaluations after epochs first_eval_epoch + 4k (k >= 0); the rules allow
  // the first one after 1, 2, 3 or 4 epochs. NVIDIA evaluates at 3 + 4k.
  int first_eval_epoch = 3;
  int eval_every_epochs = 4;
};

// The model and data of a configuration; for ImageNet the real ResNet-50.
struct ResnetModelShape {
  int64_t base_width = 64;
  int blocks[4] = {3, 4, 6, 3};
  int num_classes = 1000;
  int image_size = 224;
  int resize_shorter = 256;
};

// The generated demonstration data set (embedded default).
struct GeneratedDataShape {
  int num_classes = 10;
  int train_per_class = 200;
  int val_per_class = 50;
  int image_size = 32;
  uint64_t seed = 1;
};

struct RunPlan {
  RunnerOptions options;
  bool demo = false;  // embedded generated data: labelled as a demonstration everywhere
  int world_size = 1;  // data-parallel ranks (processes)
  int64_t batch_per_rank = 0;
  ResnetRecipe recipe;
  ResnetModelShape model;
  GeneratedDataShape generated;  // meaningful when demo
  std::string data_root;         // ImageNet tree, or where the generated set lives
  int64_t train_samples = 0;
  int64_t eval_samples = 0;
  std::string system_name;
  // Threads per process: the model's OpenMP/BLAS threads and the loader's
  // decode threads. Oversubscribing the cores stalls OpenMP barriers badly.
  int compute_threads = 1;
  int loader_threads = 1;
  // Whether an RCP exists for the batch size (else the package needs
  // --rcp-bypass and says so).
  bool rcp_batch_size = false;

  int64_t steps_per_epoch() const { return train_samples / recipe.global_batch_size; }
  // The last epoch of the schedule: the decay horizon rounded up to an
  // evaluation epoch, so the schedule ends with an evaluation.
  int last_epoch() const;
  bool is_eval_epoch(int epoch) const;
};

// Builds the plan for `options` running on `world_size` processes. Errors are
// usage errors (exit 2): a scale with no recipe, an unknown optimizer, ...
// `cores_per_process`: this machine's cores over the processes on it.
absl::StatusOr<RunPlan> MakeRunPlan(const RunnerOptions& options, int world_size,
                                    int cores_per_process);

}  // namespace mlperf::closed
