// Sequences/s per GPU of the full BERT-Large training step (forward with the
// losses, backward, LAMB after global-norm clipping) on one CUDA device at
// sequence 512, against PyTorch on the same device in the same run
// (bench/bert/bert_gpu_torch_bench.py: transformers' BertForPreTraining when
// it is installed, else the same network from torch.nn; AMP bf16 and fp32).
// Each precision is timed as queued and recorded once as a CUDA graph
// (TrainerConfig::cuda_graph), with fp32 activations; bf16 and fp16 once
// more, recorded, with the activations BERT may store reduced in that type
// ("typed", kernels/precision.h). Timing: CUDA events on the ops stream around
// each step after warm-up, median of the steps; the batch is uploaded once
// (generated tokens, 76 masked-LM predictions per sample, dropout on). After
// each precision's rows, a per-op profile of the encoder layers (every op of
// one layer timed alone at the step's shapes, times 24).
//
// With `packed`: packed rows instead (BertConfig::packed_sequences 3, two
// sequences a row, as NVIDIA's packing averages), batch = rows, recorded,
// reported in sequences/s (the attention core runs its fp32 path there).
//
//   bert_gpu_bench [batch] [steps] [precisions] [packed]
// defaults: 8 10 fp32,bf16 (precisions: a comma list of fp32, bf16, fp16).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "bench/gpu/step_bench.h"
#include "benchmarks/bert/recipe.h"
#include "fmt/format.h"
#include "reference/core/arena.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/attention_params.h"
#include "reference/kernels/composite.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "reference/models/bert.h"
#include "reference/trainer/trainer.h"

