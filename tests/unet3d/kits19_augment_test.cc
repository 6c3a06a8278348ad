// The 3D U-Net training augmentation (datasets/kits19/{crop,augment}.h)
// against the reference's behaviour (references.md 3.4, pytorch_loader.py):
// components and boxes exactly as scipy.ndimage (tests/unet3d/
// kits19_augment_oracle.py under /usr/bin/python3; skipped without scipy),
// the crop windows' guarantees, the decision frequencies, the flips voxel by
// voxel, and determinism across threads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "datasets/kits19/augment.h"
#include "datasets/kits19/crop.h"
#include "datasets/kits19/sample_random.h"
#include "fmt/format.h"
#include "reference/core/philox.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::kits19 {
namespace {

int64_t Numel(Shape3 s) { return s[0] * s[1] * s[2]; }

// Sequential uniforms of one Philox stream, for building test volumes.
class TestRandom {
 public:
  explicit TestRandom(uint64_t seed) : seed_(seed) {}
  double Uniform() { return core::PhiloxUniform(seed_, 0x7e57, next_++); }
  int64_t Below(int64_t n) { return std::min(n - 1, static_cast<int64_t>(Uniform() * n)); }

 private:
  uint64_t seed_;
  uint64_t next_ = 0;
};

// Ellipsoids of values 1 and 2 (later ones overwrite earlier ones, so values
// touch) and single-voxel specks, which also touch along edges and corners.
std::vector<uint8_t> BlobVolume(Shape3 shape, int blobs, double speck_density, uint64_t seed,
                                int64_t max_radius = 8) {
  TestRandom rng(seed);
  std::vector<uint8_t> label(static_cast<size_t>(Numel(shape)), 0);
  for (int b = 0; b < blobs; ++b) {
    double centre[3], radius[3];
    for (int a = 0; a < 3; ++a) {
      centre[a] = rng.Uniform() * static_cast<double>(shape[a]);
      radius[a] = 0.5 + rng.Uniform() * static_cast<double>(std::min(max_radius, shape[a] / 2));
    }
    const auto value = static_cast<uint8_t>(1 + rng.Below(2));
    for (int64_t d = 0; d < shape[0]; ++d) {
      for (int64_t h = 0; h < shape[1]; ++h) {
        for (int64_t w = 0; w < shape[2]; ++w) {
          const double x = (static_cast<double>(d) - centre[0]) / radius[0];
          const double y = (static_cast<double>(h) - centre[1]) / radius[1];
          const double z = (static_cast<double>(w) - centre[2]) / radius[2];
          if (x * x + y * y + z * z <= 1.0)
            label[static_cast<size_t>((d * shape[1] + h) * shape[2] + w)] = value;
        }
      }
    }
  }
  for (uint8_t& v : label) {
    if (rng.Uniform() < speck_density) v = static_cast<uint8_t>(1 + rng.Below(2));
  }
  return label;
}

// Blobs of values 1 and 2 guaranteed present.
std::vector<uint8_t> TwoClassVolume(Shape3 shape, int blobs, uint64_t seed, int64_t max_radius) {
  for (uint64_t s = seed;; s += 1000) {
    std::vector<uint8_t> label = BlobVolume(shape, blobs, 0.0, s, max_radius);
    if (std::count(label.begin(), label.end(), 1) && std::count(label.begin(), label.end(), 2)) {
      return label;
    }
  }
}

std::vector<float> RandomImage(Shape3 shape, uint64_t seed) {
  std::vector<float> image(static_cast<size_t>(Numel(shape)));
  for (size_t i = 0; i < image.size(); ++i) {
    image[i] = 1.0f + 2.0f * core::PhiloxUniform(seed, 0x1a9e, i);
  }
  return image;
}

// |observed frequency - p| within 5 binomial standard deviations.
void ExpectFrequency(int64_t count, int64_t n, double p, const std::string& what) {
  const double tolerance = 5.0 * std::sqrt(p * (1.0 - p) / static_cast<double>(n));
  EXPECT_NEAR(static_cast<double>(count) / static_cast<double>(n), p, tolerance)
      << what << ": " << count << " of " << n;
}

// ---------------------------------------------------------------- scipy oracle

bool HaveScipy() {
  return std::system("/usr/bin/python3 -c 'import numpy, scipy.ndimage' > /dev/null 2>&1") == 0;
}

struct OracleClass {
  int value = 0;
  std::vector<Box> boxes;
  std::vector<int> largest_default, largest_stable;
};

// Runs the oracle on the volumes and parses its records (one vector per volume).
std::vector<std::vector<OracleClass>> RunOracle(const std::vector<Shape3>& shapes,
                                                const std::vector<std::vector<uint8_t>>& labels) {
  const std::string dir = ::testing::TempDir();
  std::string command =
      fmt::format("/usr/bin/python3 {}/tests/unet3d/kits19_augment_oracle.py", MLPERF_SOURCE_DIR);
  for (size_t v = 0; v < labels.size(); ++v) {
    const std::string path = fmt::format("{}/kits19_label_{}_{}.raw", dir, ::getpid(), v);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(labels[v].data()),
               static_cast<std::streamsize>(labels[v].size()));
    command += fmt::format(" {}:{}:{}:{}", path, shapes[v][0], shapes[v][1], shapes[v][2]);
  }
  const std::string out = fmt::format("{}/kits19_oracle_{}.txt", dir, ::getpid());
  command += " > " + out;
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::vector<std::vector<OracleClass>> result;
  std::ifstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string tag;
    fields >> tag;
    if (tag == "volume") {
      result.emplace_back();
    } else if (tag == "class") {
      result.back().emplace_back();
      fields >> result.back().back().value;
    } else if (tag == "box") {
      Box b;
      for (int a = 0; a < 3; ++a) fields >> b.lo[a] >> b.hi[a];
      result.back().back().boxes.push_back(b);
    } else if (tag == "largest_default" || tag == "largest_stable") {
      std::vector<int>& kept = tag == "largest_default" ? result.back().back().largest_default
                                                        : result.back().back().largest_stable;
      for (int i; fields >> i;) kept.push_back(i);
    }
  }
  return result;
}

