// The line every tool prints for --version.
#pragma once

#include <string>
#include <string_view>

namespace mlperf::base {

// "<tool> <project version> (matches the official mlperf-logging <release>)".
std::string VersionLine(std::string_view tool);

}  // namespace mlperf::base