namespace mlperf::models {
namespace {

// bench::MedianMs after one untimed run (scratch, cuBLAS heuristics).
template <typename Fn>
double OpMs(int repeats, Fn&& fn) {
  fn();
  return bench::MedianMs(repeats, fn);
}

// Every op of one BERT-Large encoder layer at the step's shapes, each timed
// alone and multiplied by the layer count: where a step's time goes. The
// calls and storage types are the model's (layers/attention.cc,
// kernels/composite.cc; `stored` for the tensors BERT may keep reduced).
std::map<std::string, double> LayerProfile(int64_t batch, core::DType precision, bool typed,
                                           int repeats) {
  const ops::PrecisionScope scope(precision);
  const ops::TypedActivationsScope storage(typed);
  const core::DType stored = ops::ActivationStorageType(core::Device::kCuda);
  const BertConfig c;
  const int64_t rows = batch * c.seq_len, h = c.hidden, f = c.intermediate, t = c.seq_len;
  const int64_t bh = batch * c.heads, d = h / c.heads;
  const int64_t elements = 40 * rows * h + 2 * bh * t * t + 2 * (4 * h * h + 2 * h * f) + 16 * f;
  core::Arena arena(core::Device::kCuda, static_cast<size_t>(elements) * 4 + (size_t{64} << 20));
  const auto fp32 = [&](core::Shape s) { return arena.AllocateZeroed(s); };
  const auto kept = [&](core::Shape s) { return arena.AllocateZeroed(s, stored); };
  const core::Shape heads{batch, c.heads, t, d};
  const core::Tensor x = fp32({rows, h}), probs = fp32({bh * t, t}), ws = fp32({bh * t, t}),
                     mask = fp32({batch, t}), sum = fp32({rows, h}), normed = fp32({rows, h}),
                     mean = fp32({rows}), inv_std = fp32({rows}), dh = fp32({rows, h}),
                     ds = fp32({rows, h});
  const core::Tensor qkv = kept({rows, 3 * h}), q = kept(heads), k = kept(heads), v = kept(heads),
                     context = kept(heads), context_rows = kept({rows, h}),
                     dcontext_rows = kept({rows, h}), dcontext = kept(heads), dq = kept(heads),
                     dk = kept(heads), dv = kept(heads), dqkv = kept({rows, 3 * h});
  const core::Tensor attention_out = kept({rows, h}), z = kept({rows, f}), y = kept({rows, f}),
                     out = kept({rows, h}), dtmp = kept({rows, h}), dintermediate = kept({rows, f});
  const core::Tensor w_qkv = fp32({3 * h, h}), w_o = fp32({h, h}), w_i = fp32({f, h}),
                     w_out = fp32({h, f}), dw_qkv = fp32({3 * h, h}), dw_o = fp32({h, h}),
                     dw_i = fp32({f, h}), dw_out = fp32({h, f}), b_qkv = fp32({3 * h}),
                     b_o = fp32({h}), b_i = fp32({f}), b_out = fp32({h}), db_qkv = fp32({3 * h}),
                     db_o = fp32({h}), db_i = fp32({f}), db_out = fp32({h}), gamma = fp32({h}),
                     beta = fp32({h}), dgamma = fp32({h}), dbeta = fp32({h});
  for (const core::Tensor& one : {mask, gamma}) ops::Fill(one, 1.0f);
  for (const core::Tensor& small : {x, w_qkv, w_o, w_i, w_out}) ops::Fill(small, 0.01f);
  const float p = c.hidden_dropout, scale = 1.0f / std::sqrt(static_cast<float>(d));
  const core::Tensor flat_ws = ws.Reshaped({bh * t * t}), flat_probs = probs.Reshaped({bh * t * t});
  const auto bmm = [&](bool ta, bool tb, int64_t m, int64_t n, int64_t kk, float alpha,
                       const core::Tensor& a, int64_t sa, const core::Tensor& b, int64_t sb,
                       const core::Tensor& out_t, int64_t sc) {
    ops::GemmStridedBatched(core::Device::kCuda, ta, tb, m, n, kk, alpha, a.f32(), sa, b.f32(), sb,
                            0.0f, out_t.f32(), sc, bh);
  };
  std::map<std::string, double> ms;
  const auto time = [&](const std::string& name, int per_layer, auto&& fn) {
    ms[name] += per_layer * c.layers * OpMs(repeats, fn);
  };
  // Forward.
  time("qkv linear", 1, [&] { ops::LinearForward(x, w_qkv, b_qkv, qkv); });
  time("split / merge heads", 3, [&] { ops::SplitHeads(qkv, 0, q); });
  const AttentionParams attention{.dropout = c.attention_dropout, .seed = 1, .typed = true};
  if (stored != core::DType::kF32) {
    time("attention core (typed, fused)", 1, [&] {
      ops::AttentionForward(attention, q, k, v, mask, probs.Reshaped({batch, c.heads, t, t}),
                            context, ws);
    });
  } else {
    time("attention scores GEMM", 1,
         [&] { bmm(false, true, t, t, d, scale, q, t * d, k, t * d, ws, t * t); });
    time("attention key mask", 1, [&] {
      ops::AddKeyPaddingMask(ws.Reshaped({batch, c.heads, t, t}), mask);
    });
    time("attention softmax", 1, [&] { ops::SoftmaxForward(ws, probs); });
    // Forward, and twice in the backward: the mask regenerated, then applied.
    time("attention dropout", 3, [&] { ops::DropoutForward(p, 1, 0, flat_probs, flat_ws); });
    time("attention context GEMM", 1,
         [&] { bmm(false, false, t, d, t, 1.0f, ws, t * t, v, t * d, context, t * d); });
  }
  time("split / merge heads", 1, [&] { ops::MergeHeads(context, context_rows, 0); });
  time("attention output linear", 1,
       [&] { ops::LinearForward(context_rows, w_o, b_o, attention_out); });
  time("hidden dropout", 2, [&] { ops::DropoutForward(p, 1, 1, attention_out, sum); });
  time("residual adds", 2, [&] { ops::Accumulate(x, sum); });
  time("layer norm", 2, [&] {
    ops::LayerNormForward(c.layer_norm_epsilon, sum, gamma, beta, normed, mean, inv_std);
  });
  time("intermediate linear", 1, [&] { ops::LinearForward(normed, w_i, b_i, z); });
  time("gelu", 1, [&] { ops::GeluForward(z, y); });
  time("output linear", 1, [&] { ops::LinearForward(y, w_out, b_out, out); });
  // Backward.
  time("layer norm backward", 2,
       [&] { ops::LayerNormBackward(sum, dh, gamma, mean, inv_std, ds, dgamma, dbeta); });
  time("hidden dropout backward", 2, [&] { ops::DropoutBackward(p, 1, 2, ds, dtmp); });
  time("output linear backward", 1,
       [&] { ops::LinearBackward(y, w_out, dtmp, dintermediate, dw_out, db_out); });
  time("gelu backward", 1, [&] { ops::GeluBackward(z, dintermediate, dintermediate); });
  time("intermediate linear backward", 1,
       [&] { ops::LinearBackward(normed, w_i, dintermediate, dh, dw_i, db_i); });
  time("residual adds", 2, [&] { ops::Accumulate(ds, dh); });
  time("attention output linear backward", 1,
       [&] { ops::LinearBackward(context_rows, w_o, dtmp, dcontext_rows, dw_o, db_o); });
  time("split / merge heads", 1, [&] { ops::SplitHeads(dcontext_rows, 0, dcontext); });
  if (stored != core::DType::kF32) {
    time("attention core backward (typed, fused)", 1, [&] {
      ops::AttentionBackward(attention, q, k, v, probs.Reshaped({batch, c.heads, t, t}), dcontext,
                             dq, dk, dv, ws);
    });
  } else {
    time("attention dV GEMM", 1,
         [&] { bmm(true, false, t, d, t, 1.0f, ws, t * t, dcontext, t * d, dv, t * d); });
    time("attention dP GEMM", 1,
         [&] { bmm(false, true, t, t, d, 1.0f, dcontext, t * d, v, t * d, ws, t * t); });
    time("attention softmax backward", 1, [&] { ops::SoftmaxBackward(probs, ws, ws); });
    time("attention dQ, dK GEMMs", 2,
         [&] { bmm(false, false, t, d, t, scale, ws, t * t, k, t * d, dq, t * d); });
  }
  time("split / merge heads", 3, [&] { ops::MergeHeads(dq, dqkv, 0); });
  time("qkv linear backward", 1, [&] { ops::LinearBackward(x, w_qkv, dqkv, dh, dw_qkv, db_qkv); });
  return ms;
}

void PrintProfile(const std::map<std::string, double>& profile, double step_ms) {
  std::vector<std::pair<double, std::string>> rows;
  double total = 0.0;
  for (const auto& [op, ms] : profile) {
    rows.push_back({ms, op});
    total += ms;
  }
  std::sort(rows.rbegin(), rows.rend());
  for (const auto& [ms, op] : rows)
    std::printf("    %-34s %8.2f ms/step %5.1f%%\n", op.c_str(), ms, 100.0 * ms / total);
  std::printf("    %-34s %8.2f ms/step (the step: %.1f ms)\n", "encoder layers, summed", total,
              step_ms);
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
  auto comm = dist::MakeSingleProcessCommunicator();
  // Times `model` (uploaded batch) under the precision in force.
  auto time = [&](Bert& model, core::DType precision, bool graph, const char* storage) -> double {
    const benchmarks::bert::Recipe recipe{
        .base_lr = 1e-4, .train_steps = 1000, .warmup_steps = 10, .weight_decay = 0.01};
    train::Trainer trainer(
        model, benchmarks::bert::MakeOptimizer(recipe, model),
        benchmarks::bert::MakeSchedule(recipe),
        {.dynamic_loss_scaling = precision == core::DType::kF16, .cuda_graph = graph}, *comm);
    for (int i = 0; i < 3; ++i) trainer.TrainStep(Batch{});
    const double ms = bench::MedianMs(steps, [&] { trainer.TrainStep(Batch{}); });
    const std::string name =
        fmt::format("{}{}{}", ops::PrecisionName(precision), graph ? " graph" : "", storage);
    std::printf("  ours  %-28s %8.1f ms/step %8.1f sequences/s", name.c_str(), ms,
                1000.0 * batch / ms);
    for (const auto& [peer, peer_ms] : torch)
      std::printf("  x%.2f vs %s", peer_ms / ms, peer.c_str());
    if (graph && trainer.replayed_steps() == 0) std::printf("  (not recorded: ran as queued)");
    std::printf("\n");
    return ms;
  };
  // One model for every configuration with fp32 activations (its values do
  // not change the time); one per reduced precision storing them in it.
  Bert model({.device = core::Device::kCuda}, batch);
  const OwnedBatch data = model.SyntheticBatch();
  model.UploadTrainingBatch(data.batch);
  for (core::DType precision : precisions) {
    const ops::PrecisionScope scope(precision);
    double step_ms = 0.0;
    for (bool graph : {false, true}) step_ms = time(model, precision, graph, "");
    std::printf("    per-op profile, %s, fp32 storage (each op alone, x%ld layers):\n",
                ops::PrecisionName(precision).data(), BertConfig{}.layers);
    PrintProfile(LayerProfile(batch, precision, /*typed=*/false, 5), step_ms);
    if (precision == core::DType::kF32) continue;
    const ops::TypedActivationsScope typed(true);
    Bert typed_model({.device = core::Device::kCuda}, batch);
    typed_model.UploadTrainingBatch(data.batch);
    step_ms = time(typed_model, precision, /*graph=*/true,
                   typed_model.activation_storage() == precision ? " typed" : " (typed refused)");
    std::printf("    per-op profile, %s, typed storage:\n", ops::PrecisionName(precision).data());
    PrintProfile(LayerProfile(batch, precision, /*typed=*/true, 5), step_ms);
  }
}

// Packed rows: `rows` a step, two sequences each (the synthetic batch).
void RunPacked(int64_t rows, int steps, const std::vector<core::DType>& precisions) {
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf(
      "BERT-Large packed training step on %s, %ld rows of 512 per GPU (2 sequences "
      "each), median of %d\n",
      prop.name, rows, steps);
  auto comm = dist::MakeSingleProcessCommunicator();
  for (core::DType precision : precisions) {
    const ops::PrecisionScope scope(precision);
    Bert model({.packed_sequences = 3, .device = core::Device::kCuda}, rows);
    const OwnedBatch data = model.SyntheticBatch();
    model.UploadTrainingBatch(data.batch);
    const benchmarks::bert::Recipe recipe{
        .base_lr = 1e-4, .train_steps = 1000, .warmup_steps = 10, .weight_decay = 0.01};
    train::Trainer trainer(
        model, benchmarks::bert::MakeOptimizer(recipe, model),
        benchmarks::bert::MakeSchedule(recipe),
        {.dynamic_loss_scaling = precision == core::DType::kF16, .cuda_graph = true}, *comm);
    for (int i = 0; i < 3; ++i) trainer.TrainStep(Batch{});
    const double ms = bench::MedianMs(steps, [&] { trainer.TrainStep(Batch{}); });
    std::printf("  ours  %-28s %8.1f ms/step %8.1f sequences/s%s\n",
                fmt::format("{} packed graph", ops::PrecisionName(precision)).c_str(), ms,
                2000.0 * static_cast<double>(rows) / ms,
                trainer.replayed_steps() == 0 ? "  (not recorded: ran as queued)" : "");
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
      batch <= 0 || steps <= 0 || argc > 5 ||
      !mlperf::bench::ParsePrecisions(argc > 3 ? argv[3] : "fp32,bf16", &precisions) ||
      (argc > 4 && std::string(argv[4]) != "packed");
  if (usage_error) {
    std::fprintf(stderr, "usage: bert_gpu_bench [batch] [steps] [fp32,bf16,fp16] [packed]\n");
    return 2;
  }
  if (!mlperf::ops::CudaAvailable()) {
    std::fprintf(stderr, "bert_gpu_bench: no CUDA device\n");
    return 2;
  }
  if (argc > 4) {
    mlperf::models::RunPacked(batch, steps, precisions);
  } else {
    mlperf::models::Run(batch, steps, precisions);
  }
  return 0;
}
