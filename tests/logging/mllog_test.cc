#include "logging/mllog.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/environment.h"
#include "gtest/gtest.h"
#include "logging/mllog_parser.h"

namespace mlperf::mllog {
namespace {

std::unique_ptr<Logger> StreamLogger(std::ostream& out) {
  auto logger = Logger::Create({.stream = &out});
  EXPECT_TRUE(logger.ok());
  return std::move(*logger);
}

// The official emitter's own test case: start of run_start at a fixed time.
TEST(Logger, OfficialGoldenLine) {
  std::ostringstream out;
  auto logger = StreamLogger(out);
  Record r;
  r.type = EventType::kIntervalStart;
  r.key = key::kRunStart;
  r.time_ms = 1234567890123;
  r.caller = {"mybenchmark/file.py", 42};
  logger->Log(r);
  EXPECT_EQ(
      out.str(),
      R"(:::MLLOG {"namespace": "", "time_ms": 1234567890123, "event_type": "INTERVAL_START", )"
      R"("key": "run_start", "value": null, "metadata": {"file": "mybenchmark/file.py", "lineno": 42}})"
      "\n");
}

TEST(Logger, CapturesTheCallersFileAndLine) {
  std::ostringstream out;
  auto logger = StreamLogger(out);
  const int line = __LINE__ + 1;
  logger->Event(key::kSeed, 7, {{meta::kEpochNum, 1}});
  ParsedLog log = ParseText(out.str(), "t");
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_EQ(log.lines[0].metadata.Find("file")->as_string(), "tests/logging/mllog_test.cc");
  EXPECT_EQ(log.lines[0].metadata.Find("lineno")->as_int(), line);
  EXPECT_EQ(log.lines[0].metadata.Find("epoch_num")->as_int(), 1);
  EXPECT_EQ(log.lines[0].metadata.as_object().size(), 3u);
  const double now = static_cast<double>(NowMs());
  EXPECT_NEAR(log.lines[0].time_ms, now, 60'000);
}

TEST(Logger, CallerMetadataOverridesInPlace) {
  std::ostringstream out;
  auto logger = StreamLogger(out);
  Record r;
  r.key = "k";
  r.time_ms = 5;
  r.caller = {"a.cc", 7};
  r.metadata = {{"lineno", 99}, {"extra", "x"}};
  r.clear_line = true;
  logger->Log(r);
  EXPECT_EQ(out.str(),
            "\n:::MLLOG {\"namespace\": \"\", \"time_ms\": 5, \"event_type\": \"POINT_IN_TIME\", "
            "\"key\": \"k\", \"value\": null, \"metadata\": {\"file\": \"a.cc\", \"lineno\": 99, "
            "\"extra\": \"x\"}}\n");
}

TEST(Logger, DisabledRankWritesNothing) {
  std::ostringstream out;
  auto logger = Logger::Create({.stream = &out, .enabled = false});
  ASSERT_TRUE(logger.ok());
  (*logger)->Event(key::kSeed, 1);
  EXPECT_EQ(out.str(), "");
}

TEST(Logger, OnlyRankZeroWritesByDefault) {
  if (base::GetEnv("RANK") != nullptr) GTEST_SKIP() << "RANK is set by the launcher";
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  EXPECT_EQ(RankFromEnvironment(), 1);
  EXPECT_FALSE(LoggerOptions{}.enabled);
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  EXPECT_TRUE(LoggerOptions{}.enabled);
  ::unsetenv("OMPI_COMM_WORLD_RANK");
}

TEST(Logger, AppendsToFileAndEveryLineIsOnDiskAtOnce) {
  const auto path = std::filesystem::temp_directory_path() / "mllog_test_append.txt";
  std::filesystem::remove(path);
  { std::ofstream(path) << "earlier run\n"; }
  auto logger = Logger::Create({.path = path.string()});
  ASSERT_TRUE(logger.ok());
  (*logger)->Event(key::kCacheClear, true);
  // Read while the logger is still open: nothing may sit in a buffer.
  auto log = ParseFile(path.string());
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->lines.size(), 1u);
  EXPECT_EQ(log->lines[0].file_line, 2);  // the earlier content was kept
  EXPECT_TRUE((*logger)->status().ok());
  std::filesystem::remove(path);
}

TEST(Logger, UnwritableFileIsAClearError) {
  auto logger = Logger::Create({.path = "/nonexistent-dir/log.txt"});
  ASSERT_FALSE(logger.ok());
  EXPECT_NE(logger.status().message().find("/nonexistent-dir/log.txt: cannot open log file"),
            std::string::npos);
}

TEST(Logger, FullDiskIsReported) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  auto logger = Logger::Create({.path = "/dev/full"});
  ASSERT_TRUE(logger.ok());
  (*logger)->Event(key::kSeed, 1);
  EXPECT_FALSE((*logger)->status().ok());
  EXPECT_NE((*logger)->status().message().find("cannot write log line"), std::string::npos);
}

TEST(Logger, ThreadsNeverInterleaveWithinALine) {
  std::ostringstream out;
  auto logger = StreamLogger(out);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i)
        logger->Event("k", std::string(100, static_cast<char>('a' + t)));
    });
  }
  for (auto& th : threads) th.join();
  ParsedLog log = ParseText(out.str(), "t");
  EXPECT_EQ(log.lines.size(), 2000u);
  EXPECT_TRUE(log.diagnostics.empty());
}

TEST(Keys, NamesAreTheWireNames) {
  EXPECT_EQ(key::kGlobalBatchSize, "global_batch_size");
  EXPECT_EQ(key::kLarsOptWeightDecay, "lars_opt_weight_decay");
  EXPECT_EQ(key::kDataSpeedPerturbatonMax,
            "data_speed_perturbaton_max");  // sic, as the rules spell it
  EXPECT_EQ(std::size(key::kAll), 141u);
}

}  // namespace
}  // namespace mlperf::mllog