TEST(Kits19AugmentComponents, MatchScipyLabelAndFindObjects) {
  if (!HaveScipy()) {
    GTEST_SKIP() << "numpy/scipy missing for /usr/bin/python3 (apt-get install python3-scipy)";
  }
  std::vector<Shape3> shapes = {{23, 31, 17}, {9, 40, 33}, {1, 37, 29}, {31, 1, 13},
                                {16, 16, 16}, {12, 5, 27}, {19, 21, 23}};
  std::vector<std::vector<uint8_t>> labels = {
      BlobVolume(shapes[0], 6, 0.001, 1), BlobVolume(shapes[1], 10, 0.03, 2),
      BlobVolume(shapes[2], 4, 0.002, 3), BlobVolume(shapes[3], 3, 0.0, 4),
      BlobVolume(shapes[4], 0, 0.3, 5),  // many specks: components beyond 16, many ties
      BlobVolume(shapes[5], 5, 0.0, 6),   BlobVolume(shapes[6], 12, 0.002, 7)};
  // Three equal cubes of value 1 and two of value 2: ties under 16 components.
  shapes.push_back({10, 10, 10});
  labels.emplace_back(1000, 0);
  for (int c = 0; c < 5; ++c) {
    for (int64_t d = 0; d < 2; ++d) {
      for (int64_t h = 0; h < 2; ++h) {
        for (int64_t w = 0; w < 2; ++w) {
          labels.back()[static_cast<size_t>(((2 * c + d) * 10 + h + 3 * (c % 2)) * 10 + w)] =
              static_cast<uint8_t>(c < 3 ? 1 : 2);
        }
      }
    }
  }
  const auto oracle = RunOracle(shapes, labels);
  ASSERT_EQ(oracle.size(), labels.size());
  int compared_with_default = 0;
  for (size_t v = 0; v < labels.size(); ++v) {
    const std::vector<ClassBoxes> ours = FindComponentBoxes(labels[v].data(), shapes[v]);
    const ForegroundBoxes kept = KeepLargestBoxes(ours);
    ASSERT_EQ(ours.size(), oracle[v].size()) << "volume " << v;
    for (size_t c = 0; c < ours.size(); ++c) {
      const OracleClass& want = oracle[v][c];
      SCOPED_TRACE(fmt::format("volume {} value {}", v, want.value));
      EXPECT_EQ(ours[c].value, want.value);
      ASSERT_EQ(ours[c].boxes.size(), want.boxes.size());
      for (size_t i = 0; i < want.boxes.size(); ++i)
        EXPECT_EQ(ours[c].boxes[i], want.boxes[i]) << i;
      ASSERT_EQ(kept.classes[c].boxes.size(), want.largest_stable.size());
      for (size_t k = 0; k < want.largest_stable.size(); ++k) {
        EXPECT_EQ(kept.classes[c].boxes[k],
                  want.boxes[static_cast<size_t>(want.largest_stable[k])]);
      }
      // numpy's default argsort is an insertion sort (stable) up to 16 elements.
      if (want.boxes.size() <= 16) {
        EXPECT_EQ(want.largest_default, want.largest_stable);
        ++compared_with_default;
      }
    }
  }
  EXPECT_GE(compared_with_default, 8);
  // The speck volume really has many components per class.
  EXPECT_GT(oracle[4][0].boxes.size(), 16u);
}

