// A run_benchmark job from start to end. Started as one process, the tool is
// the driver: it checks every configuration, then measures each in its own
// processes (itself with --worker_out, under mpirun for more than one
// device), and rewrites the reports after each. Started by a launcher as
// several processes (srun, mpirun), the processes are the devices of every
// configuration and rank 0 writes the reports. Both return the exit code.
#pragma once

#include <string>

#include "benchmarks/benchmark.h"
#include "reference/dist/launch_env.h"
#include "throughput/options.h"

namespace mlperf::throughput {

int RunDriver(const benchmarks::Benchmark& benchmark, const BenchOptions& options);
int RunLaunched(const benchmarks::Benchmark& benchmark, const BenchOptions& options,
                const dist::LaunchEnv& launch);

}  // namespace mlperf::throughput
