// The RCP tables under quality_targets/rcp/, compiled into the binary by
// checker/package/CMakeLists.txt (a generated .cc defines this function).
#pragma once

#include <span>

namespace mlperf::package {

struct EmbeddedRcpFile {
  const char* path;  // relative to quality_targets/rcp/, e.g. "3.0.0/rcps_resnet.json"
  const char* text;
};

std::span<const EmbeddedRcpFile> EmbeddedRcpFiles();

}  // namespace mlperf::package
