// The reference's preprocessed Criteo 1TB click logs with its synthetic
// multi-hot expansion, as its scripts leave them in one folder: per day N,
// day_N_dense.npy (float32 [rows, 13], log(1 + x) of the counts),
// day_N_labels.npy (int32 [rows] or [rows, 1]) and
// day_N_sparse_multi_hot.npz (members "0.npy".."25.npy", int32
// [rows, multi-hot size of the feature]). Days 0 to D-2 are the training
// set; the first half (rounded up) of the last day is the validation set,
// the rest its test set, as the reference splits them.
//
// The files are mapped, never read whole (the training set is 4.2 billion
// samples); a batch copies its rows out of the maps.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/mapped_file.h"

namespace mlperf::criteo {

using datasets::MappedFile;

inline constexpr int64_t kDenseFeatures = 13;

// A day's arrays inside the maps (np.savez does not align its members, so
// they are read with copies, never through typed pointers).
struct Day {
  int64_t rows = 0;
  const char* dense = nullptr;        // float32 [rows, 13]
  const char* labels = nullptr;       // int32 [rows]
  std::vector<const char*> features;  // per feature, int32 [rows, multi_hot]
};

// Where CopyRows writes `count` samples: dense [count, 13], one id array
// [count, multi_hot[t]] per feature, labels [count] as 0.0 or 1.0.
struct RowsOut {
  float* dense = nullptr;
  std::vector<int32_t*> ids;
  float* labels = nullptr;
};

class CriteoDays {
 public:
  // Every day_N file set in `dir`, N from 0 without gaps, at least two days;
  // each file's kind, dtype and shape checked against the others and against
  // `tables` categorical features. Errors name the file.
  static absl::StatusOr<std::unique_ptr<CriteoDays>> Open(const std::filesystem::path& dir,
                                                          int64_t tables);

  const std::vector<Day>& days() const { return days_; }
  const std::vector<int64_t>& multi_hot() const { return multi_hot_; }
  std::string day_file(int day, const std::string& kind) const;
  int64_t train_rows() const;
  // The validation half of the last day: rows [0, validation_rows()).
  int64_t validation_rows() const { return (days_.back().rows + 1) / 2; }

  // Training rows [first, first + count) (days 0 to D-2 end to end, first +
  // count <= train_rows()), or validation rows with `validation`, into
  // `out`. An id outside its table (table_rows[t]) or a label other than 0
  // or 1 is an error naming the file, the feature and the row.
  absl::Status CopyRows(bool validation, int64_t first, int64_t count,
                        const std::vector<int64_t>& table_rows, const RowsOut& out) const;

 private:
  std::filesystem::path dir_;
  std::vector<std::unique_ptr<MappedFile>> maps_;
  std::vector<Day> days_;
  std::vector<int64_t> multi_hot_;
};

}  // namespace mlperf::criteo
