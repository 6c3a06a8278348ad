#include "base/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "fmt/format.h"

namespace mlperf::base {

namespace fs = std::filesystem;

absl::Status WriteFileAtomically(const fs::path& path, std::string_view text) {
  AtomicFileWriter out(path);
  out.Write(text);
  return out.Commit();
}

AtomicFileWriter::AtomicFileWriter(fs::path path)
    : path_(std::move(path)),
      tmp_(fmt::format("{}.tmp.{}", path_.string(), getpid())),
      out_(tmp_, std::ios::binary | std::ios::trunc) {}

AtomicFileWriter::~AtomicFileWriter() {
  if (committed_) return;
  out_.close();
  std::error_code ignored;
  fs::remove(tmp_, ignored);
}

void AtomicFileWriter::Write(std::string_view bytes) {
  if (out_) out_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

absl::Status AtomicFileWriter::Commit() {
  out_.flush();
  const bool written = static_cast<bool>(out_);
  out_.close();
  if (!written || !out_) {
    return absl::ResourceExhaustedError(
        fmt::format("{}: write failed (missing folder, disk full or read-only?)", path_.string()));
  }
  // A replaced file keeps its permissions.
  if (struct stat st; stat(path_.c_str(), &st) == 0 && S_ISREG(st.st_mode))
    chmod(tmp_.c_str(), st.st_mode & 07777);
  std::error_code ec;
  fs::rename(tmp_, path_, ec);
  if (ec) return absl::InternalError(fmt::format("{}: {}", path_.string(), ec.message()));
  committed_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadSmallFile(const fs::path& path, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  }
  struct stat st;
  std::string text;
  absl::Status s;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    s = absl::InvalidArgumentError(fmt::format("{}: not a regular file", path.string()));
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    s = absl::InvalidArgumentError(fmt::format("{}: {} bytes, more than the {} allowed for it",
                                               path.string(), st.st_size, max_bytes));
  } else {
    text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        s = absl::InternalError(
            fmt::format("{}: read error: {}", path.string(), std::strerror(errno)));
        break;
      }
      if (n == 0) break;  // shrank while read
      got += static_cast<size_t>(n);
    }
    text.resize(got);
  }
  close(fd);
  if (!s.ok()) return s;
  return text;
}

absl::Status CheckFolderOrAbsent(std::string_view flag, const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return absl::InvalidArgumentError(
        fmt::format("--{}={}: {}", flag, path.string(), ec.message()));
  }
  if (fs::exists(st) && !fs::is_directory(st)) {
    return absl::InvalidArgumentError(
        fmt::format("--{}={}: exists and is not a folder", flag, path.string()));
  }
  return absl::OkStatus();
}

bool IsWithin(const fs::path& path, const fs::path& tree) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  const fs::path t = fs::weakly_canonical(fs::absolute(tree, ec), ec);
  auto pi = p.begin(), ti = t.begin();
  for (; ti != t.end(); ++ti, ++pi) {
    if (ti->empty()) continue;  // a trailing separator
    if (pi == p.end() || *pi != *ti) return false;
  }
  return true;
}

}  // namespace mlperf::base
