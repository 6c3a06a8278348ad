// KiTS19 files and preparation. Against oracles under /usr/bin/python3
// (kits19_io_oracle.py, run once per process to write every input and
// answer, once to read what we wrote): NIfTI against nibabel both ways, .npy against numpy
// both ways, resampling against torch.nn.functional.interpolate, whole cases
// against the reference's preprocessing steps. Without Python: the tree
// layout, padding, the split, and bad input, each a one-line error naming
// the file.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/kits19/eval_cases.h"
#include "datasets/kits19/nifti.h"
#include "datasets/npy.h"
#include "datasets/kits19/prepare.h"
#include "datasets/kits19/resample.h"
#include "fmt/format.h"

namespace mlperf::kits19 {
namespace {

using datasets::NpyArray;
using datasets::ReadNpy;
using datasets::ReadNpyHeader;
using datasets::WriteNpy;

namespace fs = std::filesystem;

const char kOracle[] = MLPERF_SOURCE_DIR "/tests/unet3d/kits19_io_oracle.py";

// One folder per process (ctest runs each test in its own, perhaps several
// at once), removed when every test passed and kept for a look otherwise.
fs::path ProcessDir() {
  return fs::path(::testing::TempDir()) / fmt::format("kits19_io_{}", getpid());
}

class RemoveProcessDirIfPassed : public ::testing::Environment {
 public:
  void TearDown() override {
    if (::testing::UnitTest::GetInstance()->Passed()) {
      std::error_code ignored;
      fs::remove_all(ProcessDir(), ignored);
    }
  }
};
::testing::Environment* const kCleanup =
    ::testing::AddGlobalTestEnvironment(new RemoveProcessDirIfPassed);

fs::path FreshDir(const std::string& name) {
  const fs::path d = ProcessDir() / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string ReadBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteBytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <typename T>
std::vector<T> ReadRaw(const fs::path& p) {
  const std::string bytes = ReadBytes(p);
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

int RunOracle(const std::string& mode, const fs::path& dir) {
  return std::system(fmt::format("/usr/bin/python3 {} {} {}", kOracle, mode, dir.string()).c_str());
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" lacks \"" << part << "\"";
}

bool IsGzipFile(const fs::path& p) { return ReadBytes(p).starts_with("\x1f\x8b"); }

// Runs the oracle's "write" once for the suite; each test reads its part.
class Kits19OracleTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    have_python_ =
        std::system("/usr/bin/python3 -c 'import nibabel, numpy, torch' > /dev/null 2>&1") == 0;
    if (!have_python_) return;
    dir_ = FreshDir("oracle");
    write_rc_ = RunOracle("write", dir_);
  }

  void SetUp() override {
    if (!have_python_) {
      GTEST_SKIP() << "/usr/bin/python3 lacks nibabel, numpy or torch (apt-get install "
                      "python3-nibabel python3-numpy python3-torch)";
    }
    ASSERT_EQ(write_rc_, 0) << "kits19_io_oracle.py write failed (its stderr is above)";
  }

  static inline bool have_python_ = false;
  static inline int write_rc_ = -1;
  static inline fs::path dir_;
};

TEST_F(Kits19OracleTest, ReadNiftiEqualsNibabelGetFdata) {
  const std::vector<std::pair<std::string, Shape3>> files = {
      {"scaled_i16.nii.gz", {7, 5, 3}},     {"odd_scale_i16.nii", {4, 3, 5}},
      {"labels_u8.nii", {4, 6, 5}},         {"floats_f32.nii.gz", {3, 4, 6}},
      {"big_endian_i16.nii.gz", {5, 3, 4}}, {"doubles_f64_4d.nii", {3, 2, 5}},
      {"signed_i8.nii", {2, 3, 4}},         {"wide_u16.nii", {2, 3, 4}},
      {"wide_i32.nii.gz", {2, 3, 4}},       {"wide_u32.nii", {2, 3, 4}}};
  for (const auto& [name, shape] : files) {
    SCOPED_TRACE(name);
    absl::StatusOr<NiftiVolume> v = ReadNifti(dir_ / name);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(v->shape, shape);
    const std::vector<double> spacing = ReadRaw<double>(dir_ / (name + ".spacing"));
    ASSERT_EQ(spacing.size(), 3u);
    for (int a = 0; a < 3; ++a) EXPECT_EQ(v->spacing[a], spacing[a]) << "axis " << a;
    EXPECT_EQ(v->voxels, ReadRaw<float>(dir_ / (name + ".expected")));
  }
  // gzip is recognised by its content, not the name.
  const fs::path d = FreshDir("renamed");
  fs::copy_file(dir_ / "scaled_i16.nii.gz", d / "gzip_named_plain.nii");
  fs::copy_file(dir_ / "labels_u8.nii", d / "plain_named_gzip.nii.gz");
  absl::StatusOr<NiftiVolume> gz = ReadNifti(d / "gzip_named_plain.nii");
  absl::StatusOr<NiftiVolume> plain = ReadNifti(d / "plain_named_gzip.nii.gz");
  ASSERT_TRUE(gz.ok()) << gz.status();
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(gz->voxels, ReadRaw<float>(dir_ / "scaled_i16.nii.gz.expected"));
  EXPECT_EQ(plain->voxels, ReadRaw<float>(dir_ / "labels_u8.nii.expected"));
}

TEST_F(Kits19OracleTest, NibabelAndNumpyReadWhatWeWrote) {
  const fs::path d = FreshDir("we_wrote");
  NiftiVolume v{.shape = {3, 2, 5}, .spacing = {1.6, 1.2, 0.9}};
  for (int i = 0; i < 30; ++i) v.voxels.push_back(static_cast<float>(i * 37 % 101 - 50));
  NiftiVolume labels = v, floats = v;
  for (int i = 0; i < 30; ++i) {
    labels.voxels[i] = static_cast<float>(i % 3);
    floats.voxels[i] = static_cast<float>(i) / 7 - 2;
  }
  ASSERT_TRUE(WriteNifti(d / "ours_i16.nii.gz", v, NiftiDtype::kInt16).ok());
  ASSERT_TRUE(WriteNifti(d / "ours_u8.nii", labels, NiftiDtype::kUint8).ok());
  ASSERT_TRUE(WriteNifti(d / "ours_f32.nii.gz", floats, NiftiDtype::kFloat32).ok());
  EXPECT_TRUE(IsGzipFile(d / "ours_i16.nii.gz"));
  EXPECT_FALSE(IsGzipFile(d / "ours_u8.nii"));
  std::vector<float> f(30);
  std::vector<uint8_t> u(30);
  for (int i = 0; i < 30; ++i) {
    f[i] = static_cast<float>(i) / 3;
    u[i] = static_cast<uint8_t>(i % 3);
  }
  ASSERT_TRUE(WriteNpy(d / "ours_f4.npy", "<f4", {1, 3, 2, 5}, f.data()).ok());
  ASSERT_TRUE(WriteNpy(d / "ours_u1.npy", "|u1", {1, 3, 2, 5}, u.data()).ok());
  // The oracle checks the affines, the spacing and the .npy contents itself.
  ASSERT_EQ(RunOracle("read", d), 0);
  EXPECT_EQ(ReadRaw<float>(d / "ours_i16.nii.gz.nibabel"), v.voxels);
  EXPECT_EQ(ReadRaw<float>(d / "ours_u8.nii.nibabel"), labels.voxels);
  EXPECT_EQ(ReadRaw<float>(d / "ours_f32.nii.gz.nibabel"), floats.voxels);
  absl::StatusOr<NiftiVolume> back = ReadNifti(d / "ours_i16.nii.gz");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shape, v.shape);
  EXPECT_EQ(back->voxels, v.voxels);
  EXPECT_EQ(back->spacing[0], static_cast<double>(1.6f));
}

TEST_F(Kits19OracleTest, ReadNpyTakesWhatNumpyWroteAndRejectsTheRest) {
  std::vector<float> expected(24);
  for (int i = 0; i < 24; ++i) expected[i] = static_cast<float>(i) / 7;
  for (const char* name : {"numpy_f4.npy", "numpy_f4_v2.npy"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<NpyArray> f = ReadNpy(dir_ / name);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(f->dtype, "<f4");
    EXPECT_EQ(f->shape, (std::vector<int64_t>{2, 3, 4}));
    ASSERT_EQ(f->bytes.size(), 96u);
    std::vector<float> values(24);
    std::memcpy(values.data(), f->bytes.data(), 96);
    EXPECT_EQ(values, expected);
  }
  absl::StatusOr<NpyArray> u = ReadNpy(dir_ / "numpy_u1.npy");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->dtype, "|u1");
  EXPECT_EQ(u->shape, (std::vector<int64_t>{1, 5, 3}));
  EXPECT_EQ(u->bytes, std::string("\0\1\2\0\1\2\0\1\2\0\1\2\0\1\2", 15));
  for (const auto& [name, message] : std::vector<std::pair<std::string, std::string>>{
           {"numpy_i2.npy", "numpy_i2.npy: dtype '<i2', expected '<f4', '<i4', '<i8' or '|u1'"},
           {"numpy_big_f4.npy", "numpy_big_f4.npy: dtype '>f4'"},
           {"numpy_fortran.npy", "numpy_fortran.npy: fortran_order True"}}) {
    absl::StatusOr<NpyArray> bad = ReadNpy(dir_ / name);
    ASSERT_FALSE(bad.ok()) << name;
    EXPECT_TRUE(Contains(std::string(bad.status().message()), message));
  }
}

TEST_F(Kits19OracleTest, ResampleMatchesTorchInterpolate) {
  std::ifstream manifest(dir_ / "resample.txt");
  int cases = 0;
  for (std::string line; std::getline(manifest, line); ++cases) {
    std::istringstream fields(line);
    int k = 0;
    Shape3 in{}, out{};
    fields >> k >> in[0] >> in[1] >> in[2] >> out[0] >> out[1] >> out[2];
    SCOPED_TRACE(line);
    const std::string base = (dir_ / fmt::format("resample_{}", k)).string();
    const std::vector<float> image = ReadRaw<float>(base + "_in.f32");
    const std::vector<uint8_t> label = ReadRaw<uint8_t>(base + "_in.u8");
    ASSERT_EQ(image.size(), static_cast<size_t>(in[0] * in[1] * in[2]));
    const std::vector<float> ours = ResampleTrilinear(image.data(), in, out);
    const std::vector<float> theirs = ReadRaw<float>(base + "_trilinear.f32");
    ASSERT_EQ(ours.size(), theirs.size());
    float worst = 0;
    size_t differing = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
      worst = std::max(worst, std::abs(ours[i] - theirs[i]));
      differing += ours[i] != theirs[i];
    }
    // Values in [0, 1): 1e-6 is a few ulps (torch 1.13 agrees bit for bit).
    EXPECT_LE(worst, 1e-6f) << differing << " of " << ours.size() << " differ";
    EXPECT_EQ(ResampleNearest(label.data(), in, out), ReadRaw<uint8_t>(base + "_nearest.u8"));
  }
  EXPECT_EQ(cases, 5);
}

