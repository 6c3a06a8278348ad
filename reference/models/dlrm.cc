#include "reference/models/dlrm.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/check.h"
#include "reference/core/init.h"
#include "reference/core/philox.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::models {
namespace {

using core::DType;
using core::Tensor;

int64_t MaxHot(const DlrmConfig& c) {
  return c.multi_hot.empty() ? 0 : *std::max_element(c.multi_hot.begin(), c.multi_hot.end());
}

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

Dlrm::Dlrm(const DlrmConfig& config, int64_t batch_size, uint64_t seed)
    : Model(config.device, batch_size), config_(config) {
  CheckConfig(config_);
  AllocateArenas([this](const layers::ModelArenas& arenas) { Build(arenas); });
  Initialize(seed);
}

Dlrm::~Dlrm() = default;

void Dlrm::Build(const layers::ModelArenas& a) {
  const DlrmConfig& c = config_;
  const int64_t batch = batch_size(), dim = c.embedding_dim, width = c.interaction_width();
  core::Arena& acts = *a.activations;
  tables_.clear();
  sums_.clear();
  ids_.clear();
  for (int64_t t = 0; t < c.tables(); ++t) {
    const std::string name = "sparse_arch.embedding_bag_collection.embedding_bags.t_cat_" +
                             std::to_string(t) + ".weight";
    tables_.push_back(a.buffers->AllocateZeroed({c.table_rows[t], dim}));
    sums_.push_back(a.buffers->AllocateZeroed({c.table_rows[t], dim}));
    registry_.buffers.push_back({name, tables_.back()});
    registry_.buffers.push_back({name + ".adagrad_sum", sums_.back()});
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
  x0_ = acts.Allocate({batch, width});
  dlogits_ = acts.Allocate({batch, 1});
  row_loss_ = acts.Allocate({1});
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
  const int64_t most = batch * MaxHot(c);
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
  for (int64_t t = 0; t < config_.tables(); ++t) {
    const float bound =
        static_cast<float>(std::sqrt(1.0 / static_cast<double>(config_.table_rows[t])));
    core::FillUniform(HostBuffer(tables_[t], buffers), -bound, bound,
                      {.seed = seed, .offset = (uint64_t{1} << 32) + static_cast<uint64_t>(t)});
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
  for (int64_t t = 0; t < config_.tables(); ++t)
    ops::EmbeddingBagSumForward(ids_[t], tables_[t], pooled_, t * dim);
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
  for (int64_t t = 0; t < config_.tables(); ++t) {
    TableGradient(t);
    ops::SparseAdagradStep(config_.embedding_lr, config_.embedding_epsilon, grad_rows_,
                           grad_values_, grad_count_, tables_[t], sums_[t]);
  }
}

void Dlrm::TableGradient(int64_t t) {
  ops::EmbeddingBagSumBackward(ids_[t], dpooled_, t * config_.embedding_dim, grad_rows_,
                               grad_values_, grad_count_);
}

void Dlrm::TableGradientToHost(int64_t t, std::vector<int32_t>* rows, std::vector<float>* grads) {
  TableGradient(t);
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
