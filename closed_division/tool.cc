#include "closed_division/tool.h"

#include <cstdio>
#include <memory>
#include <string>

#include "base/exit_codes.h"
#include "base/version.h"
#include "closed_division/flags.h"
#include "closed_division/run_benchmark.h"
#include "fmt/format.h"
#include "reference/dist/launch_env.h"
#include "runtime/preflight.h"
#include "runtime/process_setup.h"

namespace mlperf::closed {

int RunClosedTool(int argc, char** argv, const benchmarks::BenchmarkRegistry& registry) {
  absl::StatusOr<CommandLine> cl = ParseCommandLine(argc, argv, registry);
  if (!cl.ok()) {
    std::fprintf(stderr, "run_closed: %s\n", std::string(cl.status().message()).c_str());
    return kExitUsage;
  }
  if (cl->help) {
    std::fputs(UsageText(registry).c_str(), stdout);
    return kExitOk;
  }
  if (cl->version) {
    std::fputs(base::VersionLine("run_closed").c_str(), stdout);
    return kExitOk;
  }
  if (cl->list) {
    for (const std::unique_ptr<benchmarks::Benchmark>& b : registry.benchmarks())
      std::printf("%s\n", b->info().name.c_str());
    return std::fflush(stdout) == 0 && !std::ferror(stdout) ? kExitOk : kExitFailed;
  }
  const benchmarks::RunnerOptions& options = cl->options;
  const benchmarks::Benchmark* benchmark = registry.Find(options.benchmark);
  if (benchmark == nullptr) {
    std::fprintf(stderr, "run_closed: --bench=%s: unknown benchmark (registered: %s)\n",
                 options.benchmark.c_str(), registry.Names().c_str());
    return kExitUsage;
  }
  // Rank and world from the launcher (mpirun, srun, torchrun variables).
  absl::StatusOr<dist::LaunchEnv> launch = dist::ReadLaunchEnv();
  if (!launch.ok()) {
    std::fprintf(stderr, "run_closed: %s\n", std::string(launch.status().message()).c_str());
    return kExitUsage;
  }
  absl::StatusOr<std::unique_ptr<runtime::ProcessComms>> comms =
      runtime::MakeProcessComms(*launch, options.gpus > 0);
  if (!comms.ok()) {
    const std::string where = options.gpus > 0 ? fmt::format("--gpus={}: ", options.gpus) : "";
    std::fprintf(stderr, "run_closed: %s%s\n", where.c_str(),
                 std::string(comms.status().message()).c_str());
    return kExitUsage;
  }
  if (absl::Status s = runtime::WatchCollectives(
          **comms, std::chrono::seconds(options.collective_timeout_s), "run_closed");
      !s.ok()) {
    std::fprintf(stderr, "run_closed: %s\n", std::string(s.message()).c_str());
    return kExitFailed;
  }
  if (absl::Status s = runtime::CheckLaunchedNodes(*launch, *(*comms)->control, options.nodes);
      !s.ok()) {
    std::fprintf(stderr, "run_closed: %s\n", std::string(s.message()).c_str());
    return kExitUsage;
  }
  if (options.preflight) {
    const absl::Status s = runtime::RunPreflight(
        (*comms)->view(), options.preflight_min,
        [](const std::string& line) { std::fprintf(stderr, "run_closed: %s\n", line.c_str()); });
    if (!s.ok()) {
      if ((*comms)->control->rank() == 0)
        std::fprintf(stderr, "run_closed: %s\n", std::string(s.message()).c_str());
      return kExitFailed;
    }
  }
  return RunBenchmark(*benchmark, options, (*comms)->view(), runtime::ShareOfThisMachine());
}

}  // namespace mlperf::closed
