#include "datasets/bert/loader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>
#include <utility>

#include "base/parallel_for.h"
#include "datasets/bert/packing.h"
#include "datasets/index_cache.h"
#include "datasets/shuffle.h"
#include "datasets/tfrecord.h"
#include "fmt/format.h"

namespace mlperf::datasets::bert {
namespace {

const Packs kNoPacks;

struct File {
  std::string path;
  int fd = -1;
  std::vector<TfRecordLocation> records;
};

// One batch's arrays.
struct Slot {
  std::vector<int32_t> input_ids, segment_ids, positions, ids, labels;
  std::vector<float> mask, weights;
  int64_t count = 0, epoch = 0, samples = 0;
  // Packed mode: the rows built from the samples above (k per row).
  PackedBertBatch packed{0, {}};

  Slot(int64_t batch, const PretrainingShape& shape)
      : input_ids(static_cast<size_t>(batch * shape.seq_len)),
        segment_ids(input_ids.size()),
        positions(static_cast<size_t>(batch * shape.max_predictions)),
        ids(positions.size()),
        labels(static_cast<size_t>(batch)),
        mask(input_ids.size()),
        weights(positions.size()) {}

  PretrainingRow Row(int64_t i, const PretrainingShape& shape) {
    const int64_t s = i * shape.seq_len, p = i * shape.max_predictions;
    return {input_ids.data() + s, segment_ids.data() + s, mask.data() + s,  positions.data() + p,
            ids.data() + p,       weights.data() + p,     labels.data() + i};
  }
  // Evaluation padding: all zeros, so weight 0 and no contribution.
  void Clear(int64_t i, const PretrainingShape& shape) {
    const PretrainingRow r = Row(i, shape);
    std::fill_n(r.input_ids, shape.seq_len, 0);
    std::fill_n(r.segment_ids, shape.seq_len, 0);
    std::fill_n(r.input_mask, shape.seq_len, 0.0f);
    std::fill_n(r.masked_lm_positions, shape.max_predictions, 0);
    std::fill_n(r.masked_lm_ids, shape.max_predictions, 0);
    std::fill_n(r.masked_lm_weights, shape.max_predictions, 0.0f);
    *r.next_sentence_label = 0;
  }
  void Publish(BertBatch* b) const {
    b->count = count;
    b->samples = samples;
    b->epoch = epoch;
    if (packed.rows > 0) {
      b->input_ids = packed.input_ids.data();
      b->segment_ids = packed.segment_ids.data();
      b->input_mask = packed.input_mask.data();
      b->positions = packed.positions.data();
      b->masked_lm_positions = packed.masked_lm_positions.data();
      b->masked_lm_ids = packed.masked_lm_ids.data();
      b->masked_lm_weights = packed.masked_lm_weights.data();
      b->next_sentence_positions = packed.next_sentence_positions.data();
      b->next_sentence_labels = packed.next_sentence_labels.data();
      b->next_sentence_weights = packed.next_sentence_weights.data();
      b->batch_size = packed.rows;
      return;
    }
    b->input_ids = input_ids.data();
    b->segment_ids = segment_ids.data();
    b->input_mask = mask.data();
    b->masked_lm_positions = positions.data();
    b->masked_lm_ids = ids.data();
    b->masked_lm_weights = weights.data();
    b->next_sentence_labels = labels.data();
    b->batch_size = static_cast<int64_t>(labels.size());
  }
};

}  // namespace

int64_t BertSamplesPerEpoch(int64_t samples, int world_size, int batch_size) {
  const int64_t global = int64_t{world_size} * batch_size;
  return samples / global * global;
}

class BertLoader::Impl {
 public:
  Impl(const BertLoaderOptions& options, std::vector<File> files)
      : opt_(options), files_(std::move(files)) {
    starts_.push_back(0);
    for (const File& f : files_)
      starts_.push_back(starts_.back() + static_cast<int64_t>(f.records.size()));
    total_ = starts_.back();
    const int64_t per_rank = (total_ + opt_.world_size - 1) / opt_.world_size;
    batches_ = opt_.train ? BertSamplesPerEpoch(total_, opt_.world_size, opt_.batch_size) /
                                (int64_t{opt_.world_size} * opt_.batch_size)
                          : (per_rank + opt_.batch_size - 1) / opt_.batch_size;
    // Packed: each slot reads k samples a row, then packs them.
    const int64_t k = std::max<int64_t>(opt_.packed_sequences, 1);
    const int64_t read = opt_.train ? opt_.batch_size * k : opt_.batch_size;
    for (int i = 0; i < 2; ++i) {
      slots_.emplace_back(read, opt_.shape);
      if (opt_.packed_sequences > 0)
        slots_.back().packed = PackedBertBatch(opt_.batch_size, Limits());
    }
  }

