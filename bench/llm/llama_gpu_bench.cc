// A stack of Llama 3.1 8B layers training on one GPU (forward with the
// next-token loss over the whole 128,256-token vocabulary, backward; the
// optimizer is not timed) at a sequence of 8192 by default, ours in each
// precision against PyTorch's own Llama layers with its fused
// scaled-dot-product attention on the same GPU
// (bench/llm/llama_gpu_torch_bench.py), in tokens/s and model-FLOPs
// utilisation: 6 FLOPs per parameter of the matrices and 6 x layers x
// sequence x hidden for causal attention, per token, against the GPU's
// dense bf16 peak (H100 and H200: 989 TFLOP/s; other GPUs: no MFU).
// Our attention holds its probability matrices (no flash attention yet),
// so the layers must fit: 4 layers at 8192 need about 80 GiB of activations
// in fp32 by the memory plan (docs/llm.md: about 20 GiB a layer).
// With `lora`: Llama 2 70B-shaped layers fine-tuned as the MLPerf LoRA
// benchmark does (rank-16 adapters on the fused qkv_proj and o_proj, the
// base frozen in bf16, attention in blocks of 128 queries) against the same
// step in PyTorch (adapters written out as peft computes them); its model
// FLOPs count 4 per base parameter (no weight gradients).
// NOT YET RUN ON A GPU: scripts/gpu_check.sh runs it.
//
// usage: llama_gpu_bench [layers] [seq] [steps] [fp32,bf16] [lora]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "bench/gpu/step_bench.h"
#include "fmt/format.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "reference/models/decoder.h"

namespace mlperf::models {
namespace {

// Model FLOPs per token of a training step (forward and backward).
double FlopsPerToken(const DecoderConfig& c, bool lora) {
  const double h = static_cast<double>(c.hidden);
  const double kv = static_cast<double>(c.kv_heads * (c.hidden / c.heads));
  const double matrices =
      static_cast<double>(c.layers) *
          (2 * h * h + 2 * h * kv + 3 * h * static_cast<double>(c.intermediate)) +
      h * static_cast<double>(c.vocab_size);
  return (lora ? 4 : 6) * matrices + 6 * static_cast<double>(c.layers * c.seq_len) * h;
}

void Run(int64_t layers, int64_t seq, int steps, const std::vector<core::DType>& precisions,
         bool lora) {
  DecoderConfig c = lora ? Llama2_70B_Lora() : Llama31_8B();
  c.layers = layers;
  c.seq_len = seq;
  c.device = core::Device::kCuda;
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  const std::string name = prop.name;
  const double peak =
      name.find("H100") != std::string::npos || name.find("H200") != std::string::npos ? 989e12
                                                                                       : 0.0;
  const double flops = FlopsPerToken(c, lora);
  std::printf("%s on %s: %ld layers, sequence %ld, batch 1, median of %d\n",
              lora ? "Llama 2 70B layers, LoRA fine-tuning" : "Llama 3.1 8B layers training",
              prop.name, layers, seq, steps);
  const auto report = [&](const std::string& who, const std::string& what, double ms) {
    const double tokens = 1000.0 * static_cast<double>(seq) / ms;
    std::printf("  %-5s %-12s %9.1f ms/step %10.0f tokens/s", who.c_str(), what.c_str(), ms,
                tokens);
    if (peak > 0) std::printf("  MFU %.1f%%", 100.0 * tokens * flops / peak);
    std::printf("\n");
  };
  const std::map<std::string, double> torch =
      bench::TorchPeer("bench/llm/llama_gpu_torch_bench.py",
                       fmt::format("{} {} {}{}", layers, seq, steps, lora ? " lora" : ""));
  if (torch.empty()) std::printf("  (PyTorch with CUDA not available: no peer numbers)\n");
  for (const auto& [peer, ms] : torch) report("torch", peer, ms);
  Decoder model(c, 1, 1);
  const OwnedBatch data = model.SyntheticBatch();
  for (core::DType precision : precisions) {
    const ops::PrecisionScope scope(precision);
    const auto step = [&] {
      model.ForwardTrainAsync(data.batch);
      model.Backward();
    };
    for (int i = 0; i < 2; ++i) step();
    const double ms = bench::MedianMs(steps, step);
    report("ours", std::string(ops::PrecisionName(precision)), ms);
    for (const auto& [peer, peer_ms] : torch)
      std::printf("    x%.2f vs torch %s\n", peer_ms / ms, peer.c_str());
  }
}

}  // namespace
}  // namespace mlperf::models

int main(int argc, char** argv) {
  mlperf::bench::PrintLineByLine();
  const int64_t layers = argc > 1 ? std::atoll(argv[1]) : 4;
  const int64_t seq = argc > 2 ? std::atoll(argv[2]) : 8192;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 5;
  std::vector<mlperf::core::DType> precisions;
  const bool lora = argc > 5 && std::string(argv[5]) == "lora";
  if (layers <= 0 || seq <= 0 || steps <= 0 || argc > 6 || (argc > 5 && !lora) ||
      !mlperf::bench::ParsePrecisions(argc > 4 ? argv[4] : "bf16,fp32", &precisions)) {
    std::fprintf(stderr, "usage: llama_gpu_bench [layers] [seq] [steps] [fp32,bf16] [lora]\n");
    return 2;
  }
  if (!mlperf::ops::CudaAvailable()) {
    std::fprintf(stderr, "llama_gpu_bench: no CUDA device\n");
    return 2;
  }
  mlperf::models::Run(layers, seq, steps, precisions, lora);
  return 0;
}
