#include "datasets/openimages/detection_set.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_map>

#include "absl/status/status.h"
#include "base/files.h"
#include "datasets/jpeg.h"
#include "fmt/format.h"

namespace mlperf::datasets::openimages {
namespace {

constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};
constexpr uint64_t kMaxImageBytes = uint64_t{256} << 20;

// One output index's two source indices and weights.
struct Tap {
  int64_t i0, i1;
  float w0, w1;
};

std::vector<Tap> Taps(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<Tap> taps(static_cast<size_t>(out));
  for (int64_t d = 0; d < out; ++d) {
    float src = scale * (static_cast<float>(d) + 0.5f) - 0.5f;
    if (src < 0) src = 0;
    const auto i0 = static_cast<int64_t>(src);
    const int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
    const float w1 = src - static_cast<float>(i0);
    taps[d] = {i0, i1, 1.0f - w1, w1};
  }
  return taps;
}

}  // namespace

void ResizeBilinear(const float* in, int64_t channels, int64_t in_h, int64_t in_w, float* out,
                    int64_t out_h, int64_t out_w) {
  const std::vector<Tap> rows = Taps(in_h, out_h), cols = Taps(in_w, out_w);
  for (int64_t c = 0; c < channels; ++c) {
    const float* plane = in + c * in_h * in_w;
    float* dst = out + c * out_h * out_w;
    for (int64_t y = 0; y < out_h; ++y) {
      const Tap& r = rows[y];
      const float* top = plane + r.i0 * in_w;
      const float* bottom = plane + r.i1 * in_w;
      for (int64_t x = 0; x < out_w; ++x) {
        const Tap& t = cols[x];
        dst[y * out_w + x] = r.w0 * (t.w0 * top[t.i0] + t.w1 * top[t.i1]) +
                             r.w1 * (t.w0 * bottom[t.i0] + t.w1 * bottom[t.i1]);
      }
    }
  }
}

absl::StatusOr<DetectionSet> DetectionSet::Open(const std::filesystem::path& split_dir) {
  DetectionSet set;
  set.data_dir_ = split_dir / "data";
  absl::StatusOr<coco::Dataset> annotations =
      coco::ReadDataset(split_dir / "labels" / (std::string(kLabelsName) + ".json"));
  if (!annotations.ok()) return annotations.status();
  set.annotations_ = std::move(*annotations);
  const auto& images = set.annotations_.images;
  set.order_.resize(images.size());
  std::iota(set.order_.begin(), set.order_.end(), 0);
  std::stable_sort(set.order_.begin(), set.order_.end(),
                   [&](size_t a, size_t b) { return images[a].id < images[b].id; });
  std::unordered_map<int64_t, size_t> position;
  for (size_t i = 0; i < set.order_.size(); ++i) {
    const coco::Image& image = images[set.order_[i]];
    if (image.file_name.empty())
      return absl::InvalidArgumentError(
          fmt::format("{}: image {} has no file_name", split_dir.string(), image.id));
    if (!position.emplace(image.id, i).second)
      return absl::InvalidArgumentError(
          fmt::format("{}: image id {} appears twice", split_dir.string(), image.id));
  }
  set.boxes_of_image_.resize(set.order_.size());
  for (size_t a = 0; a < set.annotations_.annotations.size(); ++a) {
    const auto it = position.find(set.annotations_.annotations[a].image_id);
    if (it != position.end()) set.boxes_of_image_[it->second].push_back(a);
  }
  for (const auto& boxes : set.boxes_of_image_)
    set.max_boxes_ = std::max<int64_t>(set.max_boxes_, static_cast<int64_t>(boxes.size()));
  return set;
}

absl::Status DetectionSet::Load(int64_t i, bool hflip, int64_t size, float* pixels,
                                DetectionSample* out) const {
  const coco::Image& image = annotations_.images[order_[i]];
  const std::filesystem::path path = data_dir_ / image.file_name;
  absl::StatusOr<std::string> bytes = base::ReadSmallFile(path, kMaxImageBytes);
  if (!bytes.ok()) return bytes.status();
  RgbImage rgb;
  if (absl::Status s = DecodeJpeg(*bytes, path.string(), {}, &rgb); !s.ok()) return s;
  const int64_t h = rgb.height, w = rgb.width;
  // ToTensor's x / 255, then (x - mean) / std, channels-first.
  std::vector<float> planes(static_cast<size_t>(3 * h * w));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const int64_t sx = hflip ? w - 1 - x : x;
      const uint8_t* p = rgb.pixels.data() + (y * w + sx) * 3;
      for (int c = 0; c < 3; ++c)
        planes[(c * h + y) * w + x] = (static_cast<float>(p[c]) / 255.0f - kMean[c]) / kStd[c];
    }
  ResizeBilinear(planes.data(), 3, h, w, pixels, size, size);

  out->image_id = image.id;
  out->height = h;
  out->width = w;
  out->boxes.clear();
  out->labels.clear();
  const float fw = static_cast<float>(w), fh = static_cast<float>(h);
  const float ratio_w = static_cast<float>(size) / fw, ratio_h = static_cast<float>(size) / fh;
  for (size_t a : boxes_of_image_[i]) {
    const coco::Annotation& ann = annotations_.annotations[a];
    // xywh to corners in fp32, clamped to the image, as ConvertCocoPolysToMask.
    const auto bx = static_cast<float>(ann.bbox[0]), by = static_cast<float>(ann.bbox[1]);
    float x1 = std::clamp(bx, 0.0f, fw), y1 = std::clamp(by, 0.0f, fh);
    float x2 = std::clamp(bx + static_cast<float>(ann.bbox[2]), 0.0f, fw);
    float y2 = std::clamp(by + static_cast<float>(ann.bbox[3]), 0.0f, fh);
    if (!(y2 > y1 && x2 > x1)) continue;
    if (hflip) {
      const float flipped_x1 = fw - x2;
      x2 = fw - x1;
      x1 = flipped_x1;
    }
    out->boxes.push_back({x1 * ratio_w, y1 * ratio_h, x2 * ratio_w, y2 * ratio_h});
    out->labels.push_back(static_cast<int32_t>(ann.category_id));
  }
  return absl::OkStatus();
}

}  // namespace mlperf::datasets::openimages
