#include "benchmarks/token_pipeline.h"

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "datasets/megatron/gpt_index.h"
#include "datasets/megatron/indexed_dataset.h"
#include "fmt/format.h"

namespace mlperf::benchmarks {
namespace {

// The pipeline token_pipeline.h describes, for one rank.
class TokenPipeline final : public DataPipeline {
 public:
  TokenPipeline(std::unique_ptr<megatron::IndexedDataset> data, megatron::GptIndex index,
                megatron::GptIndexOptions options, bool eval, const RunPlan& plan,
                int64_t vocab_size, int64_t eval_count, int rank)
      : data_(std::move(data)),
        index_(std::move(index)),
        options_(options),
        eval_(eval),
        eval_count_(eval_count),
        vocab_size_(vocab_size),
        seq_(options.sequence_length),
        batch_(plan.batch_per_rank),
        global_(plan.global_batch_size),
        accumulation_(plan.gradient_accumulation_steps),
        eval_samples_(plan.eval_samples),
        rank_(rank),
        world_(plan.world_size),
        sample_(static_cast<size_t>(seq_ + 1)),
        tokens_(static_cast<size_t>(batch_ * seq_)),
        labels_(static_cast<size_t>(batch_ * seq_)) {}

  int64_t size() const override { return eval_ ? eval_samples_ : index_.size(); }

  void StartEval() override {
    next_ = eval_count_ * rank_ / world_;
    const int64_t largest_share = (eval_count_ + world_ - 1) / world_;
    eval_batches_left_ = (largest_share + batch_ - 1) / batch_;
  }

  absl::StatusOr<bool> Next(models::Batch* b) override {
    int64_t n = batch_;
    if (eval_) {
      if (eval_batches_left_ == 0) return false;
      --eval_batches_left_;
      const int64_t end = eval_count_ * (rank_ + 1) / world_;
      n = std::min(batch_, end - next_);
      for (int64_t j = 0; j < batch_; ++j) {
        // Padding repeats a real sample; Batch::count leaves it out.
        const int64_t at = j < n ? next_ + j : std::max<int64_t>(0, std::min(next_, end) - 1);
        if (absl::Status s = Read(at, j); !s.ok()) return s;
      }
      next_ += std::max<int64_t>(n, 0);
    } else {
      for (int64_t j = 0; j < batch_; ++j) {
        const int64_t at =
            megatron::RankSample(step_, micro_, j, rank_, world_, batch_, global_) % index_.size();
        if (absl::Status s = Read(at, j); !s.ok()) return s;
      }
      if (++micro_ == accumulation_) {
        micro_ = 0;
        ++step_;
      }
    }
    b->count = std::max<int64_t>(n, 0);
    b->inputs = {core::Tensor(tokens_.data(), {batch_, seq_}, core::DType::kI32),
                 core::Tensor(labels_.data(), {batch_, seq_}, core::DType::kI32)};
    return true;
  }

 private:
  // Sample `i` of the order into row `row` of the batch.
  absl::Status Read(int64_t i, int64_t row) {
    absl::StatusOr<int64_t> got = megatron::ReadGptSample(*data_, index_, options_, i, /*pad_id=*/0,
                                                          vocab_size_, sample_);  // nothing padded
    if (!got.ok()) return got.status();
    for (int64_t t = 0; t < seq_; ++t) {
      tokens_[row * seq_ + t] = static_cast<int32_t>(sample_[t]);
      labels_[row * seq_ + t] = static_cast<int32_t>(sample_[t + 1]);
    }
    return absl::OkStatus();
  }

  std::unique_ptr<megatron::IndexedDataset> data_;
  megatron::GptIndex index_;
  megatron::GptIndexOptions options_;
  bool eval_;
  int64_t eval_count_, vocab_size_, seq_, batch_, global_;
  int accumulation_;
  int64_t eval_samples_;
  int rank_, world_;
  int64_t step_ = 0, next_ = 0, eval_batches_left_ = 0;
  int micro_ = 0;
  std::vector<int64_t> sample_;
  std::vector<int32_t> tokens_, labels_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DataPipeline>> OpenTokenPipeline(const TokenData& d, Split split,
                                                                uint64_t seed, int rank,
                                                                const RunPlan& plan) {
  const bool eval = split == Split::kEval;
  absl::StatusOr<std::unique_ptr<megatron::IndexedDataset>> data =
      megatron::IndexedDataset::Open(d.prefix);
  if (!data.ok()) return data.status();
  const megatron::GptIndexOptions options{
      .sequence_length = d.sequence_length,
      .seed = static_cast<uint32_t>(seed),
      .num_samples =
          eval ? 0 : plan.schedule.steps_through(plan.last_epoch()) * plan.global_batch_size};
  std::vector<int32_t> exposed(static_cast<size_t>((*data)->sequences()));
  for (size_t i = 0; i < exposed.size(); ++i) exposed[i] = static_cast<int32_t>(i);
  absl::StatusOr<megatron::GptIndex> index =
      megatron::BuildGptIndex((*data)->sequence_lengths(), exposed, options);
  if (!index.ok()) return index.status();
  if (eval && index->size() < d.eval_count) {
    return absl::FailedPreconditionError(
        fmt::format("{}: {} validation samples, the evaluation needs {}", d.prefix, index->size(),
                    d.eval_count));
  }
  return std::make_unique<TokenPipeline>(std::move(*data), std::move(*index), options, eval, plan,
                                         d.vocab_size, d.eval_count, rank);
}

absl::Status WriteGeneratedTokenFiles(
    const TokenData& train, const megatron::GeneratedLanguageOptions& train_language,
    const TokenData& validation, const megatron::GeneratedLanguageOptions& validation_language) {
  for (const auto& [data, language] :
       {std::pair{&train, &train_language}, std::pair{&validation, &validation_language}}) {
    const std::filesystem::path folder = std::filesystem::path(data->prefix).parent_path();
    std::error_code ec;
    if (std::filesystem::create_directories(folder, ec); ec) {
      return absl::PermissionDeniedError(
          fmt::format("{}: cannot create the folder: {}", folder.string(), ec.message()));
    }
    if (absl::Status s = megatron::WriteGeneratedLanguage(data->prefix, *language); !s.ok())
      return s;
  }
  return absl::OkStatus();
}

absl::Status CheckTokenFiles(const TokenData& train, const TokenData& validation) {
  for (const TokenData* d : {&train, &validation}) {
    absl::StatusOr<std::unique_ptr<megatron::IndexedDataset>> data =
        megatron::IndexedDataset::Open(d->prefix);
    if (!data.ok()) return data.status();
    // Samples of sequence_length + 1 tokens, sharing one, in one epoch.
    const int64_t held = ((*data)->total_tokens() - 1) / d->sequence_length;
    const int64_t needed = d == &train ? 1 : d->eval_count;
    if (held < needed) {
      return absl::FailedPreconditionError(
          fmt::format("{}.bin: {} tokens make {} samples of {} tokens, {} are needed", d->prefix,
                      (*data)->total_tokens(), held, d->sequence_length, needed));
    }
  }
  return absl::OkStatus();
}

}  // namespace mlperf::benchmarks
