// DLRM-dcnv2 on the CPU, ours against the peers in the same run
// (bench/dlrm_dcnv2/dlrm_torch_bench.py under /usr/bin/python3):
//
//   dlrm_bench bags [rows] [batch] [reps]   the 26 embedding bags' lookup-and-pool forward,
//       and their sparse gradient plus exact Adagrad on the touched rows, against
//       nn.EmbeddingBag (sum, sparse) and torch.optim.Adagrad's sparse step; tables of
//       min(reference rows, rows) rows of width 128, the reference's multi-hot sizes
//       (defaults 200000 4096 5)
//   dlrm_bench step [rows] [batch] [reps] [--cuda]   one training step of the reference-width
//       model (tables capped the same way) against the PyTorch transcription (200000 512 3);
//       with --cuda both on the GPU
//   dlrm_bench auc [n]                      the exact AUC over n scores with ties against
//       sklearn.metrics.roc_auc_score (89137319, the reference's evaluation set)
//   dlrm_bench plan [ranks] [global batch]  the memory plan of the reference's full-size
//       model per rank (Dlrm::PlanMemory, allocating nothing; 8 32768)
//
// --no-torch skips the peers. Threads: OMP_NUM_THREADS (the peer gets the same).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/core/arena.h"
#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/eval/auc.h"
#include "reference/kernels/dispatch.h"
#include "reference/models/dlrm.h"
#include "reference/optim/adagrad.h"
#include "reference/optim/schedules.h"
#include "reference/trainer/trainer.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace {

using namespace mlperf;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The peer's "name seconds" lines, by name (nothing with --no-torch or on failure).
std::vector<std::pair<std::string, double>> Peer(bool run, const std::string& args) {
  std::vector<std::pair<std::string, double>> out;
  if (!run) return out;
  const std::string cmd = fmt::format("/usr/bin/python3 {}/bench/dlrm_dcnv2/dlrm_torch_bench.py {}",
                                      MLPERF_SOURCE_DIR, args);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  char name[64];
  double seconds = 0;
  while (std::fscanf(pipe, "%63s %lf%*[^\n]", name, &seconds) == 2) out.emplace_back(name, seconds);
  pclose(pipe);
  return out;
}

void Row(const std::string& what, double ours,
         const std::vector<std::pair<std::string, double>>& peer, const std::string& name) {
  double theirs = 0;
  for (const auto& [n, s] : peer)
    if (n == name) theirs = s;
  if (theirs > 0) {
    std::printf("| %s | %.4f | %.4f | %.2f |\n", what.c_str(), ours, theirs, theirs / ours);
  } else {
    std::printf("| %s | %.4f | - | - |\n", what.c_str(), ours);
  }
}

std::vector<int64_t> CappedRows(int64_t cap) {
  std::vector<int64_t> rows = models::DlrmConfig::Reference().table_rows;
  for (int64_t& r : rows) r = std::min(r, cap);
  return rows;
}

int Bags(int64_t cap, int64_t batch, int reps, bool torch) {
  const models::DlrmConfig ref = models::DlrmConfig::Reference();
  const std::vector<int64_t> rows = CappedRows(cap);
  constexpr int64_t kDim = 128;
  const auto tables = static_cast<int64_t>(rows.size());
  // Tables and sums in arenas, as the model holds them (huge pages).
  std::vector<core::Arena> arenas;
  std::vector<core::Tensor> weight, sum;
  std::vector<std::vector<int32_t>> ids(rows.size());
  int64_t most = 0;
  for (int64_t t = 0; t < tables; ++t) {
    arenas.emplace_back(core::Device::kCpu, 2 * sizeof(float) * rows[t] * kDim + 1024);
    weight.push_back(arenas.back().AllocateZeroed({rows[t], kDim}));
    sum.push_back(arenas.back().AllocateZeroed({rows[t], kDim}));
    std::fill(weight.back().f32(), weight.back().f32() + rows[t] * kDim, 0.01f);
    ids[t].resize(static_cast<size_t>(batch * ref.multi_hot[t]));
    for (size_t i = 0; i < ids[t].size(); ++i)
      ids[t][i] = static_cast<int32_t>(core::PhiloxBits(3, static_cast<uint64_t>(t), i) %
                                       static_cast<uint64_t>(rows[t]));
    most = std::max(most, batch * ref.multi_hot[t]);
  }
  std::vector<float> pooled(static_cast<size_t>(batch * tables * kDim)), dy(pooled.size());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = core::PhiloxUniform(4, 0, i) - 0.5f;
  std::vector<int32_t> grad_rows(static_cast<size_t>(most)), count(1);
  std::vector<float> grads(static_cast<size_t>(most * kDim));
  const core::Tensor t_pooled(pooled.data(), {batch, tables * kDim}, core::DType::kF32);
  const core::Tensor t_dy(dy.data(), {batch, tables * kDim}, core::DType::kF32);
  std::vector<double> forward, update;
  for (int rep = 0; rep <= reps; ++rep) {
    const Clock::time_point start = Clock::now();
    for (int64_t t = 0; t < tables; ++t)
      ops::EmbeddingBagSumForward(
          core::Tensor(ids[t].data(), {batch, ref.multi_hot[t]}, core::DType::kI32), weight[t],
          t_pooled, t * kDim, {});
    const double f = Since(start);
    const Clock::time_point mid = Clock::now();
    for (int64_t t = 0; t < tables; ++t) {
      const core::Tensor id(ids[t].data(), {batch, ref.multi_hot[t]}, core::DType::kI32);
      const core::Tensor r(grad_rows.data(), {most}, core::DType::kI32);
      const core::Tensor g(grads.data(), {most, kDim}, core::DType::kF32);
      const core::Tensor c(count.data(), {1}, core::DType::kI32);
      ops::EmbeddingBagSumBackward(id, t_dy, t * kDim, {}, r, g, c);
      ops::SparseAdagradStep(0.004f, 1e-8f, r, g, c, weight[t], sum[t]);
    }
    if (rep > 0) {
      forward.push_back(f);
      update.push_back(Since(mid));
    }
  }
  const auto peer =
      Peer(torch, fmt::format("bags {} {} {} {}", cap, batch, reps, omp_get_max_threads()));
  std::printf(
      "| bags (rows <= %lld, batch %lld) | ours s | PyTorch s | PyTorch / ours "
      "|\n|---|---|---|---|\n",
      static_cast<long long>(cap), static_cast<long long>(batch));
  Row("lookup and pool (forward)", Median(forward), peer, "bags_forward");
  Row("sparse gradient and Adagrad", Median(update), peer, "bags_update");
  return 0;
}

