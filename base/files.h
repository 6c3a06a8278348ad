// Writing outputs without ever leaving a half-written file or losing an
// input: whole-file writes through a temporary file and a rename, a check
// that an output path lies outside the trees being read, and stdout writes
// whose failure (a full disk, a closed pipe) is reported, not ignored.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace mlperf::base {

// Writes `text` to `path` through `path`.tmp.<pid> and a rename, so a reader
// never sees half a file and a failed write leaves the old file as it was.
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

// Whether `path` is `tree` or lies inside it, after resolving symbolic links
// and relative parts of both (`path` need not exist yet).
bool IsWithin(const std::filesystem::path& path, const std::filesystem::path& tree);

// Writes `text` to stdout and flushes it; an error names what failed.
absl::Status WriteStdout(std::string_view text);

}  // namespace mlperf::base
