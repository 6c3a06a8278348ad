// A data set's index (dataset_index.h) written once to a file and read back:
// the one-time part of opening ImageNet (walking the record headers of every
// TFRecord shard, or listing 1.28M image files), kept off each run's clock
// like any offline conversion. The file records what the index was built
// from: the root, and the size and modification time of every shard, of
// every directory listed and of the validation labels file. When any of
// them changed, appeared or vanished, the file is stale and is rebuilt.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "datasets/dataset_index.h"

namespace mlperf::datasets {

// Writes the index of `root` (built by IndexImageFolder / IndexTfRecords)
// to `path` atomically, with the stamps of what it was built from.
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

}  // namespace mlperf::datasets
