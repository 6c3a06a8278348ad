// Logging costs, against the official Python tools measured in the same run:
//  * emitting one event to a file (target: at most 2 us), vs mlperf_logging.mllog;
//  * parsing result logs (MB/s on one core), vs the official parser.
//
// usage: bench_mllog CORPUS_DIR   (e.g. ../shared/corpus)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "fmt/format.h"
#include "logging/mllog.h"
#include "logging/mllog_parser.h"

namespace fs = std::filesystem;
namespace mllog = mlperf::mllog;

namespace {

constexpr int kEvents = 200'000;
constexpr int kRepeats = 5;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The events of a training step's worth of logging: a value with metadata.
double OurEmitNs(const fs::path& file) {
  std::vector<double> per_event;
  for (int r = 0; r < kRepeats; ++r) {
    fs::remove(file);
    auto logger = mllog::Logger::Create({.path = file.string()});
    if (!logger.ok()) {
      fmt::print(stderr, "{}\n", logger.status().ToString());
      std::exit(2);
    }
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kEvents; ++i) {
      (*logger)->Event(mllog::key::kEvalAccuracy, 0.75 + i * 1e-7,
                       {{mllog::meta::kEpochNum, i}, {mllog::meta::kSamplesCount, 1281167}});
    }
    per_event.push_back(Seconds(std::chrono::steady_clock::now() - start) * 1e9 / kEvents);
  }
  fs::remove(file);
  return Median(per_event);
}

// Runs a Python snippet that prints one number.
double PythonNumber(const std::string& code) {
  const std::string cmd = fmt::format("python3 -c '{}'", code);
  FILE* pipe = popen(cmd.c_str(), "r");
  double value = -1;
  if (pipe == nullptr || std::fscanf(pipe, "%lf", &value) != 1) value = -1;
  if (pipe != nullptr) pclose(pipe);
  return value;
}

double OfficialEmitNs(const fs::path& file) {
  return PythonNumber(fmt::format(R"(
import logging, time, statistics
from mlperf_logging import mllog
mllog.config(filename="{0}")
m = mllog.get_mllogger()
m.logger.handlers = [h for h in m.logger.handlers if isinstance(h, logging.FileHandler)]
runs = []
for r in range({2}):
    t = time.perf_counter()
    for i in range({1}):
        m.event(key="eval_accuracy", value=0.75 + i * 1e-7, metadata={{"epoch_num": i, "samples_count": 1281167}})
    runs.append((time.perf_counter() - t) * 1e9 / {1})
print(statistics.median(runs))
)",
                                  file.string(), kEvents / 10, kRepeats));
}

double OfficialParseMBps(const std::vector<fs::path>& files, double mb) {
  std::string list;
  for (const auto& f : files) list += fmt::format("\"{}\",", f.string());
  const double seconds = PythonNumber(fmt::format(R"(
import time
from mlperf_logging.compliance_checker.mlp_parser import parse_file
t = time.perf_counter()
for f in [{}]:
    parse_file(f, "6.1.0")
print(time.perf_counter() - t)
)",
                                                  list));
  return seconds > 0 ? mb / seconds : -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: bench_mllog CORPUS_DIR\n");
    return 2;
  }
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(argv[1], ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file() && it->path().filename().string().starts_with("result_")) {
      files.push_back(it->path());
    }
  }
  if (ec || files.empty()) {
    fmt::print(stderr, "{}: no result logs found\n", argv[1]);
    return 2;
  }
  double bytes = 0;
  for (const auto& f : files) bytes += static_cast<double>(fs::file_size(f));
  const double mb = bytes / 1e6;

  const fs::path tmp = fs::temp_directory_path() / "bench_mllog.txt";
  const double ours_ns = OurEmitNs(tmp);
  const double official_ns = OfficialEmitNs(tmp);
  fs::remove(tmp);
  fmt::print("emit one event to a file: ours {:.0f} ns, official {:.0f} ns, ratio {:.1f}x\n",
             ours_ns, official_ns, official_ns / ours_ns);

  std::vector<double> seconds;
  int64_t lines = 0;
  for (int r = 0; r < kRepeats; ++r) {
    lines = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const auto& f : files) {
      auto log = mllog::ParseFile(f.string());
      if (log.ok()) lines += log->mllog_line_count;
    }
    seconds.push_back(Seconds(std::chrono::steady_clock::now() - start));
  }
  const double ours_mbps = mb / Median(seconds);
  const double official_mbps = OfficialParseMBps(files, mb);
  fmt::print(
      "parse {} logs, {:.1f} MB, {} MLLOG lines, one core: ours {:.0f} MB/s, official {:.1f} "
      "MB/s, ratio {:.0f}x\n",
      files.size(), mb, lines, ours_mbps, official_mbps, ours_mbps / official_mbps);
  return 0;
}
