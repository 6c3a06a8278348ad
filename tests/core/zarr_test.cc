// Zarr arrays (reference/io/zarr) against the zarr package writing them as
// Megatron's checkpoints do (tests/core/zarr_arrays.py): float32 with
// uneven edge chunks, float16, Megatron's "bfloat16", a fill value standing
// for a chunk never written, the "/" key separator; whole arrays and boxes
// across chunk edges equal NumPy's values exactly. Damaged arrays are
// refused naming the folder. Skips where zarr is missing.
#include "reference/io/zarr.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/io/safetensors.h"
#include "tests/core/parity_util.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::io {
namespace {

namespace fs = std::filesystem;

class ZarrTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::PythonHas("zarr, torch"))
      GTEST_SKIP() << "zarr or PyTorch is missing for /usr/bin/python3 "
                      "(scripts/install_deps.sh --test)";
    dir_ = fs::temp_directory_path() / fmt::format("zarr_test_{}", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const std::string cmd = fmt::format("/usr/bin/python3 {}/tests/core/zarr_arrays.py {}",
                                        MLPERF_SOURCE_DIR, dir_.string());
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    absl::StatusOr<SafetensorsFile> file =
        SafetensorsFile::Read((dir_ / "expected.safetensors").string());
    ASSERT_TRUE(file.ok()) << file.status();
    expected_ = std::make_unique<SafetensorsFile>(std::move(*file));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The whole array equals NumPy's values.
  void ExpectWhole(const std::string& name) {
    absl::StatusOr<ZarrArray> a = ZarrArray::Open(dir_ / name);
    ASSERT_TRUE(a.ok()) << a.status();
    const std::vector<float> want = testing::Load(*expected_, name);
    std::vector<float> got(want.size());
    ASSERT_TRUE(a->ReadAll(got).ok()) << name;
    EXPECT_EQ(got, want) << name;
  }

  fs::path dir_;
  std::unique_ptr<SafetensorsFile> expected_;
};

TEST_F(ZarrTest, WholeArraysEqualNumpy) {
  for (const char* name : {"f32", "f16", "bf16", "filled", "nested"}) ExpectWhole(name);
  absl::StatusOr<ZarrArray> bf16 = ZarrArray::Open(dir_ / "bf16");
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(bf16->dtype(), "bfloat16");
}

TEST_F(ZarrTest, BoxesAcrossChunkEdgesEqualNumpy) {
  absl::StatusOr<ZarrArray> a = ZarrArray::Open(dir_ / "f32");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->shape(), (std::vector<int64_t>{5, 7, 6}));
  const std::vector<float> all = testing::Load(*expected_, "f32");
  // Each layer of the stack (what a per-layer read of Megatron's stacked
  // arrays takes), and a box that crosses chunk edges in every dimension.
  for (const auto& [first, count] :
       std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{3, 0, 0}, {1, 7, 6}}, {{1, 2, 3}, {3, 4, 2}}, {{4, 6, 5}, {1, 1, 1}}}) {
    std::vector<float> got(count[0] * count[1] * count[2]);
    ASSERT_TRUE(a->Read(first, count, got).ok());
    size_t i = 0;
    for (int64_t x = first[0]; x < first[0] + count[0]; ++x)
      for (int64_t y = first[1]; y < first[1] + count[1]; ++y)
        for (int64_t z = first[2]; z < first[2] + count[2]; ++z)
          EXPECT_EQ(got[i++], all[(x * 7 + y) * 6 + z]) << x << "," << y << "," << z;
  }
  std::vector<float> room(2);
  EXPECT_FALSE(a->Read(std::vector<int64_t>{4, 0, 0}, std::vector<int64_t>{2, 1, 1}, room).ok());
  EXPECT_FALSE(a->Read(std::vector<int64_t>{0, 0, 0}, std::vector<int64_t>{1, 1, 1}, room).ok());
}

TEST_F(ZarrTest, DamagedArraysAreRefusedNamingTheFolder) {
  const auto rewrite = [](const fs::path& file, const std::string& from, const std::string& to) {
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::ofstream(file) << text;
  };
  const auto refused = [&](const std::string& name, const std::string& says) {
    absl::StatusOr<ZarrArray> a = ZarrArray::Open(dir_ / name);
    absl::Status s = a.status();
    if (a.ok()) {
      std::vector<float> out(1);
      for (int64_t d : a->shape()) out.resize(out.size() * d);
      s = a->ReadAll(std::span<float>(out.data(), out.size()));
    }
    ASSERT_FALSE(s.ok()) << name;
    EXPECT_NE(s.message().find((dir_ / name).string()), std::string::npos) << s;
    EXPECT_NE(s.message().find(says), std::string::npos) << s;
    EXPECT_EQ(s.message().find('\n'), std::string::npos);
  };
  rewrite(dir_ / "f16/.zarray", "\"compressor\": null", "\"compressor\": {\"id\": \"blosc\"}");
  refused("f16", "compressor");
  fs::remove(dir_ / "f32/1.1.0");  // no fill value: a missing chunk is an error
  refused("f32", "missing chunk");
  fs::resize_file(dir_ / "nested/1/0", 8);
  refused("nested", "bytes");
  rewrite(dir_ / "bf16/.zarray", "\"bfloat16\"", "\"<i4\"");
  refused("bf16", "dtype");
  fs::remove(dir_ / "filled/.zarray");
  refused("filled", ".zarray");
}

}  // namespace
}  // namespace mlperf::io
