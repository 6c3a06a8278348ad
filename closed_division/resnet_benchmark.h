// The ResNet-50 v1.5 registry entry: closed-division recipes per scale from
// the RCP references of ruleset 4.0.0, the embedded demonstration (the same
// family at 1/8 width on generated JPEGs), the closed_resnet hyperparameter
// keys, the model and the ImageNet pipeline.
#pragma once

#include <memory>

#include "closed_division/benchmark.h"

namespace mlperf::closed {

std::unique_ptr<Benchmark> MakeResnetBenchmark();

}  // namespace mlperf::closed
