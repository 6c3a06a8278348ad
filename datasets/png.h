// PNG images, which JPEG folders sometimes hold under a .JPEG name (ImageNet's
// training set has one). Decoded whole, to 8-bit RGB, with libpng.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "datasets/jpeg.h"

namespace mlperf::datasets {

// The 8-byte PNG signature starts `bytes`.
bool IsPng(std::string_view bytes);

// Width and height from the header; errors name the file.
absl::StatusOr<JpegInfo> ReadPngInfo(std::string_view bytes, const std::string& name);

// The whole image as RGB (grey, palette, alpha and 16-bit samples converted;
// alpha dropped), reusing `out`'s capacity.
absl::Status DecodePng(std::string_view bytes, const std::string& name, RgbImage* out);

}  // namespace mlperf::datasets
