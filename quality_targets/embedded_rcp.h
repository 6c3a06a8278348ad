// The RCP tables under quality_targets/rcp/ (paths like
// "4.0.0/rcps_resnet.json"), compiled into the binaries that need them.
#pragma once

#include <span>

#include "quality_targets/embedded_file.h"

namespace mlperf {

std::span<const EmbeddedFile> EmbeddedRcpTables();

}  // namespace mlperf
