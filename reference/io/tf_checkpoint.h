// TensorFlow checkpoints in the tensor bundle format (V2: what
// tf.compat.v1.train.Saver and tf.train.Checkpoint write). PREFIX.index is a
// LevelDB table (sstable.h) from tensor name to a BundleEntryProto (dtype,
// shape, shard, offset, size, masked CRC-32C of the bytes), with a
// BundleHeaderProto (shard count, endianness, version) under the empty name;
// PREFIX.data-SSSSS-of-NNNNN hold the tensors' bytes, little-endian and
// row-major. Only the index is read whole; each tensor's bytes are read with
// pread when asked for, so multi-gigabyte shards (weights plus optimizer
// slots) cost only what is loaded.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "reference/core/tensor.h"
#include "reference/io/safetensors.h"

namespace mlperf::io {

struct TfTensorInfo {
  int tf_dtype = 0;                  // TensorFlow's DataType number (DT_FLOAT = 1, ...)
  std::optional<core::DType> dtype;  // ours; empty for types read nowhere here (string, bool, ...)
  core::Shape shape;
  int shard = 0;
  uint64_t offset = 0;  // into the shard's .data file
  uint64_t size = 0;    // bytes
  uint32_t crc32c = 0;  // of the bytes, unmasked
  int slices = 0;       // > 0: a partitioned variable, which CopyTo refuses
};

// TensorFlow's name of a DataType number ("float32", "bfloat16", "string", ...).
std::string TfDTypeName(int tf_dtype);

class TfCheckpoint {
 public:
  // `prefix` is the path without ".index" (TensorFlow's checkpoint prefix,
  // e.g. ".../model.ckpt-28252"). Reads and checks the whole index and that
  // every shard exists and holds the bytes its entries point at.
  static absl::StatusOr<TfCheckpoint> Open(const std::string& prefix);

  const std::string& prefix() const { return prefix_; }
  int num_shards() const { return num_shards_; }
  std::string IndexPath() const { return prefix_ + ".index"; }
  std::string ShardPath(int shard) const;
  // Every tensor by name (partitions of partitioned variables appear under
  // TensorFlow's encoded slice names, which start with a NUL byte).
  const std::map<std::string, TfTensorInfo>& entries() const { return entries_; }

  // Reads tensor `name` into host tensor `dst` of the stored shape, after
  // checking the bytes' CRC-32C. `dst` has the stored dtype, or is fp32 for
  // a float16 or bfloat16 tensor (converted exactly). On an error `dst` may
  // hold part of the bytes: load into scratch memory where that matters.
  absl::Status CopyTo(const std::string& name, const core::Tensor& dst) const;

 private:
  std::string prefix_;
  int num_shards_ = 0;
  std::map<std::string, TfTensorInfo> entries_;
};

// Writes `tensors` (host tensors of any core dtype, unique non-empty names)
// as one shard, PREFIX.data-00000-of-00001, and PREFIX.index, in the layout
// TensorFlow's own reader accepts. Both are written under temporary names
// and renamed into place (the index last), so a failed write leaves any
// earlier checkpoint under `prefix` as it was.
absl::Status WriteTfCheckpoint(const std::string& prefix, std::span<const NamedTensor> tensors);

}  // namespace mlperf::io
