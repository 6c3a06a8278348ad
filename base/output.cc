#include "base/output.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>

#include "base/exit_codes.h"
#include "base/files.h"
#include "fmt/format.h"

namespace mlperf::base {
namespace {

namespace fs = std::filesystem;

std::string Errno(int error) { return std::strerror(error); }

// /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N name a descriptor
// of this process: reopening one could truncate or replace what the caller
// redirected it to, so it is written through the descriptor.
std::optional<int> DescriptorPath(const fs::path& path) {
  const std::string s = path.lexically_normal().string();
  if (s == "/dev/stdout") return 1;
  if (s == "/dev/stderr") return 2;
  for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!s.starts_with(prefix)) continue;
    int fd = -1;
    const char* begin = s.data() + prefix.size();
    const auto [end, ec] = std::from_chars(begin, s.data() + s.size(), fd);
    if (ec == std::errc() && end == s.data() + s.size() && fd >= 0) return fd;
  }
  return std::nullopt;
}

absl::Status WriteAll(int fd, std::string_view text, const fs::path& path) {
  while (!text.empty()) {
    const ssize_t n = write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::ResourceExhaustedError(
          fmt::format("{}: write failed: {}", path.string(), Errno(n < 0 ? errno : EIO)));
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// Symbolic links resolved as far as the path exists; refuses a loop or a
// link to nothing (replacing it would put a file where the link was).
absl::StatusOr<fs::path> Resolve(const fs::path& path) {
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return absl::InvalidArgumentError(ec.message());
  struct stat st;
  if (lstat(resolved.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
    return absl::InvalidArgumentError("a symbolic link to a missing file; name the file itself");
  return resolved;
}

absl::Status WriteInPlace(const fs::path& path, std::string_view text) {
  // Without O_NONBLOCK, opening a FIFO nobody reads would wait for ever.
  const int fd = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        errno == ENXIO ? fmt::format("{}: no process is reading this FIFO", path.string())
                       : fmt::format("{}: cannot open: {}", path.string(), Errno(errno)));
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  absl::Status s = WriteAll(fd, text, path);
  if (close(fd) != 0 && s.ok()) {
    s = absl::ResourceExhaustedError(
        fmt::format("{}: write failed: {}", path.string(), Errno(errno)));
  }
  return s;
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// A name in the abstract socket namespace: bound by one process at a time,
// released by the kernel when it ends, and it leaves no file behind.
std::optional<int> LockName(const fs::path& resolved) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;  // no lock to be had; the write itself still works
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = fmt::format("mlperf-output-{:016x}", Fnv1a(resolved.string()));
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    const int error = errno;
    close(fd);
    if (error == EADDRINUSE) return std::nullopt;
    return -1;
  }
  return fd;
}

}  // namespace

absl::Status WriteOutput(const fs::path& path, std::string_view text) {
  if (std::optional<int> fd = DescriptorPath(path)) return WriteAll(*fd, text, path);
  absl::StatusOr<fs::path> resolved = Resolve(path);
  if (!resolved.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", path.string(), std::string(resolved.status().message())));
  }
  struct stat st;
  const bool exists = stat(resolved->c_str(), &st) == 0;
  if (!exists && errno != ENOENT)
    return absl::InvalidArgumentError(fmt::format("{}: {}", path.string(), Errno(errno)));
  // A new or regular file is replaced whole (the link, if any, stays).
  if (!exists || S_ISREG(st.st_mode)) return WriteFileAtomically(*resolved, text);
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return WriteInPlace(*resolved, text);
  return absl::InvalidArgumentError(
      fmt::format("{}: {}", path.string(),
                  S_ISDIR(st.st_mode)   ? "is a folder"
                  : S_ISBLK(st.st_mode) ? "is a block device; reports are not written onto disks"
                                        : "is not a file a report can be written to"));
}

OutputGuard::OutputGuard() = default;

OutputGuard::~OutputGuard() {
  for (int fd : locks_) close(fd);
}

void OutputGuard::AddInput(const fs::path& path, bool walk) {
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) resolved = fs::absolute(path, ec).lexically_normal();
  inputs_.push_back({.resolved = resolved, .given = path.string(), .walk = walk});
}

