// Sequences/s per GPU of the full BERT-Large training step (forward with the
// losses, backward, LAMB after global-norm clipping) on one CUDA device at
// sequence 512, against PyTorch on the same device in the same run
// (bench/bert/bert_gpu_torch_bench.py: transformers' BertForPreTraining when
// it is installed, else the same network from torch.nn; AMP bf16 and fp32).
// Each precision is timed as queued and recorded once as a CUDA graph
// (TrainerConfig::cuda_graph). Timing: CUDA events on the ops stream around
// each step after warm-up, median of the steps; the batch is uploaded once
// (generated tokens, 76 masked-LM predictions per sample, dropout on).
//
//   bert_gpu_bench [batch] [steps] [precisions]
// defaults: 8 10 fp32,bf16 (precisions: a comma list of fp32, bf16, fp16).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "bench/gpu/step_bench.h"
#include "fmt/format.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "reference/models/bert.h"
#include "reference/trainer/trainer.h"

namespace mlperf::models {
namespace {

// Median milliseconds of `steps` training steps, CUDA events around each.
double MedianStepMs(train::Trainer& trainer, int steps) {
  const cudaStream_t stream = static_cast<cudaStream_t>(ops::ComputeStream());
  cudaEvent_t start, stop;
  BENCH_CUDA(cudaEventCreate(&start));
  BENCH_CUDA(cudaEventCreate(&stop));
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    BENCH_CUDA(cudaEventRecord(start, stream));
    trainer.TrainStep(Batch{});
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

void Run(int64_t batch, int steps, const std::vector<core::DType>& precisions) {
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("BERT-Large training step on %s, batch %ld per GPU, sequence 512, median of %d\n",
              prop.name, batch, steps);
  const std::map<std::string, double> torch =
      bench::TorchPeer("bench/bert/bert_gpu_torch_bench.py", fmt::format("{} {}", batch, steps));
  if (torch.empty()) std::printf("  (PyTorch with CUDA not available: no peer numbers)\n");
  for (const auto& [name, ms] : torch)
    std::printf("  torch %-28s %8.1f ms/step %8.1f sequences/s\n", name.c_str(), ms,
                1000.0 * batch / ms);
  // One model for every configuration: its values do not change the time.
  Bert model({.device = core::Device::kCuda}, batch);
  const OwnedBatch data = model.SyntheticBatch();
  model.UploadTrainingBatch(data.batch);
  auto comm = dist::MakeSingleProcessCommunicator();
  for (core::DType precision : precisions) {
    const ops::PrecisionScope scope(precision);
    for (bool graph : {false, true}) {
      train::Trainer trainer(model,
                             {.optimizer = train::OptimizerKind::kLamb,
                              .global_batch_size = batch,
                              .base_lr = 1e-4,
                              .weight_decay = 0.01,
                              .schedule = train::ScheduleKind::kBert,
                              .train_steps = 1000,
                              .warmup_steps = 10,
                              .dynamic_loss_scaling = precision == core::DType::kF16,
                              .cuda_graph = graph},
                             *comm);
      for (int i = 0; i < 3; ++i) trainer.TrainStep(Batch{});
      const double ms = MedianStepMs(trainer, steps);
      const std::string name =
          fmt::format("{}{}", ops::PrecisionName(precision), graph ? " graph" : "");
      std::printf("  ours  %-28s %8.1f ms/step %8.1f sequences/s", name.c_str(), ms,
                  1000.0 * batch / ms);
      for (const auto& [peer, peer_ms] : torch)
        std::printf("  x%.2f vs %s", peer_ms / ms, peer.c_str());
      if (graph && trainer.replayed_steps() == 0) std::printf("  (not recorded: ran as queued)");
      std::printf("\n");
    }
  }
}

}  // namespace
}  // namespace mlperf::models

int main(int argc, char** argv) {
  mlperf::bench::PrintLineByLine();
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 8;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  std::vector<mlperf::core::DType> precisions;
  const bool usage_error =
      batch <= 0 || steps <= 0 || argc > 4 ||
      !mlperf::bench::ParsePrecisions(argc > 3 ? argv[3] : "fp32,bf16", &precisions);
  if (usage_error) {
    std::fprintf(stderr, "usage: bert_gpu_bench [batch] [steps] [fp32,bf16,fp16]\n");
    return 2;
  }
  if (!mlperf::ops::CudaAvailable()) {
    std::fprintf(stderr, "bert_gpu_bench: no CUDA device\n");
    return 2;
  }
  mlperf::models::Run(batch, steps, precisions);
  return 0;
}
