#include "datasets/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fmt/format.h"

namespace mlperf::datasets {

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return absl::NotFoundError(
        fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(fmt::format("{}: not a regular file", path.string()));
  }
  const off_t size = st.st_size;
  void* data = size > 0 ? ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, fd, 0)
                        : MAP_FAILED;
  const int error = errno;
  ::close(fd);
  if (data == MAP_FAILED) {
    return absl::DataLossError(fmt::format("{}: cannot map: {}", path.string(),
                                           size <= 0 ? "empty" : std::strerror(error)));
  }
  return std::unique_ptr<MappedFile>(
      new MappedFile(static_cast<const char*>(data), static_cast<uint64_t>(size)));
}

MappedFile::~MappedFile() { ::munmap(const_cast<char*>(data_), size_); }

}  // namespace mlperf::datasets
