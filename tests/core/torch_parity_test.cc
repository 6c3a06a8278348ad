// Forward outputs and gradients of the CPU ops against PyTorch 1.13 (Debian's
// python3-torch, run as /usr/bin/python3 tests/core/torch_parity.py) within
// fp32 tolerance. Skips with a message where PyTorch is not installed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "reference/io/safetensors.h"
#include "reference/kernels/composite.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/cpu/conv.h"
#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/linear.h"
#include "reference/kernels/cpu/loss.h"
#include "reference/kernels/cpu/norm.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/embedding.h"
#include "reference/kernels/ops/pool.h"
#include "reference/kernels/ops/softmax.h"
#include "tests/core/test_util.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf {
namespace {

using testing::Buffer;
using testing::IntBuffer;

class TorchParityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0) {
      skip_reason_ =
          "PyTorch is not installed for /usr/bin/python3 (apt-get install python3-torch)";
      return;
    }
    inputs_ = new std::map<std::string, Buffer>();
    int_inputs_ = new std::map<std::string, IntBuffer>();
    MakeInputs();
    const auto dir = std::filesystem::temp_directory_path();
    const std::string pid = std::to_string(::getpid());
    const std::string in_path = (dir / ("torch_parity_in_" + pid + ".safetensors")).string();
    const std::string out_path = (dir / ("torch_parity_out_" + pid + ".safetensors")).string();
    std::vector<io::NamedTensor> named;
    for (auto& [name, b] : *inputs_) named.push_back({name, b.t()});
    for (auto& [name, b] : *int_inputs_) named.push_back({name, b.t()});
    ASSERT_TRUE(io::SaveSafetensors(in_path, named).ok());
    const std::string cmd = "/usr/bin/python3 " MLPERF_SOURCE_DIR "/tests/core/torch_parity.py " +
                            in_path + " " + out_path;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    absl::StatusOr<io::SafetensorsFile> f = io::SafetensorsFile::Read(out_path);
    ASSERT_TRUE(f.ok()) << f.status();
    outputs_ = new io::SafetensorsFile(*std::move(f));
    std::remove(in_path.c_str());
    std::remove(out_path.c_str());
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
  }

  static Buffer& In(const std::string& name) { return inputs_->at(name); }
  static IntBuffer& Ids(const std::string& name) { return int_inputs_->at(name); }

  // Expects `ours` to equal PyTorch's tensor `name` elementwise.
  static void ExpectMatches(const std::string& name, const std::vector<float>& ours,
                            double tol = 1e-4) {
    auto it = outputs_->tensors().find(name);
    ASSERT_NE(it, outputs_->tensors().end()) << name;
    Buffer theirs(it->second.shape);
    ASSERT_TRUE(outputs_->CopyTo(name, theirs.t()).ok());
    ASSERT_EQ(static_cast<size_t>(theirs.size()), ours.size()) << name;
    int bad = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
      if (std::fabs(ours[i] - theirs.data[i]) > tol * (1.0 + std::fabs(theirs.data[i])) &&
          ++bad <= 3)
        ADD_FAILURE() << name << "[" << i << "]: ours " << ours[i] << " torch " << theirs.data[i];
    }
    EXPECT_EQ(bad, 0) << name;
  }

 private:
  static void Add(const std::string& name, core::Shape shape, uint64_t seed, float lo = -1.0f,
                  float hi = 1.0f) {
    Buffer b(shape);
    testing::FillRandom(b, seed, lo, hi);
    inputs_->emplace(name, std::move(b));
  }
  static void AddIds(const std::string& name, core::Shape shape, uint64_t seed, int32_t classes) {
    IntBuffer b(shape);
    for (size_t i = 0; i < b.data.size(); ++i)
      b.data[i] = static_cast<int32_t>(core::PhiloxBits(seed, 1, i) % classes);
    int_inputs_->emplace(name, std::move(b));
  }

  static void MakeInputs() {
    uint64_t s = 1;
    Add("conv2d/x", {2, 3, 7, 6}, s++);
    Add("conv2d/w", {4, 3, 3, 3}, s++);
    Add("conv2d/dy", {2, 4, 4, 3}, s++);
    // ResNeXt50-32x4d's grouped 3x3s: layer1's (128 channels, 32 groups) and
    // layer2's first, stride 2 (256 channels).
    Add("grouped/x", {2, 128, 14, 14}, s++);
    Add("grouped/w", {128, 4, 3, 3}, s++);
    Add("grouped/dy", {2, 128, 14, 14}, s++);
    Add("grouped_s2/x", {1, 256, 12, 12}, s++);
    Add("grouped_s2/w", {256, 8, 3, 3}, s++);
    Add("grouped_s2/dy", {1, 256, 6, 6}, s++);
    Add("conv3d/x", {1, 2, 4, 3, 5}, s++);
    Add("conv3d/w", {3, 2, 3, 3, 3}, s++);
    Add("conv3d/dy", {1, 3, 4, 3, 5}, s++);
    Add("convT3d/x", {2, 3, 2, 2, 1}, s++);
    Add("convT3d/w", {3, 2, 2, 2, 2}, s++);
    Add("convT3d/b", {2}, s++);
    Add("convT3d/dy", {2, 2, 4, 4, 2}, s++);
    Add("bn/x", {4, 3, 2, 3}, s++, -2.0f, 3.0f);
    Add("bn/gamma", {3}, s++, 0.5f, 1.5f);
    Add("bn/beta", {3}, s++);
    Add("bn/dy", {4, 3, 2, 3}, s++);
    Add("bn/running_mean", {3}, s++);
    Add("bn/running_var", {3}, s++, 0.5f, 2.0f);
    Add("in/x", {2, 3, 2, 2, 3}, s++, -2.0f, 2.0f);
    Add("in/gamma", {3}, s++, 0.5f, 1.5f);
    Add("in/beta", {3}, s++);
    Add("in/dy", {2, 3, 2, 2, 3}, s++);
    Add("ln/x", {5, 16}, s++, -2.0f, 2.0f);
    Add("ln/gamma", {16}, s++, 0.5f, 1.5f);
    Add("ln/beta", {16}, s++);
    Add("ln/dy", {5, 16}, s++);
    Add("relu/x", {40}, s++);
    Add("relu/dy", {40}, s++);
    Add("gelu/x", {40}, s++, -4.0f, 4.0f);
    Add("gelu/dy", {40}, s++);
    Add("softmax/x", {4, 9}, s++, -5.0f, 5.0f);
    Add("softmax/dy", {4, 9}, s++);
    Add("maxpool/x", {2, 2, 7, 6}, s++);
    Add("maxpool/dy", {2, 2, 4, 3}, s++);
    Add("avgpool/x", {2, 2, 7, 6}, s++);
    Add("avgpool/dy", {2, 2, 4, 3}, s++);
    Add("gap/x", {2, 5, 3, 3}, s++);
    Add("gap/dy", {2, 5}, s++);
    Add("linear/x", {6, 5}, s++);
    Add("linear/w", {4, 5}, s++);
    Add("linear/b", {4}, s++);
    Add("linear/dy", {6, 4}, s++);
    Add("embedding/table", {10, 4}, s++);
    AddIds("embedding/ids", {7}, s++, 10);
    Add("embedding/dy", {7, 4}, s++);
    Add("attn/q", {2, 2, 5, 4}, s++);
    Add("attn/k", {2, 2, 5, 4}, s++);
    Add("attn/v", {2, 2, 5, 4}, s++);
    Add("attn/dy", {2, 2, 5, 4}, s++);
    Buffer mask({2, 5}, 1.0f);
    mask[3] = mask[4] = mask[9] = 0.0f;
    inputs_->emplace("attn/mask", std::move(mask));
    Add("xent/logits", {6, 5}, s++, -3.0f, 3.0f);
    AddIds("xent/labels", {6}, s++, 5);
    Add("dice/logits", {2, 3, 2, 3, 2}, s++, -2.0f, 2.0f);
    AddIds("dice/labels", {2, 2, 3, 2}, s++, 3);
    Add("mlm/logits", {5, 11}, s++, -3.0f, 3.0f);
    AddIds("mlm/labels", {5}, s++, 11);
    Buffer weights({5}, 1.0f);
    weights[4] = 0.0f;
    inputs_->emplace("mlm/weights", std::move(weights));
    // Channels-last activations, stored NHWC.
    Add("cl_conv/x", {2, 7, 6, 3}, s++);
    Add("cl_conv/w", {4, 3, 3, 3}, s++);
    Add("cl_conv/dy", {2, 4, 3, 4}, s++);
    Add("cl_conv1x1/x", {2, 5, 5, 4}, s++);
    Add("cl_conv1x1/w", {3, 4, 1, 1}, s++);
    Add("cl_conv1x1/dy", {2, 3, 3, 3}, s++);
    Add("cl_bn/x", {4, 2, 3, 3}, s++, -2.0f, 3.0f);
    Add("cl_bn/gamma", {3}, s++, 0.5f, 1.5f);
    Add("cl_bn/beta", {3}, s++);
    Add("cl_bn/dy", {4, 2, 3, 3}, s++);
    Add("cl_bn/running_mean", {3}, s++);
    Add("cl_bn/running_var", {3}, s++, 0.5f, 2.0f);
    Add("cl_maxpool/x", {2, 7, 6, 2}, s++);
    Add("cl_maxpool/dy", {2, 4, 3, 2}, s++);
    Add("cl_gap/x", {2, 3, 3, 5}, s++);
    Add("cl_gap/dy", {2, 5}, s++);
  }

  static inline std::string skip_reason_;
  static inline std::map<std::string, Buffer>* inputs_ = nullptr;
  static inline std::map<std::string, IntBuffer>* int_inputs_ = nullptr;
  static inline io::SafetensorsFile* outputs_ = nullptr;
};

