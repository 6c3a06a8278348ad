// Checkpoints in the safetensors format (huggingface/safetensors): an 8-byte
// little-endian header length, a JSON header {name: {dtype, shape,
// data_offsets}, "__metadata__": {str: str}}, then the raw tensor bytes.
// Files written here load in the Python library and vice versa.
#pragma once

#include <map>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "reference/core/tensor.h"

namespace mlperf::io {

// A host tensor and the name it is stored under ("conv1.weight",
// "momentum/conv1.weight", ...).
struct NamedTensor {
  std::string name;
  core::Tensor tensor;
};

using Metadata = std::map<std::string, std::string>;

// Writes to `path`.tmp and renames, so a failed save never clobbers an
// earlier checkpoint.
absl::Status SaveSafetensors(const std::string& path, std::span<const NamedTensor> tensors,
                             const Metadata& metadata = {});

struct StoredTensor {
  core::DType dtype;
  core::Shape shape;
  size_t begin = 0;  // byte offsets into the data section
  size_t end = 0;
};

class SafetensorsFile {
 public:
  static absl::StatusOr<SafetensorsFile> Read(const std::string& path);

  const std::map<std::string, StoredTensor>& tensors() const { return tensors_; }
  const Metadata& metadata() const { return metadata_; }
  // Copies tensor `name` into `dst`, which must have the stored dtype and shape.
  absl::Status CopyTo(const std::string& name, const core::Tensor& dst) const;
  // Tensor `name`, stored as F32, BF16 or F16 in `shape`, widened to fp32
  // into `dst` (shape.numel() floats): a published checkpoint in bf16 read
  // into fp32 weights.
  absl::Status CopyToFloats(const std::string& name, const core::Shape& shape, float* dst) const;

 private:
  std::string path_;
  std::string bytes_;
  size_t data_start_ = 0;
  std::map<std::string, StoredTensor> tensors_;
  Metadata metadata_;
};

// Fills every tensor in `into` from `path`; all must be present with their
// dtype and shape. Returns the file's metadata.
absl::StatusOr<Metadata> LoadSafetensors(const std::string& path,
                                         std::span<const NamedTensor> into);

}  // namespace mlperf::io
