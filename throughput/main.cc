// run_benchmark: training and inference throughput, and inference latency,
// of the suite's models for every combination of device count, batch size per
// device and precision, measured the way hardware teams measure (warm-up
// never timed, medians of repeats, weak scaling, true percentiles) and
// reported as JSON (DeepLearningExamples' keys), DLLogger lines, Markdown and
// SVG charts; with --comm, the collective bandwidth of the launched
// processes. See docs/run_benchmark.md.
//
// Exit codes: 0 every configuration measured; 1 a configuration failed or
// the job was interrupted (the reports keep what was measured); 2 usage or
// input error, or a report that could not be written.

#include <cstdio>
#include <string>

#include "base/exit_codes.h"
#include "base/output.h"
#include "base/version.h"
#include "benchmarks/registry.h"
#include "reference/dist/launch_env.h"
#include "throughput/comm_bench.h"
#include "throughput/driver.h"
#include "throughput/flags.h"

namespace {

int Main(int argc, char** argv) {
  namespace tp = mlperf::throughput;
  const mlperf::benchmarks::BenchmarkRegistry& registry = mlperf::benchmarks::BuiltinBenchmarks();
  absl::StatusOr<tp::CommandLine> cl = tp::ParseCommandLine(argc, argv);
  if (!cl.ok()) {
    std::fprintf(stderr, "run_benchmark: %s\n", std::string(cl.status().message()).c_str());
    return mlperf::kExitUsage;
  }
  if (cl->help) {
    std::fputs(tp::UsageText(registry).c_str(), stdout);
    return mlperf::kExitOk;
  }
  if (cl->version) {
    std::fputs(mlperf::base::VersionLine("run_benchmark").c_str(), stdout);
    return mlperf::kExitOk;
  }
  tp::BenchOptions& options = cl->options;
  if (options.comm) {
    absl::StatusOr<mlperf::dist::LaunchEnv> launch = mlperf::dist::ReadLaunchEnv();
    if (!launch.ok()) {
      std::fprintf(stderr, "run_benchmark: %s\n", std::string(launch.status().message()).c_str());
      return mlperf::kExitUsage;
    }
    return tp::RunCommBench(options, *launch);
  }
  if (options.benchmark.empty() && registry.Default() != nullptr)
    options.benchmark = registry.Default()->info().name;
  const mlperf::benchmarks::Benchmark* benchmark = registry.Find(options.benchmark);
  if (benchmark == nullptr) {
    std::fprintf(stderr, "run_benchmark: --bench=%s: unknown model (registered: %s)\n",
                 options.benchmark.c_str(), registry.Names().c_str());
    return mlperf::kExitUsage;
  }
  absl::StatusOr<mlperf::dist::LaunchEnv> launch = mlperf::dist::ReadLaunchEnv();
  if (!launch.ok()) {
    std::fprintf(stderr, "run_benchmark: %s\n", std::string(launch.status().message()).c_str());
    return mlperf::kExitUsage;
  }
  if (launch->world_size > 1 || !options.worker_out.empty())
    return tp::RunLaunched(*benchmark, options, *launch);
  return tp::RunDriver(*benchmark, options);
}

}  // namespace

int main(int argc, char** argv) {
  return mlperf::base::RunTool("run_benchmark", [&] { return Main(argc, argv); });
}
