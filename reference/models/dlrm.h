// DLRM-dcnv2 as the MLPerf reference builds it (torchrec's DLRM_DCN): 13
// dense features through the bottom MLP, 26 categorical features through
// embedding bags pooled by sum (a fixed multi-hot size per feature), the
// concatenation through the low-rank DCN v2 cross network, the top MLP and
// one logit, trained with binary cross-entropy.
//
// The embedding tables are updated inside Backward, as the reference does
// (torchrec's apply_optimizer_in_backward with FBGEMM's exact Adagrad): the
// gradient of a table is the rows the batch touched, and only those rows
// and their Adagrad sums change; there is no dense gradient, pass or
// all-reduce over a table. The tables and their sums are therefore buffers
// (restored by the warm-up, saved in checkpoints), not trainable
// parameters; the trainer's optimizer (Adagrad) steps the dense layers.
// So one rank holds every table (sharding them across ranks is still to
// come), and fp16 loss scaling does not apply: the tables' step would see
// scaled gradients.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reference/core/tensor.h"
#include "reference/layers/linear.h"
#include "reference/models/model.h"

namespace mlperf::models {

struct DlrmConfig {
  int64_t dense_features = 13;
  std::vector<int64_t> bottom_mlp = {512, 256, 128};  // ends at embedding_dim
  int64_t embedding_dim = 128;
  std::vector<int64_t> table_rows;  // per categorical feature
  std::vector<int64_t> multi_hot;   // ids per sample, per categorical feature
  int cross_layers = 3;
  int64_t low_rank = 512;
  std::vector<int64_t> top_mlp = {1024, 1024, 512, 256, 1};  // ends at 1
  // The tables' exact Adagrad, applied in the backward pass.
  float embedding_lr = 0.004f;
  float embedding_epsilon = 1e-8f;
  core::Device device = core::Device::kCpu;

  // The reference's sizes (MLPerf Training dlrm_dcnv2).
  static DlrmConfig Reference();
  int64_t tables() const { return static_cast<int64_t>(table_rows.size()); }
  // The cross network's width: the bottom MLP's output and every pooled table.
  int64_t interaction_width() const { return (tables() + 1) * embedding_dim; }
};

// Inputs of a batch: dense [B, 13] fp32, then one int32 [B, multi_hot[t]]
// per table, then labels [B] fp32 (0 or 1).
class Dlrm final : public Model {
 public:
  Dlrm(const DlrmConfig& config, int64_t batch_size, uint64_t seed = 0);
  ~Dlrm() override;

  const DlrmConfig& config() const { return config_; }
  int inputs() const { return static_cast<int>(config_.tables()) + 2; }

  // torchrec's initialisation: tables U(+-sqrt(1/rows)), linear layers
  // PyTorch's default, cross kernels Xavier normal with zero biases; the
  // Adagrad sums 0.
  void Initialize(uint64_t seed) override;
  void ForwardTrainAsync(const Batch& batch) override;
  void Backward() override;
  // Binary cross-entropy sums over the first batch.count samples (the AUC
  // is eval::AucEvaluator's, from Predict).
  MetricSums EvaluateBatch(const Batch& batch) override;
  OwnedBatch SyntheticBatch() const override;

  // Inference forward: the logits [B, 1] on the model's device.
  const core::Tensor& Predict(const Batch& batch);
  // The logits of the last forward.
  const core::Tensor& logits() const { return top_.back().output(); }
  // Table t and its Adagrad sums (buffers), for tests.
  const core::Tensor& table(int64_t t) const { return tables_[t]; }
  const core::Tensor& table_sum(int64_t t) const { return sums_[t]; }
  // The sparse gradient of table t in the last Backward, copied to the host:
  // the touched rows, ascending, and their gradients [rows, dim].
  void TableGradientToHost(int64_t t, std::vector<int32_t>* rows, std::vector<float>* grads);

 private:
  struct Cross {
    core::Tensor v, dv, w, dw, b, db;  // V [r, F], W [F, r], bias [F]
    core::Tensor low, z, out;          // x V^T [B, r], W(.) + b [B, F], the layer's output
  };
  void Build(const layers::ModelArenas& arenas);
  void Upload(const Batch& batch);
  void Forward();
  // Table t's sparse gradient into the scratch rows (all tables share them).
  void TableGradient(int64_t t);

  DlrmConfig config_;
  std::vector<layers::Linear> bottom_, top_;
  std::vector<Cross> cross_;
  std::vector<core::Tensor> tables_, sums_, ids_;
  core::Tensor dense_, labels_, pooled_, x0_, logits_flat_, dlogits_, row_loss_;
  core::Tensor dx0_, dcur_, dz_, dxv_, dlow_, dpooled_;
  std::vector<core::Tensor> dbottom_, dtop_;
  core::Tensor grad_rows_, grad_values_, grad_count_;
};

}  // namespace mlperf::models
