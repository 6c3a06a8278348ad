// The rule files under quality_targets/, compiled into the binary by
// quality_targets/CMakeLists.txt (a generated .cc defines this function).
#pragma once

#include <cstddef>

namespace mlperf::checker {

struct EmbeddedRuleFile {
  const char* path;  // relative to quality_targets/, e.g. "training/3.0.0/common.rules"
  const char* text;
  size_t size;
};

// The embedded files, and their number in *count.
const EmbeddedRuleFile* EmbeddedRuleFiles(size_t* count);

}  // namespace mlperf::checker
