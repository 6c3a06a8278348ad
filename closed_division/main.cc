// run_closed: runs a registered closed-division MLPerf Training benchmark the
// required number of times and writes a submission package
// (docs/run_closed.md). The tool is RunClosedTool over the built-in
// benchmarks.
#include "base/output.h"
#include "benchmarks/registry.h"
#include "closed_division/tool.h"

int main(int argc, char** argv) {
  return mlperf::base::RunTool("run_closed", [&] {
    return mlperf::closed::RunClosedTool(argc, argv, mlperf::benchmarks::BuiltinBenchmarks());
  });
}
