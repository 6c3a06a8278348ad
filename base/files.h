// Files the tools keep (packages, caches, converted data): whole-file
// writes through a temporary file and a rename, so a reader never sees half
// a file, and a check that a path lies inside a tree. Reports a user names
// go through base/output.h instead.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mlperf::base {

// Writes `text` to `path` through `path`.tmp.<pid> and a rename, so a reader
// never sees half a file and a failed write leaves the old file as it was; a
// replaced file keeps its permissions.
absl::Status WriteFileAtomically(const std::filesystem::path& path, std::string_view text);

// The same for a file written in pieces (one too large to hold whole):
// Write appends to `path`.tmp.<pid>, Commit renames it to `path`. The first
// error is kept and returned by Commit; without a successful Commit the
// temporary file is removed and `path` is left as it was.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void Write(std::string_view bytes);
  absl::Status Commit();

 private:
  std::filesystem::path path_, tmp_;
  std::ofstream out_;
  bool committed_ = false;
};

// The whole of a small regular file, its size checked before anything is
// allocated; a folder, FIFO or device is refused without waiting on it.
absl::StatusOr<std::string> ReadSmallFile(const std::filesystem::path& path, uint64_t max_bytes);

// For a flag naming a folder the tool may create (a cache, an output
// folder): InvalidArgument "--<flag>=<path>: why" when it exists and is no
// folder, or cannot be looked at (a loop of links).
absl::Status CheckFolderOrAbsent(std::string_view flag, const std::filesystem::path& path);

// Whether `path` is `tree` or lies inside it, after resolving symbolic links
// and relative parts of both (`path` need not exist yet).
bool IsWithin(const std::filesystem::path& path, const std::filesystem::path& tree);

}  // namespace mlperf::base
