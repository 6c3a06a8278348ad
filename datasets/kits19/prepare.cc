#include "datasets/kits19/prepare.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>

#include "base/parallel_for.h"
#include "datasets/kits19/eval_cases.h"
#include "datasets/npy.h"
#include "datasets/kits19/resample.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace mlperf::kits19 {
namespace {

using datasets::NpyArray;
using datasets::ReadNpy;
using datasets::ReadNpyHeader;
using datasets::WriteNpy;

namespace fs = std::filesystem;

constexpr float kMinHu = -79.0f, kMaxHu = 304.0f, kMean = 101.0f, kStd = 76.9f;
// The reference's MAX_ID: cases from 210 on are KiTS19's unlabelled test set.
constexpr int kMaxCaseId = 210;
// Far above any KiTS19 case after resampling (~0.3e9 voxels before); a
// corrupt spacing must not ask for more memory than a machine has.
constexpr int64_t kMaxVoxels = int64_t{1} << 31;

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

// The labelled case folders directly under `root`, sorted.
absl::StatusOr<std::vector<fs::path>> CaseFolders(const fs::path& root) {
  std::vector<fs::path> cases;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const int id = CaseId(it->path().filename().string());
    std::error_code type_ec;  // a dangling link is no case, not a listing error
    if (id >= 0 && id < kMaxCaseId && it->is_directory(type_ec)) cases.push_back(it->path());
  }
  if (ec)
    return absl::NotFoundError(fmt::format("{}: cannot list: {}", root.string(), ec.message()));
  std::sort(cases.begin(), cases.end());
  return cases;
}

absl::Status CheckVolume(const NiftiVolume& v, const std::string& name, const char* what) {
  const bool sized = v.shape[0] >= 1 && v.shape[1] >= 1 && v.shape[2] >= 1 &&
                     v.voxels.size() == static_cast<size_t>(v.shape[0] * v.shape[1] * v.shape[2]);
  if (!sized) {
    return absl::InvalidArgumentError(fmt::format("{}: {} holds {} voxels for shape {}x{}x{}", name,
                                                  what, v.voxels.size(), v.shape[0], v.shape[1],
                                                  v.shape[2]));
  }
  return absl::OkStatus();
}

absl::Status PrepareOne(const fs::path& dir, const fs::path& out_dir, const PrepareOptions& o) {
  absl::StatusOr<NiftiVolume> image = ReadNifti(dir / "imaging.nii.gz");
  if (!image.ok()) return image.status();
  absl::StatusOr<NiftiVolume> label = ReadNifti(dir / "segmentation.nii.gz");
  if (!label.ok()) return label.status();
  absl::StatusOr<PreparedCase> c = PrepareCase(*image, *label, o, dir.string());
  if (!c.ok()) return c.status();
  image->voxels = {};  // only the prepared case stays in memory while writing
  label->voxels = {};
  const std::string name = dir.filename().string();
  const std::vector<int64_t> shape = {1, c->shape[0], c->shape[1], c->shape[2]};
  const fs::path x = out_dir / (name + "_x.npy"), y = out_dir / (name + "_y.npy");
  if (absl::Status s = WriteNpy(x, "<f4", shape, c->image.data()); !s.ok()) return s;
  absl::Status s = WriteNpy(y, "|u1", shape, c->label.data());
  if (!s.ok()) {
    // An image without its labels would fail every later listing.
    std::error_code ec;
    fs::remove(x, ec);
  }
  return s;
}

}  // namespace

absl::StatusOr<PreparedCase> PrepareCase(const NiftiVolume& image, const NiftiVolume& label,
                                         const PrepareOptions& o, const std::string& name) {
  if (absl::Status s = CheckVolume(image, name, "imaging"); !s.ok()) return s;
  if (absl::Status s = CheckVolume(label, name, "segmentation"); !s.ok()) return s;
  if (image.shape != label.shape) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: segmentation is {}x{}x{} but imaging is {}x{}x{}", name, label.shape[0],
        label.shape[1], label.shape[2], image.shape[0], image.shape[1], image.shape[2]));
  }
  PreparedCase c;
  c.shape = image.shape;
  c.label.resize(label.voxels.size());
  for (size_t i = 0; i < label.voxels.size(); ++i) {
    const float v = label.voxels[i];
    if (v != 0.0f && v != 1.0f && v != 2.0f) {
      return absl::InvalidArgumentError(
          fmt::format("{}: segmentation value {} at voxel {}, expected 0, 1 or 2", name, v, i));
    }
    c.label[i] = static_cast<uint8_t>(v);
  }
  // The reference compares the header's spacing (fp32 widened to fp64) with
  // the target exactly, and truncates spacing / target * shape in fp64.
  if (image.spacing == o.target_spacing) {
    c.image = image.voxels;
  } else {
    Shape3 to;
    double voxels = 1;
    for (int a = 0; a < 3; ++a) {
      const double size =
          image.spacing[a] / o.target_spacing[a] * static_cast<double>(image.shape[a]);
      voxels *= size;
      if (!(size >= 1) || !(voxels <= static_cast<double>(kMaxVoxels))) {
        return absl::InvalidArgumentError(
            fmt::format("{}: spacing {} mm on axis {} resamples {} voxels to {}", name,
                        image.spacing[a], a, image.shape[a], size));
      }
      to[a] = static_cast<int64_t>(size);
    }
    c.image = ResampleTrilinear(image.voxels.data(), image.shape, to);
    c.label = ResampleNearest(c.label.data(), image.shape, to);
    c.shape = to;
  }
  // fp32 arithmetic, as numpy does on the reference's float32 array.
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

