// PNG files under .JPEG names (ImageNet's training set has one): read by
// signature, decoded to the exact RGB pixels, errors named, and loaded by the
// image loader instead of ending the run.
#include "datasets/png.h"

#include <gtest/gtest.h>
#include <png.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "datasets/image_loader.h"
#include "datasets/jpeg.h"
#include "datasets/synthetic_image_set.h"
#include "tests/datasets/test_dir.h"

namespace mlperf::datasets {
namespace {

// A PNG written by libpng's own encoder; `format` PNG_FORMAT_RGB or _GA.
std::string EncodePng(const std::vector<uint8_t>& pixels, int width, int height, uint32_t format) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = format;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_get_memory_size(image, size, 0, pixels.data(), 0, nullptr));
  std::string bytes(size, '\0');
  EXPECT_TRUE(png_image_write_to_memory(&image, bytes.data(), &size, 0, pixels.data(), 0, nullptr));
  bytes.resize(size);
  return bytes;
}

std::vector<uint8_t> Pattern(int width, int height, int channels) {
  std::vector<uint8_t> p(static_cast<size_t>(width * height * channels));
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  return p;
}

TEST(PngTest, RgbDecodesExactlyAndOnlyWhole) {
  const std::vector<uint8_t> rgb = Pattern(13, 7, 3);
  const std::string png = EncodePng(rgb, 13, 7, PNG_FORMAT_RGB);
  EXPECT_TRUE(IsPng(png));
  absl::StatusOr<JpegInfo> info = ReadJpegInfo(png, "n02105855_2933.JPEG");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->width, 13);
  EXPECT_EQ(info->height, 7);
  EXPECT_FALSE(info->scalable);
  RgbImage out;
  ASSERT_TRUE(DecodeJpeg(png, "x.JPEG", {}, &out).ok());
  EXPECT_EQ(out.width, 13);
  EXPECT_EQ(out.height, 7);
  EXPECT_EQ(out.pixels, rgb);
  const absl::Status scaled = DecodeJpeg(png, "x.JPEG", {.scale_num = 4}, &out);
  EXPECT_FALSE(scaled.ok());
}

TEST(PngTest, GreyWithAlphaBecomesRgb) {
  std::vector<uint8_t> ga = Pattern(5, 4, 2);
  for (size_t i = 1; i < ga.size(); i += 2) ga[i] = 255;  // opaque: nothing to composite
  RgbImage out;
  ASSERT_TRUE(DecodePng(EncodePng(ga, 5, 4, PNG_FORMAT_GA), "g.JPEG", &out).ok());
  ASSERT_EQ(out.pixels.size(), 5u * 4u * 3u);
  for (size_t p = 0; p < 20; ++p)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(out.pixels[p * 3 + c], ga[p * 2]) << p;
}

TEST(PngTest, TruncatedFileIsAnErrorNamingIt) {
  const std::string png = EncodePng(Pattern(16, 16, 3), 16, 16, PNG_FORMAT_RGB);
  RgbImage out;
  const absl::Status s = DecodeJpeg(png.substr(0, png.size() / 2), "broken.JPEG", {}, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("broken.JPEG"), std::string::npos) << s;
}

// A training image replaced by a PNG with the same name: every epoch loads.
TEST(PngTest, LoaderDecodesAPngNamedJpeg) {
  testing::TempDir dir("png_loader");
  const SyntheticImageSetOptions set = {
      .num_classes = 2, .train_per_class = 3, .val_per_class = 1, .image_size = 24, .seed = 5};
  ASSERT_TRUE(WriteSyntheticImageSet(dir / "data", set).ok());
  const std::string victim = dir / "data/train/c0000/train_000000.JPEG";
  std::ofstream(victim, std::ios::binary | std::ios::trunc)
      << EncodePng(Pattern(24, 24, 3), 24, 24, PNG_FORMAT_RGB);
  ImageLoaderOptions o;
  o.root = dir / "data";
  o.image_size = 16;
  o.resize_shorter = 20;
  o.batch_size = 3;
  o.threads = 1;
  absl::StatusOr<std::unique_ptr<ImageLoader>> loader = ImageLoader::Open(o);
  ASSERT_TRUE(loader.ok()) << loader.status();
  ImageBatch batch;
  for (int step = 0; step < 4; ++step) {  // two epochs of 6 images
    absl::StatusOr<bool> got = (*loader)->Next(&batch);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(*got);
  }
}

}  // namespace
}  // namespace mlperf::datasets
