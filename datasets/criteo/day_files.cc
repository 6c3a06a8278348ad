#include "datasets/criteo/day_files.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "datasets/criteo/npz.h"
#include "datasets/npy.h"
#include "fmt/format.h"

namespace mlperf::criteo {
namespace fs = std::filesystem;

std::string CriteoDays::day_file(int day, const std::string& kind) const {
  return (dir_ / fmt::format("day_{}_{}", day, kind)).string();
}

int64_t CriteoDays::train_rows() const {
  int64_t rows = 0;
  for (size_t d = 0; d + 1 < days_.size(); ++d) rows += days_[d].rows;
  return rows;
}

absl::StatusOr<std::unique_ptr<CriteoDays>> CriteoDays::Open(const fs::path& dir, int64_t tables) {
  auto set = std::unique_ptr<CriteoDays>(new CriteoDays());
  set->dir_ = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return absl::NotFoundError(fmt::format("{}: not a folder", dir.string()));
  int count = 0;
  while (fs::exists(set->day_file(count, "dense.npy"), ec)) ++count;
  if (count < 2) {
    return absl::NotFoundError(fmt::format(
        "{}: expected day_0_dense.npy, day_1_dense.npy, ... (at least two days: training and "
        "evaluation) with their _labels.npy and _sparse_multi_hot.npz",
        dir.string()));
  }
  for (int d = 0; d < count; ++d) {
    const std::string dense_file = set->day_file(d, "dense.npy");
    const std::string labels_file = set->day_file(d, "labels.npy");
    const std::string sparse_file = set->day_file(d, "sparse_multi_hot.npz");
    absl::StatusOr<datasets::NpyArray> dense = datasets::ReadNpyHeader(dense_file);
    if (!dense.ok()) return dense.status();
    absl::StatusOr<datasets::NpyArray> labels = datasets::ReadNpyHeader(labels_file);
    if (!labels.ok()) return labels.status();
    absl::StatusOr<std::map<std::string, datasets::NpyArray>> sparse = ReadNpzHeaders(sparse_file);
    if (!sparse.ok()) return sparse.status();
    if (dense->dtype != "<f4" || dense->shape.size() != 2 || dense->shape[1] != kDenseFeatures) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: expected float32 [rows, {}] dense features", dense_file, kDenseFeatures));
    }
    Day day;
    day.rows = dense->shape[0];
    const bool label_shape =
        (labels->shape.size() == 1 || (labels->shape.size() == 2 && labels->shape[1] == 1)) &&
        labels->shape[0] == day.rows;
    if (labels->dtype != "<i4" || !label_shape) {
      return absl::InvalidArgumentError(fmt::format("{}: expected int32 [{}] or [{}, 1] labels",
                                                    labels_file, day.rows, day.rows));
    }
    if (static_cast<int64_t>(sparse->size()) != tables) {
      return absl::InvalidArgumentError(fmt::format("{}: {} members, expected {} (0.npy to {}.npy)",
                                                    sparse_file, sparse->size(), tables,
                                                    tables - 1));
    }
    for (const auto* f : {&dense_file, &labels_file, &sparse_file}) {
      absl::StatusOr<std::unique_ptr<MappedFile>> map = MappedFile::Open(*f);
      if (!map.ok()) return map.status();
      set->maps_.push_back(std::move(*map));
    }
    day.dense = set->maps_[set->maps_.size() - 3]->data() + dense->data_offset;
    day.labels = set->maps_[set->maps_.size() - 2]->data() + labels->data_offset;
    const char* sparse_map = set->maps_.back()->data();
    for (int64_t t = 0; t < tables; ++t) {
      const std::string member = fmt::format("{}.npy", t);
      auto it = sparse->find(member);
      if (it == sparse->end())
        return absl::InvalidArgumentError(fmt::format("{}: no member {}", sparse_file, member));
      const datasets::NpyArray& a = it->second;
      if (a.dtype != "<i4" || a.shape.size() != 2 || a.shape[0] != day.rows || a.shape[1] < 1) {
        return absl::InvalidArgumentError(fmt::format(
            "{} ({}): expected int32 [{}, multi-hot size]", sparse_file, member, day.rows));
      }
      if (d == 0) set->multi_hot_.push_back(a.shape[1]);
      if (a.shape[1] != set->multi_hot_[static_cast<size_t>(t)]) {
        return absl::InvalidArgumentError(fmt::format("{} ({}): multi-hot size {}, day 0 has {}",
                                                      sparse_file, member, a.shape[1],
                                                      set->multi_hot_[static_cast<size_t>(t)]));
      }
      day.features.push_back(sparse_map + a.data_offset);
    }
    set->days_.push_back(std::move(day));
  }
  return set;
}

absl::Status CriteoDays::CopyRows(bool validation, int64_t first, int64_t count,
                                  const std::vector<int64_t>& table_rows,
                                  const RowsOut& out) const {
  if (first < 0 || count < 0 || first + count > (validation ? validation_rows() : train_rows()))
    return absl::OutOfRangeError(
        fmt::format("rows [{}, {}) outside the set", first, first + count));
  int day = validation ? static_cast<int>(days_.size()) - 1 : 0;
  int64_t row = first;
  while (!validation && row >= days_[static_cast<size_t>(day)].rows)
    row -= days_[static_cast<size_t>(day++)].rows;
  for (int64_t done = 0; done < count;) {
    const Day& d = days_[static_cast<size_t>(day)];
    const int64_t n = std::min(count - done, d.rows - row);
    std::memcpy(out.dense + done * kDenseFeatures, d.dense + row * kDenseFeatures * 4,
                static_cast<size_t>(n * kDenseFeatures * 4));
    for (int64_t i = 0; i < n; ++i) {
      int32_t label = 0;
      std::memcpy(&label, d.labels + (row + i) * 4, 4);
      if (label != 0 && label != 1) {
        return absl::DataLossError(fmt::format("{}: row {}: label {}, expected 0 or 1",
                                               day_file(day, "labels.npy"), row + i, label));
      }
      out.labels[done + i] = static_cast<float>(label);
    }
    for (size_t t = 0; t < d.features.size(); ++t) {
      const int64_t hot = multi_hot_[t];
      int32_t* ids = out.ids[t] + done * hot;
      std::memcpy(ids, d.features[t] + row * hot * 4, static_cast<size_t>(n * hot * 4));
      for (int64_t i = 0; i < n * hot; ++i) {
        if (ids[i] < 0 || ids[i] >= table_rows[t]) {
          return absl::DataLossError(fmt::format(
              "{} ({}.npy): row {}: id {} outside the table's {} rows",
              day_file(day, "sparse_multi_hot.npz"), t, row + i / hot, ids[i], table_rows[t]));
        }
      }
    }
    done += n;
    row = 0;
    ++day;
  }
  return absl::OkStatus();
}

}  // namespace mlperf::criteo
