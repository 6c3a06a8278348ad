// KiTS19 files and preparation against their oracles under /usr/bin/python3
// (kits19_io_oracle.py): NIfTI against nibabel both ways, .npy against numpy
// both ways, resampling against torch.nn.functional.interpolate, and the
// whole preparation of a case against the reference's steps in numpy/torch;
// then bad input, each a one-line error naming the file.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "datasets/kits19/eval_cases.h"
#include "datasets/kits19/nifti.h"
#include "datasets/kits19/npy.h"
#include "datasets/kits19/prepare.h"
#include "datasets/kits19/resample.h"
#include "fmt/format.h"

namespace mlperf::kits19 {
namespace {

namespace fs = std::filesystem;

const char kOracle[] = MLPERF_SOURCE_DIR "/tests/unet3d/kits19_io_oracle.py";

bool HaveOracles() {
  return std::system("/usr/bin/python3 -c 'import nibabel, numpy, torch' > /dev/null 2>&1") == 0;
}

#define SKIP_WITHOUT_ORACLES()                                                             \
  if (!HaveOracles())                                                                      \
  GTEST_SKIP() << "nibabel, numpy or torch missing for /usr/bin/python3 (apt-get install " \
                  "python3-nibabel python3-torch)"

fs::path FreshDir(const std::string& name) {
  const fs::path d = fs::path(::testing::TempDir()) / ("kits19_io_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

template <typename T>
std::vector<T> ReadRaw(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

int Oracle(const std::string& args) {
  return std::system(fmt::format("/usr/bin/python3 {} {}", kOracle, args).c_str());
}

TEST(Kits19NiftiTest, ReadsWhatNibabelWrote) {
  SKIP_WITHOUT_ORACLES();
  const fs::path d = FreshDir("nibabel_wrote");
  ASSERT_EQ(Oracle("write " + d.string()), 0);
  for (auto [name, shape] :
       {std::pair<std::string, std::array<int64_t, 3>>{"scaled.nii.gz", {7, 5, 3}},
        {"labels.nii", {4, 6, 5}},
        {"floats.nii.gz", {3, 4, 6}}}) {
    absl::StatusOr<NiftiVolume> v = ReadNifti(d / name);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(v->shape, shape) << name;
    EXPECT_FLOAT_EQ(static_cast<float>(v->spacing[0]), 0.8f);
    EXPECT_FLOAT_EQ(static_cast<float>(v->spacing[2]), 2.5f);
    EXPECT_EQ(v->voxels, ReadRaw<float>(d / (name + ".expected"))) << name;
  }
}

TEST(Kits19NiftiTest, NibabelAndNumpyReadWhatWeWrote) {
  SKIP_WITHOUT_ORACLES();
  const fs::path d = FreshDir("we_wrote");
  NiftiVolume v{.shape = {3, 2, 5}, .spacing = {1.6, 1.2, 0.9}};
  for (int i = 0; i < 30; ++i) v.voxels.push_back(static_cast<float>(i * 37 % 101 - 50));
  ASSERT_TRUE(WriteNifti(d / "ours.nii.gz", v, NiftiDtype::kInt16).ok());
  std::vector<float> f(30);
  std::vector<uint8_t> u(30);
  for (int i = 0; i < 30; ++i) {
    f[i] = static_cast<float>(i) / 3;
    u[i] = static_cast<uint8_t>(i % 3);
  }
  ASSERT_TRUE(WriteNpy(d / "ours_f4.npy", "<f4", {1, 3, 2, 5}, f.data()).ok());
  ASSERT_TRUE(WriteNpy(d / "ours_u1.npy", "|u1", {1, 3, 2, 5}, u.data()).ok());
  ASSERT_EQ(Oracle("read " + d.string()), 0);  // asserts the .npy contents itself
  EXPECT_EQ(ReadRaw<float>(d / "ours.nii.gz.nibabel"), v.voxels);
  absl::StatusOr<NiftiVolume> back = ReadNifti(d / "ours.nii.gz");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->voxels, v.voxels);
}

TEST(Kits19NpyTest, ReadsNumpyFilesAndRejectsOtherDtypes) {
  SKIP_WITHOUT_ORACLES();
  const fs::path d = FreshDir("numpy_wrote");
  ASSERT_EQ(Oracle("write " + d.string()), 0);
  absl::StatusOr<NpyArray> f = ReadNpy(d / "numpy_f4.npy");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->shape, (std::vector<int64_t>{2, 3, 4}));
  std::vector<float> values(24);
  std::memcpy(values.data(), f->bytes.data(), 96);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(values[i], static_cast<float>(i) / 7);
  absl::StatusOr<NpyArray> u = ReadNpy(d / "numpy_u1.npy");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->dtype, "|u1");
  EXPECT_EQ(u->bytes[4], 1);
  absl::StatusOr<NpyArray> bad = ReadNpy(d / "numpy_i8.npy");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("numpy_i8.npy: dtype '<i8'"), std::string::npos)
      << bad.status();
}

TEST(Kits19ResampleTest, MatchesTorchInterpolate) {
  SKIP_WITHOUT_ORACLES();
  const fs::path d = FreshDir("resample");
  ASSERT_EQ(Oracle("write " + d.string()), 0);
  const std::vector<float> in = ReadRaw<float>(d / "resample_in.f32");
  const std::vector<uint8_t> labels = ReadRaw<uint8_t>(d / "resample_in.u8");
  const std::vector<float> trilinear = ResampleTrilinear(in.data(), {6, 9, 5}, {11, 4, 7});
  const std::vector<float> torch_trilinear = ReadRaw<float>(d / "trilinear.f32");
  ASSERT_EQ(trilinear.size(), torch_trilinear.size());
  for (size_t i = 0; i < trilinear.size(); ++i)
    ASSERT_NEAR(trilinear[i], torch_trilinear[i], 1e-6) << i;
  EXPECT_EQ(ResampleNearest(labels.data(), {6, 9, 5}, {11, 4, 7}),
            ReadRaw<uint8_t>(d / "nearest.u8"));
}

// A case with a spacing other than the target's (resampled up on two axes,
// down on one) and axes below the minimum size (padded, one unevenly).
void WriteCase(const fs::path& dir) {
  fs::create_directories(dir);
  NiftiVolume image{.shape = {9, 7, 12}, .spacing = {2.0, 1.5, 1.1}};
  NiftiVolume label = image;
  for (int i = 0; i < 9 * 7 * 12; ++i) {
    image.voxels.push_back(static_cast<float>((i * 7919) % 700 - 250));
    label.voxels.push_back(static_cast<float>((i / 5) % 3));
  }
  ASSERT_TRUE(WriteNifti(dir / "imaging.nii.gz", image, NiftiDtype::kInt16).ok());
  ASSERT_TRUE(WriteNifti(dir / "segmentation.nii.gz", label, NiftiDtype::kUint8).ok());
}

TEST(Kits19PrepareTest, MatchesTheReferencePreprocessing) {
  SKIP_WITHOUT_ORACLES();
  const fs::path d = FreshDir("prepare");
  WriteCase(d / "raw" / "case_00003");
  ASSERT_TRUE(PrepareTree(d / "raw", d / "ours", {.min_size = 14}, 2).ok());
  ASSERT_EQ(Oracle(fmt::format("prepare {} 14 {}", (d / "raw" / "case_00003").string(),
                               (d / "theirs").string())),
            0);
  absl::StatusOr<PreparedCase> ours =
      LoadPreparedCase(d / "ours" / "case_00003_x.npy", d / "ours" / "case_00003_y.npy");
  absl::StatusOr<PreparedCase> theirs = LoadPreparedCase(d / "theirs_x.npy", d / "theirs_y.npy");
  ASSERT_TRUE(ours.ok()) << ours.status();
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  // int(2.0/1.6*9)=11, int(1.5/1.2*7)=8, int(1.1/1.2*12)=10, then padded to 14.
  EXPECT_EQ(theirs->shape, (std::array<int64_t, 3>{14, 14, 14}));
  EXPECT_EQ(ours->shape, theirs->shape);
  EXPECT_EQ(ours->label, theirs->label);
  ASSERT_EQ(ours->image.size(), theirs->image.size());
  for (size_t i = 0; i < ours->image.size(); ++i)
    ASSERT_NEAR(ours->image[i], theirs->image[i], 1e-5) << i;
}

TEST(Kits19BadInputTest, EachErrorNamesTheFile) {
  const fs::path d = FreshDir("bad");
  WriteCase(d / "raw" / "case_00001");
  // A truncated .nii.gz.
  const fs::path image = d / "raw" / "case_00001" / "imaging.nii.gz";
  std::string bytes;
  {
    std::ifstream in(image, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const fs::path cut = d / "cut.nii.gz";
  std::ofstream(cut, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  absl::StatusOr<NiftiVolume> truncated = ReadNifti(cut);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("cut.nii.gz: "), std::string::npos)
      << truncated.status();
  // A header that is not 3D.
  NiftiVolume v{.shape = {2, 2, 2}, .spacing = {1, 1, 1}, .voxels = std::vector<float>(8, 1.0f)};
  ASSERT_TRUE(WriteNifti(d / "plain.nii", v, NiftiDtype::kUint8).ok());
  {
    std::fstream f(d / "plain.nii", std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(40);
    const int16_t five = 5;
    f.write(reinterpret_cast<const char*>(&five), 2);
  }
  absl::StatusOr<NiftiVolume> wrong_dim = ReadNifti(d / "plain.nii");
  ASSERT_FALSE(wrong_dim.ok());
  EXPECT_NE(wrong_dim.status().message().find("plain.nii: header dim[0]=5"), std::string::npos)
      << wrong_dim.status();
  // Labels whose shape differs from the image's.
  NiftiVolume other = v;
  other.shape = {2, 4, 1};
  absl::StatusOr<PreparedCase> mismatch = PrepareCase(v, other, {}, "case_00009");
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("case_00009: segmentation is 2x4x1"),
            std::string::npos);
  // A case without its segmentation.
  fs::remove(d / "raw" / "case_00001" / "segmentation.nii.gz");
  const absl::Status missing = PrepareTree(d / "raw", d / "out", {}, 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("case_00001/segmentation.nii.gz: cannot open"),
            std::string::npos)
      << missing;
  // A .npy with the wrong dtype where the labels belong, and a lone _x.npy.
  std::vector<float> f(8, 0.5f);
  ASSERT_TRUE(WriteNpy(d / "case_00002_x.npy", "<f4", {1, 2, 2, 2}, f.data()).ok());
  ASSERT_TRUE(WriteNpy(d / "case_00002_y.npy", "<f4", {1, 2, 2, 2}, f.data()).ok());
  absl::StatusOr<PreparedCase> dtype =
      LoadPreparedCase(d / "case_00002_x.npy", d / "case_00002_y.npy");
  ASSERT_FALSE(dtype.ok());
  EXPECT_NE(dtype.status().message().find("case_00002_y.npy: dtype '<f4', expected '|u1'"),
            std::string::npos);
  fs::remove(d / "case_00002_y.npy");
  absl::StatusOr<CaseSplit> lone = ListPreparedCases(d);
  ASSERT_FALSE(lone.ok());
  EXPECT_NE(lone.status().message().find("case_00002_y.npy: missing"), std::string::npos);
}

TEST(Kits19EvalCasesTest, FortyTwoOfTheTwoHundredTen) {
  int eval = 0;
  for (int c = 0; c < 210; ++c) eval += IsEvaluationCase(c);
  EXPECT_EQ(eval, 42);
  EXPECT_TRUE(IsEvaluationCase(0));
  EXPECT_TRUE(IsEvaluationCase(207));
  EXPECT_FALSE(IsEvaluationCase(1));
  EXPECT_FALSE(IsEvaluationCase(209));
}

}  // namespace
}  // namespace mlperf::kits19
