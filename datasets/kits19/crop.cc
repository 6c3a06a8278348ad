#include "datasets/kits19/crop.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <utility>

#include "base/check.h"

namespace mlperf::kits19 {
namespace {

// Voxels [w0, w1) of row (d, h), all of one nonzero value.
struct Run {
  int32_t d, h, w0, w1;
  uint8_t value;
};

// Union-find over run ids whose root is always the smallest id, i.e. the run
// holding the component's first voxel in C order (scipy's label order).
class MinRootForest {
 public:
  void Add() { parent_.push_back(static_cast<uint32_t>(parent_.size())); }
  uint32_t Find(uint32_t i) {
    while (parent_[i] != i) {
      parent_[i] = parent_[parent_[i]];
      i = parent_[i];
    }
    return i;
  }
  void Union(uint32_t a, uint32_t b) {
    a = Find(a);
    b = Find(b);
    if (a < b) {
      parent_[b] = a;
    } else if (b < a) {
      parent_[a] = b;
    }
  }

 private:
  std::vector<uint32_t> parent_;
};

// First w >= from with row[w] != 0, or width; skips zeros 8 bytes at a time
// (a case's label is mostly background).
int64_t NextNonzero(const uint8_t* row, int64_t from, int64_t width) {
  int64_t w = from;
  while (w + 8 <= width) {
    uint64_t word;
    std::memcpy(&word, row + w, sizeof(word));
    if (word != 0) break;
    w += 8;
  }
  while (w < width && row[w] == 0) ++w;
  return w;
}

// Joins the runs of two face-adjacent rows that overlap in w and share a
// value (6-connectivity: no diagonal neighbours). Both ranges are sorted by w.
void JoinRows(const std::vector<Run>& runs, size_t a, size_t a_end, size_t b, size_t b_end,
              MinRootForest* forest) {
  while (a < a_end && b < b_end) {
    const Run& ra = runs[a];
    const Run& rb = runs[b];
    if (ra.w1 > rb.w0 && rb.w1 > ra.w0 && ra.value == rb.value) {
      forest->Union(static_cast<uint32_t>(a), static_cast<uint32_t>(b));
    }
    if (ra.w1 < rb.w1) {
      ++a;
    } else {
      ++b;
    }
  }
}

}  // namespace

std::vector<ClassBoxes> FindComponentBoxes(const uint8_t* label, Shape3 shape) {
  const int64_t depth = shape[0], height = shape[1], width = shape[2];
  MLPERF_CHECK(depth > 0 && height > 0 && width > 0);
  MLPERF_CHECK(depth < (int64_t{1} << 31) && height < (int64_t{1} << 31) &&
               width < (int64_t{1} << 31));
  // One pass over the rows: split each into runs and join them to the runs of
  // the previous row and of the same row in the previous slice.
  std::vector<Run> runs;
  std::vector<size_t> row_begin(static_cast<size_t>(depth * height) + 1);
  MinRootForest forest;
  for (int64_t d = 0; d < depth; ++d) {
    for (int64_t h = 0; h < height; ++h) {
      const int64_t row_index = d * height + h;
      const uint8_t* row = label + row_index * width;
      row_begin[static_cast<size_t>(row_index)] = runs.size();
      for (int64_t w = NextNonzero(row, 0, width); w < width; w = NextNonzero(row, w, width)) {
        const uint8_t value = row[w];
        const int64_t w0 = w;
        while (w < width && row[w] == value) ++w;
        MLPERF_CHECK(runs.size() < UINT32_MAX);
        runs.push_back({static_cast<int32_t>(d), static_cast<int32_t>(h), static_cast<int32_t>(w0),
                        static_cast<int32_t>(w), value});
        forest.Add();
      }
      const size_t begin = row_begin[static_cast<size_t>(row_index)], end = runs.size();
      if (h > 0) {
        JoinRows(runs, row_begin[static_cast<size_t>(row_index - 1)], begin, begin, end, &forest);
      }
      if (d > 0) {
        const auto above = static_cast<size_t>(row_index - height);
        JoinRows(runs, row_begin[above], row_begin[above + 1], begin, end, &forest);
      }
    }
  }
  // Roots come before their members, so one pass in run order numbers the
  // components in scipy's order and grows their boxes.
  std::array<std::vector<Box>, 256> boxes_by_value;
  std::vector<uint32_t> component_of(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    std::vector<Box>& boxes = boxes_by_value[r.value];
    const uint32_t root = forest.Find(static_cast<uint32_t>(i));
    if (root == i) {
      component_of[i] = static_cast<uint32_t>(boxes.size());
      boxes.push_back({{r.d, r.h, r.w0}, {r.d + 1, r.h + 1, r.w1}});
      continue;
    }
    component_of[i] = component_of[root];
    Box& box = boxes[component_of[i]];
    box.lo = {std::min<int64_t>(box.lo[0], r.d), std::min<int64_t>(box.lo[1], r.h),
              std::min<int64_t>(box.lo[2], r.w0)};
    box.hi = {std::max<int64_t>(box.hi[0], r.d + 1), std::max<int64_t>(box.hi[1], r.h + 1),
              std::max<int64_t>(box.hi[2], r.w1)};
  }
  std::vector<ClassBoxes> classes;
  for (int v = 1; v < 256; ++v) {
    if (boxes_by_value[v].empty()) continue;
    classes.push_back({static_cast<uint8_t>(v), std::move(boxes_by_value[v])});
  }
  return classes;
}

ForegroundBoxes KeepLargestBoxes(std::vector<ClassBoxes> components) {
  ForegroundBoxes result;
  for (ClassBoxes& c : components) {
    std::vector<size_t> order(c.boxes.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return c.boxes[a].Volume() < c.boxes[b].Volume(); });
    ClassBoxes kept{c.value, {}};
    for (size_t k = order.size() - std::min<size_t>(order.size(), 2); k < order.size(); ++k) {
      kept.boxes.push_back(c.boxes[order[k]]);
    }
    result.classes.push_back(std::move(kept));
  }
  return result;
}

