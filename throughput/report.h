// The reports of a run_benchmark job, from what it measured so far: the JSON
// report (DeepLearningExamples benchmark.py's keys for the first precision,
// then every configuration with its statistics), the Markdown tables, and the
// numbers both derive (weak scaling, mixed-precision speedup).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "throughput/options.h"
#include "throughput/result.h"

namespace mlperf::throughput {

struct Job {
  BenchOptions options;
  std::vector<Config> planned;        // every configuration, in measuring order
  std::vector<ConfigResult> results;  // those measured so far, in the same order
  std::string model;                  // the family member, as the benchmark names it
  std::string machine;                // one line: CPUs and memory, or the GPU
  json::Value system;                 // the system description (versions, hardware)
  std::string tool;                   // "run_benchmark <version>"
  std::string date;                   // when the job started, ISO 8601 UTC
  double start_unix = 0;              // the same, Unix seconds
  bool interrupted = false;
};

// The measured result of a configuration, if it was measured and succeeded.
const ConfigResult* Find(const Job& job, int devices, int64_t batch, const std::string& dtype);

// median(n devices) / median(1 device) at the same batch per device and
// precision; nullopt without both.
std::optional<double> WeakScaling(const Job& job, const ConfigResult& r);
// median(dtype) / median(fp32) at the same devices and batch.
std::optional<double> SpeedupVsFp32(const Job& job, const ConfigResult& r);

// What the throughput covers, for reports: compute only, or loading too.
std::string DataDescription(const BenchOptions& options);

json::Value JsonReport(const Job& job);
std::string MarkdownReport(const Job& job);
// Samples per second for people: one decimal from 100 up, three significant
// digits below (a full-size model on a CPU runs at a fraction of a sample).
std::string FormatRate(double samples_per_second);

}  // namespace mlperf::throughput