// Runs conv forward and both backward passes for geometry g on inputs `p`/.
void CheckConv(const std::string& p, const ConvGeometry& g, Buffer& x, Buffer& w, Buffer& dy,
               const std::function<void(const std::string&, const std::vector<float>&)>& expect) {
  Buffer y(dy.shape), dx(x.shape), dw(w.shape), ws({cpu::ConvWorkspaceElements(g) + 1});
  cpu::ConvForward(g, x.t(), w.t(), y.t(), ws.t());
  cpu::ConvBackwardData(g, dy.t(), w.t(), dx.t(), ws.t());
  cpu::ConvBackwardWeight(g, x.t(), dy.t(), dw.t(), ws.t());
  expect(p + "y", y.data);
  expect(p + "dx", dx.data);
  expect(p + "dw", dw.data);
}

TEST_F(TorchParityTest, Convolutions) {
  auto expect = [](const std::string& n, const std::vector<float>& v) { ExpectMatches(n, v); };
  CheckConv("conv2d/", Conv2d(2, 3, 7, 6, 4, 3, 3, 2, 1), In("conv2d/x"), In("conv2d/w"),
            In("conv2d/dy"), expect);
  ConvGeometry g3 = Conv3d(1, 2, 4, 3, 5, 3, 3, 1, 1);
  CheckConv("conv3d/", g3, In("conv3d/x"), In("conv3d/w"), In("conv3d/dy"), expect);
  ConvGeometry grouped = Conv2d(2, 128, 14, 14, 128, 3, 3, 1, 1);
  ConvGeometry grouped_s2 = Conv2d(1, 256, 12, 12, 256, 3, 3, 2, 1);
  grouped.groups = grouped_s2.groups = 32;
  CheckConv("grouped/", grouped, In("grouped/x"), In("grouped/w"), In("grouped/dy"), expect);
  CheckConv("grouped_s2/", grouped_s2, In("grouped_s2/x"), In("grouped_s2/w"), In("grouped_s2/dy"),
            expect);
}

