// Helpers of the parity tests that run a PyTorch oracle under /usr/bin/python3
// and read its safetensors answer back: whether the oracle's modules import,
// per-process temporary paths, tensors by name, and errors against the
// oracle's fp64 result (ours and PyTorch's own fp32 one side by side).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/io/safetensors.h"

namespace mlperf::testing {

// Whether /usr/bin/python3 imports `modules` ("torch", "torch, transformers").
inline bool PythonHas(const std::string& modules) {
  const std::string cmd = "/usr/bin/python3 -c 'import " + modules + "' > /dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

inline std::string TempPath(const std::string& stem) {
  return (std::filesystem::temp_directory_path() /
          fmt::format("{}_{}.safetensors", stem, ::getpid()))
      .string();
}

// Tensor `name` of `file` as floats (a test failure, and empty, when absent).
inline std::vector<float> Load(const io::SafetensorsFile& file, const std::string& name) {
  auto it = file.tensors().find(name);
  EXPECT_NE(it, file.tensors().end()) << name;
  if (it == file.tensors().end()) return {};
  std::vector<float> t(it->second.shape.numel());
  EXPECT_TRUE(file.CopyTo(name, core::Tensor(t.data(), it->second.shape, core::DType::kF32)).ok());
  return t;
}

// ||a - b|| / ||b|| (infinite on a size mismatch).
inline double NormError(std::span<const float> a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0.0, scale = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    scale += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / scale);
}

// Errors of ours and of PyTorch's fp32 result (`name`) against PyTorch in
// fp64 ("f64/" + name).
struct Errors {
  double ours, torch;
};
inline Errors Compare(const io::SafetensorsFile& file, const std::string& name,
                      std::span<const float> ours) {
  const std::vector<float> exact = Load(file, "f64/" + name);
  return {NormError(ours, exact), NormError(Load(file, name), exact)};
}

}  // namespace mlperf::testing
