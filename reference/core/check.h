// Programmer-invariant checks. Input from files goes through absl::Status instead.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace mlperf::core {

[[noreturn]] inline void CheckFailed(const char* file, int line, const char* cond,
                                     const char* msg) {
  std::fprintf(stderr, "%s:%d: check failed: %s %s\n", file, line, cond, msg);
  std::abort();
}

}  // namespace mlperf::core

#define MLPERF_CHECK(cond)                                                   \
  do {                                                                       \
    if (!(cond)) ::mlperf::core::CheckFailed(__FILE__, __LINE__, #cond, ""); \
  } while (0)

#define MLPERF_CHECK_MSG(cond, msg)                                             \
  do {                                                                          \
    if (!(cond)) ::mlperf::core::CheckFailed(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)
