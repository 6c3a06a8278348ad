#include "datasets/kits19/loader.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "datasets/kits19/crop.h"
#include "datasets/kits19/eval_cases.h"
#include "datasets/kits19/prepare.h"
#include "datasets/shuffle.h"
#include "fmt/format.h"

namespace mlperf::kits19 {
namespace {

struct Case {
  PreparedCase data;
  // The foreground crop's components, found the first time a crop needs them.
  std::once_flag boxes_once;
  ForegroundBoxes boxes;
};

int64_t Voxels(const std::array<int64_t, 3>& s) { return s[0] * s[1] * s[2]; }

}  // namespace

int64_t SamplesPerEpoch(int64_t cases, int world_size, int batch_size) {
  return int64_t{world_size} * (cases / world_size / batch_size) * batch_size;
}

class VolumeLoader::Impl {
 public:
  Impl(const VolumeLoaderOptions& options, std::vector<std::string> names,
       std::vector<std::unique_ptr<Case>> cases)
      : opt_(options),
        names_(std::move(names)),
        total_(static_cast<int64_t>(names_.size())),
        cases_(std::move(cases)) {
    if (!opt_.train) return;
    batches_per_epoch_ = total_ / opt_.world_size / opt_.batch_size;
    const int64_t patch = Voxels(opt_.augment.patch);
    slots_.resize(static_cast<size_t>(opt_.prefetch_batches));
    for (Slot& s : slots_) {
      s.image.resize(static_cast<size_t>(opt_.batch_size * patch));
      s.labels.resize(static_cast<size_t>(opt_.batch_size * patch));
      s.cases.resize(static_cast<size_t>(opt_.batch_size));
    }
    for (int t = 0; t < opt_.threads; ++t) workers_.emplace_back([this] { WorkerLoop(); });
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  int64_t size() const { return total_; }
  const std::vector<std::string>& names() const { return names_; }
  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  void StartEval() { next_eval_ = 0; }

  absl::StatusOr<bool> Next(VolumeBatch* batch) {
    if (!opt_.train) return NextEval(batch);
    std::unique_lock<std::mutex> lock(mu_);
    // The batch handed out last time is given back now.
    if (held_ >= 0) {
      slots_[static_cast<size_t>(held_ % opt_.prefetch_batches)].seq = -1;
      held_ = -1;
      work_cv_.notify_all();
    }
    Slot& slot = slots_[static_cast<size_t>(consumed_ % opt_.prefetch_batches)];
    done_cv_.wait(lock, [&] { return slot.seq == consumed_ && slot.pending == 0; });
    if (!slot.status.ok()) return slot.status;
    batch->shape = opt_.augment.patch;
    batch->image = slot.image.data();
    batch->labels = slot.labels.data();
    batch->labels_u8 = false;
    batch->count = opt_.batch_size;
    batch->epoch = consumed_ / batches_per_epoch_;
    batch->cases = slot.cases;
    held_ = consumed_++;
    return true;
  }

 private:
  struct Slot {
    int64_t seq = -1;  // batch number held, -1 = free
    int pending = 0;   // samples still being written
    std::vector<float> image;
    std::vector<int32_t> labels;
    std::vector<int64_t> cases;
    absl::Status status;
  };

  absl::StatusOr<bool> NextEval(VolumeBatch* batch) {
    if (next_eval_ >= static_cast<int64_t>(cases_.size())) return false;
    const Case& c = *cases_[static_cast<size_t>(next_eval_++)];
    batch->shape = c.data.shape;
    batch->image = c.data.image.data();
    batch->labels = c.data.label.data();
    batch->labels_u8 = true;
    batch->count = 1;
    batch->epoch = 0;
    batch->cases = {opt_.rank + (next_eval_ - 1) * opt_.world_size};
    return true;
  }

  const std::vector<int64_t>& Permutation(int64_t epoch) {
    // Workers only move forward: earlier epochs are done.
    while (!perms_.empty() && perms_.begin()->first < epoch - 1) perms_.erase(perms_.begin());
    auto it = perms_.find(epoch);
    if (it == perms_.end())
      it = perms_.emplace(epoch, datasets::EpochPermutation(total_, opt_.seed, epoch)).first;
    return it->second;
  }

  void WorkerLoop() {
    const int64_t patch = Voxels(opt_.augment.patch);
    std::vector<uint8_t> label_patch(static_cast<size_t>(patch));
    while (true) {
      int64_t seq = 0, position = 0, epoch = 0, index = 0;
      Slot* slot = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] {
          if (stop_) return true;
          const Slot& s = slots_[static_cast<size_t>(next_seq_ % opt_.prefetch_batches)];
          return s.seq == -1 || s.seq == next_seq_;
        });
        if (stop_) return;
        seq = next_seq_;
        position = next_position_;
        slot = &slots_[static_cast<size_t>(seq % opt_.prefetch_batches)];
        if (slot->seq == -1) {
          slot->seq = seq;
          slot->pending = opt_.batch_size;
          slot->status = absl::OkStatus();
        }
        if (++next_position_ == opt_.batch_size) {
          next_position_ = 0;
          ++next_seq_;
        }
        epoch = seq / batches_per_epoch_;
        const int64_t k = (seq % batches_per_epoch_) * opt_.batch_size + position;
        index = Permutation(epoch)[static_cast<size_t>(opt_.rank + k * opt_.world_size)];
        slot->cases[static_cast<size_t>(position)] = index;
      }
      Case& c = *cases_[static_cast<size_t>(index)];
      std::call_once(c.boxes_once,
                     [&c] { c.boxes = FindForegroundBoxes(c.data.label.data(), c.data.shape); });
      AugmentTrainingSample(c.data.image.data(), c.data.label.data(), c.data.shape, c.boxes,
                            opt_.augment, opt_.seed, static_cast<uint64_t>(epoch),
                            static_cast<uint64_t>(index), slot->image.data() + position * patch,
                            label_patch.data());
      std::copy(label_patch.begin(), label_patch.end(), slot->labels.begin() + position * patch);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (--slot->pending == 0) done_cv_.notify_all();
      }
    }
  }

  VolumeLoaderOptions opt_;
  std::vector<std::string> names_;
  int64_t total_ = 0;
  std::vector<std::unique_ptr<Case>> cases_;  // training: all, by index; evaluation: this rank's
  int64_t batches_per_epoch_ = 0;
  int64_t next_eval_ = 0;

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::vector<Slot> slots_;
  std::map<int64_t, std::vector<int64_t>> perms_;
  int64_t next_seq_ = 0, next_position_ = 0, consumed_ = 0, held_ = -1;
  bool stop_ = false;
  std::vector<std::thread> workers_;  // last: started after everything above exists
};

