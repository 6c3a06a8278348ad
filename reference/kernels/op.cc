#include "reference/kernels/op.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

namespace mlperf::ops {
namespace detail {
namespace {

// A function-local static: registrations run at static initialisation, in
// any order across files.
std::map<std::string, std::set<core::Device>>& Registry() {
  static auto* registry = new std::map<std::string, std::set<core::Device>>();
  return *registry;
}

}  // namespace

void Record(const char* op, core::Device device) { Registry()[op].insert(device); }

void NoBackend(const char* op, core::Device device) {
  std::fprintf(stderr, "ops::%s: no %s kernel in this build\n", op,
               device == core::Device::kCpu ? "CPU" : "CUDA");
  std::abort();
}

void MixedDevices(const char* op) {
  std::fprintf(stderr, "ops::%s: tensors on different devices\n", op);
  std::abort();
}

}  // namespace detail

std::map<std::string, std::set<core::Device>> RegisteredKernels() { return detail::Registry(); }

}  // namespace mlperf::ops
