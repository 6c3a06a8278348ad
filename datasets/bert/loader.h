// The BERT pretraining input pipeline over the reference's TFRecord files
// (training shards part-XXXXX-of-NNNNN, evaluation file eval_10k).
//
// Open indexes every file (record headers and their CRCs), or reads the
// index written earlier (BertLoaderOptions::index_file); each record's
// data CRC is checked when it is read (pread), then it is parsed
// (pretraining_example.h). The samples of the listed files are numbered in
// file order, records in file order within each.
//
// Training: an endless stream of epochs. Epoch e is EpochPermutation(N,
// seed, e) (shuffle.h), the same on every rank; rank r of W takes positions
// r, r + W, r + 2W, ... in batches of batch_size. An epoch holds
// floor(N / (W * batch_size)) global batches; the few samples at the end of
// the permutation that do not fill one more global batch are dropped for
// that epoch (a new permutation gives them their turn later), so no sample
// is used twice in an epoch over all ranks.
//
// Evaluation: rank r takes samples r, r + W, r + 2W, ... (strided) of the
// files in order. Every rank returns the same number of batches,
// ceil(ceil(N / W) / batch_size), so collective evaluation steps stay in
// step; rows past this rank's share are all zeros (weight 0, adding nothing
// to the masked-LM sums) and `count` says how many rows are real. Over all
// ranks each evaluation sample is scored exactly once per pass.
//
// Packed rows (packed_sequences k > 0; batch_size then counts rows): the
// training samples packed once (PackBertSamples below, given in `packs`)
// take the samples' place above:
// epoch e is EpochPermutation(rows, seed, e), rank r takes rows r, r + W,
// ... An evaluation batch holds one sample a row, in the packed layout.
//
// Batches are pure functions of (files, seed, rank, world size, batch): the
// thread count only changes the speed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "datasets/bert/data_files.h"
#include "datasets/bert/packing.h"
#include "datasets/bert/pretraining_example.h"

namespace mlperf::datasets::bert {

struct BertLoaderOptions {
  std::vector<std::string> files;  // training shards, or the evaluation file(s)
  bool train = true;
  int batch_size = 1;  // per rank
  int rank = 0, world_size = 1;
  uint64_t seed = 0;
  PretrainingShape shape;
  // Reading threads; with more than one, training also reads the next batch
  // while the current one is in use.
  int threads = 1;
  // An index file (datasets/index_cache.h; its root is the files' folder)
  // that Open reads instead of walking every file when it is current (else
  // it walks them and rewrites it); "" always walks.
  std::string index_file;
  // > 0: packed rows of up to this many samples (see above); training
  // needs the rows of the files' samples in `packs`.
  int64_t packed_sequences = 0;
  std::shared_ptr<const Packs> packs;
};

// One batch in models::Bert's input order, host memory owned by the loader,
// valid until the next Next().
struct BertBatch {
  const int32_t* input_ids = nullptr;             // [batch, seq]
  const int32_t* segment_ids = nullptr;           // [batch, seq]
  const float* input_mask = nullptr;              // [batch, seq]
  const int32_t* masked_lm_positions = nullptr;   // [batch, max_predictions]
  const int32_t* masked_lm_ids = nullptr;         // [batch, max_predictions]
  const float* masked_lm_weights = nullptr;       // [batch, max_predictions]
  const int32_t* next_sentence_labels = nullptr;  // [batch] ([batch, k] packed)
  // Packed rows only: input_mask holds each token's sample (1..k), and
  const int32_t* positions = nullptr;                // [batch, seq], restarting per sample
  const int32_t* next_sentence_positions = nullptr;  // [batch, k]
  const float* next_sentence_weights = nullptr;      // [batch, k]
  int64_t batch_size = 0;  // rows in the arrays (always options.batch_size)
  int64_t count = 0;       // real rows (evaluation's last batch may be padded)
  int64_t samples = 0;     // samples in them (count, unless packed)
  int64_t epoch = 0;       // training: 0-based epoch of the batch
};

class BertLoader {
 public:
  // Errors name the missing, empty, truncated or corrupt file.
  static absl::StatusOr<std::unique_ptr<BertLoader>> Open(const BertLoaderOptions& options);
  ~BertLoader();
  BertLoader(const BertLoader&) = delete;
  BertLoader& operator=(const BertLoader&) = delete;

  int64_t size() const;  // samples in the split over all ranks
  // Training: global batches per epoch (see above). Evaluation: this rank's
  // batches per pass (the same on every rank).
  int64_t batches_per_epoch() const;
  // Evaluation: the pass starts again with this rank's first sample.
  void StartEval();
  // Training: samples in global batches [first, first + n) over all ranks
  // (packed rows hold a varying number).
  int64_t GlobalSamples(int64_t first, int64_t n) const;
  // Training never runs out; evaluation returns false after this rank's
  // batches. A record that fails its CRC or parse is an error naming the file
  // and the record's byte offset.
  absl::StatusOr<bool> Next(BertBatch* batch);

  class Impl;

 private:
  explicit BertLoader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Every sample of `files` read (on `threads`) for its tokens and masked-LM
// slots and packed into rows (packing.h); errors as Open's.
absl::StatusOr<Packs> PackBertSamples(const std::vector<std::string>& files,
                                      const PretrainingShape& shape, const PackingLimits& limits,
                                      int threads, const std::string& index_file);

// Training samples per epoch over all ranks under the sampling above.
int64_t BertSamplesPerEpoch(int64_t samples, int world_size, int batch_size);

}  // namespace mlperf::datasets::bert
