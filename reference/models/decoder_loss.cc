// The decoder's loss: the next-token cross-entropy over the labels that
// count (the mean over all of them, or each sample's mean averaged over
// samples), in its vocabulary-parallel form under tensor parallelism, and
// the evaluation's sums.
#include <algorithm>
#include <utility>
#include <vector>

#include "base/check.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/decoder.h"
#include "reference/models/decoder.h"

namespace mlperf::models {

using core::DType;
using core::Tensor;

int64_t Decoder::CountedLabels(const Batch& batch, int64_t samples) const {
  if (batch.inputs.empty()) return samples * config_.seq_len;  // synthetic: every label
  const int32_t* labels = batch.inputs[1].as<int32_t>();
  return std::count_if(labels, labels + samples * config_.seq_len,
                       [](int32_t l) { return l != ops::kIgnoreLabel; });
}

void Decoder::Losses(float normalizer, const Tensor& logits, const Tensor& labels,
                     const Tensor& loss, const Tensor& dlogits) {
  if (tp_ == 1) return ops::TokenCrossEntropy(normalizer, logits, labels, loss, dlogits);
  // Each rank's log-sum-exp over its columns, gathered and combined.
  const int64_t rows = labels.numel();
  const Tensor lse(lse_.data(), {rows}, DType::kF32, device());
  const Tensor gathered(lse_gathered_.data(), {tp_, rows}, DType::kF32, device());
  ops::RowLogSumExp(logits, lse);
  comm_->AllGather(lse.data(), gathered.data(), static_cast<int64_t>(lse.bytes()));
  ops::CombineLogSumExp(gathered, lse);
  ops::ShardedTokenCrossEntropy(normalizer, tp_rank_ * (config_.vocab_size / tp_), tp_rank_ == 0,
                                logits, labels, lse, loss, dlogits);
  AllReduce(loss);
}

std::vector<std::pair<double, int64_t>> Decoder::SampleLosses(const Batch& batch, int64_t samples,
                                                              float samples_normalizer,
                                                              bool train) {
  const int64_t s = config_.seq_len, vocab = logits_.dim(1);
  const int32_t* host_labels = batch.inputs.empty() ? nullptr : batch.inputs[1].as<int32_t>();
  std::vector<std::pair<double, int64_t>> sums;
  for (int64_t b = 0; b < samples; ++b) {
    const int64_t counted = host_labels == nullptr
                                ? s
                                : std::count_if(host_labels + b * s, host_labels + (b + 1) * s,
                                                [](int32_t l) { return l != ops::kIgnoreLabel; });
    const auto rows = [&](const Tensor& t, int64_t width, DType type) {
      return Tensor(static_cast<char*>(t.data()) + b * s * width * core::DTypeSize(type),
                    width > 1 ? core::Shape{s, width} : core::Shape{s}, type, device());
    };
    const Tensor logits = rows(logits_, vocab, DType::kF32);
    const Tensor labels = rows(labels_, 1, DType::kI32);
    const Tensor dlogits = rows(dlogits_, vocab, DType::kF32);
    const float normalizer =
        train ? static_cast<float>(std::max<int64_t>(1, counted)) * samples_normalizer : 1.0f;
    Losses(normalizer, logits, labels, loss_sum_, dlogits);
    if (train) {
      ops::Accumulate(loss_sum_, loss_);
    } else {
      sums.emplace_back(ToHost(loss_sum_)[0], counted);
    }
  }
  return sums;
}

MetricSums Decoder::EvaluateBatch(const Batch& batch) {
  MLPERF_CHECK(batch.count >= 0 && batch.count <= batch_size());
  Upload(batch);
  Forward(/*train=*/false);
  const int64_t rows = batch.count * config_.seq_len;
  if (rows == 0) return {};
  const int64_t vocab = logits_.dim(1);
  const Tensor logits(logits_.data(), {rows, vocab}, DType::kF32, device());
  const Tensor labels(labels_.data(), {rows}, DType::kI32, device());
  const Tensor dlogits(dlogits_.data(), {rows, vocab}, DType::kF32, device());
  if (config_.sample_mean_loss) {
    MetricSums sums;
    for (const auto& [sum, counted] : SampleLosses(batch, batch.count, 1.0f, /*train=*/false)) {
      if (counted == 0) continue;  // nothing to summarise: no mean
      sums.numerator += sum / static_cast<double>(counted);
      sums.denominator += 1;
    }
    return sums;
  }
  Losses(1.0f, logits, labels, loss_sum_, dlogits);
  return {.numerator = ToHost(loss_sum_)[0],
          .denominator = static_cast<double>(CountedLabels(batch, batch.count))};
}

}  // namespace mlperf::models
