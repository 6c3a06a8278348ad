#include "benchmarks/registry.h"

#include <algorithm>

#include "base/check.h"

namespace mlperf::benchmarks {

void BenchmarkRegistry::Register(std::unique_ptr<Benchmark> benchmark) {
  MLPERF_CHECK_MSG(Find(benchmark->info().name) == nullptr, "benchmark registered twice");
  MLPERF_CHECK_MSG(
      !benchmark->info().is_default || Default() == nullptr || !Default()->info().is_default,
      "two default benchmarks");
  benchmarks_.push_back(std::move(benchmark));
}

const Benchmark* BenchmarkRegistry::Find(const std::string& name) const {
  for (const std::unique_ptr<Benchmark>& b : benchmarks_)
    if (b->info().name == name) return b.get();
  return nullptr;
}

const Benchmark* BenchmarkRegistry::Default() const {
  for (const std::unique_ptr<Benchmark>& b : benchmarks_)
    if (b->info().is_default) return b.get();
  return benchmarks_.empty() ? nullptr : benchmarks_.front().get();
}

std::string BenchmarkRegistry::Names() const {
  std::string names;
  for (const std::unique_ptr<Benchmark>& b : benchmarks_)
    names += (names.empty() ? "" : ", ") + b->info().name;
  return names;
}

std::vector<const Benchmark*> BenchmarkRegistry::FlagOwners(const std::string& name) const {
  std::vector<const Benchmark*> owners;
  for (const std::unique_ptr<Benchmark>& b : benchmarks_) {
    const std::vector<std::string>& flags = b->info().flags;
    if (std::find(flags.begin(), flags.end(), name) != flags.end()) owners.push_back(b.get());
  }
  return owners;
}

}  // namespace mlperf::benchmarks
