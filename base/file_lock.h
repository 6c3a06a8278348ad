// An advisory lock (flock) on a file, held until the object is destroyed or
// the process ends (also by a crash or kill -9: the kernel releases it). The
// file keeps the holder's process id, so that a refused caller can name it.
#pragma once

#include <filesystem>

#include "absl/status/statusor.h"

namespace mlperf::base {

class FileLock {
 public:
  // Creates `path` if needed. FailedPrecondition "<path> is held by process
  // <pid>" when another open of it holds the lock.
  static absl::StatusOr<FileLock> TryAcquire(const std::filesystem::path& path);
  // Waits for the holder.
  static absl::StatusOr<FileLock> Acquire(const std::filesystem::path& path);

  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  static absl::StatusOr<FileLock> Lock(const std::filesystem::path& path, bool wait);

  int fd_ = -1;
};

}  // namespace mlperf::base