absl::Status PrepareTree(const fs::path& kits_root, const fs::path& out_dir,
                         const PrepareOptions& options, int threads) {
  absl::StatusOr<std::vector<fs::path>> cases = CaseFolders(kits_root);
  if (!cases.ok()) return cases.status();
  std::error_code ec;
  if (cases->empty() && fs::is_directory(kits_root / "data", ec)) {
    cases = CaseFolders(kits_root / "data");
    if (!cases.ok()) return cases.status();
  }
  if (cases->empty()) {
    return absl::NotFoundError(fmt::format(
        "{}: no case_XXXXX folders with an id below 210, here or under data/", kits_root.string()));
  }
  fs::create_directories(out_dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        fmt::format("{}: cannot create: {}", out_dir.string(), ec.message()));
  }
  // After an error the remaining cases are skipped; the first error in case
  // order among those prepared is reported.
  std::vector<absl::Status> errors(cases->size());
  std::atomic<bool> failed{false};
  base::ParallelFor(cases->size(), std::max(1, threads), [&](size_t i) {
    if (failed) return;
    errors[i] = PrepareOne((*cases)[i], out_dir, options);
    if (!errors[i].ok()) failed = true;
  });
  for (const absl::Status& e : errors) {
    if (!e.ok()) return e;
  }
  return absl::OkStatus();
}

namespace {

// A prepared case's pair of arrays as the reference writes them.
absl::Status CheckCaseArrays(const NpyArray& x, const fs::path& x_npy, const NpyArray& y,
                             const fs::path& y_npy) {
  if (x.dtype != "<f4") {
    return absl::InvalidArgumentError(
        fmt::format("{}: dtype '{}', expected '<f4'", x_npy.string(), x.dtype));
  }
  if (x.shape.size() != 4 || x.shape[0] != 1) {
    return absl::InvalidArgumentError(fmt::format("{}: shape ({}), expected (1, D, H, W)",
                                                  x_npy.string(), fmt::join(x.shape, ", ")));
  }
  if (y.dtype != "|u1") {
    return absl::InvalidArgumentError(
        fmt::format("{}: dtype '{}', expected '|u1'", y_npy.string(), y.dtype));
  }
  if (y.shape != x.shape) {
    return absl::InvalidArgumentError(fmt::format("{}: shape ({}), its image's is ({})",
                                                  y_npy.string(), fmt::join(y.shape, ", "),
                                                  fmt::join(x.shape, ", ")));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PreparedCase> LoadPreparedCase(const fs::path& x_npy, const fs::path& y_npy) {
  absl::StatusOr<NpyArray> x = ReadNpy(x_npy);
  if (!x.ok()) return x.status();
  absl::StatusOr<NpyArray> y = ReadNpy(y_npy);
  if (!y.ok()) return y.status();
  if (absl::Status s = CheckCaseArrays(*x, x_npy, *y, y_npy); !s.ok()) return s;
  PreparedCase c;
  c.shape = {x->shape[1], x->shape[2], x->shape[3]};
  c.image.resize(x->bytes.size() / sizeof(float));
  std::memcpy(c.image.data(), x->bytes.data(), x->bytes.size());
  x->bytes = {};
  c.label.assign(y->bytes.begin(), y->bytes.end());
  return c;
}

absl::StatusOr<std::array<int64_t, 3>> CheckPreparedCase(const fs::path& x_npy,
                                                         const fs::path& y_npy) {
  absl::StatusOr<NpyArray> x = ReadNpyHeader(x_npy);
  if (!x.ok()) return x.status();
  absl::StatusOr<NpyArray> y = ReadNpyHeader(y_npy);
  if (!y.ok()) return y.status();
  if (absl::Status s = CheckCaseArrays(*x, x_npy, *y, y_npy); !s.ok()) return s;
  return std::array<int64_t, 3>{x->shape[1], x->shape[2], x->shape[3]};
}

}  // namespace mlperf::kits19
