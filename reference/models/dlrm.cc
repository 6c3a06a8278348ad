#include "reference/models/dlrm.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "base/check.h"
#include "reference/core/init.h"
#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::models {
namespace {

using core::DType;
using core::Tensor;

void CheckConfig(const DlrmConfig& c) {
  MLPERF_CHECK_MSG(c.tables() > 0 && c.multi_hot.size() == c.table_rows.size(),
                   "DLRM: one multi-hot size per table");
  for (size_t t = 0; t < c.table_rows.size(); ++t)
    MLPERF_CHECK(c.table_rows[t] > 0 && c.table_rows[t] < (int64_t{1} << 31) && c.multi_hot[t] > 0);
  MLPERF_CHECK_MSG(!c.bottom_mlp.empty() && c.bottom_mlp.back() == c.embedding_dim,
                   "DLRM: the bottom MLP ends at the embedding width");
  MLPERF_CHECK_MSG(!c.top_mlp.empty() && c.top_mlp.back() == 1, "DLRM: the top MLP ends at 1");
  MLPERF_CHECK(c.cross_layers >= 0 && c.low_rank > 0 && c.dense_features > 0);
}

}  // namespace

DlrmConfig DlrmConfig::Reference() {
  DlrmConfig c;
  c.table_rows = {40000000, 39060,    17295,    7424,     20265,  3,     7122, 1543, 63,
                  40000000, 3067956,  405282,   10,       2209,   11938, 155,  4,    976,
                  14,       40000000, 40000000, 40000000, 590152, 12973, 108,  36};
  c.multi_hot = {3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1};
  return c;
}

Dlrm::Dlrm(const DlrmConfig& config, int64_t batch_size, uint64_t seed, const Placement& placement)
    : Dlrm(config, batch_size, placement, LayoutOnly{}) {
  MLPERF_CHECK_MSG(placement_.world_size == 1 || placement_.comm != nullptr,
                   "DLRM over several ranks needs their communicator");
  AllocateArenas([this](const layers::ModelArenas& arenas) { Build(arenas); });
  Initialize(seed);
}

Dlrm::Dlrm(const DlrmConfig& config, int64_t batch_size, const Placement& placement, LayoutOnly)
    : Model(config.device, batch_size), config_(config), placement_(placement) {
  CheckConfig(config_);
  const int world = placement_.world_size;
  MLPERF_CHECK(world >= 1 && placement_.rank >= 0 && placement_.rank < world);
  sharding_ = PlanEmbeddingSharding(config_.table_rows, world, config_.row_wise_tables);
  for (int r = 0; r < world; ++r) {
    pooled_by_.push_back(sharding_.PooledBy(r));
    int64_t hot = 0;
    for (const int64_t t : pooled_by_.back()) hot += config_.multi_hot[static_cast<size_t>(t)];
    pooled_hot_.push_back(hot);
  }
}

DlrmMemory Dlrm::PlanMemory(const DlrmConfig& config, int64_t batch_size, int rank,
                            int world_size) {
  DlrmConfig on_cpu = config;  // the same layout on any device, none needed
  on_cpu.device = core::Device::kCpu;
  Dlrm layout(on_cpu, batch_size, {.rank = rank, .world_size = world_size}, LayoutOnly{});
  core::Arena p = core::Arena::Measuring(), g = core::Arena::Measuring();
  core::Arena b = core::Arena::Measuring(), a = core::Arena::Measuring();
  core::Arena f = core::Arena::Measuring();
  layout.Build({&p, &g, &b, &a, &f});
  // Adagrad keeps one sum per dense parameter.
  return {.embeddings = static_cast<int64_t>(b.used()),
          .dense = static_cast<int64_t>(2 * p.used() + g.used() + f.used()),
          .activations = static_cast<int64_t>(a.used())};
}

Dlrm::~Dlrm() = default;

