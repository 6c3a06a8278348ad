// A scratch file per fuzzing process for the readers that take a path: the
// input is written to it before each call (in /dev/shm where there is one).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace mlperf::fuzz {

inline std::filesystem::path ScratchPath(const std::string& suffix) {
  const std::filesystem::path dir =
      std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
  return dir / ("mlperf_fuzz_" + std::to_string(::getpid()) + suffix);
}

// Whether the whole input was written.
inline bool WriteFile(const std::filesystem::path& path, const void* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = size == 0 || std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

// The scratch file of a reader target; failing to write it is the fuzzing
// machine's fault, not the reader's.
inline void MustWriteFile(const std::filesystem::path& path, const void* data, size_t size) {
  if (!WriteFile(path, data, size)) std::abort();
}

}  // namespace mlperf::fuzz
