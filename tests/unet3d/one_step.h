// One forward and backward pass of the small 3D U-Net of the twin
// comparisons (filters 4, 8, 16 at 32^3, batch 2, weights from seed 3, the
// synthetic volume) in the precision in force, with the logits in
// channels-first order whatever the layout; and the tolerances of two such
// passes under bf16/fp16, measured across the CPU's two layouts
// (UNet3DMixedPrecisionTest.OneStepAgreesAcrossLayouts), which the GPU
// comparison (unet3d_gpu_test) then uses.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "reference/models/unet3d.h"

namespace mlperf::models::test {

inline UNet3DConfig TwinUNet(core::Layout layout, core::Device device) {
  return {.filters = {4, 8, 16}, .roi = 32, .layout = layout, .device = device};
}

struct UNetStep {
  float loss = 0;
  std::vector<float> logits, gradients;
  core::DType stored = core::DType::kF32;  // the model's activation storage
};

inline UNetStep RunUNetStep(core::Layout layout, core::Device device) {
  UNet3D model(TwinUNet(layout, device), 2);
  model.Initialize(3);
  const OwnedBatch batch = model.SyntheticBatch();
  UNetStep out;
  out.loss = model.ForwardTrain(batch.batch);
  out.logits = model.ToHost(model.logits());
  if (layout == core::Layout::kNDHWC) {  // [n, voxels, 3] -> [n, 3, voxels]
    const int64_t n = 2, classes = 3, voxels = int64_t{32} * 32 * 32;
    std::vector<float> first(out.logits.size());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < classes; ++c)
        for (int64_t q = 0; q < voxels; ++q)
          first[(i * classes + c) * voxels + q] = out.logits[(i * voxels + q) * classes + c];
    out.logits = std::move(first);
  }
  model.Backward();
  out.gradients = model.GradientsToHost();
  out.stored = model.activation_storage();
  return out;
}

// Norm-wise relative differences allowed between two passes in bf16 or
// fp16 that differ only in the order of their sums: about 5x what the CPU's
// two layouts showed (loss 5.2e-6 / 0, logits 3.1e-3 / 5.9e-4, gradients
// 2.3e-3 / 1.1e-3 in bf16 / fp16).
constexpr double kUNetReducedLossTolerance = 1e-3;
constexpr double kUNetReducedLogitsTolerance = 1.5e-2;
constexpr double kUNetReducedGradientTolerance = 1.5e-2;

}  // namespace mlperf::models::test
