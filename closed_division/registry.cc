#include "closed_division/registry.h"

#include "base/check.h"

namespace mlperf::closed {

void BenchmarkRegistry::Register(std::unique_ptr<Benchmark> benchmark) {
  MLPERF_CHECK_MSG(Find(benchmark->info().name) == nullptr, "benchmark registered twice");
  benchmarks_.push_back(std::move(benchmark));
}

const Benchmark* BenchmarkRegistry::Find(const std::string& name) const {
  for (const std::unique_ptr<Benchmark>& b : benchmarks_)
    if (b->info().name == name) return b.get();
  return nullptr;
}

std::string BenchmarkRegistry::Names() const {
  std::string names;
  for (const std::unique_ptr<Benchmark>& b : benchmarks_)
    names += (names.empty() ? "" : ", ") + b->info().name;
  return names;
}

}  // namespace mlperf::closed
