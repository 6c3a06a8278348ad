#include "base/files.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
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
  std::error_code ec;
  fs::rename(tmp_, path_, ec);
  if (ec) return absl::InternalError(fmt::format("{}: {}", path_.string(), ec.message()));
  committed_ = true;
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

absl::Status WriteStdout(std::string_view text) {
  errno = 0;
  const size_t written = std::fwrite(text.data(), 1, text.size(), stdout);
  if (written != text.size() || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    return absl::ResourceExhaustedError(fmt::format("writing the report to stdout failed: {}",
                                                    errno != 0 ? std::strerror(errno) : "error"));
  }
  return absl::OkStatus();
}

}  // namespace mlperf::base