absl::Status OutputGuard::Claim(std::string_view flag, const fs::path& path) {
  auto refuse = [&](std::string_view why) {
    return absl::InvalidArgumentError(fmt::format("--{}={}: {}", flag, path.string(), why));
  };
  if (path.empty()) return refuse("an empty path");
  struct stat st;
  if (std::optional<int> fd = DescriptorPath(path)) {
    if (fstat(*fd, &st) != 0) return refuse("that descriptor is not open");
    return absl::OkStatus();
  }
  absl::StatusOr<fs::path> resolved = Resolve(path);
  if (!resolved.ok()) return refuse(std::string(resolved.status().message()));
  const bool exists = stat(resolved->c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return refuse("is a folder");
  if (exists && (S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode)))
    return refuse("is a block device or a socket; reports are not written there");
  std::error_code ec;
  if (!exists && !fs::is_directory(resolved->parent_path(), ec))
    return refuse(fmt::format("no folder {}", resolved->parent_path().string()));
  // Devices and FIFOs are written in place: any number of outputs may share one.
  const bool regular = !exists || S_ISREG(st.st_mode);
  const Identity id{exists ? st.st_dev : 0, exists ? st.st_ino : 0};

  for (Input& in : inputs_) {
    if (IsWithin(*resolved, in.resolved)) {
      return refuse(*resolved == in.resolved
                        ? std::string("is an input of this command")
                        : fmt::format("lies inside the input {}; write it elsewhere", in.given));
    }
    if (!exists || !regular) continue;
    struct stat in_st;
    if (stat(in.resolved.c_str(), &in_st) == 0 && Identity{in_st.st_dev, in_st.st_ino} == id)
      return refuse(fmt::format("is the input {}", in.given));
    if (in.walk && !in.walked) {
      in.walked = true;
      size_t budget = 1'000'000;
      for (auto it =
               fs::recursive_directory_iterator(in.resolved,
                                                fs::directory_options::follow_directory_symlink |
                                                    fs::directory_options::skip_permission_denied,
                                                ec);
           !ec && it != fs::recursive_directory_iterator() && budget > 0;
           it.increment(ec), --budget) {
        if (it.depth() > 32) it.disable_recursion_pending();
        struct stat e;
        if (stat(it->path().c_str(), &e) == 0 && S_ISREG(e.st_mode))
          in.reached.push_back({e.st_dev, e.st_ino});
      }
      ec.clear();
    }
    for (const Identity& r : in.reached) {
      if (r == id) return refuse(fmt::format("is a file the input {} reaches", in.given));
    }
  }
  if (!regular) return absl::OkStatus();
  struct stat out_st;
  if (exists && fstat(1, &out_st) == 0 && S_ISREG(out_st.st_mode) &&
      Identity{out_st.st_dev, out_st.st_ino} == id)
    return refuse("is also this command's standard output");
  for (const auto& [other, other_flag] : outputs_) {
    if (other == *resolved) return refuse(fmt::format("is also the output of --{}", other_flag));
  }
  std::optional<int> lock = LockName(*resolved);
  if (!lock)
    return refuse("another process is writing this file now; wait for it or write elsewhere");
  if (*lock >= 0) locks_.push_back(*lock);
  outputs_.emplace_back(*resolved, std::string(flag));
  return absl::OkStatus();
}

int RunTool(const char* tool, absl::FunctionRef<int()> body) {
  for (int fd : {0, 2}) {
    if (fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      const int null_fd = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
      if (null_fd >= 0 && null_fd != fd) {
        dup2(null_fd, fd);
        close(null_fd);
      }
    }
  }
  if (fcntl(1, F_GETFD) == -1 && errno == EBADF) {
    std::fprintf(stderr,
                 "%s: standard output is closed; redirect it to /dev/null to discard "
                 "the report\n",
                 tool);
    return kExitUsage;
  }
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return kExitUsage;
  }
}

absl::Status WriteStdout(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
    return absl::ResourceExhaustedError(
        fmt::format("writing the report to standard output failed: {}", Errno(errno)));
  }
  return FinishStdout();
}

absl::Status FinishStdout() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    return absl::ResourceExhaustedError(
        fmt::format("writing to standard output failed: {}", errno != 0 ? Errno(errno) : "error"));
  }
  return absl::OkStatus();
}

}  // namespace mlperf::base
