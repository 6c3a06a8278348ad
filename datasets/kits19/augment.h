// The 3D U-Net training augmentation, one sample at a time (references.md 3.4;
// pytorch_loader.py get_train_transforms): RandBalancedCrop, RandFlip,
// RandomBrightnessAugmentation, GaussianNoise, in the reference's order.
//
// Every draw comes from Philox keyed by (seed, epoch, index) (sample_random.h),
// so a sample is bit-identical however many threads the loader runs.
#pragma once

#include <array>
#include <cstdint>

#include "datasets/kits19/crop.h"

namespace mlperf::kits19 {

struct AugmentOptions {
  Shape3 patch{128, 128, 128};
  float oversampling = 0.4f;       // --oversampling (fixed to the reference)
  float flip_prob = 1.0f / 3.0f;   // RandFlip: 1 / number of spatial axes
  float brightness_prob = 0.1f;    // RandomBrightnessAugmentation(factor=0.3, prob=0.1)
  float brightness_factor = 0.3f;  //
  float noise_prob = 0.1f;         // GaussianNoise(mean=0, std=0.1, prob=0.1)
  float noise_std = 0.1f;          //
};

// What was drawn for one sample.
struct AugmentChoice {
  CropChoice crop;
  std::array<bool, 3> flip{};
  bool brightness = false;
  double brightness_scale = 1.0;  // 1 + U(1 - factor, 1 + factor): the reference's 1.7-2.3
  bool noise = false;
  float noise_std = 0.0f;  // sigma ~ U(0, std) of the N(0, sigma^2) noise
};

// Crops, flips and perturbs one case (image float32, label uint8, both of
// `shape` in C order, every axis >= options.patch) into patch-sized outputs in
// C order. `boxes` is FindForegroundBoxes of this label; `index` tells this
// sample apart from the others of `epoch`. Allocates nothing.
AugmentChoice AugmentTrainingSample(const float* image, const uint8_t* label, Shape3 shape,
                                    const ForegroundBoxes& boxes, const AugmentOptions& options,
                                    uint64_t seed, uint64_t epoch, uint64_t index,
                                    float* image_patch, uint8_t* label_patch);

}  // namespace mlperf::kits19
