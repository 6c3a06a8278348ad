#include "datasets/criteo/generated.h"

#include <cmath>
#include <numeric>
#include <utility>

#include "datasets/criteo/day_files.h"
#include "datasets/criteo/npz.h"
#include "datasets/npy.h"
#include "fmt/format.h"
#include "reference/core/philox.h"

namespace mlperf::criteo {
namespace fs = std::filesystem;

namespace {

// Streams of the Philox draws (offsets), apart per purpose and feature.
constexpr uint64_t kDense = 0, kLabel = 100, kIds = 1000, kEffect = 2000;

float Uniform(uint64_t seed, uint64_t stream, uint64_t i) {
  return core::PhiloxUniform(seed, stream, i);
}

// A standard normal from two uniforms (Box-Muller).
double Normal(uint64_t seed, uint64_t stream, uint64_t i) {
  const double u1 = std::max(1e-12, static_cast<double>(Uniform(seed, stream, 2 * i)));
  const double u2 = Uniform(seed, stream, 2 * i + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

bool Telling(size_t feature) { return feature % 4 == 0; }

}  // namespace

std::string GeneratedCriteoOptions::Name() const {
  const int64_t rows = std::accumulate(table_rows.begin(), table_rows.end(), int64_t{0});
  const int64_t hot = std::accumulate(multi_hot.begin(), multi_hot.end(), int64_t{0});
  return fmt::format("d{}-r{}-t{}x{}-h{}-s{}-seed{}", days, rows_per_day, table_rows.size(), rows,
                     hot, signal, seed);
}

absl::Status WriteGeneratedCriteo(const fs::path& dir, const GeneratedCriteoOptions& o) {
  if (o.days < 2 || o.rows_per_day < 1 || o.table_rows.size() != o.multi_hot.size())
    return absl::InvalidArgumentError("generated Criteo: bad options");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError(fmt::format("{}: {}", dir.string(), ec.message()));
  const size_t tables = o.table_rows.size();
  const int64_t n = o.rows_per_day;
  for (int day = 0; day < o.days; ++day) {
    std::vector<float> dense(static_cast<size_t>(n * kDenseFeatures));
    std::vector<double> logit(static_cast<size_t>(n), -1.0);
    const uint64_t first = static_cast<uint64_t>(day) * static_cast<uint64_t>(n);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t f = 0; f < kDenseFeatures; ++f) {
        const double count = std::floor(std::exp(7.0 * Uniform(o.seed, kDense + f, first + i)));
        dense[static_cast<size_t>(i * kDenseFeatures + f)] = static_cast<float>(std::log1p(count));
      }
      // log(1 + count) of U(0, 7) in the exponent: mean about 3.5.
      logit[static_cast<size_t>(i)] +=
          o.signal * (0.6 * (dense[static_cast<size_t>(i * kDenseFeatures)] - 3.5) -
                      0.4 * (dense[static_cast<size_t>(i * kDenseFeatures + 1)] - 3.5));
    }
    std::vector<std::pair<std::string, std::string>> members;
    for (size_t t = 0; t < tables; ++t) {
      const int64_t hot = o.multi_hot[t];
      std::vector<int32_t> ids(static_cast<size_t>(n * hot));
      for (int64_t k = 0; k < n * hot; ++k) {
        ids[static_cast<size_t>(k)] = static_cast<int32_t>(
            core::PhiloxBits(o.seed, kIds + t, first * static_cast<uint64_t>(hot) + k) %
            static_cast<uint64_t>(o.table_rows[t]));
      }
      if (Telling(t)) {
        const double scale = o.signal * 1.5 / std::sqrt(static_cast<double>(hot));
        for (int64_t k = 0; k < n * hot; ++k)
          logit[static_cast<size_t>(k / hot)] +=
              scale *
              Normal(o.seed, kEffect + t, static_cast<uint64_t>(ids[static_cast<size_t>(k)]));
      }
      absl::StatusOr<std::string> bytes = datasets::NpyBytes("<i4", {n, hot}, ids.data());
      if (!bytes.ok()) return bytes.status();
      members.emplace_back(fmt::format("{}.npy", t), std::move(*bytes));
    }
    std::vector<int32_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const double p = 1.0 / (1.0 + std::exp(-logit[static_cast<size_t>(i)]));
      labels[static_cast<size_t>(i)] = Uniform(o.seed, kLabel, first + i) < p ? 1 : 0;
    }
    const std::string stem = (dir / fmt::format("day_{}_", day)).string();
    if (absl::Status s =
            datasets::WriteNpy(stem + "dense.npy", "<f4", {n, kDenseFeatures}, dense.data());
        !s.ok())
      return s;
    if (absl::Status s = datasets::WriteNpy(stem + "labels.npy", "<i4", {n, 1}, labels.data());
        !s.ok())
      return s;
    if (absl::Status s = WriteNpz(stem + "sparse_multi_hot.npz", members); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace mlperf::criteo