ForegroundBoxes FindForegroundBoxes(const uint8_t* label, Shape3 shape) {
  return KeepLargestBoxes(FindComponentBoxes(label, shape));
}

int64_t ForegroundWindowStart(int64_t box_lo, int64_t box_hi, int64_t patch, int64_t size,
                              int64_t low_slack) {
  MLPERF_CHECK(0 <= box_lo && box_lo < box_hi && box_hi <= size && patch <= size);
  const int64_t extent = box_hi - box_lo;
  // +1: the window grows outwards around a small box; -1: it shrinks inside a large one.
  const int64_t sign = patch < extent ? -1 : 1;
  const int64_t slack = sign * (patch - extent);
  MLPERF_CHECK(0 <= low_slack && (low_slack < slack || low_slack == 0));
  int64_t low = std::max<int64_t>(0, box_lo - sign * low_slack);
  const int64_t high = std::min(size, box_hi + sign * (slack - low_slack));
  // Clamping can only narrow a growing window; the reference shifts it back to
  // the patch width, away from the edge it hit (the high end moves when low is 0).
  const int64_t missing = patch - (high - low);
  if (missing > 0 && low != 0) low -= missing;
  return low;
}

int64_t UniformWindowStart(int64_t size, int64_t patch, const SampleRandom& random, int axis) {
  MLPERF_CHECK(patch <= size);
  return random.RandRange(AxisDecision(Decision::kCropAxis0, axis), size - patch);
}

CropChoice ChooseCrop(Shape3 shape, const ForegroundBoxes& boxes, Shape3 patch, float oversampling,
                      const SampleRandom& random) {
  CropChoice choice;
  const bool have_foreground = !boxes.classes.empty();
  if (have_foreground && random.Uniform(Decision::kOversample) < oversampling) {
    const auto class_index = static_cast<size_t>(
        random.RandRange(Decision::kClass, static_cast<int64_t>(boxes.classes.size())));
    const ClassBoxes& c = boxes.classes[class_index];
    MLPERF_CHECK(!c.boxes.empty());
    choice.foreground = true;
    choice.value = c.value;
    choice.component = static_cast<int>(
        random.RandRange(Decision::kComponent, static_cast<int64_t>(c.boxes.size())));
    const Box& box = c.boxes[static_cast<size_t>(choice.component)];
    for (int axis = 0; axis < 3; ++axis) {
      const int64_t slack = std::abs(patch[axis] - (box.hi[axis] - box.lo[axis]));
      const int64_t low_slack = random.RandRange(AxisDecision(Decision::kCropAxis0, axis), slack);
      choice.start[axis] =
          ForegroundWindowStart(box.lo[axis], box.hi[axis], patch[axis], shape[axis], low_slack);
    }
    return choice;
  }
  for (int axis = 0; axis < 3; ++axis) {
    choice.start[axis] = UniformWindowStart(shape[axis], patch[axis], random, axis);
  }
  return choice;
}

}  // namespace mlperf::kits19