TEST(Kits19AugmentComponents, SixConnectivityAndValuesApart) {
  const Shape3 shape{3, 3, 3};
  std::vector<uint8_t> label(27, 0);
  auto at = [&](int d, int h, int w) -> uint8_t& {
    return label[static_cast<size_t>((d * 3 + h) * 3 + w)];
  };
  at(0, 0, 0) = 1;  // touches the next only along an edge: separate
  at(1, 1, 0) = 1;
  at(1, 1, 1) = 1;  // face neighbour of (1,1,0): joined
  at(2, 2, 2) = 1;  // corner neighbour of (1,1,1): separate
  at(2, 2, 1) = 2;  // face neighbour of (2,2,2) but another value
  const std::vector<ClassBoxes> c = FindComponentBoxes(label.data(), shape);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].value, 1);
  ASSERT_EQ(c[0].boxes.size(), 3u);
  EXPECT_EQ(c[0].boxes[0], (Box{{0, 0, 0}, {1, 1, 1}}));
  EXPECT_EQ(c[0].boxes[1], (Box{{1, 1, 0}, {2, 2, 2}}));
  EXPECT_EQ(c[0].boxes[2], (Box{{2, 2, 2}, {3, 3, 3}}));
  EXPECT_EQ(c[1].value, 2);
  ASSERT_EQ(c[1].boxes.size(), 1u);
  EXPECT_EQ(c[1].boxes[0], (Box{{2, 2, 1}, {3, 3, 2}}));
  // A U shape is one component although its arms start as separate runs.
  std::vector<uint8_t> u(27, 0);
  for (int w = 0; w < 3; ++w) u[static_cast<size_t>(2 * 3 + w)] = 3;  // row (0, 2)
  u[0] = 3;                                                           // (0, 0, 0)
  u[3] = 3;                                                           // (0, 1, 0)
  u[2] = 3;                                                           // (0, 0, 2)
  u[5] = 3;                                                           // (0, 1, 2)
  const std::vector<ClassBoxes> one = FindComponentBoxes(u.data(), shape);
  ASSERT_EQ(one.size(), 1u);
  ASSERT_EQ(one[0].boxes.size(), 1u);
  EXPECT_EQ(one[0].boxes[0], (Box{{0, 0, 0}, {1, 3, 3}}));
}

TEST(Kits19AugmentComponents, KeepsTheTwoLargestInArgsortOrder) {
  auto cube = [](int64_t at, int64_t side) { return Box{{at, 0, 0}, {at + side, side, side}}; };
  // Volumes 8, 27, 8, 27, 1: argsort ascending keeps [1, 3] (ties: the later last).
  const ForegroundBoxes a =
      KeepLargestBoxes({{1, {cube(0, 2), cube(10, 3), cube(20, 2), cube(30, 3), cube(40, 1)}}});
  ASSERT_EQ(a.classes.size(), 1u);
  ASSERT_EQ(a.classes[0].boxes.size(), 2u);
  EXPECT_EQ(a.classes[0].boxes[0], cube(10, 3));
  EXPECT_EQ(a.classes[0].boxes[1], cube(30, 3));
  // Larger first in label order: the kept pair is [smaller, larger].
  const ForegroundBoxes b = KeepLargestBoxes({{2, {cube(0, 4), cube(10, 2)}}, {5, {cube(0, 1)}}});
  ASSERT_EQ(b.classes.size(), 2u);
  EXPECT_EQ(b.classes[0].value, 2);
  EXPECT_EQ(b.classes[0].boxes, (std::vector<Box>{cube(10, 2), cube(0, 4)}));
  EXPECT_EQ(b.classes[1].boxes, (std::vector<Box>{cube(0, 1)}));
}