void Dlrm::Build(const layers::ModelArenas& a) {
  const DlrmConfig& c = config_;
  const int64_t batch = batch_size(), dim = c.embedding_dim, width = c.interaction_width();
  const int world = placement_.world_size, rank = placement_.rank;
  core::Arena& acts = *a.activations;
  tables_.clear();
  sums_.clear();
  ids_.clear();
  global_ids_.clear();
  // Every rank registers every table, with the rows it holds (none for a
  // table another rank holds whole): checkpoints gather them whole.
  for (int64_t t = 0; t < c.tables(); ++t) {
    const std::string name = "sparse_arch.embedding_bag_collection.embedding_bags.t_cat_" +
                             std::to_string(t) + ".weight";
    const ops::TableShard shard = sharding_.ShardOf(t, rank);
    const layers::Sharding sharding = {.full_rows = world > 1 ? c.table_rows[t] : 0,
                                       .first_row = shard.first_row};
    tables_.push_back(a.buffers->AllocateZeroed({shard.rows, dim}));
    sums_.push_back(a.buffers->AllocateZeroed({shard.rows, dim}));
    registry_.buffers.push_back({name, tables_.back(), sharding});
    registry_.buffers.push_back({name + ".adagrad_sum", sums_.back(), sharding});
  }
  bottom_ = std::vector<layers::Linear>(c.bottom_mlp.size());
  int64_t in = c.dense_features;
  for (size_t i = 0; i < c.bottom_mlp.size(); ++i) {
    bottom_[i].Allocate(batch, in, c.bottom_mlp[i], layers::Activation::kRelu,
                        "dense_arch.model._mlp." + std::to_string(i) + "._linear", a, &registry_);
    in = c.bottom_mlp[i];
  }
  cross_ = std::vector<Cross>(static_cast<size_t>(c.cross_layers));
  const std::string crossnet = "inter_arch.crossnet.";
  for (int l = 0; l < c.cross_layers; ++l) {
    Cross& x = cross_[static_cast<size_t>(l)];
    const std::string n = std::to_string(l);
    const layers::Parameter w = layers::AddParameter(a, &registry_, {width, c.low_rank},
                                                     {.name = crossnet + "W_kernels." + n});
    const layers::Parameter v = layers::AddParameter(a, &registry_, {c.low_rank, width},
                                                     {.name = crossnet + "V_kernels." + n});
    const layers::Parameter b = layers::AddParameter(
        a, &registry_, {width}, {.name = crossnet + "bias." + n, .bias = true});
    x.w = w.value, x.dw = w.grad, x.v = v.value, x.dv = v.grad, x.b = b.value, x.db = b.grad;
    x.low = acts.Allocate({batch, c.low_rank});
    x.z = acts.Allocate({batch, width});
    x.out = acts.Allocate({batch, width});
  }
  top_ = std::vector<layers::Linear>(c.top_mlp.size());
  in = width;
  for (size_t i = 0; i < c.top_mlp.size(); ++i) {
    const bool last = i + 1 == c.top_mlp.size();
    top_[i].Allocate(
        batch, in, c.top_mlp[i], last ? layers::Activation::kNone : layers::Activation::kRelu,
        last ? "over_arch.model.1" : "over_arch.model.0._mlp." + std::to_string(i) + "._linear", a,
        &registry_);
    in = c.top_mlp[i];
  }
  dense_ = acts.Allocate({batch, c.dense_features});
  for (int64_t t = 0; t < c.tables(); ++t)
    ids_.push_back(acts.Allocate({batch, c.multi_hot[t]}, DType::kI32));
  labels_ = acts.Allocate({batch});
  pooled_ = acts.Allocate({batch, c.tables() * dim});
  const std::vector<int64_t>& here = pooled_by_[static_cast<size_t>(rank)];
  int64_t most_hot = 0;  // of the tables this rank pools
  if (world == 1) {
    global_ids_ = ids_;
    pooled_mine_ = pooled_;
  } else {
    const int64_t global = batch * world;
    for (const int64_t t : here)
      global_ids_.push_back(acts.Allocate({global, c.multi_hot[t]}, DType::kI32));
    pooled_mine_ = acts.Allocate({global, static_cast<int64_t>(here.size()) * dim});
    const int64_t sent_hot = std::accumulate(pooled_hot_.begin(), pooled_hot_.end(), int64_t{0});
    ids_send_ = acts.Allocate({batch * sent_hot}, DType::kI32);
    ids_recv_ = acts.Allocate({global * pooled_hot_[static_cast<size_t>(rank)]}, DType::kI32);
    int64_t returned = 0;  // tables pooled, over every rank
    for (const std::vector<int64_t>& pooled : pooled_by_)
      returned += static_cast<int64_t>(pooled.size());
    exchange_ = acts.Allocate({batch * returned * dim});
  }
  for (const int64_t t : here) most_hot = std::max(most_hot, c.multi_hot[t]);
  x0_ = acts.Allocate({batch, width});
  dlogits_ = acts.Allocate({batch, 1});
  loss_ = acts.Allocate({1});
  for (Tensor* t : {&dx0_, &dcur_, &dz_, &dxv_}) *t = acts.Allocate({batch, width});
  dlow_ = acts.Allocate({batch, c.low_rank});
  // The gradient of each MLP layer's output (its Backward consumes it).
  dbottom_.clear();
  for (int64_t out : c.bottom_mlp) dbottom_.push_back(acts.Allocate({batch, out}));
  dtop_.clear();  // the last layer's is dlogits_
  for (size_t i = 0; i + 1 < c.top_mlp.size(); ++i)
    dtop_.push_back(acts.Allocate({batch, c.top_mlp[i]}));
  dpooled_ = acts.Allocate({batch, c.tables() * dim});
  const int64_t most = batch * world * most_hot;
  grad_rows_ = acts.Allocate({most}, DType::kI32);
  grad_values_ = acts.Allocate({most, dim});
  grad_count_ = acts.Allocate({1}, DType::kI32);
}

