// run_closed: runs a registered closed-division MLPerf Training benchmark the
// required number of times and writes a submission package. This file only
// sets up the processes (launcher, communicators); the invocation itself is
// RunBenchmark. See docs/run_closed.md.
//
// Exit codes: 0 runs done; 1 a run or write failed, the invocation was
// interrupted, or more runs missed the target than olympic scoring allows;
// 2 usage or input error (bad flag, existing results, missing data).

#include <cstdio>
#include <memory>
#include <string>

#include "base/exit_codes.h"
#include "base/version.h"
#include "closed_division/flags.h"
#include "closed_division/process_setup.h"
#include "closed_division/registry.h"
#include "closed_division/run_benchmark.h"
#include "fmt/format.h"
#include "reference/dist/launch_env.h"

namespace closed = mlperf::closed;

int main(int argc, char** argv) {
  const closed::BenchmarkRegistry& registry = closed::BuiltinBenchmarks();
  absl::StatusOr<closed::CommandLine> cl = closed::ParseCommandLine(argc, argv);
  if (!cl.ok()) {
    std::fprintf(stderr, "run_closed: %s\n", std::string(cl.status().message()).c_str());
    return mlperf::kExitUsage;
  }
  if (cl->help) {
    std::fputs(closed::UsageText(registry).c_str(), stdout);
    return mlperf::kExitOk;
  }
  if (cl->version) {
    std::fputs(mlperf::base::VersionLine("run_closed").c_str(), stdout);
    return mlperf::kExitOk;
  }
  const closed::RunnerOptions& options = cl->options;
  const closed::Benchmark* benchmark = registry.Find(options.benchmark);
  if (benchmark == nullptr) {
    std::fprintf(stderr, "run_closed: --bench=%s: unknown benchmark (registered: %s)\n",
                 options.benchmark.c_str(), registry.Names().c_str());
    return mlperf::kExitUsage;
  }
  // Rank and world from the launcher (mpirun, srun, torchrun variables).
  absl::StatusOr<mlperf::dist::LaunchEnv> launch = mlperf::dist::ReadLaunchEnv();
  if (!launch.ok()) {
    std::fprintf(stderr, "run_closed: %s\n", std::string(launch.status().message()).c_str());
    return mlperf::kExitUsage;
  }
  absl::StatusOr<std::unique_ptr<closed::ProcessComms>> comms =
      closed::MakeProcessComms(*launch, options.gpus > 0);
  if (!comms.ok()) {
    const std::string where = options.gpus > 0 ? fmt::format("--gpus={}: ", options.gpus) : "";
    std::fprintf(stderr, "run_closed: %s%s\n", where.c_str(),
                 std::string(comms.status().message()).c_str());
    return mlperf::kExitUsage;
  }
  return closed::RunBenchmark(*benchmark, options, (*comms)->view(), closed::ShareOfThisMachine());
}
