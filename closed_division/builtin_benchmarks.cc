// The one place that lists the benchmarks by name: add a registry entry here.
#include "closed_division/bert_benchmark.h"
#include "closed_division/registry.h"
#include "closed_division/resnet_benchmark.h"
#include "closed_division/unet3d_benchmark.h"

namespace mlperf::closed {

const BenchmarkRegistry& BuiltinBenchmarks() {
  static const BenchmarkRegistry* registry = [] {
    auto* r = new BenchmarkRegistry();
    r->Register(MakeResnetBenchmark());
    r->Register(MakeUnet3dBenchmark());
    r->Register(MakeBertBenchmark());
    return r;
  }();
  return *registry;
}

}  // namespace mlperf::closed
