#include "datasets/kits19/generated.h"

#include <cmath>
#include <vector>

#include "datasets/kits19/nifti.h"
#include "fmt/format.h"
#include "reference/core/philox.h"

namespace mlperf::kits19 {
namespace {

// Tissue intensities in HU: darker surroundings, kidney, brighter tumour
// (all inside the preparation's clipping window [-79, 304]).
constexpr double kTissueHu = -40, kKidneyHu = 140, kTumourHu = 260;

// Per-case stream: uniforms u(i) and normals (Box-Muller) from Philox.
struct CaseRandom {
  uint64_t seed, offset;
  uint64_t next = 0;
  double Uniform() { return core::PhiloxUniform(seed, offset, next++); }
  double Normal() {
    const double u1 = 1.0 - Uniform(), u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
};

}  // namespace

std::string GeneratedKits19Options::Name() const {
  return fmt::format("c{}-s{}x{}x{}-sp{}x{}x{}-n{}-seed{}", cases, shape[0], shape[1], shape[2],
                     spacing[0], spacing[1], spacing[2], noise_hu, seed);
}

absl::Status WriteGeneratedKits19(const std::filesystem::path& root,
                                  const GeneratedKits19Options& o) {
  for (int c = 0; c < o.cases; ++c) {
    CaseRandom rng{o.seed, static_cast<uint64_t>(c)};
    NiftiVolume image, label;
    for (int a = 0; a < 3; ++a)
      image.shape[a] = o.shape[a] + static_cast<int64_t>(rng.Uniform() * 4);
    image.spacing = o.spacing;
    label.shape = image.shape;
    label.spacing = o.spacing;
    const auto [nd, nh, nw] = image.shape;
    // Kidney: an ellipsoid with radii of 25-35% of the volume, centred in
    // its middle; tumour: a sphere centred on the kidney's surface.
    std::array<double, 3> centre, radius, tumour;
    for (int a = 0; a < 3; ++a) {
      const double n = static_cast<double>(image.shape[a]);
      radius[a] = n * (0.25 + 0.1 * rng.Uniform());
      centre[a] = n * (0.4 + 0.2 * rng.Uniform());
    }
    std::array<double, 3> dir;
    double norm = 0;
    for (double& d : dir) {
      d = rng.Normal();
      norm += d * d;
    }
    for (int a = 0; a < 3; ++a) tumour[a] = centre[a] + 0.7 * radius[a] * dir[a] / std::sqrt(norm);
    const double tumour_radius = static_cast<double>(nd) * (0.15 + 0.05 * rng.Uniform());
    image.voxels.resize(static_cast<size_t>(nd * nh * nw));
    label.voxels.resize(image.voxels.size());
    size_t q = 0;
    for (int64_t d = 0; d < nd; ++d) {
      for (int64_t h = 0; h < nh; ++h) {
        for (int64_t w = 0; w < nw; ++w, ++q) {
          const double p[3] = {static_cast<double>(d), static_cast<double>(h),
                               static_cast<double>(w)};
          double e = 0, t = 0;
          for (int a = 0; a < 3; ++a) {
            e += std::pow((p[a] - centre[a]) / radius[a], 2);
            t += std::pow(p[a] - tumour[a], 2);
          }
          const int cls = t <= tumour_radius * tumour_radius ? 2 : e <= 1.0 ? 1 : 0;
          const double hu = cls == 2 ? kTumourHu : cls == 1 ? kKidneyHu : kTissueHu;
          label.voxels[q] = static_cast<float>(cls);
          image.voxels[q] = static_cast<float>(std::lround(hu + o.noise_hu * rng.Normal()));
        }
      }
    }
    const std::filesystem::path dir_path = root / fmt::format("case_{:05d}", c);
    std::error_code ec;
    std::filesystem::create_directories(dir_path, ec);
    if (ec) {
      return absl::PermissionDeniedError(
          fmt::format("{}: cannot create: {}", dir_path.string(), ec.message()));
    }
    if (absl::Status s = WriteNifti(dir_path / "imaging.nii.gz", image, NiftiDtype::kInt16);
        !s.ok())
      return s;
    if (absl::Status s = WriteNifti(dir_path / "segmentation.nii.gz", label, NiftiDtype::kUint8);
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

}  // namespace mlperf::kits19
