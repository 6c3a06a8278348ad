// Where a package's rows came from: the SHA-256 of every file (what
// `sha256sum` prints), one digest over the whole package that tells an
// unchanged package from a changed one, and the results repository's commit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace mlperf::warehouse {

struct PackageDigest {
  std::string sha256;                        // over the sorted (relative path, file SHA-256) pairs
  std::map<std::string, std::string> files;  // relative path -> SHA-256, regular files only
  int64_t bytes = 0;
};

// The SHA-256 of one file, read in blocks, as lowercase hex.
absl::StatusOr<std::string> FileSha256(const std::filesystem::path& path);

// Every regular file under `org` (links to files followed, links to folders
// not), hashed on `threads` threads; an unreadable file is an error naming it.
absl::StatusOr<PackageDigest> DigestPackage(const std::filesystem::path& org, int threads);

// The commit checked out in the git work tree holding `path` (HEAD, a branch
// through refs/ or packed-refs), when there is one.
std::optional<std::string> RepoCommit(const std::filesystem::path& path);

}  // namespace mlperf::warehouse
