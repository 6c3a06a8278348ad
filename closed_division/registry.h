// The benchmarks run_closed can run, by name.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "closed_division/benchmark.h"

namespace mlperf::closed {

class BenchmarkRegistry {
 public:
  // Names must be unique (checked).
  void Register(std::unique_ptr<Benchmark> benchmark);
  // nullptr when no benchmark has that name.
  const Benchmark* Find(const std::string& name) const;
  // Registered names, in registration order, comma separated: for --help and errors.
  std::string Names() const;
  const std::vector<std::unique_ptr<Benchmark>>& benchmarks() const { return benchmarks_; }

 private:
  std::vector<std::unique_ptr<Benchmark>> benchmarks_;
};

// The benchmarks this build ships (builtin_benchmarks.cc).
const BenchmarkRegistry& BuiltinBenchmarks();

}  // namespace mlperf::closed
