// Writing outputs without ever leaving a half-written file or losing an
// input: whole-file writes through a temporary file and a rename, a check
// that an output path lies outside the trees being read, and stdout writes
// whose failure (a full disk, a closed pipe) is reported, not ignored.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace mlperf::base {

// Writes `text` to `path` through `path`.tmp.<pid> and a rename, so a reader
// never sees half a file and a failed write leaves the old file as it was.
absl::Status WriteFileAtomically(const std::filesystem::path& path, std::string_view text);

// Whether `path` is `tree` or lies inside it, after resolving symbolic links
// and relative parts of both (`path` need not exist yet).
bool IsWithin(const std::filesystem::path& path, const std::filesystem::path& tree);

// Writes `text` to stdout and flushes it; an error names what failed.
absl::Status WriteStdout(std::string_view text);

}  // namespace mlperf::base