TEST_F(TorchParityTest, TransposedConv3dWithBias) {
  // ConvTranspose3d(3 -> 2, k=2, s=2): described by the conv 2 -> 3 it inverts.
  const ConvGeometry g = Conv3d(2, 2, 4, 4, 2, 3, 2, 2, 0);
  Buffer &x = In("convT3d/x"), &w = In("convT3d/w"), &b = In("convT3d/b"), &dy = In("convT3d/dy");
  Buffer y(dy.shape), dx(x.shape), dw(w.shape), db(b.shape);
  Buffer ws({cpu::ConvWorkspaceElements(g) + 1});
  ops::ConvTransposeForward(g, x.t(), w.t(), y.t(), ws.t());
  cpu::BiasAddChannels(b.t(), y.t());
  ops::ConvTransposeBackwardData(g, dy.t(), w.t(), dx.t(), ws.t());
  ops::ConvTransposeBackwardWeight(g, x.t(), dy.t(), dw.t(), ws.t());
  cpu::BiasBackwardChannels(dy.t(), db.t());
  ExpectMatches("convT3d/y", y.data);
  ExpectMatches("convT3d/dx", dx.data);
  ExpectMatches("convT3d/dw", dw.data);
  ExpectMatches("convT3d/db", db.data);
}

TEST_F(TorchParityTest, BatchNormTrainingAndRunningStatistics) {
  Buffer &x = In("bn/x"), &gamma = In("bn/gamma"), &beta = In("bn/beta"), &dy = In("bn/dy");
  Buffer rm = In("bn/running_mean"), rv = In("bn/running_var");
  Buffer y(x.shape), mean({3}), inv_std({3}), dx(x.shape), dg({3}), db({3});
  cpu::BatchNormForwardTraining({.epsilon = 1e-5f, .momentum = 0.1f}, x.t(), gamma.t(), beta.t(),
                                y.t(), mean.t(), inv_std.t(), rm.t(), rv.t());
  cpu::BatchNormBackward(x.t(), dy.t(), gamma.t(), mean.t(), inv_std.t(), dx.t(), dg.t(), db.t());
  ExpectMatches("bn/y", y.data);
  ExpectMatches("bn/dx", dx.data);
  ExpectMatches("bn/dgamma", dg.data);
  ExpectMatches("bn/dbeta", db.data);
  ExpectMatches("bn/running_mean", rm.data);
  ExpectMatches("bn/running_var", rv.data);
}

