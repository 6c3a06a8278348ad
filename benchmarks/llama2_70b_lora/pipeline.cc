#include "benchmarks/llama2_70b_lora/pipeline.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "datasets/govreport/tokenized_set.h"
#include "datasets/shuffle.h"
#include "fmt/format.h"

namespace mlperf::benchmarks::llama2_70b_lora {
namespace {

class GovReportPipeline final : public DataPipeline {
 public:
  GovReportPipeline(std::unique_ptr<govreport::TokenizedSet> set, const SplitFiles& files,
                    bool eval, uint64_t seed, int rank, const RunPlan& plan)
      : set_(std::move(set)),
        eval_(eval),
        seed_(seed),
        seq_(files.seq_len),
        vocab_(files.vocab_size),
        batch_(plan.batch_per_rank),
        global_(plan.global_batch_size),
        accumulation_(plan.gradient_accumulation_steps),
        rank_(rank),
        world_(plan.world_size),
        tokens_(static_cast<size_t>(batch_ * seq_)),
        labels_(static_cast<size_t>(batch_ * seq_)) {}

  int64_t size() const override { return set_->samples(); }

  void StartEval() override {
    const int64_t n = set_->samples();
    next_ = n * rank_ / world_;
    eval_batches_left_ = ((n + world_ - 1) / world_ + batch_ - 1) / batch_;
  }

  absl::StatusOr<bool> Next(models::Batch* b) override {
    int64_t real = batch_;
    if (eval_) {
      if (eval_batches_left_ == 0) return false;
      --eval_batches_left_;
      const int64_t end = set_->samples() * (rank_ + 1) / world_;
      real = std::max<int64_t>(0, std::min(batch_, end - next_));
      for (int64_t j = 0; j < batch_; ++j) {
        // Padding repeats a real sample; Batch::count leaves it out.
        const int64_t at = j < real ? next_ + j : std::max<int64_t>(0, std::min(next_, end) - 1);
        if (absl::Status s = Read(at, j); !s.ok()) return s;
      }
      next_ += real;
    } else {
      // The step's global batch in the stream of epochs; this rank's share,
      // micro-batch after micro-batch.
      const int64_t first = step_ * global_ + rank_ * batch_ * accumulation_ + micro_ * batch_;
      for (int64_t j = 0; j < batch_; ++j) {
        if (absl::Status s = Read(StreamSample(first + j), j); !s.ok()) return s;
      }
      if (++micro_ == accumulation_) {
        micro_ = 0;
        ++step_;
      }
    }
    b->count = real;
    b->inputs = {core::Tensor(tokens_.data(), {batch_, seq_}, core::DType::kI32),
                 core::Tensor(labels_.data(), {batch_, seq_}, core::DType::kI32)};
    return true;
  }

 private:
  // Position p of the training stream: epoch p / n's permutation.
  int64_t StreamSample(int64_t p) {
    const int64_t n = set_->samples();
    if (p / n != epoch_ || order_.empty()) {
      epoch_ = p / n;
      order_ = datasets::EpochPermutation(n, seed_, epoch_);
    }
    return order_[static_cast<size_t>(p % n)];
  }

  absl::Status Read(int64_t sample, int64_t row) {
    return set_->Read(sample, seq_, vocab_, tokens_.data() + row * seq_,
                      labels_.data() + row * seq_);
  }

  std::unique_ptr<govreport::TokenizedSet> set_;
  bool eval_;
  uint64_t seed_;
  int64_t seq_, vocab_, batch_, global_;
  int accumulation_;
  int rank_, world_;
  int64_t step_ = 0, next_ = 0, eval_batches_left_ = 0, epoch_ = -1;
  int micro_ = 0;
  std::vector<int64_t> order_;
  std::vector<int32_t> tokens_, labels_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DataPipeline>> OpenGovReportPipeline(const SplitFiles& files,
                                                                    bool eval, uint64_t seed,
                                                                    int rank, const RunPlan& plan) {
  absl::StatusOr<std::unique_ptr<govreport::TokenizedSet>> set =
      govreport::TokenizedSet::Open(files.dir, files.split);
  if (!set.ok()) return set.status();
  return std::make_unique<GovReportPipeline>(std::move(*set), files, eval, seed, rank, plan);
}

absl::StatusOr<int64_t> CheckGovReportSplit(const SplitFiles& files) {
  absl::StatusOr<std::unique_ptr<govreport::TokenizedSet>> set =
      govreport::TokenizedSet::Open(files.dir, files.split);
  if (!set.ok()) return set.status();
  if ((*set)->longest() > files.seq_len) {
    return absl::FailedPreconditionError(
        fmt::format("{}: a {} sample has {} tokens, the model reads {}", files.dir.string(),
                    files.split, (*set)->longest(), files.seq_len));
  }
  return (*set)->samples();
}

}  // namespace mlperf::benchmarks::llama2_70b_lora
