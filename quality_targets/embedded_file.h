// A data file compiled into a binary by quality_targets/embed_files.cmake, so
// that tools run from anywhere without the source tree.
#pragma once

#include <string_view>

namespace mlperf {

struct EmbeddedFile {
  const char* path;  // relative to the embedded folder, e.g. "training/3.0.0/common.rules"
  std::string_view text;
};

}  // namespace mlperf
