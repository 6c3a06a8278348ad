// The area under the ROC curve, exactly: what the DLRM-dcnv2 reference
// computes with torchmetrics' AUROC over the whole evaluation set, and what
// sklearn.metrics.roc_auc_score gives (tied scores count one half, as the
// trapezoid over their diagonal). Sorted by a radix sort, counted in
// integers: the value is the exact fraction, rounded once.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "reference/eval/evaluator.h"

namespace mlperf::eval {

// AUC of `scores` against `labels` (0 or 1, the same count), each sample
// counted `weights[i]` times (once each without weights). Nothing when it is
// not defined: one class only, no samples, or a NaN score.
std::optional<double> ExactAuc(std::span<const float> scores, std::span<const uint8_t> labels,
                               std::span<const uint32_t> weights = {});

// The multiplicities of `distinct` samples tiled to `total` (sample k of a
// tiled set is distinct sample k mod distinct): total / distinct each, one
// more for the first total % distinct.
std::vector<uint32_t> TiledWeights(int64_t distinct, int64_t total);

// A click model's evaluation (DLRM): the sigmoid of each real sample's
// logit (fp32, as the reference's torch.sigmoid) and its label (the batch's
// last input), gathered from every rank; the AUC over all of them. An
// undefined AUC is logged as 0 (what torchmetrics returns without
// positives), with one line on stderr.
//
// With `tiled_to` > 0 the evaluation set is the gathered samples tiled to
// that many (the demonstration's, which must have the reference's size):
// the AUC is exactly that of the tiled set, computed once per distinct
// sample with its multiplicity (TiledWeights).
class AucEvaluator final : public Evaluator {
 public:
  // `logits`: the model's inference forward, one logit per sample on its device.
  using Predict = std::function<const core::Tensor&(const models::Batch&)>;
  AucEvaluator(models::Model& model, Predict logits, int64_t tiled_to = 0)
      : model_(model), logits_(std::move(logits)), tiled_to_(tiled_to) {}
  void Start() override { records_.clear(); }
  void Add(const models::Batch& batch) override;
  double Finish(dist::Communicator& comm) override;

 private:
  models::Model& model_;
  Predict logits_;
  int64_t tiled_to_;
  std::vector<float> records_;  // (score, label) pairs
};

}  // namespace mlperf::eval
