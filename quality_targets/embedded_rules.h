// The rule files under quality_targets/ (paths like "training/3.0.0/common.rules"),
// compiled into the binary by quality_targets/CMakeLists.txt.
#pragma once

#include <span>

#include "quality_targets/embedded_file.h"

namespace mlperf {

std::span<const EmbeddedFile> EmbeddedRuleFiles();

}  // namespace mlperf
