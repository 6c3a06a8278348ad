// The 3D U-Net (KiTS19) registry entry: closed-division recipes per scale
// from the RCP references of ruleset 4.0.0 (epoch_num in samples), the
// embedded demonstration (a narrow, shallow member of the family on
// generated volumes written as NIfTI and prepared like KiTS19), the
// closed_unet3d hyperparameter keys, the model and the KiTS19 pipeline.
#pragma once

#include <memory>

#include "closed_division/benchmark.h"

namespace mlperf::closed {

std::unique_ptr<Benchmark> MakeUnet3dBenchmark();

}  // namespace mlperf::closed
