// A file mapped read-only: the large data files (Criteo's days, Megatron's
// token files) are read through maps, never loaded whole.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "absl/status/statusor.h"

namespace mlperf::datasets {

class MappedFile {
 public:
  // An empty file, a folder or one that cannot be mapped is an error naming
  // the path.
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  MappedFile(const char* data, uint64_t size) : data_(data), size_(size) {}
  const char* data_;
  uint64_t size_;
};

}  // namespace mlperf::datasets
