// Augmentation geometry: the distorted-crop sampler's bounds and determinism,
// flips, and the bilinear resampler against a hand-computed case and against
// PyTorch's F.interpolate (run as /usr/bin/python3; skipped without torch).
#include "datasets/augment.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "datasets/synthetic_image_set.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::datasets {
namespace {

constexpr std::array<float, 3> kNoMean = {0, 0, 0};

TEST(DistortedCropTest, WindowsStayWithinTheReferenceBounds) {
  const int w = 500, h = 375;
  int whole = 0;
  double area_sum = 0, min_area = 1, max_area = 0, min_aspect = 10, max_aspect = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const CropWindow c = SampleDistortedCrop(w, h, 7, static_cast<uint64_t>(i));
    ASSERT_GE(c.x, 0);
    ASSERT_GE(c.y, 0);
    ASSERT_GE(c.width, 1);
    ASSERT_GE(c.height, 1);
    ASSERT_LE(c.x + c.width, w);
    ASSERT_LE(c.y + c.height, h);
    if (c.width == w && c.height == h) ++whole;
    const double area = static_cast<double>(c.width) * c.height / (w * h);
    const double aspect = static_cast<double>(c.width) / c.height;
    area_sum += area;
    min_area = std::min(min_area, area);
    max_area = std::max(max_area, area);
    if (c.width != w || c.height != h) {
      min_aspect = std::min(min_aspect, aspect);
      max_aspect = std::max(max_aspect, aspect);
    }
  }
  // min_object_covered 0.1 of the whole-image box binds above the 0.05 area floor.
  EXPECT_GE(min_area, 0.1);
  EXPECT_LT(min_area, 0.11);
  EXPECT_GT(max_area, 0.9);
  // Aspect in [0.75, 1.33] up to rounding of width and height to pixels.
  EXPECT_GE(min_aspect, 0.75 * (1 - 2.0 / 100));
  EXPECT_LT(min_aspect, 0.77);
  EXPECT_LE(max_aspect, 1.33 * (1 + 2.0 / 100));
  EXPECT_GT(max_aspect, 1.30);
  const double mean_area = area_sum / n;
  EXPECT_GT(mean_area, 0.4);
  EXPECT_LT(mean_area, 0.65);
  EXPECT_LT(whole, n / 100);  // fallback only after 100 rejected attempts
}

TEST(DistortedCropTest, PositionsCoverTheImage) {
  int left = 0, right = 0;
  for (int i = 0; i < 4000; ++i) {
    const CropWindow c = SampleDistortedCrop(300, 300, 3, static_cast<uint64_t>(i));
    if (c.x == 0) ++left;
    if (c.x + c.width == 300) ++right;
  }
  EXPECT_GT(left, 20);
  EXPECT_GT(right, 20);
}

TEST(DistortedCropTest, FallsBackToTheWholeImageWhenNothingFits) {
  // A 1000x1 strip admits no window of aspect >= 0.75 covering 10% of it.
  const CropWindow c = SampleDistortedCrop(1000, 1, 1, 1);
  EXPECT_EQ(c.x, 0);
  EXPECT_EQ(c.y, 0);
  EXPECT_EQ(c.width, 1000);
  EXPECT_EQ(c.height, 1);
}

TEST(DistortedCropTest, DeterministicPerSeedAndStream) {
  // Recorded windows and flips (x, y, width, height, flip) for seed 11: a
  // seeded run must augment the same way on every machine and every build.
  const struct {
    uint64_t stream;
    int x, y, width, height;
    bool flip;
  } recorded[] = {{0, 21, 4, 462, 471, true},
                  {1, 170, 73, 380, 394, true},
                  {2, 156, 119, 197, 193, true},
                  {199, 3, 253, 183, 192, false}};
  for (const auto& r : recorded) {
    const CropWindow w = SampleDistortedCrop(640, 480, 11, r.stream);
    EXPECT_EQ(w.x, r.x) << r.stream;
    EXPECT_EQ(w.y, r.y) << r.stream;
    EXPECT_EQ(w.width, r.width) << r.stream;
    EXPECT_EQ(w.height, r.height) << r.stream;
    EXPECT_EQ(SampleFlip(11, r.stream), r.flip) << r.stream;
  }
  int differ_seed = 0, differ_stream = 0;
  for (uint64_t s = 0; s < 200; ++s) {
    const CropWindow a = SampleDistortedCrop(640, 480, 11, s);
    const CropWindow c = SampleDistortedCrop(640, 480, 12, s);
    const CropWindow d = SampleDistortedCrop(640, 480, 11, s + 1000);
    differ_seed += (c.x != a.x || c.width != a.width || c.y != a.y);
    differ_stream += (d.x != a.x || d.width != a.width || d.y != a.y);
  }
  EXPECT_GT(differ_seed, 190);
  EXPECT_GT(differ_stream, 190);
}

