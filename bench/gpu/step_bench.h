// What the GPU training-step benchmarks share (bench/resnet, bench/bert,
// bench/unet3d, bench/llm): a check of CUDA calls, line-buffered output, the
// median time of a step on the ops stream, their PyTorch peer, run as a
// script that prints "<name> <ms per step>" lines, and their precision lists.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "base/environment.h"
#include "fmt/format.h"
#include "reference/core/dtype.h"
#include "reference/kernels/dispatch.h"

// A failed CUDA call in a benchmark: the call, file and line, exit 1.
#define BENCH_CUDA(call)                                                 \
  do {                                                                   \
    const cudaError_t bench_status = (call);                             \
    if (bench_status != cudaSuccess) {                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(bench_status));                    \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)

namespace mlperf::bench {

// The median milliseconds of `repeats` calls of `fn`, each between two CUDA
// events on the ops stream.
template <typename Fn>
double MedianMs(int repeats, Fn&& fn) {
  const cudaStream_t stream = static_cast<cudaStream_t>(ops::ComputeStream().native());
  cudaEvent_t start, stop;
  BENCH_CUDA(cudaEventCreate(&start));
  BENCH_CUDA(cudaEventCreate(&stop));
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    BENCH_CUDA(cudaEventRecord(start, stream));
    fn();
    BENCH_CUDA(cudaEventRecord(stop, stream));
    BENCH_CUDA(cudaEventSynchronize(stop));
    float t = 0.0f;
    BENCH_CUDA(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  BENCH_CUDA(cudaEventDestroy(start));
  BENCH_CUDA(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Line by line to stdout, so that a run stopped at its time limit (as
// scripts/gpu_check.sh stops a stage) keeps every line it printed.
inline void PrintLineByLine() { std::setvbuf(stdout, nullptr, _IOLBF, 0); }

// Runs `script` (a path under the checkout) with `args` and reads its
// "<name> <ms>" lines; empty when torch or CUDA is missing there.
// MLPERF_PYTHON and MLPERF_SOURCE_DIR override the interpreter and the
// checkout baked in at build time (scripts/gpu_check.sh runs a binary built
// elsewhere, next to the GPU machine's own PyTorch).
inline std::map<std::string, double> TorchPeer(const std::string& script, const std::string& args) {
  std::map<std::string, double> out;
  const char* python = base::GetEnv("MLPERF_PYTHON");
  const char* source = base::GetEnv("MLPERF_SOURCE_DIR");
  const std::string cmd =
      fmt::format("{} {}/{} {} 2>/dev/null", python != nullptr ? python : "/usr/bin/python3",
                  source != nullptr ? source : MLPERF_SOURCE_DIR, script, args);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  char name[96];
  double ms;
  while (std::fscanf(pipe, "%95s %lf", name, &ms) == 2) out[name] = ms;
  pclose(pipe);
  return out;
}

// "fp32,bf16,fp16" (any of them, comma separated) to compute precisions;
// false on another name.
inline bool ParsePrecisions(const std::string& list, std::vector<core::DType>* out) {
  for (size_t begin = 0; begin <= list.size();) {
    const size_t end = std::min(list.find(',', begin), list.size());
    const std::string name = list.substr(begin, end - begin);
    if (name == "fp32") {
      out->push_back(core::DType::kF32);
    } else if (name == "bf16") {
      out->push_back(core::DType::kBF16);
    } else if (name == "fp16") {
      out->push_back(core::DType::kF16);
    } else {
      return false;
    }
    begin = end + 1;
  }
  return true;
}

}  // namespace mlperf::bench
