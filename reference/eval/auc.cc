#include "reference/eval/auc.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <vector>

namespace mlperf::eval {
namespace {

// A float's bits as an unsigned key in the float's order (-0 and +0 tie).
uint32_t OrderedBits(float score) {
  if (score == 0.0f) score = 0.0f;
  const uint32_t bits = std::bit_cast<uint32_t>(score);
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

// Sorts 33-bit keys ascending: three passes of 11 bits.
void RadixSort(std::vector<uint64_t>& keys) {
  std::vector<uint64_t> other(keys.size());
  for (int shift = 0; shift < 33; shift += 11) {
    std::vector<size_t> count(2049, 0);
    for (uint64_t k : keys) ++count[((k >> shift) & 2047) + 1];
    for (size_t i = 1; i < count.size(); ++i) count[i] += count[i - 1];
    for (uint64_t k : keys) other[count[(k >> shift) & 2047]++] = k;
    keys.swap(other);
  }
}

}  // namespace

std::optional<double> ExactAuc(std::span<const float> scores, std::span<const uint8_t> labels,
                               std::span<const uint32_t> weights) {
  if (scores.size() != labels.size() || scores.empty()) return std::nullopt;
  if (!weights.empty() && weights.size() != scores.size()) return std::nullopt;
  // Key: the score's order, then the label in the lowest bit; with weights,
  // the sample's index above them (the order sorts only the low 33 bits).
  std::vector<uint64_t> keys(scores.size());
  for (size_t i = 0; i < scores.size(); ++i) {
    if (std::isnan(scores[i])) return std::nullopt;
    keys[i] = uint64_t{OrderedBits(scores[i])} << 1 | (labels[i] != 0 ? 1 : 0);
    if (!weights.empty()) keys[i] |= static_cast<uint64_t>(i) << 33;
  }
  RadixSort(keys);
  constexpr uint64_t kKey = (uint64_t{1} << 33) - 1;
  const auto weight = [&](uint64_t key) -> int64_t {
    return weights.empty() ? 1 : weights[key >> 33];
  };
  // Walk tie groups from the lowest score: each positive beats the negatives
  // below its group and ties (one half) with the negatives in it. Twice the
  // numerator stays an integer.
  int64_t negatives_below = 0, positives = 0, twice = 0;
  for (size_t i = 0; i < keys.size();) {
    size_t j = i;
    int64_t p = 0, n = 0;
    for (; j < keys.size() && (keys[j] & kKey) >> 1 == (keys[i] & kKey) >> 1; ++j)
      ((keys[j] & 1) != 0 ? p : n) += weight(keys[j]);
    twice += p * (2 * negatives_below + n);
    negatives_below += n;
    positives += p;
    i = j;
  }
  const int64_t negatives = negatives_below;
  if (positives == 0 || negatives == 0) return std::nullopt;
  return static_cast<double>(static_cast<long double>(twice) /
                             (2.0L * static_cast<long double>(positives) * negatives));
}

std::vector<uint32_t> TiledWeights(int64_t distinct, int64_t total) {
  std::vector<uint32_t> w(static_cast<size_t>(distinct), 0);
  for (int64_t k = 0; k < distinct; ++k)
    w[static_cast<size_t>(k)] = static_cast<uint32_t>(total / distinct + (k < total % distinct));
  return w;
}

void AucEvaluator::Add(const models::Batch& batch) {
  const std::vector<float> logits = model_.ToHost(logits_(batch));
  const core::Tensor& labels = batch.inputs.back();
  for (int64_t i = 0; i < batch.count; ++i) {
    const float z = logits[static_cast<size_t>(i)];
    records_.push_back(1.0f / (1.0f + std::exp(-z)));
    records_.push_back(labels.f32()[i]);
  }
}

double AucEvaluator::Finish(dist::Communicator& comm) {
  const std::vector<float> all = GatherRecords(comm, records_, 2);
  std::vector<float> scores(all.size() / 2);
  std::vector<uint8_t> labels(all.size() / 2);
  for (size_t i = 0; i < scores.size(); ++i) {
    scores[i] = all[2 * i];
    labels[i] = all[2 * i + 1] != 0.0f ? 1 : 0;
  }
  const std::vector<uint32_t> weights =
      tiled_to_ > 0 && !scores.empty()
          ? TiledWeights(static_cast<int64_t>(scores.size()), tiled_to_)
          : std::vector<uint32_t>();
  const std::optional<double> auc = ExactAuc(scores, labels, weights);
  if (auc) return *auc;
  if (comm.rank() == 0) {
    std::fprintf(stderr,
                 "warning: the AUC is not defined over %zu evaluation samples (one class only, or "
                 "a NaN score); logged as 0\n",
                 scores.size());
  }
  return 0.0;
}

}  // namespace mlperf::eval
