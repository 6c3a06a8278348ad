#include "benchmarks/retinanet/pipeline.h"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "base/parallel_for.h"
#include "datasets/shuffle.h"
#include "fmt/format.h"
#include "reference/core/philox.h"

namespace mlperf::benchmarks::retinanet {
namespace {

namespace oi = datasets::openimages;

// The flips' Philox stream, apart from the shuffles'.
constexpr uint64_t kFlipStream = uint64_t{1} << 62;

class DetectionPipeline final : public DataPipeline {
 public:
  DetectionPipeline(std::shared_ptr<const oi::DetectionSet> set, bool eval, uint64_t seed, int rank,
                    const RunPlan& plan, const PipelineShape& shape)
      : set_(std::move(set)),
        eval_(eval),
        seed_(seed),
        rank_(rank),
        world_(plan.world_size),
        batch_(plan.batch_per_rank),
        global_(plan.global_batch_size),
        accumulation_(plan.gradient_accumulation_steps),
        threads_(plan.loader_threads),
        shape_(shape),
        images_(static_cast<size_t>(batch_ * 3 * shape.image_size * shape.image_size)),
        boxes_(static_cast<size_t>(batch_ * shape.max_boxes * 4)),
        labels_(static_cast<size_t>(batch_ * shape.max_boxes)),
        info_(static_cast<size_t>(batch_ * 3)) {}

  int64_t size() const override { return set_->size(); }

  void StartEval() override {
    const int64_t n = set_->size();
    next_ = n * rank_ / world_;
    eval_batches_left_ = ((n + world_ - 1) / world_ + batch_ - 1) / batch_;
  }

  absl::StatusOr<bool> Next(models::Batch* b) override {
    std::vector<int64_t> samples(static_cast<size_t>(batch_));
    std::vector<bool> flips(static_cast<size_t>(batch_), false);
    int64_t real = batch_;
    if (eval_) {
      if (eval_batches_left_ == 0) return false;
      --eval_batches_left_;
      const int64_t end = set_->size() * (rank_ + 1) / world_;
      real = std::max<int64_t>(0, std::min(batch_, end - next_));
      // Padding repeats a real image; Batch::count leaves it out.
      for (int64_t j = 0; j < batch_; ++j)
        samples[j] = j < real ? next_ + j : std::max<int64_t>(0, std::min(next_, end) - 1);
      next_ += real;
    } else {
      const int64_t per_epoch = set_->size() / global_;
      const int64_t epoch = step_ / per_epoch;
      if (epoch != epoch_) {
        epoch_ = epoch;
        order_ = datasets::EpochPermutation(set_->size(), seed_, epoch_);
      }
      const int64_t first =
          (step_ % per_epoch) * global_ + rank_ * batch_ * accumulation_ + micro_ * batch_;
      for (int64_t j = 0; j < batch_; ++j) {
        samples[j] = order_[static_cast<size_t>(first + j)];
        const uint64_t draw = static_cast<uint64_t>(step_ * global_ + first % global_ + j);
        flips[j] = core::PhiloxUniform(seed_, kFlipStream, draw) < 0.5f;
      }
      if (++micro_ == accumulation_) {
        micro_ = 0;
        ++step_;
      }
    }
    if (absl::Status s = Load(samples, flips); !s.ok()) return s;
    const int64_t n = batch_, m = shape_.max_boxes, size = shape_.image_size;
    b->count = real;
    b->inputs = {core::Tensor(images_.data(), {n, 3, size, size}, core::DType::kF32),
                 core::Tensor(boxes_.data(), {n, m, 4}, core::DType::kF32),
                 core::Tensor(labels_.data(), {n, m}, core::DType::kI32)};
    if (eval_) b->inputs.push_back(core::Tensor(info_.data(), {n, 3}, core::DType::kI32));
    return true;
  }

 private:
  absl::Status Load(const std::vector<int64_t>& samples, const std::vector<bool>& flips) {
    const int64_t size = shape_.image_size, m = shape_.max_boxes;
    std::mutex error_mutex;
    absl::Status error;
    base::ParallelFor(samples.size(), threads_, [&](size_t j) {
      oi::DetectionSample sample;
      float* pixels = images_.data() + static_cast<int64_t>(j) * 3 * size * size;
      absl::Status s = set_->Load(samples[j], flips[j], size, pixels, &sample);
      if (s.ok() && static_cast<int64_t>(sample.boxes.size()) > m)
        s = absl::FailedPreconditionError(fmt::format("image {} has {} boxes, the batches hold {}",
                                                      sample.image_id, sample.boxes.size(), m));
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (error.ok()) error = s;
        return;
      }
      float* boxes = boxes_.data() + static_cast<int64_t>(j) * m * 4;
      int32_t* labels = labels_.data() + static_cast<int64_t>(j) * m;
      std::fill(labels, labels + m, -1);
      for (size_t k = 0; k < sample.boxes.size(); ++k) {
        std::copy(sample.boxes[k].begin(), sample.boxes[k].end(), boxes + 4 * k);
        labels[k] = sample.labels[k];
      }
      int32_t* info = info_.data() + 3 * j;
      info[0] = static_cast<int32_t>(sample.image_id);
      info[1] = static_cast<int32_t>(sample.height);
      info[2] = static_cast<int32_t>(sample.width);
    });
    return error;
  }

  std::shared_ptr<const oi::DetectionSet> set_;
  bool eval_;
  uint64_t seed_;
  int rank_, world_;
  int64_t batch_, global_;
  int accumulation_, threads_;
  PipelineShape shape_;
  int64_t step_ = 0, epoch_ = -1, next_ = 0, eval_batches_left_ = 0;
  int micro_ = 0;
  std::vector<int64_t> order_;
  std::vector<float> images_, boxes_;
  std::vector<int32_t> labels_, info_;
};

}  // namespace

std::unique_ptr<DataPipeline> MakeDetectionPipeline(std::shared_ptr<const oi::DetectionSet> set,
                                                    bool eval, uint64_t seed, int rank,
                                                    const RunPlan& plan,
                                                    const PipelineShape& shape) {
  return std::make_unique<DetectionPipeline>(std::move(set), eval, seed, rank, plan, shape);
}

}  // namespace mlperf::benchmarks::retinanet