TEST_F(Kits19OracleTest, PrepareTreeMatchesTheReferencePreprocessing) {
  const fs::path ours = dir_ / "ours";
  ASSERT_TRUE(PrepareTree(dir_ / "raw", ours, {.min_size = 16}, 2).ok());
  // int(2.0/1.6*9)=11, int(1.5/1.2*7)=8, int(1.1/1.2*12)=10, each padded to
  // 16; fp32 1.6, 1.2, 1.2 resample to the same shape; int(0.9/1.6*30)=16,
  // int(2.5/1.2*9)=18, int(0.7/1.2*14)=8 padded to 16.
  const std::vector<std::pair<std::string, Shape3>> cases = {
      {"case_00003", {16, 16, 16}}, {"case_00005", {20, 17, 18}}, {"case_00007", {16, 18, 16}}};
  for (const auto& [name, shape] : cases) {
    SCOPED_TRACE(name);
    absl::StatusOr<PreparedCase> a =
        LoadPreparedCase(ours / (name + "_x.npy"), ours / (name + "_y.npy"));
    absl::StatusOr<PreparedCase> b =
        LoadPreparedCase(dir_ / "theirs" / (name + "_x.npy"), dir_ / "theirs" / (name + "_y.npy"));
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->shape, shape);
    EXPECT_EQ(a->shape, b->shape);
    ASSERT_EQ(a->image.size(), b->image.size());
    float worst = 0;
    for (size_t i = 0; i < a->image.size(); ++i)
      worst = std::max(worst, std::abs(a->image[i] - b->image[i]));
    EXPECT_LE(worst, 1e-5f);
    // Files as numpy writes them: the labels byte for byte, the images'
    // headers too (the reference checks its output against MD5 sums).
    EXPECT_EQ(ReadBytes(ours / (name + "_y.npy")), ReadBytes(dir_ / "theirs" / (name + "_y.npy")));
    const std::string x = ReadBytes(ours / (name + "_x.npy"));
    const size_t header = x.size() - a->image.size() * sizeof(float);
    EXPECT_EQ(x.substr(0, header),
              ReadBytes(dir_ / "theirs" / (name + "_x.npy")).substr(0, header));
  }
}

