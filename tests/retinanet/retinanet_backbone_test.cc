// The backbone's checkpoint: torchvision's resnext50_32x4d state dict saved
// with torch.save (as the reference downloads it), converted by
// scripts/convert_backbone.py, read into RetinaNet's body at the reference's
// depth and widths and written back: every tensor equal, under the same
// names. The converter's refusals, and a load that misses a tensor changes
// nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/io/safetensors.h"
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

TEST(RetinaNetBackbone, TorchvisionsResNeXt50LoadsWholeThroughTheConverter) {
  if (!testing::PythonHas("torch, torchvision, safetensors"))
    GTEST_SKIP() << "PyTorch, torchvision or safetensors is missing for /usr/bin/python3";
  const fs::path dir = fs::temp_directory_path() / fmt::format("retinanet_backbone_{}", ::getpid());
  fs::create_directories(dir);
  const std::string helper =
      fmt::format("/usr/bin/python3 {}/tests/retinanet/backbone_checkpoint.py", MLPERF_SOURCE_DIR);
  const std::string convert =
      fmt::format("/usr/bin/python3 {}/scripts/convert_backbone.py", MLPERF_SOURCE_DIR);
  const std::string pth = (dir / "resnext50_32x4d.pth").string(),
                    st = (dir / "body.safetensors").string();
  ASSERT_EQ(Exit(fmt::format("{} make {}", helper, pth)), 0);
  ASSERT_EQ(Exit(fmt::format("{} {} {} > /dev/null", convert, pth, st)), 0);
  // Never replaced; not a ResNet; usage.
  EXPECT_EQ(Exit(fmt::format("{} {} {} 2> /dev/null", convert, pth, st)), 2);
  EXPECT_EQ(
      Exit(fmt::format("{} {} {} 2> /dev/null", convert, st, (dir / "x.safetensors").string())), 1);
  EXPECT_EQ(Exit(fmt::format("{} {} 2> /dev/null", convert, pth)), 2);

  RetinaNet model(ReferenceBody(), 1, 5);
  ASSERT_TRUE(model.LoadBackbone(st).ok());
  const std::string back = (dir / "back.safetensors").string();
  ASSERT_TRUE(model.SaveBackbone(back).ok());
  EXPECT_EQ(Exit(fmt::format("{} compare {} {}", helper, pth, back)), 0);

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

}  // namespace
}  // namespace mlperf::models
