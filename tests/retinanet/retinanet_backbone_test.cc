// The backbone's checkpoint: torchvision's resnext50_32x4d state dict saved
// with torch.save (as the reference downloads it, in torch's zip format and
// the legacy one), read natively into RetinaNet's body at the reference's
// depth and widths and written back: every tensor equal, under the same
// names; a load that misses a tensor changes nothing. The PyTorch reader's
// own cases.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/io/safetensors.h"
#include "reference/io/torch_checkpoint.h"
#include "reference/models/retinanet.h"
#include "tests/core/parity_util.h"

namespace mlperf::models {
namespace {

namespace fs = std::filesystem;

int Exit(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

RetinaNetConfig ReferenceBody() {
  RetinaNetConfig c;  // ResNeXt50-32x4d, FPN 256
  c.backbone.image_size = 64;
  c.num_classes = 4;
  c.max_boxes = 1;
  return c;
}

TEST(RetinaNetBackbone, TorchvisionsResNeXt50PthLoadsWhole) {
  if (!testing::PythonHas("torch, torchvision, safetensors"))
    GTEST_SKIP() << "PyTorch, torchvision or safetensors is missing for /usr/bin/python3";
  const fs::path dir = fs::temp_directory_path() / fmt::format("retinanet_backbone_{}", ::getpid());
  fs::create_directories(dir);
  const std::string helper =
      fmt::format("/usr/bin/python3 {}/tests/retinanet/backbone_checkpoint.py", MLPERF_SOURCE_DIR);
  // Written with torch.save both ways, read natively, written back: equal.
  const std::string pth = (dir / "resnext50_32x4d.pth").string(),
                    legacy = (dir / "legacy.pth").string();
  ASSERT_EQ(Exit(fmt::format("{} make {}", helper, pth)), 0);
  ASSERT_EQ(Exit(fmt::format("{} make {} legacy", helper, legacy)), 0);
  const std::string back = (dir / "back.safetensors").string();
  for (const std::string& file : {pth, legacy}) {
    RetinaNet model(ReferenceBody(), 1, 6);
    const absl::Status loaded = model.LoadBackbone(file);
    ASSERT_TRUE(loaded.ok()) << loaded;
    fs::remove(back);
    ASSERT_TRUE(model.SaveBackbone(back).ok());
    EXPECT_EQ(Exit(fmt::format("{} compare {} {}", helper, pth, back)), 0) << file;
  }
  // What SaveBackbone wrote (safetensors) loads back the same.
  RetinaNet model(ReferenceBody(), 1, 7);
  ASSERT_TRUE(model.LoadBackbone(back).ok());
  const std::string again = (dir / "again.safetensors").string();
  ASSERT_TRUE(model.SaveBackbone(again).ok());
  EXPECT_EQ(Exit(fmt::format("{} compare {} {}", helper, pth, again)), 0);

  // A file without one tensor: refused, naming it; nothing changed.
  auto file = io::SafetensorsFile::Read(back);
  ASSERT_TRUE(file.ok());
  std::vector<io::NamedTensor> most;
  std::vector<std::vector<float>> storage;
  for (const auto& [name, stored] : file->tensors()) {
    if (name == "layer3.2.bn2.running_var") continue;
    storage.emplace_back(static_cast<size_t>(stored.shape.numel()));
    ASSERT_TRUE(file->CopyToFloats(name, stored.shape, storage.back().data()).ok());
    most.push_back({name, core::Tensor(storage.back().data(), stored.shape, core::DType::kF32)});
  }
  const std::string partial = (dir / "partial.safetensors").string();
  ASSERT_TRUE(io::SaveSafetensors(partial, most).ok());
  RetinaNet fresh(ReferenceBody(), 1, 5);
  const std::vector<float> params = fresh.ParametersToHost(), buffers = fresh.BuffersToHost();
  const absl::Status s = fresh.LoadBackbone(partial);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("layer3.2.bn2.running_var"), std::string::npos) << s;
  EXPECT_EQ(fresh.ParametersToHost(), params);
  EXPECT_EQ(fresh.BuffersToHost(), buffers);
  fs::remove_all(dir);
}

// The reader's own cases, in both formats: every float type as fp32, a
// slice at an offset into a shared storage, a transposed view, integers and
// a wrong shape refused as floats, a non-checkpoint refused.
TEST(TorchCheckpoint, ReadsEveryFloatTypeInBothFormats) {
  if (!testing::PythonHas("torch, torchvision, safetensors"))
    GTEST_SKIP() << "PyTorch is missing for /usr/bin/python3";
  const std::string helper =
      fmt::format("/usr/bin/python3 {}/tests/retinanet/backbone_checkpoint.py", MLPERF_SOURCE_DIR);
  for (const std::string format : {"zip", "legacy"}) {
    const std::string pth = testing::TempPath("dtypes_" + format);
    ASSERT_EQ(Exit(fmt::format("{} dtypes {} {}", helper, pth, format)), 0);
    absl::StatusOr<io::TorchCheckpoint> file = io::TorchCheckpoint::Read(pth);
    ASSERT_TRUE(file.ok()) << file.status();
    std::vector<float> v(24);
    ASSERT_TRUE(file->CopyToFloats("f32", core::Shape{2, 3, 4}, v.data()).ok());
    for (int i = 0; i < 24; ++i) EXPECT_EQ(v[i], static_cast<float>(i) / 7) << format;
    ASSERT_TRUE(file->CopyToFloats("f16", core::Shape{6}, v.data()).ok());
    EXPECT_NEAR(v[5], 5.0f / 7 - 1, 1e-3) << format;
    ASSERT_TRUE(file->CopyToFloats("bf16", core::Shape{5}, v.data()).ok());
    EXPECT_NEAR(v[4], 4.0f / 7, 1e-2) << format;
    ASSERT_TRUE(file->CopyToFloats("f64", core::Shape{4}, v.data()).ok());
    EXPECT_FLOAT_EQ(v[3], 9.0f / 7) << format;
    ASSERT_TRUE(file->CopyToFloats("slice", core::Shape{6}, v.data()).ok());
    EXPECT_EQ(v[0], 10.0f / 7) << format;
    EXPECT_EQ(v[5], 15.0f / 7) << format;
    EXPECT_FALSE(file->CopyToFloats("i64", core::Shape{5}, v.data()).ok());
    EXPECT_FALSE(file->CopyToFloats("f32", core::Shape{24}, v.data()).ok());
    // A transposed view: read in its own row-major order.
    ASSERT_TRUE(file->CopyToFloats("strided", core::Shape{6, 4}, v.data()).ok());
    EXPECT_EQ(v[1], 6.0f / 7) << format;  // [0][1] of the transpose: [1][0] of the original
    EXPECT_EQ(v[4], 1.0f / 7) << format;
    // Cut short anywhere: refused with a message, never read past the end.
    std::ifstream in(pth, std::ios::binary);
    const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string cut = pth + ".cut";
    for (size_t keep : {whole.size() / 3, whole.size() / 2, whole.size() - 9}) {
      { std::ofstream(cut, std::ios::binary) << whole.substr(0, keep); }
      const absl::StatusOr<io::TorchCheckpoint> broken = io::TorchCheckpoint::Read(cut);
      EXPECT_FALSE(broken.ok()) << format << " cut at " << keep;
    }
    std::filesystem::remove(cut);
    std::filesystem::remove(pth);
  }
  EXPECT_FALSE(io::TorchCheckpoint::Read("/nonexistent.pth").ok());
  const std::string text = testing::TempPath("not_a_checkpoint");
  { std::ofstream(text) << "PK not really"; }
  EXPECT_FALSE(io::TorchCheckpoint::Read(text).ok());
  std::filesystem::remove(text);
}

}  // namespace
}  // namespace mlperf::models
