#include "datasets/kits19/prepare.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "datasets/kits19/npy.h"
#include "datasets/kits19/resample.h"
#include "fmt/format.h"

namespace mlperf::kits19 {
namespace {

constexpr float kMinHu = -79.0f, kMaxHu = 304.0f, kMean = 101.0f, kStd = 76.9f;

// Edge padding of a C-order volume to `to`, `before` voxels ahead per axis.
template <typename T>
std::vector<T> PadEdge(const std::vector<T>& in, const Shape3& s, const Shape3& to,
                       const Shape3& before) {
  std::vector<T> out(static_cast<size_t>(to[0] * to[1] * to[2]));
  auto clamp = [](int64_t v, int64_t n) { return std::clamp<int64_t>(v, 0, n - 1); };
  for (int64_t z = 0; z < to[0]; ++z)
    for (int64_t y = 0; y < to[1]; ++y) {
      const T* src =
          in.data() + (clamp(z - before[0], s[0]) * s[1] + clamp(y - before[1], s[1])) * s[2];
      T* row = out.data() + (z * to[1] + y) * to[2];
      for (int64_t x = 0; x < to[2]; ++x) row[x] = src[clamp(x - before[2], s[2])];
    }
  return out;
}

std::vector<std::filesystem::path> CaseFolders(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> cases;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && name.size() == 10 && name.starts_with("case_"))
      cases.push_back(e.path());
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

}  // namespace

absl::StatusOr<PreparedCase> PrepareCase(const NiftiVolume& image, const NiftiVolume& label,
                                         const PrepareOptions& o, const std::string& name) {
  if (image.shape != label.shape) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: segmentation is {}x{}x{} but imaging is {}x{}x{}", name, label.shape[0],
        label.shape[1], label.shape[2], image.shape[0], image.shape[1], image.shape[2]));
  }
  PreparedCase c;
  c.shape = image.shape;
  c.image = image.voxels;
  c.label.resize(label.voxels.size());
  for (size_t i = 0; i < label.voxels.size(); ++i) {
    const float v = label.voxels[i];
    if (v != 0.0f && v != 1.0f && v != 2.0f) {
      return absl::InvalidArgumentError(
          fmt::format("{}: segmentation value {}, expected 0, 1 or 2", name, v));
    }
    c.label[i] = static_cast<uint8_t>(v);
  }
  // The reference compares the header's float32 spacing with the target and
  // truncates spacing / target * shape (float64) to the new shape.
  if (image.spacing != o.target_spacing) {
    Shape3 to;
    for (int a = 0; a < 3; ++a) {
      to[a] = static_cast<int64_t>(image.spacing[a] / o.target_spacing[a] *
                                   static_cast<double>(image.shape[a]));
      if (to[a] < 1) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: spacing {} mm on axis {} resamples to no voxels", name, image.spacing[a], a));
      }
    }
    c.image = ResampleTrilinear(c.image.data(), c.shape, to);
    c.label = ResampleNearest(c.label.data(), c.shape, to);
    c.shape = to;
  }
  for (float& x : c.image) x = (std::clamp(x, kMinHu, kMaxHu) - kMean) / kStd;
  Shape3 to = c.shape, before{};
  for (int a = 0; a < 3; ++a) {
    const int64_t missing = std::max<int64_t>(0, o.min_size - c.shape[a]);
    before[a] = missing / 2;
    to[a] = c.shape[a] + missing;
  }
  if (to != c.shape) {
    c.image = PadEdge(c.image, c.shape, to, before);
    c.label = PadEdge(c.label, c.shape, to, before);
    c.shape = to;
  }
  return c;
}

absl::Status PrepareTree(const std::filesystem::path& kits_root,
                         const std::filesystem::path& out_dir, const PrepareOptions& options,
                         int threads) {
  std::vector<std::filesystem::path> cases = CaseFolders(kits_root);
  if (cases.empty()) cases = CaseFolders(kits_root / "data");
  if (cases.empty()) {
    return absl::NotFoundError(
        fmt::format("{}: no case_XXXXX folders (the KiTS19 tree)", kits_root.string()));
  }
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        fmt::format("{}: cannot create: {}", out_dir.string(), ec.message()));
  }
  std::vector<absl::Status> errors(cases.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < cases.size(); i = next++) {
      const std::string name = cases[i].filename().string();
      absl::StatusOr<NiftiVolume> image = ReadNifti(cases[i] / "imaging.nii.gz");
      absl::StatusOr<NiftiVolume> label =
          image.ok() ? ReadNifti(cases[i] / "segmentation.nii.gz") : image.status();
      if (!label.ok()) {
        errors[i] = label.status();
        continue;
      }
      absl::StatusOr<PreparedCase> c = PrepareCase(*image, *label, options, cases[i].string());
      if (!c.ok()) {
        errors[i] = c.status();
        continue;
      }
      const std::vector<int64_t> shape = {1, c->shape[0], c->shape[1], c->shape[2]};
      errors[i] = WriteNpy(out_dir / (name + "_x.npy"), "<f4", shape, c->image.data());
      if (errors[i].ok())
        errors[i] = WriteNpy(out_dir / (name + "_y.npy"), "|u1", shape, c->label.data());
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const absl::Status& e : errors) {
    if (!e.ok()) return e;
  }
  return absl::OkStatus();
}

absl::StatusOr<PreparedCase> LoadPreparedCase(const std::filesystem::path& x_npy,
                                              const std::filesystem::path& y_npy) {
  absl::StatusOr<NpyArray> x = ReadNpy(x_npy);
  if (!x.ok()) return x.status();
  absl::StatusOr<NpyArray> y = ReadNpy(y_npy);
  if (!y.ok()) return y.status();
  if (x->dtype != "<f4")
    return absl::InvalidArgumentError(
        fmt::format("{}: dtype '{}', expected '<f4'", x_npy.string(), x->dtype));
  if (y->dtype != "|u1")
    return absl::InvalidArgumentError(
        fmt::format("{}: dtype '{}', expected '|u1'", y_npy.string(), y->dtype));
  if (x->shape.size() != 4 || x->shape[0] != 1) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: shape of {} dimensions, expected (1, D, H, W)", x_npy.string(), x->shape.size()));
  }
  if (y->shape != x->shape) {
    return absl::InvalidArgumentError(
        fmt::format("{}: shape differs from its image's", y_npy.string()));
  }
  PreparedCase c;
  c.shape = {x->shape[1], x->shape[2], x->shape[3]};
  c.image.resize(x->bytes.size() / 4);
  std::memcpy(c.image.data(), x->bytes.data(), x->bytes.size());
  c.label.assign(y->bytes.begin(), y->bytes.end());
  return c;
}

}  // namespace mlperf::kits19
