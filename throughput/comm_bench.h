// run_benchmark --comm: the collective bandwidth of the processes the tool
// was started in (runtime/collective_bench.h), reported as Markdown on
// stdout and, with -o/--markdown, as JSON and Markdown files.
#pragma once

#include "reference/dist/launch_env.h"
#include "throughput/options.h"

namespace mlperf::throughput {

// Exit codes: 0 measured and every result right; 1 a result was wrong or a
// report could not be written; 2 usage error (e.g. no launcher for -n > 1).
int RunCommBench(const BenchOptions& options, const dist::LaunchEnv& launch);

}  // namespace mlperf::throughput
