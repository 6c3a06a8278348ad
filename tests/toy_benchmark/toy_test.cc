// The toy benchmark (toy.h), registered from outside benchmarks/, trained
// by run_closed's loop to its lower-is-better target with AdamW under a
// cosine schedule, writing complete MLLOG logs in the closed order; its
// frozen parameter neither trained nor given gradient or optimizer memory;
// its data prepared on the plan's threads.
#include "tests/toy_benchmark/toy.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/exit_codes.h"
#include "benchmarks/registry.h"
#include "closed_division/run_benchmark.h"
#include "fmt/format.h"
#include "logging/mllog_parser.h"
#include "reference/dist/communicator.h"
#include "reference/trainer/trainer.h"

namespace mlperf::toy {
namespace {

namespace fs = std::filesystem;

TEST(ToyBenchmark, TrainsToItsLowerIsBetterTargetThroughRunClosed) {
  benchmarks::BenchmarkRegistry registry;
  registry.Register(MakeToyBenchmark());
  EXPECT_EQ(registry.Names(), "toy");
  const benchmarks::Benchmark* toy = registry.Find("toy");
  ASSERT_NE(toy, nullptr);

  const fs::path out = fs::temp_directory_path() / fmt::format("toy_benchmark_{}", getpid());
  fs::remove_all(out);
  benchmarks::RunnerOptions options;
  options.benchmark = "toy";
  options.out_dir = out.string();
  options.seed = 11;
  std::unique_ptr<dist::Communicator> comm = dist::MakeSingleProcessCommunicator();
  omp_set_num_threads(2);  // more than the plan's one
  ASSERT_EQ(closed::RunBenchmark(*toy, options, {.control = comm.get()}, {.cores = 1}), kExitOk);
  // The data was prepared on the plan's compute threads already.
  EXPECT_EQ(ThreadsWhenPreparing(), 1);

  const fs::path results = out / "mlperf-suite" / "results" / "toy-demo" / "toy";
  EXPECT_TRUE(fs::exists(out / "mlperf-suite" / "systems" / "toy-demo.json"));
  // No --runs: the toy's own required number, 2.
  EXPECT_FALSE(fs::exists(results / "result_2.txt"));
  for (int run = 0; run < 2; ++run) {
    const fs::path log = results / fmt::format("result_{}.txt", run);
    ASSERT_TRUE(fs::exists(log)) << log;
    absl::StatusOr<mllog::ParsedLog> parsed = mllog::ParseFile(log.string());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    std::vector<std::string> keys;
    std::map<std::string, int> count;
    std::vector<double> evals;
    for (const mllog::LogLine& e : parsed->lines) {
      keys.push_back(e.key);
      ++count[e.key];
      if (e.key == "eval_accuracy") {
        evals.push_back(e.value.as_float());
        EXPECT_EQ(e.metadata.Find("epoch_num")->as_int() % 512, 0);  // epochs in samples
      }
    }
    // The closed order: submission keys, init with the seed and every
    // declared hyperparameter once, run_start, blocks and evaluations, run_stop.
    ASSERT_GE(keys.size(), 15u);
    EXPECT_EQ(keys[0], "submission_benchmark");
    EXPECT_EQ(parsed->lines[0].value.as_string(), "toy");
    const auto at = [&](const std::string& k) {
      return std::find(keys.begin(), keys.end(), k) - keys.begin();
    };
    EXPECT_LT(at("submission_platform"), at("init_start"));
    EXPECT_LT(at("init_start"), at("seed"));
    for (const char* k : {"global_batch_size", "opt_name", "opt_base_learning_rate",
                          "train_samples", "eval_samples", "seed", "init_start", "init_stop",
                          "run_start", "run_stop", "cache_clear"})
      EXPECT_EQ(count[k], 1) << k;
    EXPECT_LT(at("eval_samples"), at("init_stop"));
    EXPECT_LT(at("init_stop"), at("run_start"));
    EXPECT_EQ(keys[at("run_start") + 1], "block_start");
    EXPECT_EQ(keys.back(), "run_stop");
    EXPECT_EQ(count["block_start"], count["block_stop"]);
    EXPECT_EQ(count["eval_start"], count["eval_accuracy"]);
    EXPECT_EQ(parsed->lines.back().metadata.Find("status")->as_string(), "success");
    // Lower is better: the loss fell to the target, and the run stopped at
    // the first evaluation at or below it (an earlier one was above).
    ASSERT_GE(evals.size(), 2u) << "the target was met at the first evaluation";
    EXPECT_LE(evals.back(), 0.3);
    EXPECT_GT(evals.back(), 0.0);
    for (size_t i = 0; i + 1 < evals.size(); ++i) EXPECT_GT(evals[i], 0.3) << i;
  }
  fs::remove_all(out);
}

// A frozen parameter has no gradient memory, no optimizer state and never
// changes; it keeps its storage type in the model's checkpoint.
TEST(ToyModel, FrozenParametersGetNoGradientStateOrUpdate) {
  std::unique_ptr<models::Model> model = MakeToyModel({}, 16, 3);
  const layers::Parameter& frozen = model->parameter_tensors().front();
  ASSERT_EQ(frozen.name, "features.weight");
  EXPECT_FALSE(frozen.trainable);
  EXPECT_EQ(frozen.value.dtype(), core::DType::kBF16);
  EXPECT_TRUE(frozen.grad.empty());
  // Trainable: head weight and bias, the table; the arena holds only them.
  ASSERT_EQ(model->slices().size(), 3u);
  int64_t trainable = 0;
  for (const layers::Parameter* p : model->trainable_parameters()) trainable += p->value.numel();
  EXPECT_EQ(model->num_parameters(), trainable + kHidden * kFeatures);
  EXPECT_LT(static_cast<int64_t>(model->parameters().size()), trainable + 256);
  EXPECT_EQ(model->gradients().size(), model->parameters().size());

  std::unique_ptr<dist::Communicator> comm = dist::MakeSingleProcessCommunicator();
  train::Trainer trainer(*model, ToyOptimizer(*model), ToySchedule(20), {}, *comm);
  EXPECT_EQ(trainer.OptimizerStateToHost("exp_avg").size(), model->parameters().size());
  const std::vector<std::byte> before = model->FrozenToHost();
  const std::vector<float> start = model->ParametersToHost();
  std::unique_ptr<benchmarks::DataPipeline> data = ToyPipeline(false, 0, 512, 16, 0, 1);
  models::Batch batch;
  for (int step = 0; step < 5; ++step) {
    ASSERT_TRUE(*data->Next(&batch));
    trainer.TrainStep(batch);
  }
  EXPECT_EQ(model->FrozenToHost(), before);
  EXPECT_NE(model->ParametersToHost(), start);

  const fs::path path = fs::temp_directory_path() / fmt::format("toy_model_{}.st", getpid());
  ASSERT_TRUE(model->SaveSafetensors(path.string()).ok());
  absl::StatusOr<io::SafetensorsFile> file = io::SafetensorsFile::Read(path.string());
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(file->tensors().contains("features.weight"));
  EXPECT_EQ(file->tensors().at("features.weight").dtype, core::DType::kBF16);
  std::unique_ptr<models::Model> other = MakeToyModel({}, 16, 4);
  EXPECT_NE(other->FrozenToHost(), before);
  ASSERT_TRUE(other->LoadSafetensors(path.string()).ok());
  EXPECT_EQ(other->FrozenToHost(), before);
  fs::remove(path);
}

}  // namespace
}  // namespace mlperf::toy