// ---------------------------------------------------------------- crop windows

TEST(Kits19AugmentCrop, ForegroundWindowFollowsTheReferenceAdjust) {
  // Box [10, 14), patch 8: slack 4 split as (low_slack, 4 - low_slack).
  EXPECT_EQ(ForegroundWindowStart(10, 14, 8, 30, 0), 10);
  EXPECT_EQ(ForegroundWindowStart(10, 14, 8, 30, 3), 7);
  // Clamped at 0: the high end grows instead.
  EXPECT_EQ(ForegroundWindowStart(1, 3, 8, 30, 3), 0);
  // Clamped at the size: the low end moves back.
  EXPECT_EQ(ForegroundWindowStart(27, 29, 8, 30, 1), 22);
  // Larger than the patch: the window shrinks inside the box.
  EXPECT_EQ(ForegroundWindowStart(5, 25, 8, 30, 5), 10);
  EXPECT_EQ(ForegroundWindowStart(5, 25, 8, 30, 0), 5);
  // Exactly the patch: the box itself.
  EXPECT_EQ(ForegroundWindowStart(4, 12, 8, 30, 0), 4);
  // Every box, size and split: inside the volume, the patch wide, and around
  // the box (or inside it when the box is larger).
  for (int64_t size = 4; size <= 12; ++size) {
    for (int64_t patch = 1; patch <= size; ++patch) {
      for (int64_t lo = 0; lo < size; ++lo) {
        for (int64_t hi = lo + 1; hi <= size; ++hi) {
          const int64_t slack = std::abs(patch - (hi - lo));
          for (int64_t low_slack = 0; low_slack < std::max<int64_t>(slack, 1); ++low_slack) {
            const int64_t start = ForegroundWindowStart(lo, hi, patch, size, low_slack);
            ASSERT_GE(start, 0);
            ASSERT_LE(start + patch, size);
            if (hi - lo <= patch) {
              ASSERT_TRUE(start <= lo && hi <= start + patch) << lo << " " << hi << " " << patch;
            } else {
              ASSERT_EQ(start, lo + low_slack);  // never clamped
              ASSERT_TRUE(lo <= start && start + patch <= hi);
            }
          }
        }
      }
    }
  }
}

TEST(Kits19AugmentCrop, UniformStartNeverTakesTheLastPosition) {
  std::set<int64_t> seen;
  for (uint64_t index = 0; index < 600; ++index) {
    const SampleRandom random(11, 0, index);
    for (int axis = 0; axis < 3; ++axis) {
      const int64_t start = UniformWindowStart(10, 4, random, axis);
      ASSERT_GE(start, 0);
      ASSERT_LT(start, 6);  // randrange(10 - 4)
      seen.insert(start);
    }
    EXPECT_EQ(UniformWindowStart(7, 7, random, 0), 0);
  }
  EXPECT_EQ(seen.size(), 6u);
}

TEST(Kits19AugmentCrop, NoForegroundFallsBackToUniform) {
  const Shape3 shape{9, 10, 11}, patch{4, 4, 4};
  const std::vector<uint8_t> label(static_cast<size_t>(Numel(shape)), 0);
  const ForegroundBoxes boxes = FindForegroundBoxes(label.data(), shape);
  EXPECT_TRUE(boxes.classes.empty());
  std::set<int64_t> starts;
  for (uint64_t index = 0; index < 300; ++index) {
    const CropChoice c = ChooseCrop(shape, boxes, patch, 1.0f, SampleRandom(5, 1, index));
    ASSERT_FALSE(c.foreground);
    for (int a = 0; a < 3; ++a) {
      ASSERT_LT(c.start[a], shape[a] - patch[a]);
      starts.insert(c.start[a] * 100 + a);
    }
  }
  EXPECT_EQ(starts.size(), 5u + 6u + 7u);
}