void Dlrm::Initialize(uint64_t seed) {
  std::vector<float> params(parameters().size(), 0.0f);
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    const layers::Parameter& p = registry_.parameters[i];
    const Tensor value = HostParameter(p.value, params);
    const core::RngStream rng{.seed = seed, .offset = i};
    if (p.name.starts_with("inter_arch.crossnet.bias")) {
      core::FillConstant(value, 0.0f);
    } else if (p.name.starts_with("inter_arch.crossnet.")) {
      const double fans = static_cast<double>(value.dim(0) + value.dim(1));
      core::FillNormal(value, 0.0f, static_cast<float>(std::sqrt(2.0 / fans)), rng);
    } else {
      // Linear weights [out, in] and biases [out] share the weight's fan-in.
      const int64_t fan_in = p.bias ? registry_.parameters[i - 1].value.dim(1) : value.dim(1);
      core::TorchDefaultUniform(value, fan_in, rng);
    }
  }
  ParametersFromHost(params);
  std::vector<float> buffers(this->buffers().size(), 0.0f);
  // A shard takes its rows' values of the table drawn whole.
  for (int64_t t = 0; t < config_.tables(); ++t) {
    const float bound =
        static_cast<float>(std::sqrt(1.0 / static_cast<double>(config_.table_rows[t])));
    core::FillUniform(HostBuffer(tables_[t], buffers), -bound, bound,
                      {.seed = seed, .offset = (uint64_t{1} << 32) + static_cast<uint64_t>(t)},
                      sharding_.ShardOf(t, placement_.rank).first_row * config_.embedding_dim);
  }
  BuffersFromHost(buffers);
  set_num_batches_tracked(0);
}

void Dlrm::Upload(const Batch& batch) {
  if (batch.inputs.empty()) return;
  MLPERF_CHECK_MSG(static_cast<int>(batch.inputs.size()) == inputs(),
                   "DLRM takes the dense features, one id tensor per table and the labels");
  auto copy = [&](const Tensor& from, const Tensor& to) {
    MLPERF_CHECK_MSG(from.bytes() == to.bytes() && from.dtype() == to.dtype(),
                     "DLRM: a batch input of the wrong size or type");
    ops::CopyBytes(to.data(), device(), from.data(), from.device(), to.bytes());
  };
  copy(batch.inputs[0], dense_);
  for (int64_t t = 0; t < config_.tables(); ++t) copy(batch.inputs[1 + t], ids_[t]);
  copy(batch.inputs[1 + config_.tables()], labels_);
}

