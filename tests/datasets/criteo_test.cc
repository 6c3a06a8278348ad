// Criteo day files (datasets/criteo) against NumPy (tests/datasets/criteo_numpy.py
// under /usr/bin/python3): days written by np.save and np.savez (ZIP64
// local headers) read back row by row across day boundaries and in the
// validation half; the generated days loaded by np.load with the same sums
// and valid CRCs; and broken sets (compressed members, truncated archives,
// missing days, ids outside a table, labels other than 0 or 1) refused with
// one message naming the file. Skips where NumPy is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/criteo/day_files.h"
#include "datasets/criteo/generated.h"
#include "datasets/npy.h"
#include "fmt/format.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::criteo {
namespace {

namespace fs = std::filesystem;

bool HaveNumpy() { return std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") == 0; }

std::string Script() { return fmt::format("{}/tests/datasets/criteo_numpy.py", MLPERF_SOURCE_DIR); }

class CriteoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveNumpy()) GTEST_SKIP() << "NumPy is missing for /usr/bin/python3";
    dir_ = fs::temp_directory_path() /
           fmt::format("criteo_test_{}_{}", getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Rows [first, first + count) through CopyRows.
  struct Rows {
    std::vector<float> dense, labels;
    std::vector<std::vector<int32_t>> ids;
  };
  absl::StatusOr<Rows> Copy(const CriteoDays& days, bool validation, int64_t first, int64_t count,
                            const std::vector<int64_t>& table_rows) {
    Rows r;
    r.dense.resize(static_cast<size_t>(count * kDenseFeatures));
    r.labels.resize(static_cast<size_t>(count));
    RowsOut out{.dense = r.dense.data(), .labels = r.labels.data()};
    for (int64_t hot : days.multi_hot()) r.ids.emplace_back(static_cast<size_t>(count * hot));
    for (auto& v : r.ids) out.ids.push_back(v.data());
    if (absl::Status s = days.CopyRows(validation, first, count, table_rows, out); !s.ok())
      return s;
    return r;
  }

  fs::path dir_;
};

TEST_F(CriteoTest, DaysNumpyWroteReadBackAcrossDaysAndInTheValidationHalf) {
  ASSERT_EQ(std::system(
                fmt::format("/usr/bin/python3 {} write {} 3 101", Script(), dir_.string()).c_str()),
            0);
  absl::StatusOr<std::unique_ptr<CriteoDays>> days = CriteoDays::Open(dir_, 3);
  ASSERT_TRUE(days.ok()) << days.status();
  EXPECT_EQ((*days)->multi_hot(), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ((*days)->train_rows(), 202);
  EXPECT_EQ((*days)->validation_rows(), 51);  // the first half of day 2, rounded up
  const std::vector<int64_t> tables = {10, 11, 12};
  const auto expect_row = [&](const Rows& r, int64_t i, int d, int64_t row) {
    for (int64_t f = 0; f < kDenseFeatures; ++f)
      EXPECT_FLOAT_EQ(r.dense[i * kDenseFeatures + f],
                      static_cast<float>(((d * 1000 + row * 13 + f) % 97) / 7.0));
    EXPECT_EQ(r.labels[i], (d + row) % 3 == 0 ? 1.0f : 0.0f);
    for (size_t t = 0; t < 3; ++t) {
      const int64_t hot = (*days)->multi_hot()[t];
      for (int64_t h = 0; h < hot; ++h)
        EXPECT_EQ(r.ids[t][i * hot + h],
                  (d * 7 + row * hot + h + static_cast<int64_t>(t)) % (10 + t));
    }
  };
  absl::StatusOr<Rows> across =
      Copy(**days, false, 95, 10, tables);  // day 0 rows 95-100, day 1 rows 0-3
  ASSERT_TRUE(across.ok()) << across.status();
  for (int64_t i = 0; i < 10; ++i) expect_row(*across, i, i < 6 ? 0 : 1, i < 6 ? 95 + i : i - 6);
  absl::StatusOr<Rows> validation = Copy(**days, true, 0, 51, tables);
  ASSERT_TRUE(validation.ok()) << validation.status();
  for (int64_t i = 0; i < 51; ++i) expect_row(*validation, i, 2, i);
  EXPECT_FALSE(Copy(**days, true, 0, 52, tables).ok());  // past the validation half
  // An id outside its table: named with its file, feature and row.
  absl::StatusOr<Rows> small = Copy(**days, false, 0, 5, {10, 11, 3});
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("day_0_sparse_multi_hot.npz (2.npy): row"),
            std::string::npos)
      << small.status();
}

TEST_F(CriteoTest, GeneratedDaysLoadInNumpyWithTheSameValues) {
  GeneratedCriteoOptions o{
      .days = 3, .rows_per_day = 50, .table_rows = {5, 6, 7}, .multi_hot = {2, 1, 3}};
  ASSERT_TRUE(WriteGeneratedCriteo(dir_, o).ok());
  const std::string out = (dir_ / "sums.txt").string();
  ASSERT_EQ(
      std::system(
          fmt::format("/usr/bin/python3 {} check {} > {}", Script(), dir_.string(), out).c_str()),
      0);
  absl::StatusOr<std::unique_ptr<CriteoDays>> days = CriteoDays::Open(dir_, 3);
  ASSERT_TRUE(days.ok()) << days.status();
  absl::StatusOr<Rows> rows = Copy(**days, false, 0, 100, o.table_rows);  // days 0 and 1 whole
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::map<std::string, double> ours;
  for (int d = 0; d < 2; ++d) {
    double dense = 0, labels = 0;
    for (int64_t i = d * 50 * kDenseFeatures; i < (d + 1) * 50 * kDenseFeatures; ++i)
      dense += rows->dense[i];
    for (int64_t i = d * 50; i < (d + 1) * 50; ++i) labels += rows->labels[i];
    ours[fmt::format("day_{}_dense.npy", d)] = dense;
    ours[fmt::format("day_{}_labels.npy", d)] = labels;
    for (size_t t = 0; t < 3; ++t) {
      double s = 0;
      const int64_t hot = o.multi_hot[t];
      for (int64_t i = d * 50 * hot; i < (d + 1) * 50 * hot; ++i) s += rows->ids[t][i];
      ours[fmt::format("day_{}_sparse_multi_hot.npz:{}", d, t)] = s;
    }
  }
  std::ifstream in(out);
  std::string name, dtype, shape;
  double sum = 0;
  int compared = 0;
  while (in >> name >> dtype >> shape >> sum) {
    if (!ours.contains(name)) continue;  // the evaluation day
    EXPECT_NEAR(ours[name], sum, 1e-3 * std::max(1.0, std::abs(sum))) << name;
    ++compared;
  }
  EXPECT_EQ(compared, 10);
}

TEST_F(CriteoTest, BrokenSetsAreRefusedNamingTheFile) {
  // No day files.
  absl::StatusOr<std::unique_ptr<CriteoDays>> none = CriteoDays::Open(dir_, 3);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  ASSERT_EQ(std::system(
                fmt::format("/usr/bin/python3 {} write {} 2 20", Script(), dir_.string()).c_str()),
            0);
  // The wrong number of categorical features.
  EXPECT_NE(CriteoDays::Open(dir_, 26).status().message().find("members, expected 26"),
            std::string::npos);
  // A compressed archive (np.savez_compressed) cannot be mapped.
  const std::string sparse = (dir_ / "day_1_sparse_multi_hot.npz").string();
  ASSERT_EQ(
      std::system(fmt::format("/usr/bin/python3 -c \"import numpy as np; d = dict(np.load('{0}')); "
                              "np.savez_compressed('{0}', **d)\"",
                              sparse)
                      .c_str()),
      0);
  absl::Status compressed = CriteoDays::Open(dir_, 3).status();
  EXPECT_NE(compressed.message().find("compressed"), std::string::npos) << compressed;
  EXPECT_NE(compressed.message().find("day_1_sparse_multi_hot.npz"), std::string::npos)
      << compressed;
  // A truncated archive.
  ASSERT_EQ(std::system(
                fmt::format("/usr/bin/python3 {} write {} 2 20", Script(), dir_.string()).c_str()),
            0);
  fs::resize_file(sparse, fs::file_size(sparse) / 2);
  absl::Status truncated = CriteoDays::Open(dir_, 3).status();
  EXPECT_FALSE(truncated.ok());
  EXPECT_NE(truncated.message().find("day_1_sparse_multi_hot.npz"), std::string::npos) << truncated;
  // A label other than 0 or 1.
  ASSERT_EQ(std::system(
                fmt::format("/usr/bin/python3 {} write {} 2 20", Script(), dir_.string()).c_str()),
            0);
  std::vector<int32_t> labels(20, 0);
  labels[7] = 2;
  ASSERT_TRUE(datasets::WriteNpy(dir_ / "day_0_labels.npy", "<i4", {20, 1}, labels.data()).ok());
  absl::StatusOr<std::unique_ptr<CriteoDays>> days = CriteoDays::Open(dir_, 3);
  ASSERT_TRUE(days.ok()) << days.status();
  absl::StatusOr<Rows> rows = Copy(**days, false, 0, 20, {100, 100, 100});
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("day_0_labels.npy: row 7: label 2"), std::string::npos)
      << rows.status();
  // Dense features of the wrong width.
  std::vector<float> dense(20 * 12, 0.0f);
  ASSERT_TRUE(datasets::WriteNpy(dir_ / "day_1_dense.npy", "<f4", {20, 12}, dense.data()).ok());
  absl::Status wide = CriteoDays::Open(dir_, 3).status();
  EXPECT_NE(wide.message().find("day_1_dense.npy: expected float32 [rows, 13]"), std::string::npos)
      << wide;
}

}  // namespace
}  // namespace mlperf::criteo
