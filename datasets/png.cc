#include "datasets/png.h"

#include <png.h>

#include <cstring>

#include "fmt/format.h"

namespace mlperf::datasets {
namespace {

constexpr unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

absl::Status PngError(const std::string& name, const char* what) {
  return absl::DataLossError(fmt::format("{}: cannot decode PNG: {}", name, what));
}

}  // namespace

bool IsPng(std::string_view bytes) {
  return bytes.size() >= sizeof kSignature &&
         std::memcmp(bytes.data(), kSignature, sizeof kSignature) == 0;
}

absl::StatusOr<JpegInfo> ReadPngInfo(std::string_view bytes, const std::string& name) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    return PngError(name, image.message);
  JpegInfo info{static_cast<int>(image.width), static_cast<int>(image.height),
                /*scalable=*/false};
  png_image_free(&image);
  if (info.width <= 0 || info.height <= 0) return PngError(name, "empty image");
  return info;
}

absl::Status DecodePng(std::string_view bytes, const std::string& name, RgbImage* out) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    return PngError(name, image.message);
  image.format = PNG_FORMAT_RGB;
  out->width = static_cast<int>(image.width);
  out->height = static_cast<int>(image.height);
  out->x0 = out->y0 = 0;
  out->pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out->pixels.data(), 0, nullptr)) {
    const absl::Status error = PngError(name, image.message);
    png_image_free(&image);
    return error;
  }
  return absl::OkStatus();
}

}  // namespace mlperf::datasets
