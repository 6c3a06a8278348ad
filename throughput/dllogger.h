// The job as DLLogger JSON lines, the format DeepLearningExamples' scripts
// write and parse ("DLLL " + one JSON object per line): METADATA lines with
// each metric's unit, then per configuration a PARAMETER record, one record
// per measured step (step [repeat, iteration]), one per repeat (step
// [repeat], the per-epoch summary benchmark.py averages) and a summary
// (step []).
#pragma once

#include <string>

#include "throughput/report.h"

namespace mlperf::throughput {

std::string DlloggerLines(const Job& job);

}  // namespace mlperf::throughput
