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
// fp16 loss scaling does not apply: the tables' step would see scaled
// gradients.
//
// Over several ranks the MLPs are data-parallel (the trainer all-reduces
// their gradients) and the tables are sharded (dlrm_sharding.h), as
// torchrec's model-parallel embeddings: each rank sends the ids of its
// samples to the ranks that pool them, each pools its tables (or its rows'
// part of a row-wise one) for the whole global batch, and the pooled rows go
// back to the ranks whose samples they are, partial sums added; backward
// sends the pooled rows' gradients the same way in reverse. Three
// all-to-alls per training step (two per inference forward).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reference/core/tensor.h"
#include "reference/layers/linear.h"
#include "reference/models/dlrm_sharding.h"
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
  // The tables split by rows over the ranks; empty: PlanEmbeddingSharding's
  // rule (those larger than an even share).
  std::vector<int64_t> row_wise_tables;
  core::Device device = core::Device::kCpu;

  // The reference's sizes (MLPerf Training dlrm_dcnv2).
  static DlrmConfig Reference();
  int64_t tables() const { return static_cast<int64_t>(table_rows.size()); }
  // The cross network's width: the bottom MLP's output and every pooled table.
  int64_t interaction_width() const { return (tables() + 1) * embedding_dim; }
};

// The bytes one rank's model allocates (its arenas exactly; the libraries'
// workspaces come on top).
struct DlrmMemory {
  int64_t embeddings = 0;   // this rank's rows of the tables and their Adagrad sums
  int64_t dense = 0;        // the MLPs and cross layers: values, gradients, Adagrad sums
  int64_t activations = 0;  // one step's activations and exchange buffers
  int64_t total() const { return embeddings + dense + activations; }
};

// Inputs of a batch: dense [B, 13] fp32, then one int32 [B, multi_hot[t]]
// per table, then labels [B] fp32 (0 or 1); B is this rank's batch, the
// same on every rank (its share of the global batch: rank r's samples are
// the global batch's [r B, (r + 1) B)).
class Dlrm final : public Model {
 public:
  // `placement`: the rank, world and communicator (on config.device) for
  // sharded tables; the default is a world of one.
  Dlrm(const DlrmConfig& config, int64_t batch_size, uint64_t seed = 0,
       const Placement& placement = {});
  ~Dlrm() override;

  // What rank `rank` of `world_size` would allocate, allocating nothing.
  static DlrmMemory PlanMemory(const DlrmConfig& config, int64_t batch_size, int rank,
                               int world_size);

  const DlrmConfig& config() const { return config_; }
  const EmbeddingSharding& sharding() const { return sharding_; }
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

  // Inference forward: the logits [B, 1] on the model's device. Over
  // several ranks every rank calls it together (the pooled rows travel).
  const core::Tensor& Predict(const Batch& batch);
  // The logits of the last forward.
  const core::Tensor& logits() const { return top_.back().output(); }
  // This rank's rows of table t and their Adagrad sums (buffers; see
  // sharding().ShardOf), for tests.
  const core::Tensor& table(int64_t t) const { return tables_[t]; }
  const core::Tensor& table_sum(int64_t t) const { return sums_[t]; }
  // The sparse gradient of table t in the last Backward, copied to the host:
  // the touched rows, ascending, and their gradients [rows, dim] (on one
  // rank, before the step).
  void TableGradientToHost(int64_t t, std::vector<int32_t>* rows, std::vector<float>* grads);

 private:
  struct LayoutOnly {};
  // The layout without arenas (PlanMemory).
  Dlrm(const DlrmConfig& config, int64_t batch_size, const Placement& placement, LayoutOnly);

  struct Cross {
    core::Tensor v, dv, w, dw, b, db;  // V [r, F], W [F, r], bias [F]
    core::Tensor low, z, out;          // x V^T [B, r], W(.) + b [B, F], the layer's output
  };
  void Build(const layers::ModelArenas& arenas);
  void Upload(const Batch& batch);
  void Forward();
  // The exchanges of a sharded model (world > 1): the ids to the ranks that
  // pool them, the pooled rows back, their gradients to the pooling ranks.
  void SendIds();
  void ReturnPooled();
  void SendPooledGradients();
  void AllToAll(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                const std::vector<int64_t>& recv_bytes);
  // Table t's sparse gradient (the j-th this rank pools) into the scratch
  // rows (all tables share them).
  void TableGradient(int64_t t, int64_t j);

  DlrmConfig config_;
  Placement placement_;
  EmbeddingSharding sharding_;
  // Per rank: the tables it pools (EmbeddingSharding::PooledBy, computed
  // once) and the ids per sample of those (their multi-hot sizes summed).
  std::vector<std::vector<int64_t>> pooled_by_;
  std::vector<int64_t> pooled_hot_;
  int64_t PooledCount(int rank) const {
    return static_cast<int64_t>(pooled_by_[static_cast<size_t>(rank)].size());
  }
  std::vector<layers::Linear> bottom_, top_;
  std::vector<Cross> cross_;
  std::vector<core::Tensor> tables_, sums_, ids_;
  // Over several ranks: the ids of the global batch for each table this
  // rank pools (the local ids_ on one rank), what it pools [global batch,
  // pooled tables * dim] (its gradient in Backward; pooled_ on one rank),
  // and the exchange buffers.
  std::vector<core::Tensor> global_ids_;
  core::Tensor pooled_mine_, ids_send_, ids_recv_, exchange_;
  core::Tensor dense_, labels_, pooled_, x0_, dlogits_;
  core::Tensor dx0_, dcur_, dz_, dxv_, dlow_, dpooled_;
  std::vector<core::Tensor> dbottom_, dtop_;
  core::Tensor grad_rows_, grad_values_, grad_count_;
};

}  // namespace mlperf::models