int Step(int64_t cap, int64_t batch, int reps, bool torch, bool cuda) {
  models::DlrmConfig config = models::DlrmConfig::Reference();
  config.table_rows = CappedRows(cap);
  if (cuda) config.device = core::Device::kCuda;
  models::Dlrm model(config, batch, 1);
  auto comm = dist::MakeSingleProcessCommunicator();
  train::Trainer trainer(
      model,
      std::make_unique<optim::Adagrad>(optim::AdagradOptions{.epsilon = 1e-8f}, model.slices()),
      std::make_unique<optim::ConstantRate>(0.004), {}, *comm);
  const models::OwnedBatch data = model.SyntheticBatch();
  std::vector<double> seconds;
  for (int rep = 0; rep <= reps; ++rep) {
    const Clock::time_point start = Clock::now();
    trainer.TrainStep(data.batch);
    if (rep > 0) seconds.push_back(Since(start));
  }
  const auto peer = Peer(torch, fmt::format("step {} {} {} {}{}", cap, batch, reps,
                                            omp_get_max_threads(), cuda ? " cuda" : ""));
  std::printf(
      "| training step (rows <= %lld, batch %lld) | ours s | PyTorch s | PyTorch / ours "
      "|\n|---|---|---|---|\n",
      static_cast<long long>(cap), static_cast<long long>(batch));
  Row("forward, backward, Adagrad", Median(seconds), peer, "step");
  return 0;
}

int Auc(int64_t n, bool torch) {
  std::vector<float> scores(static_cast<size_t>(n));
  std::vector<uint8_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    labels[i] = core::PhiloxUniform(6, 0, static_cast<uint64_t>(i)) < 0.25f;
    scores[i] =
        std::round((core::PhiloxUniform(6, 1, static_cast<uint64_t>(i)) + 0.1f * labels[i]) *
                   1e4f) /
        1e4f;
  }
  const Clock::time_point start = Clock::now();
  const std::optional<double> auc = eval::ExactAuc(scores, labels);
  const double ours = Since(start);
  scores = {};
  labels = {};
  const auto peer = Peer(torch, fmt::format("auc {}", n));
  std::printf(
      "| exact AUC, %lld samples (ours %.6f) | ours s | scikit-learn s | scikit-learn / ours "
      "|\n|---|---|---|---|\n",
      static_cast<long long>(n), auc.value_or(-1));
  Row("sort and count", ours, peer, "auc");
  return 0;
}

}  // namespace

int Plan(int ranks, int64_t global_batch) {
  const models::DlrmConfig config = models::DlrmConfig::Reference();
  const models::EmbeddingSharding sharding =
      models::PlanEmbeddingSharding(config.table_rows, ranks);
  constexpr double kGiB = 1 << 30;
  std::printf(
      "rank  whole tables  row-wise  embeddings GiB  dense GiB  activations GiB  total GiB\n");
  for (int r = 0; r < ranks; ++r) {
    const models::DlrmMemory m = models::Dlrm::PlanMemory(config, global_batch / ranks, r, ranks);
    int whole = 0, split = 0;
    for (int64_t t = 0; t < sharding.tables(); ++t) {
      if (sharding.row_wise(t))
        ++split;
      else if (sharding.owner[static_cast<size_t>(t)] == r)
        ++whole;
    }
    std::printf("%4d  %12d  %8d  %14.2f  %9.3f  %15.2f  %9.2f\n", r, whole, split,
                static_cast<double>(m.embeddings) / kGiB, static_cast<double>(m.dense) / kGiB,
                static_cast<double>(m.activations) / kGiB, static_cast<double>(m.total()) / kGiB);
  }
  return 0;
}

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool torch = std::find(args.begin(), args.end(), "--no-torch") == args.end();
  std::erase(args, "--no-torch");
  const bool cuda = std::find(args.begin(), args.end(), "--cuda") != args.end();
  std::erase(args, "--cuda");
  const std::string what = args.empty() ? "" : args[0];
  auto arg = [&](size_t i, long long fallback) {
    return args.size() > i ? std::atoll(args[i].c_str()) : fallback;
  };
  if (what == "bags") return Bags(arg(1, 200000), arg(2, 4096), static_cast<int>(arg(3, 5)), torch);
  if (what == "step")
    return Step(arg(1, 200000), arg(2, 512), static_cast<int>(arg(3, 3)), torch, cuda);
  if (what == "auc") return Auc(arg(1, 89137319), torch);
  if (what == "plan" && arg(1, 8) > 0 && arg(2, 32768) % arg(1, 8) == 0)
    return Plan(static_cast<int>(arg(1, 8)), arg(2, 32768));
  std::fprintf(stderr,
               "usage: dlrm_bench bags|step|auc|plan [sizes...] [--no-torch] (plan: the ranks "
               "divide the global batch)\n");
  return 2;
}