TEST(FlipTest, HalfOfTheSamplesAndMirroredOutput) {
  int flips = 0;
  for (uint64_t s = 0; s < 10000; ++s) flips += SampleFlip(5, s);
  EXPECT_GT(flips, 4800);
  EXPECT_LT(flips, 5200);

  const SyntheticImageSetOptions o{.image_size = 40};
  const RgbImage img{40, 40, 0, 0, SyntheticImage(o, 1, 1)};
  const AxisMap ax = CropAxis(5, 30, 40, 40, 17), ay = CropAxis(2, 33, 40, 40, 17);
  std::vector<float> plain(17 * 17 * 3), mirrored(17 * 17 * 3);
  ResampleBilinear(img, ax, ay, 17, 17, false, kNoMean, core::Layout::kNHWC, plain.data());
  ResampleBilinear(img, ax, ay, 17, 17, true, kNoMean, core::Layout::kNHWC, mirrored.data());
  for (int y = 0; y < 17; ++y) {
    for (int x = 0; x < 17; ++x) {
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(mirrored[(y * 17 + x) * 3 + c], plain[(y * 17 + 16 - x) * 3 + c]);
      }
    }
  }
}

TEST(ResampleTest, HandComputedUpsample) {
  // One row [0, 4] to width 4 with half-pixel centres: sources -0.25 (clamped
  // to 0), 0.25, 0.75, 1.25 (right tap clamped) -> 0, 1, 3, 4.
  RgbImage img{2, 1, 0, 0, {0, 0, 0, 4, 8, 12}};
  const AxisMap ax = CropAxis(0, 2, 2, 2, 4), ay = CropAxis(0, 1, 1, 1, 1);
  std::vector<float> out(4 * 3);
  ResampleBilinear(img, ax, ay, 4, 1, false, kNoMean, core::Layout::kNHWC, out.data());
  const float want[4] = {0, 1, 3, 4};
  for (int x = 0; x < 4; ++x) {
    EXPECT_FLOAT_EQ(out[x * 3 + 0], want[x]);
    EXPECT_FLOAT_EQ(out[x * 3 + 1], 2 * want[x]);
    EXPECT_FLOAT_EQ(out[x * 3 + 2], 3 * want[x]);
  }
}

TEST(ResampleTest, MeanSubtractionAndLayouts) {
  const SyntheticImageSetOptions o{.image_size = 32};
  const RgbImage img{32, 32, 0, 0, SyntheticImage(o, 2, 9)};
  const std::array<float, 3> mean = {123.68f, 116.78f, 103.94f};
  const AxisMap ax = CropAxis(3, 20, 32, 32, 11), ay = CropAxis(1, 25, 32, 32, 11);
  std::vector<float> nchw(11 * 11 * 3), nhwc(11 * 11 * 3), raw(11 * 11 * 3);
  ResampleBilinear(img, ax, ay, 11, 11, true, mean, core::Layout::kNCHW, nchw.data());
  ResampleBilinear(img, ax, ay, 11, 11, true, mean, core::Layout::kNHWC, nhwc.data());
  ResampleBilinear(img, ax, ay, 11, 11, true, kNoMean, core::Layout::kNHWC, raw.data());
  for (int y = 0; y < 11; ++y) {
    for (int x = 0; x < 11; ++x) {
      for (int c = 0; c < 3; ++c) {
        const float v = nhwc[(y * 11 + x) * 3 + c];
        ASSERT_EQ(nchw[(c * 11 + y) * 11 + x], v);
        ASSERT_NEAR(v, raw[(y * 11 + x) * 3 + c] - mean[c], 1e-4);
      }
    }
  }
}