TEST_F(TorchParityTest, InstanceAndLayerNorm) {
  {
    Buffer &x = In("in/x"), &gamma = In("in/gamma"), &beta = In("in/beta"), &dy = In("in/dy");
    Buffer y(x.shape), mean({6}), inv_std({6}), dx(x.shape), dg({3}), db({3});
    cpu::InstanceNormForward(1e-5f, x.t(), gamma.t(), beta.t(), y.t(), mean.t(), inv_std.t());
    cpu::InstanceNormBackward(x.t(), dy.t(), gamma.t(), mean.t(), inv_std.t(), dx.t(), dg.t(),
                              db.t());
    ExpectMatches("in/y", y.data);
    ExpectMatches("in/dx", dx.data);
    ExpectMatches("in/dgamma", dg.data);
    ExpectMatches("in/dbeta", db.data);
  }
  Buffer &x = In("ln/x"), &gamma = In("ln/gamma"), &beta = In("ln/beta"), &dy = In("ln/dy");
  Buffer y(x.shape), mean({5}), inv_std({5}), dx(x.shape), dg({16}), db({16});
  cpu::LayerNormForward(1e-12f, x.t(), gamma.t(), beta.t(), y.t(), mean.t(), inv_std.t());
  cpu::LayerNormBackward(x.t(), dy.t(), gamma.t(), mean.t(), inv_std.t(), dx.t(), dg.t(), db.t());
  ExpectMatches("ln/y", y.data);
  ExpectMatches("ln/dx", dx.data);
  ExpectMatches("ln/dgamma", dg.data);
  ExpectMatches("ln/dbeta", db.data);
}

TEST_F(TorchParityTest, ActivationsAndSoftmax) {
  Buffer &x = In("relu/x"), &dy = In("relu/dy");
  Buffer y(x.shape), dx(x.shape);
  ops::ReluForward(x.t(), y.t());
  ops::ReluBackward(y.t(), dy.t(), dx.t());
  ExpectMatches("relu/y", y.data);
  ExpectMatches("relu/dx", dx.data);
  Buffer &gx = In("gelu/x"), &gdy = In("gelu/dy");
  ops::GeluForward(gx.t(), y.t());
  ops::GeluBackward(gx.t(), gdy.t(), dx.t());
  ExpectMatches("gelu/y", y.data);
  ExpectMatches("gelu/dx", dx.data);
  Buffer &sx = In("softmax/x"), &sdy = In("softmax/dy");
  Buffer sy(sx.shape), sdx(sx.shape);
  ops::SoftmaxForward(sx.t(), sy.t());
  ops::SoftmaxBackward(sy.t(), sdy.t(), sdx.t());
  ExpectMatches("softmax/y", sy.data);
  ExpectMatches("softmax/dx", sdx.data);
}

