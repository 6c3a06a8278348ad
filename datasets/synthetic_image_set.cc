#include "datasets/synthetic_image_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "datasets/jpeg.h"
#include "datasets/tfrecord.h"
#include "reference/core/philox.h"

namespace mlperf::datasets {
namespace fs = std::filesystem;
namespace {

constexpr int kShapes = 4;  // disc, square, triangle, ring
constexpr const char* kManifestName = "SYNTHETIC_MANIFEST";

// Sequential uniforms from one Philox stream per image.
class Draws {
 public:
  Draws(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}
  float Uniform() { return core::PhiloxUniform(seed_, stream_, next_++); }
  float Uniform(float lo, float hi) { return lo + (hi - lo) * Uniform(); }

 private:
  uint64_t seed_, stream_, next_ = 0;
};

struct Rgb {
  float r, g, b;
};

Rgb FromHsv(float h, float s, float v) {
  h = h - std::floor(h);
  const float c = v * s, x = c * (1 - std::fabs(std::fmod(h * 6, 2.0f) - 1)), m = v - c;
  const int sector = static_cast<int>(h * 6) % 6;
  const Rgb table[6] = {{c, x, 0}, {x, c, 0}, {0, c, x}, {0, x, c}, {x, 0, c}, {c, 0, x}};
  const Rgb t = table[sector];
  return {(t.r + m) * 255, (t.g + m) * 255, (t.b + m) * 255};
}

// Signed inside test of the class shape, in coordinates relative to its
// centre and scaled by its radius.
bool Inside(int shape, float u, float v) {
  switch (shape) {
    case 0:
      return u * u + v * v <= 1.0f;
    case 1:
      return std::fabs(u) <= 0.8f && std::fabs(v) <= 0.8f;
    case 2:
      return v <= 0.8f && v >= -1.0f + 0.0f && std::fabs(u) <= (v + 1.0f) * 0.55f;
    default: {
      const float r2 = u * u + v * v;
      return r2 <= 1.0f && r2 >= 0.45f;
    }
  }
}

std::string Manifest(const SyntheticImageSetOptions& o) {
  return fmt::format(
      "mlperf synthetic image set v1\nnum_classes {}\ntrain_per_class {}\nval_per_class {}\n"
      "image_size {}\nseed {}\ntfrecord_shards {}\njpeg_quality {}\n",
      o.num_classes, o.train_per_class, o.val_per_class, o.image_size, o.seed, o.tfrecord_shards,
      o.jpeg_quality);
}

absl::Status WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::DataLossError(fmt::format("{}: write failed", path.string()));
  return absl::OkStatus();
}

// Image ids: train images first, then val, so every image has its own stream.
uint64_t ImageId(const SyntheticImageSetOptions& o, bool train, int label, int i) {
  const uint64_t train_total = static_cast<uint64_t>(o.num_classes) * o.train_per_class;
  return train ? static_cast<uint64_t>(label) * o.train_per_class + i
               : train_total + static_cast<uint64_t>(label) * o.val_per_class + i;
}

}  // namespace

std::vector<uint8_t> SyntheticImage(const SyntheticImageSetOptions& o, int label,
                                    uint64_t image_id) {
  const int s = o.image_size;
  Draws d(o.seed, image_id);
  const int shape = label % kShapes;
  const int families = (o.num_classes + kShapes - 1) / kShapes;
  const float hue = static_cast<float>(label / kShapes) / families + d.Uniform(-0.03f, 0.03f);
  const Rgb fg = FromHsv(hue, d.Uniform(0.65f, 1.0f), d.Uniform(0.65f, 1.0f));
  // Background: a greyish gradient between two random tones.
  const Rgb bg0 = FromHsv(d.Uniform(), d.Uniform(0.0f, 0.25f), d.Uniform(0.15f, 0.85f));
  const Rgb bg1 = FromHsv(d.Uniform(), d.Uniform(0.0f, 0.25f), d.Uniform(0.15f, 0.85f));
  const float angle = d.Uniform(0.0f, 6.2831853f);
  const float gx = std::cos(angle), gy = std::sin(angle);
  const float radius = d.Uniform(0.22f, 0.38f) * s;
  const float cx = d.Uniform(0.35f, 0.65f) * s, cy = d.Uniform(0.35f, 0.65f) * s;
  const float noise = d.Uniform(4.0f, 16.0f);
  const uint64_t noise_stream = image_id | (uint64_t{1} << 62);
  std::vector<uint8_t> pixels(static_cast<size_t>(s) * s * 3);
  for (int y = 0; y < s; ++y) {
    for (int x = 0; x < s; ++x) {
      const float t =
          std::clamp(0.5f + ((x - s * 0.5f) * gx + (y - s * 0.5f) * gy) / s, 0.0f, 1.0f);
      Rgb c{bg0.r + t * (bg1.r - bg0.r), bg0.g + t * (bg1.g - bg0.g), bg0.b + t * (bg1.b - bg0.b)};
      if (Inside(shape, (x + 0.5f - cx) / radius, (y + 0.5f - cy) / radius)) c = fg;
      const size_t o3 = (static_cast<size_t>(y) * s + x) * 3;
      const uint64_t pixel = static_cast<uint64_t>(y) * s + x;
      const core::Philox4x32 r = core::PhiloxBlock(o.seed, noise_stream, pixel);
      const float vals[3] = {c.r, c.g, c.b};
      for (int ch = 0; ch < 3; ++ch) {
        const float n = (core::UniformFromBits(r.v[ch]) - 0.5f) * 2.0f * noise;
        pixels[o3 + ch] = static_cast<uint8_t>(std::clamp(std::lround(vals[ch] + n), 0L, 255L));
      }
    }
  }
  return pixels;
}

