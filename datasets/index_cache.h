// A data set's index (dataset_index.h) written once to a file and read back:
// the one-time part of opening ImageNet (walking the record headers of every
// TFRecord shard, or listing 1.28M image files) or BERT's shards, kept off
// each run's clock like any offline conversion. The file records what the index was built
// from: the root, and the size and modification time of every shard, of
// every directory listed and of the validation labels file. When any of
// them changed, appeared or vanished, the file is stale and is rebuilt.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/dataset_index.h"
#include "datasets/tfrecord.h"

namespace mlperf::datasets {

// Writes the index of `root` (built by IndexImageFolder / IndexTfRecords)
// to `path` atomically, with the stamps of what it was built from; the
// file is streamed out, never held whole.
absl::Status WriteIndexFile(const DatasetIndex& index, const std::string& root, Split split,
                            const std::string& path);

// Reads an index file back: NotFound without one, FailedPrecondition when it
// is stale or was built for another root or split, DataLoss when corrupt.
absl::StatusOr<DatasetIndex> ReadIndexFile(const std::string& path, const std::string& root,
                                           Split split);

// The index of `root`'s split in `format` (kAuto detects it) from the file
// at `path` when that is current, else indexed afresh and written there
// (num_classes as in IndexTfRecords). A file that cannot be written costs
// only the cache: the fresh index is returned.
absl::StatusOr<DatasetIndex> CachedIndex(const std::string& root, DatasetFormat format, Split split,
                                         int num_classes, const std::string& path);

// Data sets listed by their reader (BERT's shards): the records of TfRecord
// files, per file in the list's order (16 bytes a record: BERT's training
// set has about 144 million, so they are never flattened into a
// DatasetIndex, whose entries take 24).
struct RecordIndex {
  std::vector<std::string> files;
  std::vector<std::vector<TfRecordLocation>> records;  // records[f]: file f's, in order
  int64_t size() const;
};

// The records of `files`, all in one folder, each file walked by `walk` on
// up to `threads` threads (0: every core); an error names the first bad file
// in the list's order.
using RecordWalker =
    std::function<absl::StatusOr<std::vector<TfRecordLocation>>(const std::string&)>;
absl::StatusOr<RecordIndex> IndexRecordFiles(const std::vector<std::string>& files,
                                             const RecordWalker& walk, int threads);
// The same from the index file at `path` (the format of WriteIndexFile,
// streamed in both directions) when it is current and lists exactly
// `files`, else walked and written there.
absl::StatusOr<RecordIndex> CachedRecordIndex(const std::string& root, Split split,
                                              const std::vector<std::string>& files,
                                              const RecordWalker& walk, int threads,
                                              const std::string& path);

}  // namespace mlperf::datasets
