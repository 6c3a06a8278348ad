#include "datasets/openimages/generated.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/files.h"
#include "base/json.h"
#include "datasets/jpeg.h"
#include "datasets/openimages/detection_set.h"
#include "fmt/format.h"
#include "reference/core/philox.h"

namespace mlperf::datasets::openimages {
namespace {

namespace fs = std::filesystem;

constexpr const char* kClassNames[2][kGeneratedClasses] = {{"square", "disc", "triangle"},
                                                           {"ring", "cross", "diamond"}};

// Draws from one Philox stream per image.
class Draws {
 public:
  Draws(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}
  float Uniform() { return core::PhiloxUniform(seed_, stream_, next_++); }
  int Int(int lo, int hi) {  // [lo, hi]
    return std::min(hi, lo + static_cast<int>(Uniform() * static_cast<float>(hi - lo + 1)));
  }

 private:
  uint64_t seed_, stream_, next_ = 0;
};

struct Shape {
  int kind;
  int x, y, side;  // bounding square
};

bool Inside(const Shape& s, int px, int py) {
  const float u = (static_cast<float>(px - s.x) + 0.5f) / static_cast<float>(s.side);
  const float v = (static_cast<float>(py - s.y) + 0.5f) / static_cast<float>(s.side);
  if (u < 0 || u >= 1 || v < 0 || v >= 1) return false;
  const float du = std::fabs(u - 0.5f), dv = std::fabs(v - 0.5f), r2 = du * du + dv * dv;
  switch (s.kind) {
    case 0:
      return true;
    case 1:
      return r2 <= 0.25f;
    case 2:  // apex at the top centre, base along the bottom
      return du <= 0.5f * v;
    case 3:  // a ring a fifth of the side thick
      return r2 <= 0.25f && r2 >= 0.09f;
    case 4:  // a plus sign, bars a third of the side wide
      return du <= 1.0f / 6 || dv <= 1.0f / 6;
    default:  // corners at the edges' midpoints
      return du + dv <= 0.5f;
  }
}

absl::Status WriteSplit(const fs::path& dir, int64_t images, uint64_t stream_base,
                        const GeneratedShapesOptions& o) {
  std::error_code ec;
  fs::create_directories(dir / "data", ec);
  if (!ec) fs::create_directories(dir / "labels", ec);
  if (ec) return absl::PermissionDeniedError(fmt::format("{}: {}", dir.string(), ec.message()));
  json::Array image_list, annotation_list, categories;
  for (int k = 0; k < kGeneratedClasses; ++k)
    categories.push_back(json::Object{{"id", k}, {"name", kClassNames[o.pretext][k]}});
  int64_t next_annotation = 1;
  for (int64_t i = 0; i < images; ++i) {
    Draws d(o.seed, stream_base + static_cast<uint64_t>(i));
    RgbImage img;
    img.width = d.Int(o.min_side, o.max_side);
    img.height = d.Int(o.min_side, o.max_side);
    img.pixels.resize(static_cast<size_t>(img.width * img.height * 3));
    for (auto& p : img.pixels) p = static_cast<uint8_t>(40 + d.Int(0, 40));
    // Shapes that do not overlap: a few tries each.
    std::vector<Shape> shapes;
    const int count = d.Int(o.min_shapes, o.max_shapes);
    const int shorter = std::min(img.width, img.height);
    for (int tries = 0; tries < 20 && static_cast<int>(shapes.size()) < count; ++tries) {
      Shape s;
      s.kind = d.Int(0, kGeneratedClasses - 1) + (o.pretext ? kGeneratedClasses : 0);
      s.side = static_cast<int>(static_cast<float>(shorter) *
                                (o.min_fraction + (o.max_fraction - o.min_fraction) * d.Uniform()));
      s.x = d.Int(0, img.width - s.side);
      s.y = d.Int(0, img.height - s.side);
      bool clear = true;
      for (const Shape& t : shapes)
        clear = clear && (s.x + s.side <= t.x || t.x + t.side <= s.x || s.y + s.side <= t.y ||
                          t.y + t.side <= s.y);
      if (clear) shapes.push_back(s);
    }
    for (const Shape& s : shapes) {
      const uint8_t colour[3] = {static_cast<uint8_t>(120 + d.Int(0, 135)),
                                 static_cast<uint8_t>(120 + d.Int(0, 135)),
                                 static_cast<uint8_t>(120 + d.Int(0, 135))};
      for (int py = s.y; py < s.y + s.side; ++py)
        for (int px = s.x; px < s.x + s.side; ++px)
          if (Inside(s, px, py))
            std::copy(colour, colour + 3, img.pixels.begin() + (py * img.width + px) * 3);
      const double bbox[4] = {static_cast<double>(s.x), static_cast<double>(s.y),
                              static_cast<double>(s.side), static_cast<double>(s.side)};
      annotation_list.push_back(
          json::Object{{"id", next_annotation++},
                       {"image_id", i + 1},
                       {"category_id", s.kind % kGeneratedClasses},
                       {"bbox", json::Array{bbox[0], bbox[1], bbox[2], bbox[3]}},
                       {"area", bbox[2] * bbox[3]},
                       {"iscrowd", 0}});
    }
    absl::StatusOr<std::string> jpeg = EncodeJpeg(img, 95);
    if (!jpeg.ok()) return jpeg.status();
    const std::string name = fmt::format("{:06d}.jpg", i + 1);
    if (absl::Status s = base::WriteFileAtomically(dir / "data" / name, *jpeg); !s.ok()) return s;
    image_list.push_back(json::Object{
        {"id", i + 1}, {"file_name", name}, {"width", img.width}, {"height", img.height}});
  }
  const json::Value root(json::Object{{"images", std::move(image_list)},
                                      {"annotations", std::move(annotation_list)},
                                      {"categories", std::move(categories)}});
  return base::WriteFileAtomically(dir / "labels" / (std::string(kLabelsName) + ".json"),
                                   json::Dump(root));
}

}  // namespace

absl::Status WriteGeneratedShapes(const fs::path& root, const GeneratedShapesOptions& options) {
  if (absl::Status s = WriteSplit(root / "train", options.train_images, 0, options); !s.ok())
    return s;
  return WriteSplit(root / "validation", options.validation_images, uint64_t{1} << 32, options);
}

}  // namespace mlperf::datasets::openimages