  // The packed rows take the samples' place in the epochs.
  void UsePacks() { batches_ = packs_.rows() / (int64_t{opt_.world_size} * opt_.batch_size); }

  int64_t GlobalSamples(int64_t first, int64_t n) const {
    const int64_t global = int64_t{opt_.world_size} * opt_.batch_size;
    if (opt_.packed_sequences == 0) return n * global;
    int64_t total = 0;
    for (int64_t g = first; g < first + n; ++g) {
      // Its own permutation, kept between calls (the training thread may
      // be drawing perm_ at the same time).
      if (g / batches_ != counted_epoch_) {
        counted_epoch_ = g / batches_;
        counted_perm_ = EpochPermutation(packs_.rows(), opt_.seed, counted_epoch_);
      }
      for (int64_t j = 0; j < global; ++j)
        total += static_cast<int64_t>(
            packs_.row(counted_perm_[static_cast<size_t>((g % batches_) * global + j)]).size());
    }
    return total;
  }

  ~Impl() {
    if (pending_.valid()) pending_.wait();
    for (File& f : files_) ::close(f.fd);
  }

  int64_t size() const { return total_; }
  int64_t batches() const { return batches_; }
  void StartEval() { next_ = 0; }

  absl::StatusOr<bool> Next(BertBatch* batch) {
    if (!opt_.train) {
      if (next_ >= batches_) return false;
      if (absl::Status s = FillEval(next_++, slots_[0]); !s.ok()) return s;
      slots_[0].Publish(batch);
      return true;
    }
    absl::Status status;
    Slot& slot = slots_[static_cast<size_t>(next_ % 2)];
    if (opt_.threads > 1) {
      // Prefetch: the batch after this one is read into the other slot
      // while the caller uses this one.
      status = pending_.valid() ? pending_.get() : FillTrain(next_, slot);
      const int64_t ahead = next_ + 1;
      if (status.ok()) {
        pending_ = std::async(std::launch::async, [this, ahead] {
          return FillTrain(ahead, slots_[static_cast<size_t>(ahead % 2)]);
        });
      }
    } else {
      status = FillTrain(next_, slot);
    }
    if (!status.ok()) return status;
    ++next_;
    slot.Publish(batch);
    return true;
  }