void Dlrm::Forward() {
  const int64_t dim = config_.embedding_dim;
  const Tensor* x = &dense_;
  for (layers::Linear& l : bottom_) {
    l.Forward(*x);
    x = &l.output();
  }
  if (placement_.world_size > 1) SendIds();
  const std::vector<int64_t>& here = pooled_by_[static_cast<size_t>(placement_.rank)];
  for (size_t j = 0; j < here.size(); ++j) {
    const int64_t t = here[j];
    ops::EmbeddingBagSumForward(global_ids_[j], tables_[t], pooled_mine_,
                                static_cast<int64_t>(j) * dim,
                                sharding_.ShardOf(t, placement_.rank));
  }
  if (placement_.world_size > 1) ReturnPooled();
  ops::ConcatChannels(*x, pooled_, x0_);
  const Tensor* xl = &x0_;
  for (Cross& c : cross_) {
    ops::LinearForward(*xl, c.v, Tensor(), c.low);
    ops::LinearForward(c.low, c.w, c.b, c.z);
    ops::CrossForward(x0_, c.z, *xl, c.out);
    xl = &c.out;
  }
  for (layers::Linear& l : top_) {
    l.Forward(*xl);
    xl = &l.output();
  }
}

void Dlrm::ForwardTrainAsync(const Batch& batch) {
  Upload(batch);
  Forward();
  ops::BinaryCrossEntropyWithLogits(top_.back().output(), labels_, loss_, dlogits_);
  ++num_batches_tracked_;
}

void Dlrm::Backward() {
  // The top MLP, down to the cross network's output (dcur_).
  const Tensor& cross_out = cross_.empty() ? x0_ : cross_.back().out;
  for (size_t i = top_.size(); i-- > 0;) {
    top_[i].Backward(i == 0 ? cross_out : top_[i - 1].output(),
                     i + 1 == top_.size() ? dlogits_ : dtop_[i], i == 0 ? dcur_ : dtop_[i - 1]);
  }
  // Cross layers: x_{l+1} = x0 * z_l + x_l with z_l = W (V x_l) + b.
  ops::Fill(dx0_, 0.0f);
  for (size_t l = cross_.size(); l-- > 0;) {
    Cross& c = cross_[l];
    ops::CrossBackward(x0_, c.z, dcur_, dx0_, dz_);
    ops::LinearBackward(c.low, c.w, dz_, dlow_, c.dw, c.db);
    ops::LinearBackward(l == 0 ? x0_ : cross_[l - 1].out, c.v, dlow_, dxv_, c.dv, Tensor());
    ops::Add(dcur_, dxv_, dcur_);  // the residual's gradient plus V's
  }
  ops::Add(dx0_, dcur_, dx0_);
  ops::SplitChannels(dx0_, dbottom_.back(), dpooled_);
  for (size_t i = bottom_.size(); i-- > 0;)
    bottom_[i].Backward(i == 0 ? dense_ : bottom_[i - 1].output(), dbottom_[i],
                        i == 0 ? Tensor() : dbottom_[i - 1]);
  NotifyGradientsReady(0);
  if (placement_.world_size > 1) SendPooledGradients();
  const std::vector<int64_t>& here = pooled_by_[static_cast<size_t>(placement_.rank)];
  for (size_t j = 0; j < here.size(); ++j) {
    const int64_t t = here[j];
    TableGradient(t, static_cast<int64_t>(j));
    ops::SparseAdagradStep(config_.embedding_lr, config_.embedding_epsilon, grad_rows_,
                           grad_values_, grad_count_, tables_[t], sums_[t]);
  }
}

void Dlrm::TableGradient(int64_t t, int64_t j) {
  const Tensor& dpooled = placement_.world_size > 1 ? pooled_mine_ : dpooled_;
  ops::EmbeddingBagSumBackward(global_ids_[j], dpooled, j * config_.embedding_dim,
                               sharding_.ShardOf(t, placement_.rank), grad_rows_, grad_values_,
                               grad_count_);
}

