#include "base/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "fmt/format.h"

namespace mlperf::base {

absl::StatusOr<FileLock> FileLock::TryAcquire(const std::filesystem::path& path) {
  return Lock(path, /*wait=*/false);
}

absl::StatusOr<FileLock> FileLock::Acquire(const std::filesystem::path& path) {
  return Lock(path, /*wait=*/true);
}

absl::StatusOr<FileLock> FileLock::Lock(const std::filesystem::path& path, bool wait) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        fmt::format("{}: cannot open the lock file: {}", path.string(), std::strerror(errno)));
  }
  int rc;
  do {
    rc = flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int error = errno;
    char holder[32] = {};
    const ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
    close(fd);
    if (error == EWOULDBLOCK) {
      return absl::FailedPreconditionError(fmt::format("{} is held by process {}", path.string(),
                                                       n > 0 ? std::string(holder) : "unknown"));
    }
    return absl::InternalError(fmt::format("{}: {}", path.string(), std::strerror(error)));
  }
  const std::string pid = std::to_string(getpid());
  const bool noted = ftruncate(fd, 0) == 0 &&
                     pwrite(fd, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size());
  (void)noted;  // the pid is only a note for a refused caller's message
  return FileLock(fd);
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor releases the lock
}

}  // namespace mlperf::base