 private:
  // Reads sample `index` (in file order) into row `i` of `slot`.
  absl::Status ReadSample(int64_t index, Slot& slot, int64_t i) const {
    const auto file = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), index) -
                                          starts_.begin() - 1);
    const File& f = files_[file];
    const TfRecordLocation& loc = f.records[static_cast<size_t>(index - starts_[file])];
    std::string data;
    if (absl::Status s = ReadTfRecordAt(f.fd, f.path, loc, &data); !s.ok()) return s;
    return ParsePretrainingExample(data, opt_.shape, fmt::format("{}:{}", f.path, loc.offset),
                                   slot.Row(i, opt_.shape));
  }

  // Fills the rows of `slot` from `samples` (-1: padding) on the reading
  // threads; the first error in row order is returned, whatever the timing.
  absl::Status Fill(const std::vector<int64_t>& samples, Slot& slot) const {
    std::vector<absl::Status> errors(samples.size());
    base::ParallelFor(samples.size(), opt_.threads, [&](size_t i) {
      if (samples[i] < 0) {
        slot.Clear(static_cast<int64_t>(i), opt_.shape);
      } else {
        errors[i] = ReadSample(samples[i], slot, static_cast<int64_t>(i));
      }
    });
    for (const absl::Status& e : errors) {
      if (!e.ok()) return e;
    }
    return absl::OkStatus();
  }

  // Global batch `seq` of the stream: epoch seq / batches_, and within it
  // the permutation's positions rank + k * world for this rank's k (of
  // samples, or packed: of rows, whose samples are read, then packed).
  absl::Status FillTrain(int64_t seq, Slot& slot) {
    const int64_t epoch = seq / batches_;
    const bool packed = opt_.packed_sequences > 0;
    if (epoch != perm_epoch_) {
      perm_ = EpochPermutation(packed ? packs_.rows() : total_, opt_.seed, epoch);
      perm_epoch_ = epoch;
    }
    const int64_t first = (seq % batches_) * opt_.batch_size;
    if (packed) return FillPackedTrain(first, epoch, slot);
    std::vector<int64_t> samples(static_cast<size_t>(opt_.batch_size));
    for (int64_t i = 0; i < opt_.batch_size; ++i) {
      samples[static_cast<size_t>(i)] =
          perm_[static_cast<size_t>(opt_.rank + (first + i) * opt_.world_size)];
    }
    slot.count = slot.samples = opt_.batch_size;
    slot.epoch = epoch;
    return Fill(samples, slot);
  }

  PackingLimits Limits() const {
    return {.seq_len = opt_.shape.seq_len,
            .max_predictions = opt_.shape.max_predictions,
            .max_sequences = opt_.packed_sequences};
  }

  // This rank's rows of the global batch from position `first`: their
  // samples read (k slots a row, -1 unused), then written packed.
  absl::Status FillPackedTrain(int64_t first, int64_t epoch, Slot& slot) {
    const int64_t k = opt_.packed_sequences;
    std::vector<int64_t> samples(static_cast<size_t>(opt_.batch_size * k), -1);
    std::vector<std::span<const int32_t>> rows(static_cast<size_t>(opt_.batch_size));
    for (int64_t i = 0; i < opt_.batch_size; ++i) {
      rows[i] = packs_.row(perm_[static_cast<size_t>(opt_.rank + (first + i) * opt_.world_size)]);
      for (size_t q = 0; q < rows[i].size(); ++q)
        samples[i * k + static_cast<int64_t>(q)] = rows[i][q];
    }
    if (absl::Status s = Fill(samples, slot); !s.ok()) return s;
    slot.packed = PackedBertBatch(opt_.batch_size, Limits());
    slot.samples = 0;
    for (int64_t i = 0; i < opt_.batch_size; ++i) {
      std::vector<PretrainingRow> members;
      for (size_t q = 0; q < rows[i].size(); ++q)
        members.push_back(slot.Row(i * k + static_cast<int64_t>(q), opt_.shape));
      slot.packed.Fill(i, members, opt_.shape);
      slot.samples += static_cast<int64_t>(members.size());
    }
    slot.count = opt_.batch_size;
    slot.epoch = epoch;
    return absl::OkStatus();
  }

  // Evaluation batch `b` of this rank: samples rank + k * world.
  absl::Status FillEval(int64_t b, Slot& slot) {
    std::vector<int64_t> samples(static_cast<size_t>(opt_.batch_size));
    slot.count = 0;
    for (int64_t i = 0; i < opt_.batch_size; ++i) {
      const int64_t index = opt_.rank + (b * opt_.batch_size + i) * opt_.world_size;
      samples[static_cast<size_t>(i)] = index < total_ ? index : -1;
      if (index < total_) ++slot.count;
    }
    slot.samples = slot.count;
    slot.epoch = 0;
    if (absl::Status s = Fill(samples, slot); !s.ok() || opt_.packed_sequences == 0) return s;
    // Packed layout, one sample a row (padding rows stay empty).
    slot.packed = PackedBertBatch(opt_.batch_size, Limits());
    for (int64_t i = 0; i < slot.count; ++i) {
      const PretrainingRow row = slot.Row(i, opt_.shape);
      slot.packed.Fill(i, std::span(&row, 1), opt_.shape);
    }
    return absl::OkStatus();
  }

  BertLoaderOptions opt_;
  std::vector<File> files_;
  std::vector<int64_t> starts_;  // first sample of each file; total at the end
  int64_t total_ = 0, batches_ = 0;
  int64_t next_ = 0;  // the next batch handed out
  std::vector<Slot> slots_;
  int64_t perm_epoch_ = -1;
  std::vector<int64_t> perm_;
  mutable int64_t counted_epoch_ = -1;  // GlobalSamples' permutation
  mutable std::vector<int64_t> counted_perm_;
  // Packed training rows (given; none unpacked).
  const Packs& packs_ = opt_.packs != nullptr ? *opt_.packs : kNoPacks;
  std::future<absl::Status> pending_;  // the prefetched batch next_, if any
};