NiftiVolume Volume(Shape3 shape, std::array<double, 3> spacing, int modulo) {
  NiftiVolume v{.shape = shape, .spacing = spacing};
  for (int64_t i = 0; i < shape[0] * shape[1] * shape[2]; ++i)
    v.voxels.push_back(static_cast<float>(i % modulo));
  return v;
}

// The reference pads centred, the odd voxel after: 1 -> 4 is 1 before and 2
// after, 2 -> 4 is 1 and 1, 3 -> 4 is 0 and 1. Exact target spacing: no
// resampling.
TEST(Kits19PrepareTest, EdgePaddingIsCentredWithTheOddVoxelAfter) {
  const NiftiVolume image = Volume({1, 2, 3}, {1.6, 1.2, 1.2}, 1000);
  const NiftiVolume label = Volume({1, 2, 3}, {1.6, 1.2, 1.2}, 3);
  absl::StatusOr<PreparedCase> c = PrepareCase(image, label, {.min_size = 4});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->shape, (Shape3{4, 4, 4}));
  const int64_t from_y[4] = {0, 0, 1, 1}, from_x[4] = {0, 1, 2, 2};
  for (int z = 0; z < 4; ++z)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x) {
        const int64_t src = from_y[y] * 3 + from_x[x];
        const size_t at = static_cast<size_t>((z * 4 + y) * 4 + x);
        EXPECT_EQ(c->image[at], (static_cast<float>(src) - 101.0f) / 76.9f) << z << y << x;
        EXPECT_EQ(c->label[at], src % 3) << z << y << x;
      }
}