TEST(Kits19AugmentCrop, ForegroundCropSurroundsTheChosenComponent) {
  const Shape3 shape{40, 37, 45}, patch{16, 16, 16};
  int64_t larger_than_patch = 0, crops = 0;
  std::vector<uint8_t> label_patch(static_cast<size_t>(Numel(patch)));
  for (uint64_t volume = 0; volume < 6; ++volume) {
    const std::vector<uint8_t> label = BlobVolume(shape, 7, 0.001, 100 + volume, 13);
    const ForegroundBoxes boxes = FindForegroundBoxes(label.data(), shape);
    ASSERT_FALSE(boxes.classes.empty());
    for (uint64_t index = 0; index < 300; ++index) {
      const CropChoice c = ChooseCrop(shape, boxes, patch, 1.0f, SampleRandom(volume, 2, index));
      ASSERT_TRUE(c.foreground);
      auto cls = std::find_if(boxes.classes.begin(), boxes.classes.end(),
                              [&](const ClassBoxes& b) { return b.value == c.value; });
      ASSERT_NE(cls, boxes.classes.end());
      ASSERT_GE(c.component, 0);
      ASSERT_LT(static_cast<size_t>(c.component), cls->boxes.size());
      const Box& box = cls->boxes[static_cast<size_t>(c.component)];
      bool inside_patch = true;
      for (int a = 0; a < 3; ++a) {
        ASSERT_GE(c.start[a], 0);
        ASSERT_LE(c.start[a] + patch[a], shape[a]);
        if (box.hi[a] - box.lo[a] <= patch[a]) {
          ASSERT_LE(c.start[a], box.lo[a]);
          ASSERT_GE(c.start[a] + patch[a], box.hi[a]);
        } else {
          inside_patch = false;
          ++larger_than_patch;
          ASSERT_GE(c.start[a], box.lo[a]);
          ASSERT_LE(c.start[a] + patch[a], box.hi[a]);
        }
      }
      ++crops;
      // A crop around the whole component holds its voxels.
      if (inside_patch) {
        AugmentOptions o{.patch = patch,
                         .oversampling = 1.0f,
                         .flip_prob = 0.0f,
                         .brightness_prob = 0.0f,
                         .noise_prob = 0.0f};
        std::vector<float> image(label.size(), 0.0f), image_patch(label_patch.size());
        const AugmentChoice a =
            AugmentTrainingSample(image.data(), label.data(), shape, boxes, o, volume, 2, index,
                                  image_patch.data(), label_patch.data());
        ASSERT_EQ(a.crop.start, c.start);
        ASSERT_NE(std::count(label_patch.begin(), label_patch.end(), c.value), 0);
      }
    }
  }
  EXPECT_EQ(crops, 1800);
  EXPECT_GT(larger_than_patch, 0);  // both branches of adjust were exercised
}

// ---------------------------------------------------------------- frequencies

TEST(Kits19AugmentPipeline, DecisionFrequenciesMatchTheReference) {
  const Shape3 shape{8, 8, 8};
  const AugmentOptions defaults{.patch = {4, 4, 4}};
  // Two components of each value, apart from each other.
  std::vector<uint8_t> label(512, 0);
  auto set = [&](int d, int h, int w, uint8_t v) {
    label[static_cast<size_t>((d * 8 + h) * 8 + w)] = v;
  };
  constexpr int kVoxels[][4] = {{0, 0, 0, 1}, {0, 0, 1, 1}, {7, 7, 7, 1},
                                {0, 7, 0, 2}, {7, 0, 7, 2}, {7, 0, 6, 2}};
  for (const auto& v : kVoxels) set(v[0], v[1], v[2], static_cast<uint8_t>(v[3]));
  const ForegroundBoxes boxes = FindForegroundBoxes(label.data(), shape);
  ASSERT_EQ(boxes.classes.size(), 2u);
  const std::vector<float> image = RandomImage(shape, 3);
  std::vector<float> bright(64), plain(64);
  std::vector<uint8_t> label_patch(64);
  AugmentOptions no_noise = defaults;
  no_noise.noise_prob = 0.0f;
  AugmentOptions neither = no_noise;
  neither.brightness_prob = 0.0f;
  const int64_t n = 6000;
  int64_t foreground = 0, value1 = 0, second_box = 0, brightness = 0, noise = 0;
  int64_t flips[3] = {0, 0, 0};
  double min_scale = 3.0, max_scale = 0.0;
  for (uint64_t index = 0; index < static_cast<uint64_t>(n); ++index) {
    const AugmentChoice a =
        AugmentTrainingSample(image.data(), label.data(), shape, boxes, defaults, 9, 4, index,
                              bright.data(), label_patch.data());
    foreground += a.crop.foreground;
    if (a.crop.foreground) {
      value1 += a.crop.value == 1;
      second_box += a.crop.component == 1;
    }
    for (int ax = 0; ax < 3; ++ax) flips[ax] += a.flip[ax];
    noise += a.noise;
    if (a.noise) {
      ASSERT_GE(a.noise_std, 0.0f);
      ASSERT_LT(a.noise_std, 0.1f);
    }
    if (!a.brightness) continue;
    ++brightness;
    min_scale = std::min(min_scale, a.brightness_scale);
    max_scale = std::max(max_scale, a.brightness_scale);
    ASSERT_GE(a.brightness_scale, 1.7);
    ASSERT_LT(a.brightness_scale, 2.3);
    // The image really is scaled by that factor (float64 product, cast back).
    AugmentTrainingSample(image.data(), label.data(), shape, boxes, no_noise, 9, 4, index,
                          bright.data(), label_patch.data());
    AugmentTrainingSample(image.data(), label.data(), shape, boxes, neither, 9, 4, index,
                          plain.data(), label_patch.data());
    for (size_t i = 0; i < plain.size(); ++i) {
      ASSERT_EQ(bright[i], static_cast<float>(plain[i] * a.brightness_scale));
    }
  }
  ExpectFrequency(foreground, n, 0.4, "foreground crop");
  ExpectFrequency(value1, foreground, 0.5, "class 1 of {1, 2}");
  ExpectFrequency(second_box, foreground, 0.5, "second of two boxes");
  for (int ax = 0; ax < 3; ++ax)
    ExpectFrequency(flips[ax], n, 1.0 / 3.0, fmt::format("flip {}", ax));
  ExpectFrequency(brightness, n, 0.1, "brightness");
  ExpectFrequency(noise, n, 0.1, "noise");
  EXPECT_LT(min_scale, 1.75);
  EXPECT_GT(max_scale, 2.25);
}

