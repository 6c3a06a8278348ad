// libjpeg-turbo decoding: values of a decoded image, region and scaled
// decodes, greyscale and CMYK conversion, and errors naming the file.
#include "datasets/jpeg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "datasets/synthetic_image_set.h"

namespace mlperf::datasets {
namespace {

// A smooth test picture (JPEG keeps smooth content close to the original).
RgbImage Smooth(int w, int h) {
  RgbImage img{w, h, 0, 0, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3)};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &img.pixels[(static_cast<size_t>(y) * w + x) * 3];
      p[0] = static_cast<uint8_t>(40 + 160 * x / w);
      p[1] = static_cast<uint8_t>(30 + 180 * y / h);
      p[2] = static_cast<uint8_t>(128 + 60 * std::sin(0.05 * (x + y)));
    }
  }
  return img;
}

double MeanAbsDiff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  EXPECT_EQ(a.size(), b.size());
  double sum = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) sum += std::abs(a[i] - b[i]);
  return sum / static_cast<double>(a.size());
}

TEST(JpegTest, DecodeOfEncodedImageIsClose) {
  const RgbImage img = Smooth(97, 61);  // odd sizes exercise partial MCUs
  absl::StatusOr<std::string> jpeg = EncodeJpeg(img, 95);
  ASSERT_TRUE(jpeg.ok()) << jpeg.status();
  absl::StatusOr<JpegInfo> info = ReadJpegInfo(*jpeg, "smooth.jpg");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->width, 97);
  EXPECT_EQ(info->height, 61);
  RgbImage out;
  ASSERT_TRUE(DecodeJpeg(*jpeg, "smooth.jpg", {}, &out).ok());
  ASSERT_EQ(out.width, 97);
  ASSERT_EQ(out.height, 61);
  EXPECT_EQ(out.x0, 0);
  EXPECT_LT(MeanAbsDiff(out.pixels, img.pixels), 2.0);
  int max_diff = 0;
  for (size_t i = 0; i < img.pixels.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(out.pixels[i] - img.pixels[i]));
  }
  EXPECT_LT(max_diff, 24);
}

TEST(JpegTest, RegionDecodeMatchesFullDecode) {
  const SyntheticImageSetOptions o{.image_size = 200};
  const RgbImage img{200, 200, 0, 0, SyntheticImage(o, 3, 5)};
  absl::StatusOr<std::string> jpeg = EncodeJpeg(img, 90);
  ASSERT_TRUE(jpeg.ok());
  for (int scale : {8, 5, 2}) {
    RgbImage full, region;
    ASSERT_TRUE(DecodeJpeg(*jpeg, "x", {.scale_num = scale}, &full).ok());
    ASSERT_EQ(full.width, ScaledJpegSide(200, scale));
    const JpegDecodeRequest req{scale, full.width / 3, full.height / 4, full.width / 2,
                                full.height / 3};
    ASSERT_TRUE(DecodeJpeg(*jpeg, "x", req, &region).ok());
    // The region may be widened to iMCU columns but must cover the request.
    EXPECT_LE(region.x0, req.x);
    EXPECT_GE(region.x0 + region.width, req.x + req.width);
    EXPECT_EQ(region.y0, req.y);
    EXPECT_EQ(region.height, req.height);
    int max_diff = 0;
    for (int y = 0; y < region.height; ++y) {
      for (int x = req.x - region.x0; x < req.x - region.x0 + req.width; ++x) {
        for (int c = 0; c < 3; ++c) {
          const int a = region.pixels[(static_cast<size_t>(y) * region.width + x) * 3 + c];
          const int b =
              full.pixels[(static_cast<size_t>(y + region.y0) * full.width + x + region.x0) * 3 +
                          c];
          max_diff = std::max(max_diff, std::abs(a - b));
        }
      }
    }
    EXPECT_EQ(max_diff, 0) << "scale " << scale;
  }
}

