// A benchmark's section of the package README, in the one shape every
// benchmark uses: what produced the results (for a demonstration, the warning
// that they come from generated data and must never be reported as the
// benchmark's), the recipe, and the note when the checkers need the RCP
// bypass.
#pragma once

#include <string>

#include "benchmarks/plan.h"

namespace mlperf::benchmarks {

struct ReadmeFacts {
  std::string benchmark;  // "resnet"
  std::string title;      // "ResNet-50 v1.5"
  std::string data_name;  // "ImageNet"
  // A demonstration: the small member trained and the generated data, e.g.
  // "a small member of the ResNet family (...)" and "a generated image set (...)".
  std::string member;
  std::string generated;
  // What its logs follow beyond the ruleset, e.g. "LARS or SGD keys, ...".
  std::string rules_detail;
  // A real run: its data, e.g. "ImageNet ILSVRC-2012 (1281167 training / 50000 validation images)".
  std::string real_data;
  // The recipe paragraph, one or more lines, without the final blank line.
  std::string recipe;
};

std::string ReadmeSection(const RunPlan& plan, const ReadmeFacts& facts);

}  // namespace mlperf::benchmarks
