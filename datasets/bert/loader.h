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
  const int32_t* next_sentence_labels = nullptr;  // [batch]
  int64_t batch_size = 0;                         // rows in the arrays (always options.batch_size)
  int64_t count = 0;  // real samples (evaluation's last batch may be padded)
  int64_t epoch = 0;  // training: 0-based epoch of the batch
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
  // Training never runs out; evaluation returns false after this rank's
  // batches. A record that fails its CRC or parse is an error naming the file
  // and the record's byte offset.
  absl::StatusOr<bool> Next(BertBatch* batch);

  class Impl;

 private:
  explicit BertLoader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Training samples per epoch over all ranks under the sampling above.
int64_t BertSamplesPerEpoch(int64_t samples, int world_size, int batch_size);

}  // namespace mlperf::datasets::bert