void Dlrm::AllToAll(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                    const std::vector<int64_t>& recv_bytes) {
  // On a GPU the communicator may queue on a stream of its own.
  const bool gpu = device() == core::Device::kCuda;
  if (gpu) ops::StreamWaitsFor(placement_.comm_stream, ops::ComputeStream());
  placement_.comm->AllToAll(send, send_bytes, recv, recv_bytes);
  if (gpu) ops::StreamWaitsFor(ops::ComputeStream(), placement_.comm_stream);
}

// Rank r sends rank o, for each table o pools in order, its samples' ids
// [B, hot]; rank o places them at rows [r B, (r + 1) B) of that table's
// global ids.
void Dlrm::SendIds() {
  const int world = placement_.world_size, rank = placement_.rank;
  const int64_t batch = batch_size();
  std::vector<int64_t> send_bytes, recv_bytes;
  auto* send = static_cast<std::byte*>(ids_send_.data());
  for (int o = 0; o < world; ++o) {
    for (const int64_t t : pooled_by_[static_cast<size_t>(o)]) {
      ops::CopyBytes(send, device(), ids_[t].data(), device(), ids_[t].bytes());
      send += ids_[t].bytes();
    }
    send_bytes.push_back(batch * pooled_hot_[static_cast<size_t>(o)] * 4);
    recv_bytes.push_back(batch * pooled_hot_[static_cast<size_t>(rank)] * 4);
  }
  AllToAll(ids_send_.data(), send_bytes, ids_recv_.data(), recv_bytes);
  const auto* recv = static_cast<const std::byte*>(ids_recv_.data());
  for (int r = 0; r < world; ++r) {
    const std::vector<int64_t>& here = pooled_by_[static_cast<size_t>(rank)];
    for (size_t j = 0; j < here.size(); ++j) {
      const size_t bytes = static_cast<size_t>(batch * config_.multi_hot[here[j]] * 4);
      ops::CopyBytes(static_cast<std::byte*>(global_ids_[j].data()) + r * bytes, device(), recv,
                     device(), bytes);
      recv += bytes;
    }
  }
}

// Rank o's pooled rows of rank r's samples ([B, its pooled tables * dim],
// rows [r B, (r + 1) B) of pooled_mine_) go to rank r, which copies each
// table's columns into place; a row-wise table's parts are added in rank
// order.
void Dlrm::ReturnPooled() {
  const int world = placement_.world_size, rank = placement_.rank;
  const int64_t batch = batch_size(), dim = config_.embedding_dim;
  std::vector<int64_t> send_bytes, recv_bytes;
  for (int r = 0; r < world; ++r) {
    send_bytes.push_back(batch * PooledCount(rank) * dim * 4);
    recv_bytes.push_back(batch * PooledCount(r) * dim * 4);
  }
  AllToAll(pooled_mine_.data(), send_bytes, exchange_.data(), recv_bytes);
  float* from = exchange_.f32();
  for (int o = 0; o < world; ++o) {
    const std::vector<int64_t>& pooled = pooled_by_[static_cast<size_t>(o)];
    const Tensor block(from, {batch, static_cast<int64_t>(pooled.size()) * dim}, DType::kF32,
                       device());
    for (size_t k = 0; k < pooled.size(); ++k) {
      const int64_t t = pooled[k];
      const bool added = sharding_.row_wise(t) && o > 0;
      ops::CopyColumns(block, static_cast<int64_t>(k) * dim, pooled_, t * dim, dim, added);
    }
    from += block.numel();
  }
}

