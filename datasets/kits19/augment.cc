#include "datasets/kits19/augment.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "datasets/kits19/sample_random.h"

namespace mlperf::kits19 {
namespace {

// Copies the window [start, start + patch) of a C-order volume, mirrored on
// the flipped axes: the crop and RandFlip's np.flip in one pass.
template <typename T>
void CropAndFlip(const T* src, Shape3 shape, Shape3 start, Shape3 patch,
                 const std::array<bool, 3>& flip, T* dst) {
  for (int64_t d = 0; d < patch[0]; ++d) {
    const int64_t sd = start[0] + (flip[0] ? patch[0] - 1 - d : d);
    for (int64_t h = 0; h < patch[1]; ++h) {
      const int64_t sh = start[1] + (flip[1] ? patch[1] - 1 - h : h);
      const T* in = src + (sd * shape[1] + sh) * shape[2] + start[2];
      T* out = dst + (d * patch[1] + h) * patch[2];
      if (flip[2]) {
        std::reverse_copy(in, in + patch[2], out);
      } else {
        std::memcpy(out, in, static_cast<size_t>(patch[2]) * sizeof(T));
      }
    }
  }
}

}  // namespace

AugmentChoice AugmentTrainingSample(const float* image, const uint8_t* label, Shape3 shape,
                                    const ForegroundBoxes& boxes, const AugmentOptions& options,
                                    uint64_t seed, uint64_t epoch, uint64_t index,
                                    float* image_patch, uint8_t* label_patch) {
  const Shape3& patch = options.patch;
  for (int axis = 0; axis < 3; ++axis) {
    MLPERF_CHECK_MSG(0 < patch[axis] && patch[axis] <= shape[axis],
                     "the volume must be at least the patch size on every axis");
  }
  const SampleRandom random(seed, epoch, index);
  AugmentChoice choice;
  choice.crop = ChooseCrop(shape, boxes, patch, options.oversampling, random);
  for (int axis = 0; axis < 3; ++axis) {
    choice.flip[axis] =
        random.Uniform(AxisDecision(Decision::kFlipAxis0, axis)) < options.flip_prob;
  }
  CropAndFlip(image, shape, choice.crop.start, patch, choice.flip, image_patch);
  CropAndFlip(label, shape, choice.crop.start, patch, choice.flip, label_patch);

  const int64_t n = patch[0] * patch[1] * patch[2];
  if (random.Uniform(Decision::kBrightness) < options.brightness_prob) {
    // The reference multiplies by 1 + U(1 - f, 1 + f), not by U(1 - f, 1 + f),
    // in float64 and casts back to float32.
    const double factor =
        random.UniformDouble(Decision::kBrightnessFactor, 1.0 - options.brightness_factor,
                             1.0 + options.brightness_factor);
    choice.brightness = true;
    choice.brightness_scale = 1.0 + factor;
    for (int64_t i = 0; i < n; ++i) {
      image_patch[i] = static_cast<float>(image_patch[i] * choice.brightness_scale);
    }
  }
  if (random.Uniform(Decision::kNoise) < options.noise_prob) {
    choice.noise = true;
    choice.noise_std =
        static_cast<float>(random.UniformDouble(Decision::kNoiseStd, 0.0, options.noise_std));
    float z[4];
    for (int64_t i = 0; i < n; i += 4) {
      random.Normals4(static_cast<uint64_t>(i), z);
      const int64_t m = std::min<int64_t>(4, n - i);
      for (int64_t k = 0; k < m; ++k) image_patch[i + k] += choice.noise_std * z[k];
    }
  }
  return choice;
}

}  // namespace mlperf::kits19