absl::StatusOr<std::unique_ptr<BertLoader>> BertLoader::Open(const BertLoaderOptions& o) {
  if (o.batch_size < 1 || o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size ||
      o.threads < 1 || o.shape.seq_len < 1 || o.shape.max_predictions < 1) {
    return absl::InvalidArgumentError(fmt::format(
        "BertLoader: batch {}, rank {} of {}, threads {}, seq_len {}, "
        "max_predictions {}",
        o.batch_size, o.rank, o.world_size, o.threads, o.shape.seq_len, o.shape.max_predictions));
  }
  if (o.files.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("BertLoader: no {} files given", o.train ? "training" : "evaluation"));
  }
  const std::string root = std::filesystem::path(o.files.front()).parent_path().string();
  absl::StatusOr<RecordIndex> index =
      o.index_file.empty() ? IndexRecordFiles(o.files, IndexBertFile, o.threads)
                           : CachedRecordIndex(root, o.train ? Split::kTrain : Split::kVal, o.files,
                                               IndexBertFile, o.threads, o.index_file);
  if (!index.ok()) return index.status();
  std::vector<File> files(o.files.size());
  for (size_t i = 0; i < files.size(); ++i) files[i].records = std::move(index->records[i]);
  absl::Status first_error;
  for (size_t i = 0; i < files.size() && first_error.ok(); ++i) {
    files[i].path = o.files[i];
    files[i].fd = ::open(o.files[i].c_str(), O_RDONLY | O_CLOEXEC);
    if (files[i].fd < 0) {
      first_error =
          absl::NotFoundError(fmt::format("{}: cannot open: {}", o.files[i], std::strerror(errno)));
    }
  }
  int64_t total = 0;
  for (const File& f : files) total += static_cast<int64_t>(f.records.size());
  if (first_error.ok() && o.train && BertSamplesPerEpoch(total, o.world_size, o.batch_size) == 0) {
    first_error = absl::InvalidArgumentError(
        fmt::format("{}: {} training samples do not fill one batch of {} on each of {} ranks",
                    o.files.front(), total, o.batch_size, o.world_size));
  }
  if (!first_error.ok()) {
    for (File& f : files) {
      if (f.fd >= 0) ::close(f.fd);
    }
    return first_error;
  }
  if (o.train && o.packed_sequences > 0 &&
      (o.packs == nullptr || o.packs->max_sequences != o.packed_sequences ||
       o.packs->samples() != total)) {
    for (File& f : files) ::close(f.fd);
    return absl::InvalidArgumentError(
        fmt::format("{}: packed rows need the packing of these {} samples (PackBertSamples)",
                    o.files.front(), total));
  }
  auto impl = std::make_unique<Impl>(o, std::move(files));
  if (o.train && o.packed_sequences > 0) {
    impl->UsePacks();
    if (impl->batches() == 0) {
      return absl::InvalidArgumentError(
          fmt::format("{}: {} training samples pack into too few rows for one batch of {} rows "
                      "on each of {} ranks",
                      o.files.front(), total, o.batch_size, o.world_size));
    }
  }
  return std::unique_ptr<BertLoader>(new BertLoader(std::move(impl)));
}

BertLoader::BertLoader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BertLoader::~BertLoader() = default;
int64_t BertLoader::size() const { return impl_->size(); }
int64_t BertLoader::batches_per_epoch() const { return impl_->batches(); }
void BertLoader::StartEval() { impl_->StartEval(); }
int64_t BertLoader::GlobalSamples(int64_t first, int64_t n) const {
  return impl_->GlobalSamples(first, n);
}

absl::StatusOr<Packs> PackBertSamples(const std::vector<std::string>& files,
                                      const PretrainingShape& shape, const PackingLimits& limits,
                                      int threads, const std::string& index_file) {
  // One pass as an evaluation over the files, 1024 samples a batch.
  absl::StatusOr<std::unique_ptr<BertLoader>> all = BertLoader::Open({.files = files,
                                                                      .train = false,
                                                                      .batch_size = 1024,
                                                                      .shape = shape,
                                                                      .threads = threads,
                                                                      .index_file = index_file});
  if (!all.ok()) return all.status();
  std::vector<SampleSize> sizes;
  BertBatch b;
  while (true) {
    absl::StatusOr<bool> got = (*all)->Next(&b);
    if (!got.ok()) return got.status();
    if (!*got) break;
    for (int64_t i = 0; i < b.count; ++i) {
      sizes.push_back(SizeOf(b.input_mask + i * shape.seq_len,
                             b.masked_lm_weights + i * shape.max_predictions, shape));
    }
  }
  return PackSamples(sizes, limits);
}
absl::StatusOr<bool> BertLoader::Next(BertBatch* batch) { return impl_->Next(batch); }

}  // namespace mlperf::datasets::bert
