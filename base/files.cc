#include "base/files.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "fmt/format.h"

namespace mlperf::base {

namespace fs = std::filesystem;

absl::Status WriteFileAtomically(const fs::path& path, std::string_view text) {
  const fs::path tmp = fmt::format("{}.tmp.{}", path.string(), getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      return absl::ResourceExhaustedError(
          fmt::format("{}: write failed (missing folder, disk full or read-only?)", path.string()));
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return absl::InternalError(fmt::format("{}: {}", path.string(), ec.message()));
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
