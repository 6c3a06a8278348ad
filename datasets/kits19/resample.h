// Resampling of a single-channel volume to a new shape, as the reference's
// preprocessing does it with torch.nn.functional.interpolate on a
// [1, 1, D, H, W] tensor: trilinear with align_corners=True for the image
// (with PyTorch's fp32 rounding, so that prepared cases match the reference's
// bit for bit), nearest (PyTorch's legacy "nearest": source
// min(floor(dst * in / out), in - 1), the ratio in fp32) for labels. Every
// size must be at least 1.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace mlperf::kits19 {

using Shape3 = std::array<int64_t, 3>;

std::vector<float> ResampleTrilinear(const float* in, const Shape3& in_shape,
                                     const Shape3& out_shape);
std::vector<uint8_t> ResampleNearest(const uint8_t* in, const Shape3& in_shape,
                                     const Shape3& out_shape);

}  // namespace mlperf::kits19
