// The RCP tables under quality_targets/rcp/ (paths like "3.0.0/rcps_resnet.json"),
// compiled into the binary by checker/package/CMakeLists.txt.
#pragma once

#include <span>

#include "quality_targets/embedded_file.h"

namespace mlperf::package {

std::span<const EmbeddedFile> EmbeddedRcpFiles();

}  // namespace mlperf::package