absl::StatusOr<std::unique_ptr<VolumeLoader>> VolumeLoader::Open(const VolumeLoaderOptions& o) {
  if (o.batch_size < 1 || o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size ||
      o.threads < 1 || o.prefetch_batches < 1) {
    return absl::InvalidArgumentError(
        fmt::format("VolumeLoader: batch {}, rank {} of {}, threads {}, prefetch {}", o.batch_size,
                    o.rank, o.world_size, o.threads, o.prefetch_batches));
  }
  absl::StatusOr<CaseSplit> split = ListPreparedCases(o.root);
  if (!split.ok()) return split.status();
  const std::vector<std::string>& names = o.train ? split->train : split->eval;
  if (names.empty()) {
    return absl::NotFoundError(fmt::format("{}: no prepared {} cases (case_XXXXX_x.npy)",
                                           o.root.string(), o.train ? "training" : "evaluation"));
  }
  const auto total = static_cast<int64_t>(names.size());
  if (o.train && total / o.world_size / o.batch_size == 0) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {} training cases do not fill one batch of {} on each of {} ranks",
                    o.root.string(), total, o.batch_size, o.world_size));
  }
  // Training needs every case (the sampler moves them between ranks every
  // epoch); evaluation only this rank's.
  std::vector<std::string> mine;
  for (int64_t i = o.train ? 0 : o.rank; i < total; i += o.train ? 1 : o.world_size)
    mine.push_back(names[static_cast<size_t>(i)]);
  if (o.memory_budget > 0) {
    uint64_t bytes = 0;
    for (const std::string& name : mine) {
      for (const char* part : {"_x.npy", "_y.npy"}) {
        std::error_code ec;
        const uintmax_t size = std::filesystem::file_size(o.root / (name + part), ec);
        if (!ec) bytes += size;
      }
    }
    if (bytes > static_cast<uint64_t>(o.memory_budget)) {
      return absl::ResourceExhaustedError(fmt::format(
          "{}: the {} prepared {} cases take {:.1f} GiB, more than the {:.1f} GiB this process "
          "has; use a machine with more memory or fewer processes per node",
          o.root.string(), mine.size(), o.train ? "training" : "evaluation",
          static_cast<double>(bytes) / (1 << 30),
          static_cast<double>(o.memory_budget) / (1 << 30)));
    }
  }
  std::vector<std::unique_ptr<Case>> cases(mine.size());
  std::vector<absl::Status> errors(mine.size());
  std::atomic<size_t> next{0};
  auto load = [&] {
    for (size_t i = next++; i < mine.size(); i = next++) {
      auto c = std::make_unique<Case>();
      absl::StatusOr<PreparedCase> data =
          LoadPreparedCase(o.root / (mine[i] + "_x.npy"), o.root / (mine[i] + "_y.npy"));
      if (!data.ok()) {
        errors[i] = data.status();
        continue;
      }
      c->data = std::move(*data);
      for (int a = 0; a < 3; ++a) {
        if (o.train && c->data.shape[a] < o.augment.patch[a]) {
          errors[i] = absl::InvalidArgumentError(fmt::format(
              "{}_x.npy: shape {}x{}x{} is smaller than the {}^3 training patch (prepare pads "
              "every axis to at least the patch)",
              (o.root / mine[i]).string(), c->data.shape[0], c->data.shape[1], c->data.shape[2],
              o.augment.patch[a]));
        }
      }
      cases[i] = std::move(c);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < o.threads; ++t) pool.emplace_back(load);
  load();
  for (std::thread& t : pool) t.join();
  for (const absl::Status& e : errors) {
    if (!e.ok()) return e;  // the first bad case in sorted order: deterministic
  }
  return std::unique_ptr<VolumeLoader>(
      new VolumeLoader(std::make_unique<Impl>(o, names, std::move(cases))));
}

VolumeLoader::VolumeLoader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VolumeLoader::~VolumeLoader() = default;
int64_t VolumeLoader::size() const { return impl_->size(); }
const std::vector<std::string>& VolumeLoader::case_names() const { return impl_->names(); }
int64_t VolumeLoader::batches_per_epoch() const { return impl_->batches_per_epoch(); }
void VolumeLoader::StartEval() { impl_->StartEval(); }
absl::StatusOr<bool> VolumeLoader::Next(VolumeBatch* batch) { return impl_->Next(batch); }

}  // namespace mlperf::kits19
