// Resampling of a single-channel volume to a new shape, as the reference's
// preprocessing does it with torch.nn.functional.interpolate on a
// [1, 1, D, H, W] tensor: trilinear with align_corners=True for the image,
// nearest (PyTorch's "nearest": source floor(dst * in / out)) for labels.
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
