// DLRM-dcnv2 against a PyTorch transcription of the reference's torchrec
// DLRM_DCN (tests/dlrm_dcnv2/dlrm_parity.py, /usr/bin/python3): nn.EmbeddingBag in
// sum mode, the low-rank cross network, the MLPs, BCEWithLogitsLoss, on the
// same weights and batch (ids repeated within and across samples). The
// logits, the loss, every dense gradient and each table's sparse gradient
// agree; after one step, the dense layers match torch.optim.Adagrad and
// the tables match torch.optim.Adagrad on EmbeddingBag's sparse gradient
// (only the touched rows change). Skips where PyTorch is missing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/core/arena.h"
#include "reference/core/philox.h"
#include "reference/io/safetensors.h"
#include "reference/models/dlrm.h"
#include "reference/optim/adagrad.h"
#include "tests/core/parity_util.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::models {
namespace {

using core::DType;
using core::Tensor;

constexpr float kLr = 0.05f, kEps = 1e-8f;

DlrmConfig SmallConfig() {
  DlrmConfig c;
  c.bottom_mlp = {32, 8};
  c.embedding_dim = 8;
  c.table_rows = {50, 7, 100, 3};
  c.multi_hot = {3, 1, 5, 2};
  c.cross_layers = 2;
  c.low_rank = 6;
  c.top_mlp = {16, 8, 1};
  c.embedding_lr = kLr;
  c.embedding_epsilon = kEps;
  return c;
}

TEST(DlrmParity, ForwardGradientsAndOneAdagradStepMatchPyTorch) {
  if (!testing::PythonHas("torch"))
    GTEST_SKIP() << "PyTorch is missing for /usr/bin/python3 (scripts/install_deps.sh)";
  const DlrmConfig config = SmallConfig();
  constexpr int64_t kBatch = 12;
  Dlrm model(config, kBatch, 7);
  const std::string weights = testing::TempPath("dlrm_weights");
  const std::string batch_file = testing::TempPath("dlrm_batch");
  const std::string ours_file = testing::TempPath("dlrm_ours");
  ASSERT_TRUE(model.SaveSafetensors(weights).ok());

  // The batch: dense features like the reference's log(1 + x), ids drawn
  // from each table (the 3-row table repeats ids within a sample), labels.
  OwnedBatch owned;
  const Tensor dense = owned.Add({kBatch, config.dense_features}, DType::kF32);
  for (int64_t i = 0; i < dense.numel(); ++i)
    dense.f32()[i] = 3.0f * core::PhiloxUniform(11, 0, static_cast<uint64_t>(i));
  std::vector<io::NamedTensor> named = {{"dense", dense}};
  for (int64_t t = 0; t < config.tables(); ++t) {
    const Tensor ids = owned.Add({kBatch, config.multi_hot[t]}, DType::kI32);
    for (int64_t i = 0; i < ids.numel(); ++i)
      ids.as<int32_t>()[i] = static_cast<int32_t>(
          core::PhiloxBits(11, 1 + static_cast<uint64_t>(t), static_cast<uint64_t>(i)) %
          static_cast<uint64_t>(config.table_rows[t]));
    named.push_back({fmt::format("ids.{}", t), ids});
  }
  const Tensor labels = owned.Add({kBatch}, DType::kF32);
  for (int64_t i = 0; i < kBatch; ++i) labels.f32()[i] = static_cast<float>(i % 3 == 0);
  named.push_back({"labels", labels});
  owned.batch.count = kBatch;
  ASSERT_TRUE(io::SaveSafetensors(batch_file, named).ok());

  // Forward, backward (the tables stepped in it), then Adagrad on the dense layers.
  const float loss = model.ForwardTrain(owned.batch);
  std::vector<float> logits = model.ToHost(model.logits());
  model.Backward();
  std::vector<float> grads = model.GradientsToHost();
  std::vector<float> loss_value = {loss};
  std::vector<io::NamedTensor> out = {{"loss", Tensor(loss_value.data(), {1}, DType::kF32)},
                                      {"logits", Tensor(logits.data(), {kBatch}, DType::kF32)}};
  std::vector<float> params_before = model.ParametersToHost();
  const std::vector<const layers::Parameter*> trainable = model.trainable_parameters();
  const std::vector<TensorSlice> slices = model.slices();
  for (size_t i = 0; i < trainable.size(); ++i)
    out.push_back({"grad/" + trainable[i]->name, Tensor(grads.data() + slices[i].offset,
                                                        trainable[i]->value.shape(), DType::kF32)});
  std::vector<std::vector<int32_t>> rows(config.tables());
  std::vector<std::vector<float>> row_grads(config.tables());
  for (int64_t t = 0; t < config.tables(); ++t) {
    model.TableGradientToHost(t, &rows[t], &row_grads[t]);
    const auto n = static_cast<int64_t>(rows[t].size());
    ASSERT_GT(n, 0);
    out.push_back({fmt::format("rows.{}", t), Tensor(rows[t].data(), {n}, DType::kI32)});
    out.push_back({fmt::format("row_grads.{}", t),
                   Tensor(row_grads[t].data(), {n, config.embedding_dim}, DType::kF32)});
  }
  optim::Adagrad adagrad({.epsilon = kEps}, slices);
  core::Arena measure = core::Arena::Measuring();
  adagrad.Allocate(measure, static_cast<int64_t>(params_before.size()));
  core::Arena arena(core::Device::kCpu, measure.used());
  adagrad.Allocate(arena, static_cast<int64_t>(params_before.size()));
  adagrad.Step({.w = model.parameters().data(),
                .g = model.gradients().data(),
                .count = static_cast<int64_t>(params_before.size()),
                .lr = kLr});
  std::vector<float> params_after = model.ParametersToHost();
  for (size_t i = 0; i < trainable.size(); ++i)
    out.push_back(
        {"stepped/" + trainable[i]->name,
         Tensor(params_after.data() + slices[i].offset, trainable[i]->value.shape(), DType::kF32)});
  std::vector<float> buffers = model.BuffersToHost();
  for (const layers::NamedBuffer& b : model.buffer_tensors()) {
    const int64_t at = static_cast<float*>(b.value.data()) - model.buffers().data();
    out.push_back({"stepped/" + b.name, Tensor(buffers.data() + at, b.value.shape(), DType::kF32)});
  }
  ASSERT_TRUE(io::SaveSafetensors(ours_file, out).ok());

  const std::string cmd = fmt::format(
      "/usr/bin/python3 {}/tests/dlrm_dcnv2/dlrm_parity.py --weights {} --batch {} --ours {} "
      "--lr {} --eps {} --cross-layers {}",
      MLPERF_SOURCE_DIR, weights, batch_file, ours_file, kLr, kEps, config.cross_layers);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const std::string& f : {weights, batch_file, ours_file}) std::filesystem::remove(f);
}

}  // namespace
}  // namespace mlperf::models
