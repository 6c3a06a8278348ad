// The demonstration's detection set, in the layout DetectionSet reads:
// JPEGs of a few solid shapes (squares, discs, triangles: the classes) in
// random colours on a noisy background, images of varied sizes, each shape's
// exact bounding box in COCO-format annotations. Deterministic in the seed.
// A second set of shapes (rings, crosses, diamonds) makes the pretext task
// its backbone is pre-trained on, as the reference's is on ImageNet.
#pragma once

#include <cstdint>
#include <filesystem>

#include "absl/status/status.h"

namespace mlperf::datasets::openimages {

struct GeneratedShapesOptions {
  int64_t train_images = 512;
  int64_t validation_images = 64;
  int min_side = 80, max_side = 128;  // image sides, drawn per image
  int min_shapes = 1, max_shapes = 3;
  // Shape sides as fractions of the image's shorter side.
  float min_fraction = 0.3f, max_fraction = 0.55f;
  uint64_t seed = 0;
  bool pretext = false;  // rings, crosses and diamonds instead
};

inline constexpr int kGeneratedClasses = 3;

// Writes <root>/{train,validation}/{data/*.jpg,labels/openimages-mlperf.json},
// creating the folders (the caller's cache marks it complete).
absl::Status WriteGeneratedShapes(const std::filesystem::path& root,
                                  const GeneratedShapesOptions& options);

}  // namespace mlperf::datasets::openimages