TEST_F(TorchParityTest, Pooling) {
  const ConvGeometry g = Conv2d(2, 2, 7, 6, 2, 3, 3, 2, 1);
  Buffer &x = In("maxpool/x"), &dy = In("maxpool/dy");
  Buffer y(dy.shape), dx(x.shape);
  ops::MaxPoolForward(g, x.t(), y.t());
  ops::MaxPoolBackward(g, x.t(), dy.t(), dx.t());
  ExpectMatches("maxpool/y", y.data);
  ExpectMatches("maxpool/dx", dx.data);
  Buffer &ax = In("avgpool/x"), &ady = In("avgpool/dy");
  ops::AvgPoolForward(g, true, ax.t(), y.t());
  ops::AvgPoolBackward(g, true, ady.t(), dx.t());
  ExpectMatches("avgpool/y", y.data);
  ExpectMatches("avgpool/dx", dx.data);
  Buffer &gx = In("gap/x"), &gdy = In("gap/dy");
  Buffer gy(gdy.shape), gdx(gx.shape);
  ops::GlobalAvgPoolForward(gx.t(), gy.t());
  ops::GlobalAvgPoolBackward(gdy.t(), gdx.t());
  ExpectMatches("gap/y", gy.data);
  ExpectMatches("gap/dx", gdx.data);
}

// NHWC tensors against PyTorch's channels_last kernels.
TEST_F(TorchParityTest, ChannelsLast) {
  auto nhwc = [](Buffer& b) { return b.t().Reshaped(b.shape, core::Layout::kNHWC); };
  auto expect = [](const std::string& n, const std::vector<float>& v) { ExpectMatches(n, v); };
  const std::pair<const char*, ConvGeometry> convs[] = {
      {"cl_conv/", Conv2d(2, 3, 7, 6, 4, 3, 3, 2, 1)},
      {"cl_conv1x1/", Conv2d(2, 4, 5, 5, 3, 1, 1, 2, 0)}};
  for (const auto& [p, g] : convs) {
    const std::string prefix = p;
    Buffer &x = In(prefix + "x"), &w = In(prefix + "w"), &dy = In(prefix + "dy");
    Buffer y(dy.shape), dx(x.shape), dw(w.shape);
    Buffer ws({cpu::ConvWorkspaceElements(g, core::Layout::kNHWC) + 1});
    cpu::ConvForward(g, nhwc(x), w.t(), nhwc(y), ws.t());
    cpu::ConvBackwardData(g, nhwc(dy), w.t(), nhwc(dx), ws.t());
    cpu::ConvBackwardWeight(g, nhwc(x), nhwc(dy), dw.t(), ws.t());
    expect(prefix + "y", y.data);
    expect(prefix + "dx", dx.data);
    expect(prefix + "dw", dw.data);
  }
  {
    Buffer &x = In("cl_bn/x"), &gamma = In("cl_bn/gamma"), &beta = In("cl_bn/beta");
    Buffer& dy = In("cl_bn/dy");
    Buffer rm = In("cl_bn/running_mean"), rv = In("cl_bn/running_var");
    Buffer y(x.shape), mean({3}), inv_std({3}), dx(x.shape), dg({3}), db({3});
    cpu::BatchNormForwardTraining({.epsilon = 1e-5f, .momentum = 0.1f}, nhwc(x), gamma.t(),
                                  beta.t(), nhwc(y), mean.t(), inv_std.t(), rm.t(), rv.t());
    cpu::BatchNormBackward(nhwc(x), nhwc(dy), gamma.t(), mean.t(), inv_std.t(), nhwc(dx), dg.t(),
                           db.t());
    expect("cl_bn/y", y.data);
    expect("cl_bn/dx", dx.data);
    expect("cl_bn/dgamma", dg.data);
    expect("cl_bn/dbeta", db.data);
    expect("cl_bn/running_mean", rm.data);
    expect("cl_bn/running_var", rv.data);
  }
  const ConvGeometry pool = Conv2d(2, 2, 7, 6, 2, 3, 3, 2, 1);
  Buffer &x = In("cl_maxpool/x"), &dy = In("cl_maxpool/dy");
  Buffer y(dy.shape), dx(x.shape);
  ops::MaxPoolForward(pool, nhwc(x), nhwc(y));
  ops::MaxPoolBackward(pool, nhwc(x), nhwc(dy), nhwc(dx));
  expect("cl_maxpool/y", y.data);
  expect("cl_maxpool/dx", dx.data);
  Buffer &gx = In("cl_gap/x"), &gdy = In("cl_gap/dy");
  Buffer gy(gdy.shape), gdx(gx.shape);
  ops::GlobalAvgPoolForward(nhwc(gx), gy.t());
  ops::GlobalAvgPoolBackward(gdy.t(), nhwc(gdx));
  expect("cl_gap/y", gy.data);
  expect("cl_gap/dx", gdx.data);
}

