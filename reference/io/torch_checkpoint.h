// PyTorch's own checkpoint files (torch.save of a state dict), read without
// Python: the zip archive of torch >= 1.6 (<name>/data.pkl, <name>/data/<key>)
// and the older sequential format (magic number, protocol, system info, the
// pickle, its storage keys, then each storage as an 8-byte count and its
// bytes), which torchvision's published weights use. The pickle is run by a
// small machine that knows only what a state dict holds: dicts (and
// OrderedDict), tuples, lists, strings, numbers, storages and
// torch._utils._rebuild_tensor_v2; anything else is refused by name.
// Tensors may be views (an offset, any strides); their floats (fp32, fp16,
// bf16, fp64) are read as fp32.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "reference/core/tensor.h"

namespace mlperf::io {

class TorchCheckpoint {
 public:
  struct Entry {
    std::string dtype;  // the storage's type: "Float", "Half", "BFloat16", "Double", "Long", ...
    std::vector<int64_t> shape, stride;  // stride in elements
    size_t begin = 0;                    // byte offset of the first element in the file's bytes
    int64_t elements = 0;
  };

  static absl::StatusOr<TorchCheckpoint> Read(const std::string& path);

  // The state dict's tensors by name, in any order.
  const std::map<std::string, Entry>& tensors() const { return tensors_; }
  // Tensor `name` of `shape` as fp32 into `dst`.
  absl::Status CopyToFloats(const std::string& name, const core::Shape& shape, float* dst) const;

 private:
  std::string path_;
  std::string bytes_;
  std::map<std::string, Entry> tensors_;
};

// Whether the file at `path` starts as a PyTorch checkpoint does (a zip, or
// a pickle's protocol byte).
bool LooksLikeTorchCheckpoint(const std::string& path);

}  // namespace mlperf::io
