// JPEG decoding and encoding with libjpeg-turbo. Every libjpeg error (and a
// truncated stream, which libjpeg would otherwise pad with grey) becomes an
// absl::Status naming the file; nothing here calls exit(). A PNG under a JPEG
// name is recognised by its signature and decoded too (datasets/png.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mlperf::datasets {

// Interleaved 8-bit RGB, row-major. (x0, y0) is where pixel (0, 0) of this
// buffer sits in the (possibly scaled) full decoded image, for region decodes.
struct RgbImage {
  int width = 0, height = 0;
  int x0 = 0, y0 = 0;
  std::vector<uint8_t> pixels;  // height * width * 3
};

struct JpegInfo {
  int width = 0, height = 0;
  bool scalable = true;  // false (a PNG): decode only at scale 8/8, whole
};

// Reads only the header.
absl::StatusOr<JpegInfo> ReadJpegInfo(std::string_view bytes, const std::string& name);

// Which part of the image to decode and at what scale. libjpeg-turbo scales by
// scale_num/8 inside the IDCT (cheap: fewer coefficients), so decoding a large
// photo for a 224 output can skip most of the work.
struct JpegDecodeRequest {
  int scale_num = 8;  // 1..8, output size ceil(side * scale_num / 8)
  // Region in scaled output pixels; width/height 0 = the whole image. The result
  // may be wider (libjpeg aligns columns to iMCU boundaries); x0/y0 of the
  // result say where it starts. Pixels inside the region equal those of a full
  // decode at the same scale.
  int x = 0, y = 0, width = 0, height = 0;
};

// Decodes to RGB (greyscale is expanded, CMYK/YCCK converted) into `out`,
// reusing its capacity. A PNG comes whole (x0 = y0 = 0), and only at scale 8.
absl::Status DecodeJpeg(std::string_view bytes, const std::string& name,
                        const JpegDecodeRequest& request, RgbImage* out);

// Output size of a scale_num/8 decode of a side of `full` pixels.
inline int ScaledJpegSide(int full, int scale_num) { return (full * scale_num + 7) / 8; }

// Baseline JPEG (4:2:0) of an RGB image at `quality` 1..100.
absl::StatusOr<std::string> EncodeJpeg(const RgbImage& image, int quality);

// Encodes `components` = 1 (greyscale), 3 (RGB) or 4 (CMYK, stored inverted
// with an Adobe marker as Photoshop does) interleaved bytes; the 1 and 4 cases
// exist to test the decoder's colour conversions.
absl::StatusOr<std::string> EncodeJpegComponents(const uint8_t* pixels, int width, int height,
                                                 int components, int quality);

}  // namespace mlperf::datasets
