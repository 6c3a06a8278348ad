// libFuzzer target: arbitrary bytes as an ImageNet image file through the
// header reader and the decoder the loader uses (JPEG, or PNG where the
// bytes say so), at a scale and region picked by the first bytes. Every
// input must end in an image or an error, never a crash or sanitizer report.
// Headers that claim more than 2^24 pixels are not decoded (the fuzzer's
// memory limit; the loader's real images are far smaller).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "datasets/jpeg.h"
#include "datasets/png.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlperf::datasets;
  if (size < 3) return 0;
  JpegDecodeRequest request;
  request.scale_num = 1 + data[0] % 8;
  const bool region = data[1] & 1;
  std::string_view bytes(reinterpret_cast<const char*>(data + 2), size - 2);
  const bool png = IsPng(bytes);
  const auto info = png ? ReadPngInfo(bytes, "fuzz") : ReadJpegInfo(bytes, "fuzz");
  if (!info.ok() || int64_t{info->width} * info->height > (int64_t{1} << 24)) return 0;
  if (png) request.scale_num = 8;
  if (region && !png) {
    const int w = ScaledJpegSide(info->width, request.scale_num);
    const int h = ScaledJpegSide(info->height, request.scale_num);
    request.x = (data[1] >> 1) % (w > 0 ? w : 1);
    request.y = (data[1] >> 4) % (h > 0 ? h : 1);
    request.width = w - request.x;
    request.height = h - request.y;
  }
  RgbImage image;
  const absl::Status s =
      png ? DecodePng(bytes, "fuzz", &image) : DecodeJpeg(bytes, "fuzz", request, &image);
  if (s.ok() && image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3)
    __builtin_trap();  // a decoded image must be exactly as large as it says
  return 0;
}
