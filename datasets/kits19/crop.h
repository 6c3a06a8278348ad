// RandBalancedCrop of the 3D U-Net reference (references.md 3.4, step 1;
// pytorch_loader.py): with probability `oversampling` a window around one of
// the two largest connected components of a random foreground class, else a
// uniform window. Volumes are single-channel, C order (D, H, W), and at least
// the patch size on every axis (preprocessing pads to 128).
//
// The components depend only on the label volume, so a loader computes them
// once per case (FindForegroundBoxes) and every crop of that case reuses them.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "datasets/kits19/sample_random.h"

namespace mlperf::kits19 {

using Shape3 = std::array<int64_t, 3>;

// A bounding box, half-open [lo, hi) per axis, as scipy.ndimage.find_objects' slices.
struct Box {
  Shape3 lo{}, hi{};
  int64_t Volume() const { return (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]); }
  bool operator==(const Box&) const = default;
};

// The component boxes of one label value.
struct ClassBoxes {
  uint8_t value = 0;
  std::vector<Box> boxes;
};

// Every connected component of (label == v) for each value v > 0 present,
// values ascending (np.unique). Components are 6-connected (scipy.ndimage.label's
// default structure) and listed in scipy's label order, i.e. by their first
// voxel in C order; each box is that component's find_objects box.
std::vector<ClassBoxes> FindComponentBoxes(const uint8_t* label, Shape3 shape);

// What the foreground crop chooses among: per class present, the boxes of
// np.argsort(volumes)[-2:] in that order (the larger last). Ties go to the later
// component, as a stable sort: numpy's default argsort is an insertion sort up
// to 16 elements, so this is exact there; beyond 16 its tie order depends on the
// numpy version and CPU (introsort, or the AVX-512 sort from 1.25 on).
struct ForegroundBoxes {
  std::vector<ClassBoxes> classes;
};

ForegroundBoxes KeepLargestBoxes(std::vector<ClassBoxes> components);
ForegroundBoxes FindForegroundBoxes(const uint8_t* label, Shape3 shape);

struct CropChoice {
  bool foreground = false;
  uint8_t value = 0;   // the class a foreground crop centres on
  int component = -1;  // index into that class's boxes
  Shape3 start{};      // the window is [start, start + patch) on each axis
};

// The reference's `adjust` for one axis of a foreground crop: the slack
// |patch - extent| is split at random, `low_slack` (randrange(slack)) before
// the box and the rest after it; a box smaller than the patch grows the window
// outwards, clamped to [0, size) and then shifted back to the patch width; a
// larger box shrinks it inwards. Returns the window start.
int64_t ForegroundWindowStart(int64_t box_lo, int64_t box_hi, int64_t patch, int64_t size,
                              int64_t low_slack);

// Start of a uniform crop on one axis: randrange(size - patch), so the last
// possible start size - patch is never drawn (0 when size == patch).
int64_t UniformWindowStart(int64_t size, int64_t patch, const SampleRandom& random, int axis);

// The whole RandBalancedCrop decision. With no foreground at all it takes the
// uniform crop (the reference's np.random.choice would raise there).
CropChoice ChooseCrop(Shape3 shape, const ForegroundBoxes& boxes, Shape3 patch, float oversampling,
                      const SampleRandom& random);

}  // namespace mlperf::kits19
