// LevelDB's sorted string table, the file format of a TensorFlow bundle's
// .index (tensorflow/core/lib/io/table*, after leveldb/table/format.h): data
// blocks of prefix-compressed keys with restart points, an index block with
// one block handle per data block, an (empty) metaindex block and a 48-byte
// footer that ends in the table magic. Each block is followed by a one-byte
// compression type and the masked CRC-32C of the block and that byte.
// TensorFlow writes bundles uncompressed; compressed blocks are refused.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace mlperf::io {

struct SstableEntry {
  std::string key;
  std::string value;
};

// Every entry of the table in `bytes`, in key order. `path` only names the
// file in errors; checksums are verified and keys must strictly increase.
absl::StatusOr<std::vector<SstableEntry>> ReadSstable(const std::string& path,
                                                      std::string_view bytes);

// A table of `entries`, whose keys must strictly increase, in LevelDB's
// layout with TensorFlow's defaults (256 KiB blocks, a restart point every 16
// keys, no compression).
std::string BuildSstable(std::span<const SstableEntry> entries);

}  // namespace mlperf::io