TEST(Kits19PrepareTest, TreeUnderDataSkipsTheUnlabelledTestCases) {
  const fs::path d = FreshDir("tree");
  const NiftiVolume image = Volume({4, 5, 6}, {1.6, 1.2, 1.2}, 50);
  const NiftiVolume label = Volume({4, 5, 6}, {1.6, 1.2, 1.2}, 3);
  for (const char* c : {"case_00001", "case_00210"}) {
    fs::create_directories(d / "kits19" / "data" / c);
    ASSERT_TRUE(
        WriteNifti(d / "kits19" / "data" / c / "imaging.nii.gz", image, NiftiDtype::kInt16).ok());
  }
  ASSERT_TRUE(WriteNifti(d / "kits19" / "data" / "case_00001" / "segmentation.nii.gz", label,
                         NiftiDtype::kUint8)
                  .ok());
  WriteBytes(d / "kits19" / "data" / "kits.json", "[]");
  ASSERT_TRUE(PrepareTree(d / "kits19", d / "out", {.min_size = 8}, 2).ok());
  std::vector<std::string> written;
  for (const auto& e : fs::directory_iterator(d / "out"))
    written.push_back(e.path().filename().string());
  std::sort(written.begin(), written.end());
  EXPECT_EQ(written, (std::vector<std::string>{"case_00001_x.npy", "case_00001_y.npy"}));
  absl::StatusOr<PreparedCase> c =
      LoadPreparedCase(d / "out" / "case_00001_x.npy", d / "out" / "case_00001_y.npy");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->shape, (Shape3{8, 8, 8}));
}