TEST(JpegTest, ScaledDecodeIsADownscaledImage) {
  const RgbImage img = Smooth(160, 120);
  absl::StatusOr<std::string> jpeg = EncodeJpeg(img, 95);
  ASSERT_TRUE(jpeg.ok());
  RgbImage half;
  ASSERT_TRUE(DecodeJpeg(*jpeg, "x", {.scale_num = 4}, &half).ok());
  ASSERT_EQ(half.width, 80);
  ASSERT_EQ(half.height, 60);
  // Compare with a 2x2 box average of the original.
  std::vector<uint8_t> box(half.pixels.size());
  for (int y = 0; y < 60; ++y) {
    for (int x = 0; x < 80; ++x) {
      for (int c = 0; c < 3; ++c) {
        int sum = 0;
        for (int dy = 0; dy < 2; ++dy) {
          for (int dx = 0; dx < 2; ++dx) {
            sum += img.pixels[(static_cast<size_t>(2 * y + dy) * 160 + 2 * x + dx) * 3 + c];
          }
        }
        box[(static_cast<size_t>(y) * 80 + x) * 3 + c] = static_cast<uint8_t>((sum + 2) / 4);
      }
    }
  }
  EXPECT_LT(MeanAbsDiff(half.pixels, box), 2.5);
}

TEST(JpegTest, GreyscaleBecomesRgb) {
  std::vector<uint8_t> grey(64 * 48);
  for (size_t i = 0; i < grey.size(); ++i) grey[i] = static_cast<uint8_t>(20 + (i % 64) * 3);
  absl::StatusOr<std::string> jpeg = EncodeJpegComponents(grey.data(), 64, 48, 1, 95);
  ASSERT_TRUE(jpeg.ok());
  RgbImage out;
  ASSERT_TRUE(DecodeJpeg(*jpeg, "grey.jpg", {}, &out).ok());
  ASSERT_EQ(out.pixels.size(), grey.size() * 3);
  double diff = 0;
  for (size_t i = 0; i < grey.size(); ++i) {
    EXPECT_EQ(out.pixels[i * 3], out.pixels[i * 3 + 1]);
    EXPECT_EQ(out.pixels[i * 3], out.pixels[i * 3 + 2]);
    diff += std::abs(out.pixels[i * 3] - grey[i]);
  }
  EXPECT_LT(diff / grey.size(), 2.0);
}

TEST(JpegTest, AdobeCmykBecomesRgb) {
  // Inverted (Adobe) CMYK: stored byte = 255 - ink. Colour R = 255 - ink_c - ...
  // as the product (255 - ink_c)(255 - ink_k) / 255 = stored_c * stored_k / 255.
  const int w = 32, h = 32;
  std::vector<uint8_t> cmyk(static_cast<size_t>(w) * h * 4);
  const uint8_t stored[4] = {200, 100, 255, 230};  // some cyan-free, magenta-heavy ink
  for (size_t i = 0; i < cmyk.size(); ++i) cmyk[i] = stored[i % 4];
  absl::StatusOr<std::string> jpeg = EncodeJpegComponents(cmyk.data(), w, h, 4, 100);
  ASSERT_TRUE(jpeg.ok()) << jpeg.status();
  RgbImage out;
  ASSERT_TRUE(DecodeJpeg(*jpeg, "cmyk.jpg", {}, &out).ok());
  const int expect[3] = {200 * 230 / 255, 100 * 230 / 255, 255 * 230 / 255};
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(out.pixels[(16 * w + 16) * 3 + c], expect[c], 3) << c;
}

TEST(JpegTest, CorruptDataIsAnErrorNamingTheFile) {
  const RgbImage img = Smooth(64, 64);
  absl::StatusOr<std::string> jpeg = EncodeJpeg(img, 90);
  ASSERT_TRUE(jpeg.ok());
  RgbImage out;
  // Not a JPEG at all.
  absl::Status s = DecodeJpeg("GIF89a not a jpeg at all", "dir/n01/bad.JPEG", {}, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("dir/n01/bad.JPEG"), std::string::npos) << s;
  EXPECT_FALSE(ReadJpegInfo("", "empty.JPEG").ok());
  // Truncated in the middle of the entropy-coded data: libjpeg would pad with
  // grey and only warn; we refuse.
  s = DecodeJpeg(std::string_view(*jpeg).substr(0, jpeg->size() / 2), "half.JPEG", {}, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("half.JPEG"), std::string::npos) << s;
  // A damaged header.
  std::string broken = *jpeg;
  for (size_t i = 2; i < 40; ++i) broken[i] = '\x00';
  s = DecodeJpeg(broken, "header.JPEG", {}, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("header.JPEG"), std::string::npos) << s;
}

}  // namespace
}  // namespace mlperf::datasets
