// run_closed over a registry that holds the toy alone: the tool's whole path
// (flags, launcher, communicators, RunBenchmark) for a benchmark registered
// from outside benchmarks/.
#include "base/output.h"
#include "benchmarks/registry.h"
#include "closed_division/tool.h"
#include "tests/toy_benchmark/toy.h"

int main(int argc, char** argv) {
  mlperf::benchmarks::BenchmarkRegistry registry;
  registry.Register(mlperf::toy::MakeToyBenchmark());
  return mlperf::base::RunTool("run_closed",
                               [&] { return mlperf::closed::RunClosedTool(argc, argv, registry); });
}
