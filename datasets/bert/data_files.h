// The files of a BERT data directory as the reference lays it out
// (part-00000-of-00500 ... and eval_10k), listed and checked before any
// model exists: every record header is indexed and each file's first record
// parsed, so a wrong directory fails in seconds, naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "datasets/bert/pretraining_example.h"
#include "datasets/tfrecord.h"

namespace mlperf::datasets::bert {

struct BertFiles {
  std::vector<std::string> train;  // the regular files part-* of the directory, sorted
  // eval_10k when it is there, else the regular files eval* (sorted).
  std::vector<std::string> eval;
};

// Lists `dir`; names ending in .tmp (a writer's unfinished file) are skipped.
// Errors: no training shard, no evaluation file, or a matching name that is
// not a regular file (a directory, a FIFO).
absl::StatusOr<BertFiles> ListBertData(const std::string& dir);

// Indexes every file (headers only) and parses the first record of each, so
// a file of another schema or with other sequence/prediction sizes fails
// naming the file and the feature. expected_eval_samples: 0 = any. Either
// count pointer may be null. With `index_dir`, the indexes come from (or
// go to) its train.idx and eval.idx (datasets/index_cache.h).
absl::Status CheckBertData(const BertFiles& files, PretrainingShape shape,
                           int64_t expected_eval_samples, int64_t* train_samples,
                           int64_t* eval_samples, const std::string& index_dir = "");

// The index file of the training or the evaluation files in `index_dir`.
std::string BertIndexFile(const std::string& index_dir, bool train);

// The record index of one file, which must be a regular, non-empty TFRecord
// file whose headers all check (data CRCs are left to the reader).
absl::StatusOr<std::vector<TfRecordLocation>> IndexBertFile(const std::string& path);

}  // namespace mlperf::datasets::bert