TEST(Kits19EvalCasesTest, TheReferenceSplit) {
  int eval = 0;
  for (int c = 0; c < 210; ++c) eval += IsEvaluationCase(c);
  EXPECT_EQ(eval, 42);
  EXPECT_TRUE(IsEvaluationCase(0));
  EXPECT_TRUE(IsEvaluationCase(111));
  EXPECT_TRUE(IsEvaluationCase(207));
  EXPECT_FALSE(IsEvaluationCase(1));
  EXPECT_FALSE(IsEvaluationCase(209));
  EXPECT_EQ(CaseId("case_00042"), 42);
  EXPECT_EQ(CaseId("case_0042"), -1);
  EXPECT_EQ(CaseId("case_0004x"), -1);

  const fs::path d = FreshDir("split");
  const std::vector<float> f(8, 0.5f);
  const std::vector<uint8_t> u(8, 1);
  for (int id : {12, 1, 3, 4, 0}) {
    const std::string name = fmt::format("case_{:05d}", id);
    ASSERT_TRUE(WriteNpy(d / (name + "_x.npy"), "<f4", {1, 2, 2, 2}, f.data()).ok());
    ASSERT_TRUE(WriteNpy(d / (name + "_y.npy"), "|u1", {1, 2, 2, 2}, u.data()).ok());
  }
  WriteBytes(d / "notes_x.npy", "");
  absl::StatusOr<CaseSplit> split = ListPreparedCases(d);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->train, (std::vector<std::string>{"case_00001", "case_00004"}));
  EXPECT_EQ(split->eval, (std::vector<std::string>{"case_00000", "case_00003", "case_00012"}));
}

TEST(Kits19BadInputTest, NiftiErrorsNameTheFile) {
  const fs::path d = FreshDir("bad_nifti");
  const NiftiVolume v = Volume({4, 3, 2}, {1, 1, 1}, 7);
  ASSERT_TRUE(WriteNifti(d / "good.nii.gz", v, NiftiDtype::kInt16).ok());
  ASSERT_TRUE(WriteNifti(d / "plain.nii", v, NiftiDtype::kUint8).ok());
  const std::string gz = ReadBytes(d / "good.nii.gz"), plain = ReadBytes(d / "plain.nii");

  WriteBytes(d / "cut.nii.gz", gz.substr(0, gz.size() / 2));
  EXPECT_TRUE(
      Contains(Message(ReadNifti(d / "cut.nii.gz").status()), "cut.nii.gz: truncated gzip stream"));
  std::string corrupt = gz;
  for (size_t i = 12; i < corrupt.size() - 8; i += 3) corrupt[i] = static_cast<char>(~corrupt[i]);
  WriteBytes(d / "corrupt.nii.gz", corrupt);
  EXPECT_TRUE(Contains(Message(ReadNifti(d / "corrupt.nii.gz").status()),
                       "corrupt.nii.gz: corrupt gzip stream"));
  WriteBytes(d / "short.nii", plain.substr(0, plain.size() - 1));
  EXPECT_TRUE(Contains(Message(ReadNifti(d / "short.nii").status()), "short.nii: truncated"));
  EXPECT_TRUE(
      Contains(Message(ReadNifti(d / "absent.nii.gz").status()), "absent.nii.gz: cannot open"));
  WriteBytes(d / "text.nii", std::string(400, 'x'));
  EXPECT_TRUE(Contains(Message(ReadNifti(d / "text.nii").status()), "text.nii: not a NIfTI-1"));

  // Header fields patched one at a time (little-endian, as written here).
  auto patched = [&](const std::string& name, size_t at, auto value) {
    std::string bytes = plain;
    std::memcpy(bytes.data() + at, &value, sizeof(value));
    WriteBytes(d / name, bytes);
    return Message(ReadNifti(d / name).status());
  };
  EXPECT_TRUE(Contains(patched("dim5.nii", 40, int16_t{5}), "dim5.nii: header dim[0]=5"));
  EXPECT_TRUE(
      Contains(patched("negative.nii", 44, int16_t{-3}), "negative.nii: header sizes 4x-3x2"));
  EXPECT_TRUE(Contains(patched("huge.nii", 42, int16_t{32767}), "huge.nii: truncated"));
  EXPECT_TRUE(Contains(patched("rgb.nii", 70, int16_t{128}), "rgb.nii: NIfTI datatype 128 is not"));
  EXPECT_TRUE(Contains(patched("offset.nii", 108, 1e9f), "offset.nii: vox_offset"));
  EXPECT_TRUE(Contains(patched("pair.nii", 344, std::array<char, 4>{'n', 'i', '1', '\0'}),
                       "pair.nii: not a single-file NIfTI-1 volume"));
  EXPECT_TRUE(Contains(patched("inter.nii", 116, std::nanf("")),
                       "inter.nii: scl_slope 1 with a non-finite scl_inter"));
}

long MaxRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss >> 10;
}

// A gzip bomb: a small volume followed by 256 MiB of zeros that inflate from
// about 1 MiB. Only what the header declares is inflated.
TEST(Kits19BadInputTest, AGzipBombIsNeverInflatedWhole) {
  const fs::path d = FreshDir("bomb");
  ASSERT_TRUE(WriteNifti(d / "v.nii", Volume({4, 3, 2}, {1, 1, 1}, 7), NiftiDtype::kUint8).ok());
  const std::string plain = ReadBytes(d / "v.nii");
  gzFile gz = gzopen((d / "bomb.nii.gz").c_str(), "wb1");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, plain.data(), static_cast<unsigned>(plain.size())),
            static_cast<int>(plain.size()));
  const std::string zeros(1 << 20, '\0');
  for (int i = 0; i < 256; ++i) ASSERT_GT(gzwrite(gz, zeros.data(), zeros.size()), 0);
  ASSERT_EQ(gzclose(gz), Z_OK);
  ASSERT_LT(fs::file_size(d / "bomb.nii.gz"), 4u << 20);
  const long before = MaxRssMiB();
  absl::StatusOr<NiftiVolume> v = ReadNifti(d / "bomb.nii.gz");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->voxels.size(), 24u);
  EXPECT_LT(MaxRssMiB() - before, 64) << "the reader allocated for the whole stream";

  // A header that declares more than any volume may take is refused unread.
  std::string huge = plain;
  const int16_t dims[3] = {32767, 32767, 32767}, float64 = 64;
  std::memcpy(huge.data() + 42, dims, sizeof dims);
  std::memcpy(huge.data() + 70, &float64, sizeof float64);
  gz = gzopen((d / "huge.nii.gz").c_str(), "wb");
  ASSERT_EQ(gzwrite(gz, huge.data(), static_cast<unsigned>(huge.size())),
            static_cast<int>(huge.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
  EXPECT_TRUE(Contains(Message(ReadNifti(d / "huge.nii.gz").status()), "more than the 8 GiB"));
}

// Every truncation and many random header bytes: an error or a volume, never
// a crash (run under the sanitizers in CI).
TEST(Kits19BadInputTest, NoHeaderBytesCrashTheReader) {
  const fs::path d = FreshDir("fuzz");
  ASSERT_TRUE(WriteNifti(d / "v.nii", Volume({3, 2, 2}, {1, 1, 1}, 5), NiftiDtype::kFloat32).ok());
  const std::string plain = ReadBytes(d / "v.nii");
  for (size_t n = 0; n < plain.size(); ++n) {
    WriteBytes(d / "t.nii", plain.substr(0, n));
    EXPECT_FALSE(ReadNifti(d / "t.nii").ok()) << n;
  }
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::string bytes = plain;
    for (int k = 0; k < 4; ++k) bytes[rng() % 352] = static_cast<char>(rng());
    WriteBytes(d / "f.nii", bytes);
    absl::StatusOr<NiftiVolume> v = ReadNifti(d / "f.nii");
    if (v.ok()) {
      EXPECT_EQ(v->voxels.size(), static_cast<size_t>(v->shape[0] * v->shape[1] * v->shape[2]));
    }
  }
}