TEST_F(TorchParityTest, LinearAndEmbedding) {
  Buffer &x = In("linear/x"), &w = In("linear/w"), &b = In("linear/b"), &dy = In("linear/dy");
  Buffer y(dy.shape), dx(x.shape), dw(w.shape), db(b.shape);
  cpu::LinearForward(x.t(), w.t(), b.t(), y.t());
  cpu::LinearBackward(x.t(), w.t(), dy.t(), dx.t(), dw.t(), db.t());
  ExpectMatches("linear/y", y.data);
  ExpectMatches("linear/dx", dx.data);
  ExpectMatches("linear/dw", dw.data);
  ExpectMatches("linear/db", db.data);
  Buffer &table = In("embedding/table"), &edy = In("embedding/dy");
  Buffer ey(edy.shape), dtable(table.shape);
  ops::EmbeddingForward(Ids("embedding/ids").t(), table.t(), ey.t());
  ops::EmbeddingBackward(Ids("embedding/ids").t(), edy.t(), dtable.t());
  ExpectMatches("embedding/y", ey.data);
  ExpectMatches("embedding/dtable", dtable.data);
}

TEST_F(TorchParityTest, AttentionWithPaddingMask) {
  Buffer &q = In("attn/q"), &k = In("attn/k"), &v = In("attn/v"), &dy = In("attn/dy");
  Buffer out(q.shape), probs({2, 2, 5, 5}), ws({2, 2, 5, 5}), dq(q.shape), dk(k.shape), dv(v.shape);
  ops::AttentionForward({}, q.t(), k.t(), v.t(), In("attn/mask").t(), probs.t(), out.t(), ws.t());
  ops::AttentionBackward({}, q.t(), k.t(), v.t(), probs.t(), dy.t(), dq.t(), dk.t(), dv.t(),
                         ws.t());
  ExpectMatches("attn/y", out.data);
  ExpectMatches("attn/dq", dq.data);
  ExpectMatches("attn/dk", dk.data);
  ExpectMatches("attn/dv", dv.data);
}

TEST_F(TorchParityTest, Losses) {
  Buffer loss({1});
  Buffer& z = In("xent/logits");
  Buffer dz(z.shape);
  // F.cross_entropy's mean reduction is the reference's sum / batch size.
  ops::SoftmaxCrossEntropy(0.1f, 6.0f, z.t(), Ids("xent/labels").t(), loss.t(), dz.t());
  ExpectMatches("xent/y", loss.data);
  ExpectMatches("xent/dlogits", dz.data);
  Buffer& dl = In("dice/logits");
  Buffer ddl(dl.shape), ws({cpu::DiceCrossEntropyWorkspaceElements(2, 3, 12)});
  ops::DiceCrossEntropy(dl.t(), Ids("dice/labels").t(), loss.t(), ddl.t(), ws.t());
  ExpectMatches("dice/y", loss.data);
  ExpectMatches("dice/dlogits", ddl.data);
  Buffer& ml = In("mlm/logits");
  Buffer dml(ml.shape);
  ops::MaskedLmLoss(ml.t(), Ids("mlm/labels").t(), In("mlm/weights").t(), loss.t(), dml.t());
  ExpectMatches("mlm/y", loss.data);
  ExpectMatches("mlm/dlogits", dml.data);
}

}  // namespace
}  // namespace mlperf