absl::Status WriteSyntheticImageSet(const std::string& root, const SyntheticImageSetOptions& o) {
  if (o.num_classes < 1 || o.train_per_class < 1 || o.val_per_class < 1 || o.image_size < 8 ||
      o.tfrecord_shards < 0 || o.jpeg_quality < 1 || o.jpeg_quality > 100) {
    return absl::InvalidArgumentError("WriteSyntheticImageSet: invalid options");
  }
  const std::string manifest = Manifest(o);
  const fs::path manifest_path = fs::path(root) / kManifestName;
  std::error_code ec;
  if (fs::exists(root, ec)) {
    if (fs::exists(manifest_path, ec)) {
      std::ifstream in(manifest_path);
      std::stringstream existing;
      existing << in.rdbuf();
      if (existing.str() == manifest) return absl::OkStatus();
      return absl::AlreadyExistsError(
          fmt::format("{}: holds a different synthetic set ({}); remove it or choose another root",
                      root, manifest_path.string()));
    }
    if (!fs::is_directory(root, ec) || !fs::is_empty(root, ec)) {
      return absl::FailedPreconditionError(
          fmt::format("{}: exists without {} (an interrupted write or other data); remove it first",
                      root, kManifestName));
    }
  }
  const char* split_dirs[2] = {"train", "val"};
  for (int split = 0; split < 2; ++split) {
    const bool train = split == 0;
    const int per_class = train ? o.train_per_class : o.val_per_class;
    const int total = o.num_classes * per_class;
    std::vector<TfRecordWriter> shards;
    for (int k = 0; k < o.tfrecord_shards; ++k) {
      fs::create_directories(root, ec);
      absl::StatusOr<TfRecordWriter> w = TfRecordWriter::Open(
          (fs::path(root) /
           fmt::format("{}-{:05d}-of-{:05d}", train ? "train" : "validation", k, o.tfrecord_shards))
              .string());
      if (!w.ok()) return w.status();
      shards.push_back(*std::move(w));
    }
    for (int label = 0; label < o.num_classes; ++label) {
      const fs::path class_dir = fs::path(root) / split_dirs[split] / fmt::format("c{:04d}", label);
      if (shards.empty() && !fs::create_directories(class_dir, ec) && ec) {
        return absl::PermissionDeniedError(
            fmt::format("{}: cannot create: {}", class_dir.string(), ec.message()));
      }
      for (int i = 0; i < per_class; ++i) {
        const uint64_t id = ImageId(o, train, label, i);
        RgbImage image{o.image_size, o.image_size, 0, 0, SyntheticImage(o, label, id)};
        absl::StatusOr<std::string> jpeg = EncodeJpeg(image, o.jpeg_quality);
        if (!jpeg.ok()) return jpeg.status();
        if (shards.empty()) {
          const fs::path file = class_dir / fmt::format("{}_{:06d}.JPEG", split_dirs[split], i);
          if (absl::Status s = WriteFile(file, *jpeg); !s.ok()) return s;
        } else {
          // Contiguous chunks of the class-major order, like sorted file lists.
          const int64_t position = static_cast<int64_t>(label) * per_class + i;
          auto& shard = shards[static_cast<size_t>(position * o.tfrecord_shards / total)];
          if (absl::Status s = shard.Write(MakeImageExample(*jpeg, label + 1)); !s.ok()) return s;
        }
      }
    }
    for (TfRecordWriter& w : shards) {
      if (absl::Status s = w.Close(); !s.ok()) return s;
    }
  }
  const fs::path tmp = fs::path(root) / (std::string(kManifestName) + ".tmp");
  if (absl::Status s = WriteFile(tmp, manifest); !s.ok()) return s;
  fs::rename(tmp, manifest_path, ec);
  if (ec) {
    return absl::DataLossError(
        fmt::format("{}: cannot finish: {}", manifest_path.string(), ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace mlperf::datasets