TEST(Kits19BadInputTest, WriteNiftiRefusesValuesThatDoNotFit) {
  const fs::path d = FreshDir("bad_write");
  NiftiVolume v = Volume({2, 2, 2}, {1, 1, 1}, 3);
  v.voxels[5] = 256;
  const absl::Status s = WriteNifti(d / "labels.nii.gz", v, NiftiDtype::kUint8);
  EXPECT_TRUE(Contains(Message(s), "labels.nii.gz: voxel (1, 0, 1) = 256 does not fit uint8"));
  EXPECT_FALSE(fs::exists(d / "labels.nii.gz"));
  v.voxels.pop_back();
  EXPECT_TRUE(Contains(Message(WriteNifti(d / "short.nii", v, NiftiDtype::kFloat32)),
                       "short.nii: 7 voxels for shape 2x2x2"));
}

TEST(Kits19BadInputTest, PreparationErrorsNameTheCaseOrFile) {
  const fs::path d = FreshDir("bad_prepare");
  const NiftiVolume image = Volume({2, 2, 2}, {1, 1, 1}, 9);
  NiftiVolume other = Volume({2, 4, 1}, {1, 1, 1}, 3);
  EXPECT_TRUE(Contains(Message(PrepareCase(image, other, {}, "case_00009").status()),
                       "case_00009: segmentation is 2x4x1 but imaging is 2x2x2"));
  NiftiVolume four = Volume({2, 2, 2}, {1, 1, 1}, 5);
  EXPECT_TRUE(Contains(Message(PrepareCase(image, four, {}, "case_00008").status()),
                       "case_00008: segmentation value 3 at voxel 3"));

  fs::create_directories(d / "raw" / "case_00001");
  ASSERT_TRUE(
      WriteNifti(d / "raw" / "case_00001" / "imaging.nii.gz", image, NiftiDtype::kInt16).ok());
  EXPECT_TRUE(Contains(Message(PrepareTree(d / "raw", d / "out", {}, 1)),
                       "case_00001/segmentation.nii.gz: cannot open"));
  EXPECT_TRUE(Contains(Message(PrepareTree(d / "empty", d / "out", {}, 1)), "empty: "));

  const std::vector<float> f(8, 0.5f);
  ASSERT_TRUE(WriteNpy(d / "case_00002_x.npy", "<f4", {1, 2, 2, 2}, f.data()).ok());
  ASSERT_TRUE(WriteNpy(d / "case_00002_y.npy", "<f4", {1, 2, 2, 2}, f.data()).ok());
  EXPECT_TRUE(
      Contains(Message(LoadPreparedCase(d / "case_00002_x.npy", d / "case_00002_y.npy").status()),
               "case_00002_y.npy: dtype '<f4', expected '|u1'"));
  ASSERT_TRUE(WriteNpy(d / "case_00004_x.npy", "<f4", {2, 2, 2}, f.data()).ok());
  EXPECT_TRUE(
      Contains(Message(LoadPreparedCase(d / "case_00004_x.npy", d / "case_00002_y.npy").status()),
               "case_00004_x.npy: shape (2, 2, 2), expected (1, D, H, W)"));
  const std::string npy = ReadBytes(d / "case_00002_x.npy");
  WriteBytes(d / "cut_x.npy", npy.substr(0, npy.size() - 3));
  EXPECT_TRUE(Contains(Message(ReadNpy(d / "cut_x.npy").status()), "cut_x.npy: truncated"));
  fs::remove(d / "case_00002_y.npy");
  EXPECT_TRUE(Contains(Message(ListPreparedCases(d).status()), "case_00002_y.npy: missing"));
}

}  // namespace
}  // namespace mlperf::kits19