TEST(EvalGeometryTest, ShorterSideAndTruncation) {
  EvalGeometry g = EvalResize(500, 375, 256);
  EXPECT_EQ(g.resized_height, 256);
  EXPECT_EQ(g.resized_width, 341);  // 500 * 256 / 375 = 341.33, truncated as in TF
  g = EvalResize(333, 500, 256);
  EXPECT_EQ(g.resized_width, 256);
  EXPECT_EQ(g.resized_height, 384);  // 500 * 256 / 333 = 384.38
  g = EvalResize(64, 64, 64);
  EXPECT_EQ(g.resized_width, 64);
  EXPECT_EQ(g.resized_height, 64);
}

// Every case against PyTorch in one python run.
TEST(ResampleTest, MatchesTorchInterpolate) {
  if (std::system("/usr/bin/python3 -c 'import torch, numpy' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "PyTorch is not installed for /usr/bin/python3";
  }
  const int w = 83, h = 61;
  const SyntheticImageSetOptions o{.image_size = 83};
  std::vector<uint8_t> square = SyntheticImage(o, 3, 4);
  const RgbImage img{w, h, 0, 0, std::vector<uint8_t>(square.begin(), square.begin() + w * h * 3)};
  struct Case {
    int kind, a, b, c, d, e, f;
  };
  std::vector<Case> cases = {
      {0, 0, 0, w, h, 24, 24},      // whole image down
      {0, 10, 5, 30, 40, 56, 56},   // crop up
      {0, 40, 20, 43, 41, 17, 23},  // crop at the right/bottom edge, non-square out
      {0, 3, 7, 8, 5, 32, 32},      // strong upsample
      {0, 1, 1, 77, 9, 12, 40},     // extreme aspect
  };
  for (int side : {64, 70, 61}) {
    const EvalGeometry g = EvalResize(w, h, side);
    cases.push_back({1, g.resized_height, g.resized_width, 56, 0, 0, 0});
  }
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string tag = std::to_string(::getpid());
  const std::string in_path = dir + "/bilinear_in_" + tag, out_path = dir + "/bilinear_out_" + tag;
  {
    std::ofstream in(in_path, std::ios::binary);
    const int32_t header[3] = {h, w, static_cast<int32_t>(cases.size())};
    in.write(reinterpret_cast<const char*>(header), sizeof(header));
    in.write(reinterpret_cast<const char*>(img.pixels.data()),
             static_cast<std::streamsize>(img.pixels.size()));
    for (const Case& c : cases) in.write(reinterpret_cast<const char*>(&c), sizeof(c));
  }
  const std::string cmd = "/usr/bin/python3 " MLPERF_SOURCE_DIR
                          "/tests/datasets/bilinear_reference.py " +
                          in_path + " " + out_path;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::vector<float> torch_out;
  {
    std::ifstream f(out_path, std::ios::binary);
    f.seekg(0, std::ios::end);
    torch_out.resize(static_cast<size_t>(f.tellg()) / 4);
    f.seekg(0);
    f.read(reinterpret_cast<char*>(torch_out.data()),
           static_cast<std::streamsize>(torch_out.size() * 4));
  }
  std::remove(in_path.c_str());
  std::remove(out_path.c_str());
  size_t at = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    int ow, oh;
    AxisMap ax, ay;
    if (c.kind == 0) {
      ow = c.f;
      oh = c.e;
      ax = CropAxis(c.a, c.c, w, w, ow);
      ay = CropAxis(c.b, c.d, h, h, oh);
    } else {
      ow = oh = c.c;
      ax = CentreCropAxis(c.b, w, ow);
      ay = CentreCropAxis(c.a, h, oh);
    }
    std::vector<float> ours(static_cast<size_t>(ow) * oh * 3);
    ResampleBilinear(img, ax, ay, ow, oh, false, kNoMean, core::Layout::kNHWC, ours.data());
    ASSERT_LE(at + ours.size(), torch_out.size());
    double max_err = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
      max_err = std::max(max_err, static_cast<double>(std::fabs(ours[i] - torch_out[at + i])));
    }
    EXPECT_LT(max_err, 2e-3) << "case " << k;
    at += ours.size();
  }
  EXPECT_EQ(at, torch_out.size());
}

}  // namespace
}  // namespace mlperf::datasets
