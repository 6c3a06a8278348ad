// A generated, learnable image-classification set written as real JPEG files,
// for tests, benchmarks and quick end-to-end runs without ImageNet.
//
// Class c draws a shape (disc, square, triangle, ring: c % 4) in a colour
// family (c / 4) on a noisy low-saturation gradient background, at a random
// position and size. Colour alone does not separate classes that share a
// family, so a model has to learn shapes; objects are large enough to survive
// a 10%-area random crop and a 32 px resize.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace mlperf::datasets {

struct SyntheticImageSetOptions {
  int num_classes = 10;
  int train_per_class = 200;
  int val_per_class = 50;
  int image_size = 64;
  uint64_t seed = 1;
  // 0: ImageNet folder layout. > 0: that many TFRecord shards per split
  // (root/train-00000-of-0000N, root/validation-...), labels 1-based.
  int tfrecord_shards = 0;
  int jpeg_quality = 90;
};

// Writes the set under `root` (root/train/<class>/*.JPEG, root/val/<class>/*.JPEG
// with class directories c0000, c0001, ...), deterministic for the options.
// The manifest root/SYNTHETIC_MANIFEST is written last: an existing root with
// the same manifest is accepted as is (OK, nothing written); a different
// manifest, or a non-empty root without one (an interrupted write or some
// other data), is refused with an error.
absl::Status WriteSyntheticImageSet(const std::string& root,
                                    const SyntheticImageSetOptions& options);

// The RGB pixels of one generated image (image_size^2 * 3), for tests.
std::vector<uint8_t> SyntheticImage(const SyntheticImageSetOptions& options, int label,
                                    uint64_t image_id);

}  // namespace mlperf::datasets