TEST(Kits19AugmentPipeline, NoiseIsNormalWithTheDrawnStd) {
  const Shape3 shape{20, 20, 20};
  const AugmentOptions noisy{.patch = {16, 16, 16}, .brightness_prob = 0.0f};
  AugmentOptions quiet = noisy;
  quiet.noise_prob = 0.0f;
  const std::vector<uint8_t> label = TwoClassVolume(shape, 4, 21, 5);
  const ForegroundBoxes boxes = FindForegroundBoxes(label.data(), shape);
  const std::vector<float> image = RandomImage(shape, 4);
  std::vector<float> with(4096), without(4096);
  std::vector<uint8_t> label_patch(4096);
  int64_t noisy_samples = 0, within1 = 0, within2 = 0, pooled = 0;
  for (uint64_t index = 0; index < 800; ++index) {
    const AugmentChoice a = AugmentTrainingSample(image.data(), label.data(), shape, boxes, noisy,
                                                  1, 0, index, with.data(), label_patch.data());
    if (!a.noise || a.noise_std < 1e-3f) continue;
    ++noisy_samples;
    AugmentTrainingSample(image.data(), label.data(), shape, boxes, quiet, 1, 0, index,
                          without.data(), label_patch.data());
    double sum = 0.0, sum2 = 0.0;
    for (size_t i = 0; i < with.size(); ++i) {
      const double e = static_cast<double>(with[i]) - without[i];
      sum += e;
      sum2 += e * e;
      within1 += std::abs(e) < a.noise_std;
      within2 += std::abs(e) < 2.0 * a.noise_std;
      ++pooled;
    }
    const double mean = sum / 4096.0, std = std::sqrt(sum2 / 4096.0 - mean * mean);
    EXPECT_NEAR(mean, 0.0, 5.0 * a.noise_std / 64.0) << index;
    EXPECT_NEAR(std, a.noise_std, 0.06 * a.noise_std) << index;
    EXPECT_LE(std, 0.1 * 1.06);
  }
  EXPECT_GE(noisy_samples, 40);
  ExpectFrequency(within1, pooled, 0.682689, "|noise| < sigma");
  ExpectFrequency(within2, pooled, 0.954500, "|noise| < 2 sigma");
}

// ---------------------------------------------------------------- flips, determinism

