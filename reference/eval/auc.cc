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

std::optional<double> ExactAuc(std::span<const float> scores, std::span<const uint8_t> labels) {
  if (scores.size() != labels.size() || scores.empty()) return std::nullopt;
  // Key: the score's order, then the label in the lowest bit.
  std::vector<uint64_t> keys(scores.size());
  for (size_t i = 0; i < scores.size(); ++i) {
    if (std::isnan(scores[i])) return std::nullopt;
    keys[i] = uint64_t{OrderedBits(scores[i])} << 1 | (labels[i] != 0 ? 1 : 0);
  }
  RadixSort(keys);
  // Walk tie groups from the lowest score: each positive beats the negatives
  // below its group and ties (one half) with the negatives in it. Twice the
  // numerator stays an integer.
  int64_t negatives_below = 0, positives = 0, twice = 0;
  for (size_t i = 0; i < keys.size();) {
    size_t j = i;
    int64_t p = 0, n = 0;
    for (; j < keys.size() && keys[j] >> 1 == keys[i] >> 1; ++j) ((keys[j] & 1) != 0 ? p : n) += 1;
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
  const std::optional<double> auc = ExactAuc(scores, labels);
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
