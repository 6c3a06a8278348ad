#include "base/version.h"

#include "fmt/format.h"

namespace mlperf::base {

std::string VersionLine(std::string_view tool) {
  return fmt::format("{} {} (matches the official mlperf-logging {})\n", tool,
                     MLPERF_SUITE_VERSION, MLPERF_OFFICIAL_RELEASE);
}

}  // namespace mlperf::base