TEST(Kits19AugmentPipeline, FlipMirrorsImageAndLabelTogether) {
  const Shape3 shape{7, 9, 11};
  const AugmentOptions o{.patch = {5, 6, 4}, .brightness_prob = 0.0f, .noise_prob = 0.0f};
  std::vector<float> image(static_cast<size_t>(Numel(shape)));
  std::vector<uint8_t> label(image.size());
  for (size_t i = 0; i < image.size(); ++i) {
    image[i] = static_cast<float>(i);
    label[i] = static_cast<uint8_t>(i % 3 == 0 ? 0 : i % 251);
  }
  const ForegroundBoxes boxes = FindForegroundBoxes(label.data(), shape);
  std::vector<float> image_patch(120);
  std::vector<uint8_t> label_patch(120);
  std::set<int> flip_patterns;
  for (uint64_t index = 0; index < 200; ++index) {
    const AugmentChoice a = AugmentTrainingSample(image.data(), label.data(), shape, boxes, o, 8, 0,
                                                  index, image_patch.data(), label_patch.data());
    flip_patterns.insert(a.flip[0] * 4 + a.flip[1] * 2 + a.flip[2]);
    for (int64_t d = 0; d < 5; ++d) {
      for (int64_t h = 0; h < 6; ++h) {
        for (int64_t w = 0; w < 4; ++w) {
          const int64_t sd = a.crop.start[0] + (a.flip[0] ? 4 - d : d);
          const int64_t sh = a.crop.start[1] + (a.flip[1] ? 5 - h : h);
          const int64_t sw = a.crop.start[2] + (a.flip[2] ? 3 - w : w);
          const auto src = static_cast<size_t>((sd * shape[1] + sh) * shape[2] + sw);
          const auto dst = static_cast<size_t>((d * 6 + h) * 4 + w);
          ASSERT_EQ(image_patch[dst], image[src]) << index;
          ASSERT_EQ(label_patch[dst], label[src]) << index;
        }
      }
    }
  }
  EXPECT_EQ(flip_patterns.size(), 8u);
}

struct Output {
  std::vector<float> image;
  std::vector<uint8_t> label;
  AugmentChoice choice;
};

TEST(Kits19AugmentPipeline, DeterministicPerSampleOnAnyThreadCount) {
  const Shape3 shape{24, 26, 22};
  const AugmentOptions o{.patch = {16, 16, 16}, .brightness_prob = 0.5f, .noise_prob = 0.5f};
  const std::vector<uint8_t> label = TwoClassVolume(shape, 5, 31, 6);
  const ForegroundBoxes boxes = FindForegroundBoxes(label.data(), shape);
  const std::vector<float> image = RandomImage(shape, 5);
  constexpr int kSamples = 32;
  auto run = [&](uint64_t epoch, uint64_t index, Output* out) {
    out->image.resize(4096);
    out->label.resize(4096);
    out->choice = AugmentTrainingSample(image.data(), label.data(), shape, boxes, o, 77, epoch,
                                        index, out->image.data(), out->label.data());
  };
  std::vector<Output> sequential(kSamples), threaded(kSamples);
  for (int i = 0; i < kSamples; ++i)
    run(3, static_cast<uint64_t>(i), &sequential[static_cast<size_t>(i)]);
  // Four threads, each taking every fourth sample, last first.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = kSamples - 4 + t; i >= 0; i -= 4) {
        run(3, static_cast<uint64_t>(i), &threaded[static_cast<size_t>(i)]);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int i = 0; i < kSamples; ++i) {
    const Output& a = sequential[static_cast<size_t>(i)];
    const Output& b = threaded[static_cast<size_t>(i)];
    ASSERT_EQ(std::memcmp(a.image.data(), b.image.data(), 4096 * sizeof(float)), 0) << i;
    ASSERT_EQ(a.label, b.label) << i;
    // Another index is another sample.
    for (int j = 0; j < i; ++j) {
      EXPECT_NE(std::memcmp(a.image.data(), sequential[static_cast<size_t>(j)].image.data(),
                            4096 * sizeof(float)),
                0)
          << i << " " << j;
    }
  }
  // Another epoch draws another crop for the same sample.
  std::set<Shape3> starts;
  for (uint64_t epoch = 0; epoch < 20; ++epoch) {
    Output out;
    run(epoch, 5, &out);
    starts.insert(out.choice.crop.start);
  }
  EXPECT_GE(starts.size(), 12u);
  // Another seed too.
  Output a;
  run(3, 0, &a);
  std::vector<float> image_patch(4096);
  std::vector<uint8_t> label_patch(4096);
  AugmentTrainingSample(image.data(), label.data(), shape, boxes, o, 78, 3, 0, image_patch.data(),
                        label_patch.data());
  EXPECT_NE(std::memcmp(a.image.data(), image_patch.data(), 4096 * sizeof(float)), 0);
}

}  // namespace
}  // namespace mlperf::kits19
