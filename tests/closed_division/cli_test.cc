// Label `resnet`: the run_closed binary: usage errors (exit 2, one line),
// the refusal to overwrite an earlier package, the MLLOG sequence of a run
// (checked by compliance_check and read back line by line), and Ctrl-C
// during the third run keeping the first two results intact.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/json.h"
#include "datasets/bert/generated.h"
#include "datasets/kits19/generated.h"
#include "fmt/format.h"
#include "logging/mllog_parser.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `args` (argv[0] is the program) with output captured in a file.
Result Spawn(const std::vector<std::string>& args, const fs::path& output) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  Result r;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) return r;
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(output);
  std::ostringstream s;
  s << in.rdbuf();
  r.output = s.str();
  return r;
}

class RunClosed : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("run_closed_cli_{}_{}", getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result RunTool(std::vector<std::string> args) {
    args.insert(args.begin(), RUN_CLOSED_BIN);
    return Spawn(args, dir_ / "output.txt");
  }
  // Common flags: the package (and the generated data, in <out>/.cache) in
  // this test's own folder, so that tests may run in parallel.
  std::vector<std::string> Flags(std::vector<std::string> more) {
    std::vector<std::string> f = {"--out", (dir_ / "out").string()};
    f.insert(f.end(), more.begin(), more.end());
    return f;
  }
  fs::path ResultDir() const {
    return dir_ / "out/mlperf-suite/results/cpu-demo-generated-data/resnet";
  }

  fs::path dir_;
};

int Lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST_F(RunClosed, UsageErrorsExitTwoWithOneLine) {
  const std::vector<std::vector<std::string>> bad = {
      {"--gpu", "1"},
      {"--runs", "-1"},
      {"--bench", "maskrcnn"},
      {"--runs", "many"},
      {"--submitter", "a/b"},
      {"--optimizer", "adam"},
      {"--precision", "fp6"},
      {"--precision", "fp8"},  // resnet has no FP8 layers
      {"--cuda_graph"},
      {"--gpu_decode"},
      {"--gpu_decode", "--gpus", "1", "--bench", "unet3d"},
      {"--ruleset", "5.0.0"},  // resnet's rounds ended at 4.0
      {"--ruleset", "9.9.9"},
      {"stray"},
      {"--runs"},
      {"--gpus", "1"},
      {"--threads", "1000"},
      {"--runs", "1001"},
      {"--seed", "9223372036854775807"},
      {"--nodes", "2"},
      {"--preflight", "--preflight_min", "1.5"},
      {"--tensor_parallel", "0"},
      {"--tensor_parallel", "2"},  // resnet has no tensor-parallel layout
      {"--bench", "gpt3", "--tensor_parallel", "2"},
      {"--bench", "llama31_8b", "--tensor_parallel", "2"},  // one process
  };
  for (const std::vector<std::string>& args : bad) {
    const Result r = RunTool(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.output;
    EXPECT_EQ(Lines(r.output), 1) << args[0] << ": " << r.output;
    EXPECT_TRUE(r.output.starts_with("run_closed: ")) << r.output;
  }
  const Result version = RunTool({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_TRUE(version.output.starts_with("run_closed 0.")) << version.output;
  EXPECT_NE(version.output.find("mlperf-logging"), std::string::npos);
  const Result help = RunTool({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("--submitter"), std::string::npos);
  EXPECT_NE(help.output.find("--precision"), std::string::npos);
  EXPECT_NE(help.output.find("--cuda_graph"), std::string::npos);
  EXPECT_NE(help.output.find("--tensor_parallel"), std::string::npos);
  EXPECT_NE(help.output.find("--gpu_decode"), std::string::npos);
  EXPECT_NE(help.output.find("Exit status"), std::string::npos);
  // The registered benchmarks, in the help and in the error for another.
  EXPECT_NE(help.output.find("resnet   ResNet-50 v1.5"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("0.759 (5 runs, ruleset 4.0.0); the default"), std::string::npos)
      << help.output;
  const std::string unknown = RunTool({"--bench", "maskrcnn"}).output;
  EXPECT_NE(unknown.find("registered: "), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("resnet"), std::string::npos) << unknown;
  // A benchmark's own flag names its owner when given for another.
  EXPECT_NE(RunTool({"--gpu_decode", "--bench", "unet3d"}).output.find("a flag of resnet"),
            std::string::npos);
  // One several benchmarks share names them all.
  const Result shared = RunTool({"--recompute", "--bench", "resnet"});
  EXPECT_EQ(shared.exit_code, 2);
  EXPECT_NE(shared.output.find("--recompute: a flag of llama2_70b_lora and llama31_8b, not of "
                               "resnet"),
            std::string::npos)
      << shared.output;
  // The LoRA benchmark's real data needs its base checkpoint.
  const Result no_base = RunTool({"--bench", "llama2_70b_lora", "--data", "/nonexistent"});
  EXPECT_EQ(no_base.exit_code, 2);
  EXPECT_NE(no_base.output.find("needs --base_model DIR"), std::string::npos) << no_base.output;
  // --list: the registered names, one per line, each one the help lists.
  const Result list = RunTool({"--list"});
  EXPECT_EQ(list.exit_code, 0);
  std::istringstream names(list.output);
  int listed = 0;
  for (std::string name; std::getline(names, name); ++listed)
    EXPECT_NE(help.output.find("\n  " + name + " "), std::string::npos) << name;
  EXPECT_GE(listed, 3);
  EXPECT_NE(list.output.find("resnet\n"), std::string::npos);
}

// Each embedded default is the same run, bit for bit, as its recording: for
// seed 100 the log (tests/closed_division/fixtures, every key, value and
// metadata but the source lines, throughput and the cache flag) and its
// evaluation values. ResNet's was recorded before the benchmark registry, the
// model interface and the generic trainer existed (0.414, 0.666, 0.824),
// which left it unchanged, again when the batch norm's statistics moved to
// fp32 partial sums (2026-11-27), and again when the stride-1 convolutions'
// data gradient became a convolution over dy (conv_nhwc.cc): each changes the
// order of sums, and so the run's values. The 3D U-Net's and BERT's were
// recorded before the optimizers, schedules and evaluators became interfaces
// and the benchmarks moved into folders of their own (2026-11-28); DLRM-dcnv2's
// when it joined (2026-11-28).
// The precision keys came later, and the layout keys (tensor_parallelism
// ..., micro_batch_size, config_filename) later still; they are checked
// apart (fp32, 1, ...). Llama 3.1 8B's, GPT-3's and Llama 2 70B LoRA's were
// recorded when they joined (2026-11-29); GPT-3's and LoRA's include
// pre-training their starting checkpoints.
// The recordings used OpenBLAS's AVX2 kernels; its AVX-512 ones round
// differently, and training amplifies that, so an AVX-512 machine is asked
// for the AVX2 kernels here.
struct Recording {
  std::string bench;
  std::vector<double> eval_values;
};

void PrintTo(const Recording& r, std::ostream* os) { *os << r.bench; }

void ExpectTheRecordedLog(const fs::path& result, const Recording& recording) {
  absl::StatusOr<mlperf::mllog::ParsedLog> log = mlperf::mllog::ParseFile(result.string());
  ASSERT_TRUE(log.ok()) << log.status();
  std::vector<mlperf::mllog::LogLine> lines;
  for (const mlperf::mllog::LogLine& l : log->lines) {
    if (l.key.starts_with("lowest_numerical_precision_in_")) {
      EXPECT_EQ(mlperf::json::Dump(l.value), "\"fp32\"") << l.key;
    } else if (l.key.ends_with("_parallelism")) {
      EXPECT_EQ(mlperf::json::Dump(l.value), "1") << l.key;
    } else if (l.key == "micro_batch_size") {
      EXPECT_GE(l.value.as_int(), 1);
    } else if (l.key == "config_filename") {
      EXPECT_EQ(l.value.as_string(), "run_closed --bench " + recording.bench);
    } else {
      lines.push_back(l);
    }
  }
  std::ifstream fixture(
      fmt::format("tests/closed_division/fixtures/{}_demo_seed100_run0.jsonl", recording.bench));
  ASSERT_TRUE(fixture.good());
  std::vector<double> values;
  size_t i = 0;
  for (std::string line; std::getline(fixture, line); ++i) {
    absl::StatusOr<mlperf::json::Value> want = mlperf::json::Parse(line);
    ASSERT_TRUE(want.ok()) << line;
    ASSERT_LT(i, lines.size()) << "the log ends before the recorded one";
    const mlperf::mllog::LogLine& got = lines[i];
    ASSERT_EQ(got.key, want->Find("key")->as_string()) << "line " << i;
    if (got.key != "throughput" && got.key != "cache_clear") {
      EXPECT_EQ(mlperf::json::Dump(got.value), mlperf::json::Dump(*want->Find("value"))) << got.key;
    }
    for (const mlperf::json::Member& m : want->Find("metadata")->as_object())
      EXPECT_EQ(mlperf::json::Dump(*got.metadata.Find(m.first)), mlperf::json::Dump(m.second))
          << got.key;
    if (got.key == "eval_accuracy") values.push_back(got.value.as_float());
  }
  EXPECT_EQ(i, lines.size());
  EXPECT_EQ(values, recording.eval_values);
}

class SameSeed : public RunClosed, public ::testing::WithParamInterface<Recording> {};

TEST_P(SameSeed, GivesTheRecordedLog) {
  const Recording& recording = GetParam();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  const Result r = RunTool(
      Flags({"--bench", recording.bench, "--runs", "1", "--seed", "100", "--threads", "1"}));
  unsetenv("OPENBLAS_CORETYPE");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectTheRecordedLog(
      dir_ / "out/mlperf-suite/results/cpu-demo-generated-data" / recording.bench / "result_0.txt",
      recording);
}

INSTANTIATE_TEST_SUITE_P(
    EmbeddedDefaults, SameSeed,
    ::testing::Values(
        Recording{"resnet", {0.354, 0.71, 0.584, 0.814}},
        Recording{
            "unet3d",
            {0.44689414614722844, 0.5520757493518648, 0.8854650769914899, 0.9489657084147135}},
        Recording{"bert",
                  {0.017992424242424244, 0.0533008658008658, 0.22564935064935066,
                   0.43506493506493504, 0.6248647186147186, 0.8705357142857143}},
        Recording{"dlrm_dcnv2",
                  {0.7109976592408604, 0.7581081758913318, 0.776889023014674, 0.802553058276145,
                   0.8356870825816594}},
        Recording{"gpt3",
                  {2.692572593688965,  2.6924054622650146, 2.692256450653076,  2.692108154296875,
                   2.6919682025909424, 2.6918251514434814, 2.6916913986206055, 2.691555976867676,
                   2.6914217472076416, 2.6912879943847656, 2.691159248352051,  2.6910347938537598,
                   2.6909141540527344, 2.6907925605773926, 2.6906745433807373, 2.6905531883239746,
                   2.69043231010437,   2.6903111934661865, 2.690190315246582,  2.6900699138641357,
                   2.6899466514587402}},
        Recording{"llama31_8b",
                  {5.296310901641846, 4.759243011474609, 4.2652974128723145, 3.783155918121338,
                   3.3138294219970703, 2.87711238861084}},
        Recording{
            "llama2_70b_lora",
            {1.7731846173604329, 1.5928818384806316, 1.4779151280721028, 1.3578338623046875,
             1.4794878959655762, 1.3121883869171143, 1.2204353014628093, 1.2239580949147542,
             1.2568244934082031, 1.1802465915679932, 1.2194493611653645, 1.164229154586792,
             1.139755646387736,  1.1293595631917317, 1.1134098370869954, 1.2821898460388184,
             1.1627347469329834, 1.1405017375946045, 1.2101908524831135, 1.1132081349690754,
             1.0968356132507324, 1.0570721626281738, 1.0415290991465251, 1.0298201243082683,
             1.0930582682291667, 1.0665157636006672, 1.0132993062337239, 0.9954098065694174,
             0.9627914428710938, 0.9480117162068685, 0.9747223854064941, 0.9205386638641357}}),
    [](const ::testing::TestParamInfo<Recording>& info) { return info.param.bench; });

TEST_F(RunClosed, RefusesToWriteIntoAPackageWithResults) {
  fs::create_directories(ResultDir());
  std::ofstream(ResultDir() / "result_0.txt") << "earlier\n";
  const Result r = RunTool(Flags({"--runs", "1"}));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(Lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("refusing to overwrite"), std::string::npos) << r.output;
  std::ifstream in(ResultDir() / "result_0.txt");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "earlier");
  EXPECT_FALSE(fs::exists(ResultDir() / "result_1.txt"));
}

// Exit 2 before the line announcing the runs, which comes before any model
// is built.
void ExpectRefusedBeforeTheRuns(const Result& r) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output.find(" run(s) of "), std::string::npos) << r.output;
}

// Bad --data fails in seconds, before any model is built: a raw KiTS19 tree
// is prepared into the cache (untimed) and then found incomplete, and that
// cache refuses another tree; a raw volume that is truncated, a prepared
// "case" that is a FIFO or no array at all, and an ImageNet folder without
// its images are each one line naming the path, exit 2.
TEST_F(RunClosed, BadDataIsRefusedBeforeTheModelIsBuilt) {
  using mlperf::kits19::GeneratedKits19Options;
  const fs::path raw = dir_ / "raw";
  ASSERT_TRUE(mlperf::kits19::WriteGeneratedKits19(raw, GeneratedKits19Options{.cases = 2}).ok());
  Result r = RunTool(Flags({"--bench", "unet3d", "--runs", "1", "--data", raw.string()}));
  ExpectRefusedBeforeTheRuns(r);
  const fs::path prepared = dir_ / "out/.cache/kits19-prepared";
  EXPECT_NE(r.output.find("prepared data set: " + prepared.string()), std::string::npos)
      << r.output;
  EXPECT_NE(
      r.output.find(prepared.string() + ": 1 training and 1 evaluation cases, expected 168 and 42"),
      std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::is_regular_file(prepared / "case_00001_y.npy"));
  // That cache never serves another tree's volumes.
  const fs::path other = dir_ / "other";
  ASSERT_TRUE(mlperf::kits19::WriteGeneratedKits19(other, GeneratedKits19Options{.cases = 2}).ok());
  r = RunTool(Flags({"--bench", "unet3d", "--data", other.string()}));
  ExpectRefusedBeforeTheRuns(r);
  EXPECT_NE(r.output.find(prepared.string() + " holds the volumes prepared from " + raw.string()),
            std::string::npos)
      << r.output;

  const fs::path truncated = dir_ / "truncated";
  fs::copy(raw, truncated, fs::copy_options::recursive);
  const fs::path volume = truncated / "case_00001/imaging.nii.gz";
  fs::resize_file(volume, fs::file_size(volume) / 2);
  r = RunTool(Flags({"--bench", "unet3d", "--data", truncated.string(), "--cache_dir",
                     (dir_ / "cache2").string()}));
  ExpectRefusedBeforeTheRuns(r);
  EXPECT_NE(r.output.find(volume.string() + ":"), std::string::npos) << r.output;

  const fs::path cases = dir_ / "prepared";
  fs::create_directories(cases);
  for (int id = 0; id < 210; ++id) {
    for (const char* suffix : {"x", "y"}) {
      const fs::path file = cases / fmt::format("case_{:05d}_{}.npy", id, suffix);
      if (id == 1 && *suffix == 'x') {
        ASSERT_EQ(mkfifo(file.c_str(), 0600), 0);
      } else {
        std::ofstream{file};
      }
    }
  }
  r = RunTool(Flags({"--bench", "unet3d", "--data", cases.string()}));
  ExpectRefusedBeforeTheRuns(r);
  EXPECT_NE(r.output.find((cases / "case_00001_x.npy").string() + ": not a regular file"),
            std::string::npos)
      << r.output;
  // The headers are read too: an empty "array" is refused by name.
  fs::remove(cases / "case_00001_x.npy");
  std::ofstream{cases / "case_00001_x.npy"};
  r = RunTool(Flags({"--bench", "unet3d", "--data", cases.string()}));
  ExpectRefusedBeforeTheRuns(r);
  EXPECT_NE(r.output.find((cases / "case_00001_x.npy").string() + ": not a .npy file"),
            std::string::npos)
      << r.output;

  const fs::path imagenet = dir_ / "imagenet";
  fs::create_directories(imagenet / "train/n01440764");
  fs::create_directories(imagenet / "val/n01440764");
  std::ofstream{imagenet / "train/n01440764/a.JPEG"} << "x";
  std::ofstream{imagenet / "val/n01440764/b.JPEG"} << "x";
  r = RunTool(Flags({"--data", imagenet.string()}));
  ExpectRefusedBeforeTheRuns(r);
  EXPECT_NE(r.output.find(imagenet.string() + ": 1 training images, expected 1281167"),
            std::string::npos)
      << r.output;
}

// BERT's --data: a folder without the starting checkpoint is a usage error
// naming it; shards of another sequence length and an evaluation file that
// is not the 10,000 samples are each one line naming the file, exit 2,
// before any model is built (a damaged checkpoint: tf_checkpoint_test).
TEST_F(RunClosed, BadBertDataIsRefusedBeforeTheModelIsBuilt) {
  namespace bert = mlperf::datasets::bert;
  const fs::path data = dir_ / "wiki";
  fs::create_directories(data);
  Result r = RunTool(Flags({"--bench", "bert", "--data", data.string()}));
  ExpectRefusedBeforeTheRuns(r);
  EXPECT_NE(r.output.find("no model.ckpt-28252.index"), std::string::npos) << r.output;

  // The demonstration's short sequences are not BERT-Large's 512 tokens.
  bert::GeneratedBertOptions g{.train_samples = 64, .train_shards = 1, .eval_samples = 16};
  ASSERT_TRUE(bert::WriteGeneratedBertData(data.string(), g).ok());
  std::ofstream{data / "model.ckpt-28252.index"} << "not a checkpoint";
  r = RunTool(Flags({"--bench", "bert", "--data", data.string()}));
  ExpectRefusedBeforeTheRuns(r);
  EXPECT_NE(r.output.find((data / "part-00000-of-00001").string()), std::string::npos) << r.output;

  // The reference's shapes, but 16 evaluation samples.
  fs::remove_all(data);
  g.seq_len = 512;
  g.max_predictions = 76;
  ASSERT_TRUE(bert::WriteGeneratedBertData(data.string(), g).ok());
  std::ofstream{data / "model.ckpt-28252.index"} << "not a checkpoint";
  r = RunTool(Flags({"--bench", "bert", "--data", data.string()}));
  ExpectRefusedBeforeTheRuns(r);
  EXPECT_NE(r.output.find((data / "eval_10k").string() + ": 16 evaluation samples, expected 10000"),
            std::string::npos)
      << r.output;
}

// One whole run of the embedded default: compliance_check accepts its log
// under ruleset 4.0.0, and the sequence is the closed-division one.
TEST_F(RunClosed, OneRunWritesACompliantLogInTheClosedOrder) {
  const Result r = RunTool(Flags({"--runs", "1", "--seed", "11"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("eval after epoch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("samples/s"), std::string::npos);
  EXPECT_NE(r.output.find("--rcp-bypass"), std::string::npos);
  const fs::path log = ResultDir() / "result_0.txt";
  ASSERT_TRUE(fs::exists(log));
  EXPECT_FALSE(fs::exists(ResultDir() / "result_0.txt.incomplete"));
  const Result check =
      Spawn({COMPLIANCE_CHECK_BIN, "--ruleset", "4.0.0", log.string()}, dir_ / "check.txt");
  EXPECT_EQ(check.exit_code, 0) << check.output;

  absl::StatusOr<mlperf::mllog::ParsedLog> parsed = mlperf::mllog::ParseFile(log.string());
  ASSERT_TRUE(parsed.ok());
  std::vector<std::string> keys;
  for (const auto& line : parsed->lines) keys.push_back(line.key);
  auto first = [&](const std::string& k) {
    return std::find(keys.begin(), keys.end(), k) - keys.begin();
  };
  auto count = [&](const std::string& k) { return std::count(keys.begin(), keys.end(), k); };
  EXPECT_LT(first("cache_clear"), first("init_start"));
  EXPECT_LT(first("init_start"), first("seed"));
  EXPECT_LT(first("seed"), first("init_stop"));
  EXPECT_LT(first("init_stop"), first("run_start"));
  EXPECT_LT(first("run_start"), first("block_start"));
  EXPECT_EQ(keys.back(), "run_stop");
  for (const char* once : {"seed", "run_start", "run_stop", "init_stop", "global_batch_size",
                           "opt_name", "lars_opt_weight_decay", "train_samples", "eval_samples"}) {
    EXPECT_EQ(count(once), 1) << once;
  }
  EXPECT_EQ(count("block_start"), count("block_stop"));
  EXPECT_EQ(count("epoch_start"), count("epoch_stop"));
  EXPECT_EQ(count("eval_accuracy"), count("eval_start"));
  EXPECT_EQ(count("throughput"), count("epoch_stop"));
  // Evaluations at 3 + 4k; the run stops at the first one at the target.
  std::vector<int64_t> eval_epochs;
  double last = 0;
  for (const auto& line : parsed->lines) {
    if (line.key != "eval_accuracy") continue;
    eval_epochs.push_back(line.metadata.Find("epoch_num")->as_int());
    last = line.value.as_float();
  }
  ASSERT_GE(eval_epochs.size(), 2u) << "the target should not be reached at the first evaluation";
  for (size_t i = 0; i < eval_epochs.size(); ++i) EXPECT_EQ(eval_epochs[i], 3 + 4 * int64_t(i));
  EXPECT_GE(last, 0.759);
  EXPECT_EQ(parsed->lines.back().metadata.Find("status")->as_string(), "success");
}

// The kernel switches a run was made with are in its system description,
// so two packages made with different switches do not look the same.
TEST_F(RunClosed, TheSystemDescriptionRecordsTheKernelSwitches) {
  const auto sw_notes = [&](const std::string& out) {
    std::ifstream in(dir_ / out / "mlperf-suite/systems/cpu-demo-generated-data.json");
    std::ostringstream text;
    text << in.rdbuf();
    absl::StatusOr<mlperf::json::Value> doc = mlperf::json::Parse(text.str());
    return doc.ok() && doc->Find("sw_notes") != nullptr ? doc->Find("sw_notes")->as_string()
                                                        : std::string("(none)");
  };
  setenv("MLPERF_NORM_WIDE", "0", 1);
  setenv("MLPERF_CPU_AMX", "0", 1);
  const Result set =
      RunTool({"--out", (dir_ / "set").string(), "--runs", "1", "--max_epochs", "1"});
  unsetenv("MLPERF_NORM_WIDE");
  unsetenv("MLPERF_CPU_AMX");
  ASSERT_EQ(set.exit_code, 0) << set.output;
  EXPECT_NE(sw_notes("set").find("kernel switches: MLPERF_NORM_WIDE=0, MLPERF_CPU_AMX=0"),
            std::string::npos)
      << sw_notes("set");
  const Result plain =
      RunTool({"--out", (dir_ / "plain").string(), "--runs", "1", "--max_epochs", "1"});
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_NE(sw_notes("plain").find("kernel switches: defaults"), std::string::npos)
      << sw_notes("plain");
}

// Two invocations into one package: the second is refused, naming the
// process that writes it, and the first finishes with logs of its own runs only.
TEST_F(RunClosed, ASecondInvocationIntoThePackageIsRefused) {
  std::vector<std::string> args = Flags({"--runs", "2", "--max_epochs", "2", "--seed", "5"});
  args.insert(args.begin(), RUN_CLOSED_BIN);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const fs::path first_output = dir_ / "first.txt";
  posix_spawn_file_actions_addopen(&actions, 2, first_output.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  // The first holds the lock once its first run's log exists.
  const fs::path started = ResultDir() / "result_0.txt.incomplete";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(started) && !fs::exists(ResultDir() / "result_0.txt") &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const Result second = RunTool(Flags({"--runs", "1", "--seed", "9"}));
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  // Both runs stop at --max_epochs before the target: more misses than
  // olympic scoring allows, exit 1 as documented (not a failure to write).
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_EQ(second.exit_code, 2) << second.output;
  EXPECT_EQ(Lines(second.output), 1) << second.output;
  EXPECT_NE(second.output.find("is being written by another run_closed"), std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find(fmt::format("held by process {}", pid)), std::string::npos)
      << second.output;
  for (int run : {0, 1}) {
    absl::StatusOr<mlperf::mllog::ParsedLog> parsed =
        mlperf::mllog::ParseFile((ResultDir() / fmt::format("result_{}.txt", run)).string());
    ASSERT_TRUE(parsed.ok()) << run;
    int seeds = 0;
    for (const mlperf::mllog::LogLine& l : parsed->lines) seeds += l.key == "seed";
    EXPECT_EQ(seeds, 1) << run;
    EXPECT_EQ(parsed->lines.back().key, "run_stop") << run;
  }
}

TEST_F(RunClosed, InterruptDuringTheThirdRunKeepsTheFinishedRuns) {
  const std::vector<std::string> args = [&] {
    std::vector<std::string> a = Flags({"--runs", "3", "--max_epochs", "2", "--seed", "21"});
    a.insert(a.begin(), RUN_CLOSED_BIN);
    return a;
  }();
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const fs::path output = dir_ / "output.txt";
  posix_spawn_file_actions_addopen(&actions, 2, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  const fs::path third = ResultDir() / "result_2.txt.incomplete";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(third) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs::exists(third));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed instead of stopping cleanly";
  EXPECT_EQ(WEXITSTATUS(status), 1);
  for (int run : {0, 1}) {
    absl::StatusOr<mlperf::mllog::ParsedLog> parsed =
        mlperf::mllog::ParseFile((ResultDir() / fmt::format("result_{}.txt", run)).string());
    ASSERT_TRUE(parsed.ok()) << run;
    ASSERT_FALSE(parsed->lines.empty());
    EXPECT_EQ(parsed->lines.back().key, "run_stop") << run;
  }
  EXPECT_FALSE(fs::exists(ResultDir() / "result_2.txt"));
  EXPECT_TRUE(fs::exists(third));
  std::ifstream in(output);
  std::ostringstream s;
  s << in.rdbuf();
  EXPECT_NE(s.str().find("interrupted during run 3"), std::string::npos) << s.str();
}

}  // namespace
