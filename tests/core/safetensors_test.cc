// Checkpoint round trip in safetensors format, the file layout as read by an
// independent Python reader, and clean errors on bad input.
#include "reference/io/safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "reference/core/dtype.h"

namespace mlperf::io {
namespace {

using core::DType;
using core::Tensor;

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "_" + std::to_string(::getpid()) + ".safetensors"))
      .string();
}

struct Checkpoint {
  std::vector<float> weight = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, -7.0f};
  std::vector<float> momentum = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
  std::vector<uint16_t> bf16_copy;
  std::vector<int32_t> step = {1234};
  std::vector<NamedTensor> tensors() {
    bf16_copy.resize(weight.size());
    for (size_t i = 0; i < weight.size(); ++i) bf16_copy[i] = core::FloatToBf16(weight[i]);
    return {{"conv1.weight", Tensor(weight.data(), {2, 3}, DType::kF32)},
            {"momentum/conv1.weight", Tensor(momentum.data(), {2, 3}, DType::kF32)},
            {"conv1.weight.bf16", Tensor(bf16_copy.data(), {6}, DType::kBF16)},
            {"optimizer/step", Tensor(step.data(), {1}, DType::kI32)}};
  }
};

TEST(SafetensorsTest, RoundTripOfParametersAndOptimizerState) {
  const std::string path = TempPath("roundtrip");
  Checkpoint saved;
  ASSERT_TRUE(SaveSafetensors(path, saved.tensors(), {{"step", "1234"}, {"model", "resnet"}}).ok());
  Checkpoint loaded;
  std::fill(loaded.weight.begin(), loaded.weight.end(), 0.0f);
  std::fill(loaded.momentum.begin(), loaded.momentum.end(), 0.0f);
  loaded.step[0] = 0;
  std::vector<NamedTensor> into = loaded.tensors();
  absl::StatusOr<Metadata> meta = LoadSafetensors(path, into);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(loaded.weight, saved.weight);
  EXPECT_EQ(loaded.momentum, saved.momentum);
  EXPECT_EQ(loaded.bf16_copy, saved.bf16_copy);
  EXPECT_EQ(loaded.step[0], 1234);
  EXPECT_EQ(meta->at("step"), "1234");
  EXPECT_EQ(meta->at("model"), "resnet");
  std::remove(path.c_str());
}

// The layout checked by a reader that shares no code with ours: Python's
// struct + json, as the safetensors spec describes the format.
TEST(SafetensorsTest, LayoutReadsInAnIndependentPythonReader) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  const std::string path = TempPath("python");
  Checkpoint saved;
  ASSERT_TRUE(SaveSafetensors(path, saved.tensors(), {{"step", "1234"}}).ok());
  const std::string script =
      "import json,struct,sys\n"
      "b=open(sys.argv[1],'rb').read()\n"
      "n=struct.unpack('<Q',b[:8])[0]\n"
      "assert (8+n)%8==0\n"
      "h=json.loads(b[8:8+n])\n"
      "d=b[8+n:]\n"
      "e=h['conv1.weight']\n"
      "assert e['dtype']=='F32' and e['shape']==[2,3], e\n"
      "s,t=e['data_offsets']\n"
      "v=struct.unpack('<6f',d[s:t])\n"
      "assert v[0]==1.5 and v[2]==3.25 and v[5]==-7.0, v\n"
      "s,t=h['optimizer/step']['data_offsets']\n"
      "assert struct.unpack('<i',d[s:t])[0]==1234\n"
      "assert h['__metadata__']=={'step':'1234'}\n"
      "assert h['conv1.weight.bf16']['dtype']=='BF16'\n";
  const std::string script_path = TempPath("reader") + ".py";
  std::ofstream(script_path) << script;
  const int rc = std::system(("/usr/bin/python3 " + script_path + " " + path).c_str());
  EXPECT_EQ(rc, 0);
  std::remove(path.c_str());
  std::remove(script_path.c_str());
}

TEST(SafetensorsTest, BadInputGivesOneLineErrorsNotCrashes) {
  const std::string path = TempPath("bad");
  Checkpoint c;
  std::vector<NamedTensor> tensors = c.tensors();
  ASSERT_TRUE(SaveSafetensors(path, tensors).ok());
  std::string good;
  {
    std::ifstream in(path, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto write = [&](const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  };
  // Truncated data section.
  write(good.substr(0, good.size() - 4));
  absl::StatusOr<SafetensorsFile> f = SafetensorsFile::Read(path);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find(path), std::string::npos);
  EXPECT_NE(f.status().message().find("data_offsets"), std::string::npos) << f.status();
  // Header length beyond the file.
  write(std::string("\xff\xff\xff\x00\x00\x00\x00\x00", 8) + "{}");
  EXPECT_FALSE(SafetensorsFile::Read(path).ok());
  // Malformed JSON.
  write(std::string("\x05\x00\x00\x00\x00\x00\x00\x00", 8) + "{\"a\":");
  f = SafetensorsFile::Read(path);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("expected"), std::string::npos) << f.status();
  // Too short to hold the length.
  write("abc");
  EXPECT_FALSE(SafetensorsFile::Read(path).ok());
  // Missing file.
  EXPECT_EQ(SafetensorsFile::Read(path + ".missing").status().code(), absl::StatusCode::kNotFound);
  // Shape mismatch and missing tensor on load.
  write(good);
  std::vector<float> wrong(6);
  std::vector<NamedTensor> into = {{"conv1.weight", Tensor(wrong.data(), {3, 2}, DType::kF32)}};
  absl::StatusOr<Metadata> m = LoadSafetensors(path, into);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("[2, 3]"), std::string::npos) << m.status();
  into = {{"fc.weight", Tensor(wrong.data(), {6}, DType::kF32)}};
  EXPECT_EQ(LoadSafetensors(path, into).status().code(), absl::StatusCode::kNotFound);
  std::remove(path.c_str());
}

TEST(SafetensorsTest, FailedSaveKeepsTheEarlierCheckpoint) {
  const std::string path = TempPath("keep");
  Checkpoint c;
  ASSERT_TRUE(SaveSafetensors(path, c.tensors()).ok());
  const auto size_before = std::filesystem::file_size(path);
  // A device tensor cannot be saved; the earlier file must survive intact.
  std::vector<NamedTensor> device = {
      {"x", Tensor(c.weight.data(), {6}, DType::kF32, core::Device::kCuda)}};
  EXPECT_FALSE(SaveSafetensors(path, device).ok());
  EXPECT_FALSE(SaveSafetensors("/nonexistent_dir/x.safetensors", c.tensors()).ok());
  EXPECT_EQ(std::filesystem::file_size(path), size_before);
  EXPECT_TRUE(SafetensorsFile::Read(path).ok());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace mlperf::io
