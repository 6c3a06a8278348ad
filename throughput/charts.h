// The job's charts as standalone SVG files (base/svg_chart): throughput
// against batch size per precision and device count, weak scaling against
// device count, and inference latency percentiles against batch size.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "throughput/report.h"

namespace mlperf::throughput {

// (file name, SVG document) for every chart the measured results allow.
std::vector<std::pair<std::string, std::string>> Charts(const Job& job);

}  // namespace mlperf::throughput