// The reverse of ReturnPooled: rank r sends rank o the gradients of its
// samples' pooled rows for the tables o pools, which land at rows
// [r B, (r + 1) B) of pooled_mine_. Each rank's loss is the mean over its
// own samples, so the gradients are divided by the world size: the tables
// step on the mean over the global batch, as the all-reduced MLPs do.
void Dlrm::SendPooledGradients() {
  const int world = placement_.world_size, rank = placement_.rank;
  const int64_t batch = batch_size(), dim = config_.embedding_dim;
  ops::Scale(dpooled_, 1.0f / static_cast<float>(world));
  std::vector<int64_t> send_bytes, recv_bytes;
  float* to = exchange_.f32();
  for (int o = 0; o < world; ++o) {
    const std::vector<int64_t>& pooled = pooled_by_[static_cast<size_t>(o)];
    const Tensor block(to, {batch, static_cast<int64_t>(pooled.size()) * dim}, DType::kF32,
                       device());
    for (size_t k = 0; k < pooled.size(); ++k)
      ops::CopyColumns(dpooled_, pooled[k] * dim, block, static_cast<int64_t>(k) * dim, dim, false);
    to += block.numel();
    send_bytes.push_back(static_cast<int64_t>(block.bytes()));
    recv_bytes.push_back(batch * PooledCount(rank) * dim * 4);
  }
  AllToAll(exchange_.data(), send_bytes, pooled_mine_.data(), recv_bytes);
}

void Dlrm::TableGradientToHost(int64_t t, std::vector<int32_t>* rows, std::vector<float>* grads) {
  const std::vector<int64_t>& here = pooled_by_[static_cast<size_t>(placement_.rank)];
  const auto j = std::find(here.begin(), here.end(), t);
  MLPERF_CHECK_MSG(j != here.end(), "TableGradientToHost: a table another rank pools");
  TableGradient(t, j - here.begin());
  int32_t count = 0;
  ops::CopyBytes(&count, core::Device::kCpu, grad_count_.data(), device(), sizeof(count));
  rows->resize(static_cast<size_t>(count));
  grads->resize(static_cast<size_t>(count * config_.embedding_dim));
  ops::CopyBytes(rows->data(), core::Device::kCpu, grad_rows_.data(), device(),
                 sizeof(int32_t) * rows->size());
  ops::CopyBytes(grads->data(), core::Device::kCpu, grad_values_.data(), device(),
                 sizeof(float) * grads->size());
}

const Tensor& Dlrm::Predict(const Batch& batch) {
  Upload(batch);
  Forward();
  return top_.back().output();
}

MetricSums Dlrm::EvaluateBatch(const Batch& batch) {
  Predict(batch);
  const std::vector<float> logits = ToHost(top_.back().output());
  const std::vector<float> labels = ToHost(labels_);
  MetricSums sums;
  for (int64_t i = 0; i < batch.count; ++i) {
    const double z = logits[static_cast<size_t>(i)];
    sums.numerator +=
        std::max(z, 0.0) - z * labels[static_cast<size_t>(i)] + std::log1p(std::exp(-std::fabs(z)));
  }
  sums.denominator = static_cast<double>(batch.count);
  return sums;
}

OwnedBatch Dlrm::SyntheticBatch() const {
  const DlrmConfig& c = config_;
  const int64_t n = batch_size();
  OwnedBatch owned;
  auto bits = [](uint64_t stream, int64_t i) {
    return core::PhiloxBits(0xd1a5, stream, static_cast<uint64_t>(i));
  };
  float* dense = owned.Add({n, c.dense_features}, DType::kF32).f32();
  for (int64_t i = 0; i < n * c.dense_features; ++i)
    dense[i] = static_cast<float>(bits(0, i) % 1000) / 100.0f;
  for (int64_t t = 0; t < c.tables(); ++t) {
    int32_t* ids = owned.Add({n, c.multi_hot[t]}, DType::kI32).as<int32_t>();
    for (int64_t i = 0; i < n * c.multi_hot[t]; ++i)
      ids[i] = static_cast<int32_t>(bits(1 + static_cast<uint64_t>(t), i) %
                                    static_cast<uint64_t>(c.table_rows[t]));
  }
  float* labels = owned.Add({n}, DType::kF32).f32();
  for (int64_t i = 0; i < n; ++i) labels[i] = static_cast<float>(bits(999, i) % 2);
  owned.batch.count = n;
  return owned;
}

}  // namespace mlperf::models
