// Label `gpu`: the convolutions, batched GEMMs and linear layers of ops::
// under bf16 and fp16 on the device (operands converted to that type unless
// stored in it, the tensor cores, fp32 accumulation) against the same calls
// on the CPU (fp32 storage, rounded at the points of kernels/precision.h).
// Both read the same values; their fp32 sums may differ in order and so
// round an output one unit of the precision apart. Skips without a CUDA
// device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "reference/kernels/attention_params.h"
#include "reference/kernels/composite.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/conv.h"
#include "reference/kernels/cuda/conv_graph.h"
#include "reference/kernels/cuda/elementwise.h"
#include "reference/kernels/cuda/gemm_epilogue.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using core::DType;
using core::Tensor;
using testing::Buffer;

// Device copy of a host buffer (fp32), freed at scope end.
class OnDevice {
 public:
  explicit OnDevice(const Buffer& host) : shape_(host.shape), n_(host.data.size()) {
    EXPECT_EQ(cudaMalloc(&ptr_, n_ * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr_, host.data.data(), n_ * sizeof(float), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  ~OnDevice() { cudaFree(ptr_); }
  OnDevice(const OnDevice&) = delete;
  Tensor t() const { return Tensor(ptr_, shape_, DType::kF32, core::Device::kCuda); }
  float* get() const { return static_cast<float*>(ptr_); }
  std::vector<float> ToHost() const {
    cuda::Synchronize();
    std::vector<float> out(n_);
    EXPECT_EQ(cudaMemcpy(out.data(), ptr_, n_ * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return out;
  }

 private:
  void* ptr_ = nullptr;
  core::Shape shape_;
  size_t n_;
};

// Zeros shaped like `like`: where the device writes a result, so that an op
// that wrote nothing cannot pass for the CPU's.
Buffer Zeros(const Buffer& like) { return Buffer(like.shape); }

// A device tensor of `type` holding a host buffer's values (rounded to
// it), read back widened to fp32; freed at scope end.
class StoredOnDevice {
 public:
  StoredOnDevice(const Buffer& host, DType type) : fp32_(host), type_(type) {
    if (type == DType::kF32) return;
    EXPECT_EQ(cudaMalloc(&ptr_, host.data.size() * core::DTypeSize(type)), cudaSuccess);
    ops::Cast(fp32_.t(), t());
  }
  ~StoredOnDevice() { cudaFree(ptr_); }
  StoredOnDevice(const StoredOnDevice&) = delete;
  Tensor t() const {
    if (type_ == DType::kF32) return fp32_.t();
    return Tensor(ptr_, fp32_.t().shape(), type_, core::Device::kCuda);
  }
  std::vector<float> ToHost() const {
    if (type_ != DType::kF32) ops::Cast(t(), fp32_.t());
    return fp32_.ToHost();
  }

 private:
  OnDevice fp32_;
  DType type_;
  void* ptr_ = nullptr;
};

// |gpu - cpu| <= one unit of the precision at |cpu| (twice, for the margin),
// or at an eighth of the tensor's RMS where a sum cancels: the two devices'
// fp32 values differ in their last bits, so a rounded operand near a
// midpoint may land a unit apart, which moves a cancelled sum by a unit of
// one of its terms (seen on an H100: fp16 dV, weight gradients).
void ExpectWithinAUnit(const std::vector<float>& gpu, const std::vector<float>& cpu, DType t,
                       const std::string& what) {
  const double unit = t == DType::kBF16 ? 0x1p-7 : 0x1p-10;
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  double squares = 0.0;
  for (float v : cpu) squares += static_cast<double>(v) * v;
  const double floor = std::max(1e-3, std::sqrt(squares / std::max<size_t>(cpu.size(), 1)) / 8);
  int off = 0;
  for (size_t i = 0; i < gpu.size(); ++i)
    if (std::fabs(gpu[i] - cpu[i]) > 2 * unit * (std::fabs(cpu[i]) + floor) && ++off <= 5)
      ADD_FAILURE() << what << " at " << i << ": gpu " << gpu[i] << " cpu " << cpu[i];
  EXPECT_EQ(off, 0) << what;
}

// Convolutions take cuDNN's legacy API here unless a test asks for the
// graph API (the default), so that both are checked.
class CudaPrecisionTwinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ops::CudaAvailable()) GTEST_SKIP() << "no CUDA device; the CPU side is tested";
    cuda::SetConvGraphApi(false);
  }
  void TearDown() override {
    cuda::SetConvGraphApi(graph_api_);
    cuda::SetConvAlgoSearch(search_);
  }

 private:
  const bool graph_api_ = cuda::ConvGraphApi();
  const cuda::ConvAlgoSearch search_ = cuda::GetConvAlgoSearch();
};

// x and dy as [N, C, (D,) H, W] or, channels-last, [N, (D,) H, W, C]; the
// filter [K, C, (kD,) kH, kW] as the models keep it in every layout.
void ExpectConvolutionsRoundLikeTheCpu(const ConvGeometry& g, core::Layout layout,
                                       const std::string& what) {
  const bool three_d = layout == core::Layout::kNCDHW || layout == core::Layout::kNDHWC;
  const bool last = layout == core::Layout::kNHWC || layout == core::Layout::kNDHWC;
  auto shape = [&](int64_t n, int64_t c, const int64_t* s) {
    if (three_d)
      return last ? core::Shape{n, s[0], s[1], s[2], c} : core::Shape{n, c, s[0], s[1], s[2]};
    return last ? core::Shape{n, s[1], s[2], c} : core::Shape{n, c, s[1], s[2]};
  };
  const int64_t out[3] = {g.out(0), g.out(1), g.out(2)};
  Buffer x(shape(g.batch, g.in_channels, g.in)), dy(shape(g.batch, g.out_channels, out));
  Buffer w(three_d
               ? core::Shape{g.out_channels, g.in_channels, g.kernel[0], g.kernel[1], g.kernel[2]}
               : core::Shape{g.out_channels, g.in_channels, g.kernel[1], g.kernel[2]});
  testing::FillRandom(x, 1);
  testing::FillRandom(w, 2);
  testing::FillRandom(dy, 3);
  Buffer ws({ops::ConvWorkspaceElements(g, layout, core::Device::kCpu) + 1});
  auto tagged = [&](Tensor t) { return t.Reshaped(t.shape(), layout); };
  for (DType t : {DType::kBF16, DType::kF16}) {
    const ops::PrecisionScope scope(t);
    Buffer y(dy.shape), dx(x.shape), dw(w.shape);
    ops::ConvForward(g, tagged(x.t()), w.t(), tagged(y.t()), ws.t());
    ops::ConvBackwardData(g, tagged(dy.t()), w.t(), tagged(dx.t()), ws.t());
    ops::ConvBackwardWeight(g, tagged(x.t()), tagged(dy.t()), dw.t(), ws.t());
    OnDevice gx(x), gw(w), gdy(dy), gy(Zeros(y)), gdx(Zeros(dx)), gdw(Zeros(dw));
    ops::ConvForward(g, tagged(gx.t()), gw.t(), tagged(gy.t()), Tensor());
    ops::ConvBackwardData(g, tagged(gdy.t()), gw.t(), tagged(gdx.t()), Tensor());
    ops::ConvBackwardWeight(g, tagged(gx.t()), tagged(gdy.t()), gdw.t(), Tensor());
    const std::string name = what + " " + std::string(ops::PrecisionName(t));
    ExpectWithinAUnit(gy.ToHost(), y.data, t, name + " conv forward");
    ExpectWithinAUnit(gdx.ToHost(), dx.data, t, name + " conv data gradient");
    ExpectWithinAUnit(gdw.ToHost(), dw.data, t, name + " conv weight gradient");
  }
}

TEST_F(CudaPrecisionTwinTest, ConvolutionsRoundLikeTheCpu) {
  const ConvGeometry g = Conv2d(2, 8, 9, 7, 16, 3, 3, 2, 1);
  ExpectConvolutionsRoundLikeTheCpu(g, core::Layout::kNCHW, "NCHW");
  ExpectConvolutionsRoundLikeTheCpu(g, core::Layout::kNHWC, "NHWC");
}

// Channels-last data with the filter in the models' order, and shapes that
// cuDNN may have no kernel for as given (three input channels, as in an
// image stem; 3-D): such calls run staged and must still agree.
TEST_F(CudaPrecisionTwinTest, ChannelsLastConvolutionsOfAnyShapeRoundLikeTheCpu) {
  ExpectConvolutionsRoundLikeTheCpu(Conv2d(2, 3, 16, 16, 8, 7, 7, 2, 3), core::Layout::kNHWC,
                                    "stem NHWC");
  ExpectConvolutionsRoundLikeTheCpu(Conv2d(2, 3, 16, 16, 8, 7, 7, 2, 3), core::Layout::kNCHW,
                                    "stem NCHW");
  ExpectConvolutionsRoundLikeTheCpu(Conv3d(1, 4, 6, 6, 6, 8, 3, 1, 1), core::Layout::kNDHWC,
                                    "3-D NDHWC");
  ExpectConvolutionsRoundLikeTheCpu(Conv3d(1, 1, 6, 6, 6, 8, 3, 2, 1), core::Layout::kNDHWC,
                                    "3-D NDHWC, one input channel");
}

// cuDNN's graph API (the models' default): it must offer an engine for each
// call, uneven padding included, and agree the same way.
TEST_F(CudaPrecisionTwinTest, GraphApiConvolutionsRoundLikeTheCpu) {
  ConvGeometry uneven = Conv2d(2, 8, 8, 8, 16, 3, 3, 2, 1);
  uneven.pad_begin[1] = uneven.pad_begin[2] = 0;
  cuda::SetConvGraphApi(true);
  const int64_t before = cuda::ConvGraphRuns();
  ExpectConvolutionsRoundLikeTheCpu(Conv2d(2, 8, 9, 7, 16, 3, 3, 2, 1), core::Layout::kNHWC,
                                    "graph API NHWC");
  ExpectConvolutionsRoundLikeTheCpu(Conv2d(2, 8, 9, 7, 16, 3, 3, 2, 1), core::Layout::kNCHW,
                                    "graph API NCHW");
  ExpectConvolutionsRoundLikeTheCpu(uneven, core::Layout::kNHWC, "graph API uneven padding");
  // 3 geometries x 2 precisions x 3 directions, none through the fallback.
  EXPECT_EQ(cuda::ConvGraphRuns() - before, 18);
}

// Algorithms picked by timing (MLPERF_CUDNN_FIND=1), through both APIs, on
// shapes no other test runs (each shape is searched once per process):
// whatever engine wins must agree the same way.
TEST_F(CudaPrecisionTwinTest, TimedAlgorithmChoicesRoundLikeTheCpu) {
  cuda::SetConvAlgoSearch(cuda::ConvAlgoSearch::kExhaustive);  // TearDown restores it
  cuda::SetConvGraphApi(true);
  const int64_t before = cuda::ConvGraphRuns();
  ExpectConvolutionsRoundLikeTheCpu(Conv2d(2, 16, 10, 10, 24, 3, 3, 1, 1), core::Layout::kNHWC,
                                    "timed graph API NHWC");
  EXPECT_EQ(cuda::ConvGraphRuns() - before, 6);
  cuda::SetConvGraphApi(false);
  ExpectConvolutionsRoundLikeTheCpu(Conv2d(2, 16, 11, 9, 24, 3, 3, 1, 1), core::Layout::kNCHW,
                                    "timed legacy API NCHW");
}

TEST_F(CudaPrecisionTwinTest, BatchedGemmRoundsLikeTheCpu) {
  // Attention's shapes in small: 6 heads of [12 x 16] by the transpose of [12 x 16].
  const int64_t heads = 6, t = 12, d = 16;
  Buffer q({heads, t, d}), k({heads, t, d});
  testing::FillRandom(q, 4);
  testing::FillRandom(k, 5);
  for (DType p : {DType::kBF16, DType::kF16}) {
    const ops::PrecisionScope scope(p);
    Buffer s({heads, t, t});
    ops::GemmStridedBatched(core::Device::kCpu, false, true, t, t, d, 0.25f, q.data.data(), t * d,
                            k.data.data(), t * d, 0.0f, s.data.data(), t * t, heads);
    OnDevice gq(q), gk(k), gs(Zeros(s));
    ops::GemmStridedBatched(core::Device::kCuda, false, true, t, t, d, 0.25f, gq.get(), t * d,
                            gk.get(), t * d, 0.0f, gs.get(), t * t, heads);
    ExpectWithinAUnit(gs.ToHost(), s.data, p, std::string(ops::PrecisionName(p)) + " bmm");
  }
}

// GELU and dropout on tensors stored in bf16/fp16 (BERT's typed storage):
// fp32 arithmetic on the stored values, the result rounded once as stored,
// against the CPU on rounded fp32 copies.
TEST_F(CudaPrecisionTwinTest, PointwiseOpsTakeAnyFloatType) {
  Buffer x({4099}), g({4099});
  testing::FillRandom(x, 21, -4.0f, 4.0f);
  testing::FillRandom(g, 22);
  for (DType p : {DType::kBF16, DType::kF16}) {
    Buffer xr(x.shape), gr(g.shape), y(x.shape), dx(x.shape), dropped(x.shape);
    ops::RoundToPrecision(p, x.t(), xr.t());
    ops::RoundToPrecision(p, g.t(), gr.t());
    ops::GeluForward(xr.t(), y.t());
    ops::RoundToPrecision(p, y.t(), y.t());
    ops::GeluBackward(xr.t(), gr.t(), dx.t());
    ops::RoundToPrecision(p, dx.t(), dx.t());
    ops::DropoutForward(0.1f, 3, 4, xr.t(), dropped.t());
    ops::RoundToPrecision(p, dropped.t(), dropped.t());
    StoredOnDevice gx(x, p), gg(g, p), gy(Zeros(y), p), gdx(Zeros(dx), p),
        gdropped(Zeros(dropped), p);
    OnDevice wide(Zeros(dropped));
    ops::GeluForward(gx.t(), gy.t());
    ops::GeluBackward(gx.t(), gg.t(), gdx.t());
    ops::DropoutForward(0.1f, 3, 4, gx.t(), gdropped.t());
    ops::DropoutForward(0.1f, 3, 4, gx.t(), wide.t());  // reduced in, fp32 out: not rounded
    const std::string name(ops::PrecisionName(p));
    ExpectWithinAUnit(gy.ToHost(), y.data, p, name + " gelu");
    ExpectWithinAUnit(gdx.ToHost(), dx.data, p, name + " gelu backward");
    EXPECT_EQ(gdropped.ToHost(), dropped.data) << name << " dropout";
    Buffer unrounded(x.shape);
    ops::DropoutForward(0.1f, 3, 4, xr.t(), unrounded.t());
    EXPECT_EQ(wide.ToHost(), unrounded.data) << name << " dropout into fp32";
  }
}

// Heads split from and merged into token rows stored in bf16/fp16 (BERT's
// typed storage): a permutation, exact.
TEST_F(CudaPrecisionTwinTest, HeadsSplitAndMergeInAnyFloatType) {
  const int64_t b = 2, h = 2, t = 5, d = 4, column = h * d;  // the keys' third of the rows
  Buffer rows({b * t, 3 * h * d}), heads({b, h, t, d}), merged({b * t, 3 * h * d});
  testing::FillRandom(rows, 23);
  for (DType p : {DType::kBF16, DType::kF16}) {
    Buffer rounded(rows.shape);
    ops::RoundToPrecision(p, rows.t(), rounded.t());
    ops::SplitHeads(rounded.t(), column, heads.t());
    ops::MergeHeads(heads.t(), merged.t(), column);
    StoredOnDevice grows(rows, p), gheads(Zeros(heads), p), gmerged(Zeros(merged), p);
    ops::SplitHeads(grows.t(), column, gheads.t());
    ops::MergeHeads(gheads.t(), gmerged.t(), column);
    const std::string name(ops::PrecisionName(p));
    EXPECT_EQ(gheads.ToHost(), heads.data) << name << " split";
    EXPECT_EQ(gmerged.ToHost(), merged.data) << name << " merge";
  }
}

// BERT's attention core with its GEMM operands kept in the precision's type
// (AttentionParams::typed: cuda/attention_typed.h, the masked softmax and
// the dropout-softmax backward fused) against the CPU's rounding points,
// dropout on, one sample's keys partly masked.
TEST_F(CudaPrecisionTwinTest, TypedAttentionRoundsLikeTheCpu) {
  const int64_t b = 2, h = 3, t = 40, d = 16;
  const core::Shape heads{b, h, t, d}, square{b, h, t, t};
  Buffer q(heads), k(heads), v(heads), dout(heads), mask({b, t}, 1.0f);
  testing::FillRandom(q, 11);
  testing::FillRandom(k, 12);
  testing::FillRandom(v, 13);
  testing::FillRandom(dout, 14);
  for (int64_t j = 30; j < t; ++j) mask[t + j] = 0.0f;
  for (DType p : {DType::kBF16, DType::kF16}) {
    const ops::PrecisionScope scope(p);
    AttentionParams params{.dropout = 0.1f, .seed = 5, .offset = 7};
    Buffer probs(square), ws({b * h * t * t}), out(heads), dq(heads), dk(heads), dv(heads);
    ops::AttentionForward(params, q.t(), k.t(), v.t(), mask.t(), probs.t(), out.t(), ws.t());
    ops::AttentionBackward(params, q.t(), k.t(), v.t(), probs.t(), dout.t(), dq.t(), dk.t(), dv.t(),
                           ws.t());
    // The fp32 path; the typed core on fp32 heads; the typed core on heads
    // stored in the precision (BERT's typed storage).
    for (int path = 0; path < 3; ++path) {
      params.typed = path > 0;
      const DType stored = path == 2 ? p : DType::kF32;
      StoredOnDevice gq(q, stored), gk(k, stored), gv(v, stored), gdout(dout, stored),
          gout(Zeros(out), stored), gdq(Zeros(dq), stored), gdk(Zeros(dk), stored),
          gdv(Zeros(dv), stored);
      OnDevice gmask(mask), gprobs(Zeros(probs)), gws(Zeros(ws));
      ops::AttentionForward(params, gq.t(), gk.t(), gv.t(), gmask.t(), gprobs.t(), gout.t(),
                            gws.t());
      ops::AttentionBackward(params, gq.t(), gk.t(), gv.t(), gprobs.t(), gdout.t(), gdq.t(),
                             gdk.t(), gdv.t(), gws.t());
      const std::string name =
          std::string(ops::PrecisionName(p)) + (path == 0   ? " attention"
                                                : path == 1 ? " typed attention"
                                                            : " typed attention, typed heads");
      ExpectWithinAUnit(gprobs.ToHost(), probs.data, p, name + " probabilities");
      ExpectWithinAUnit(gout.ToHost(), out.data, p, name + " output");
      ExpectWithinAUnit(gdq.ToHost(), dq.data, p, name + " dq");
      ExpectWithinAUnit(gdk.ToHost(), dk.data, p, name + " dk");
      ExpectWithinAUnit(gdv.ToHost(), dv.data, p, name + " dv");
    }
  }
}

// Each storage the models use: fp32 rounded in place, and x, y, dy and dx
// in the precision's type (BERT's typed storage), with cuBLASLt's bias
// epilogues and without. Shapes: one with several chunks of the unfused bias
// gradient, one with 16-byte rows, which cuBLASLt must take when asked.
TEST_F(CudaPrecisionTwinTest, LinearLayersRoundLikeTheCpu) {
  struct Shape {
    int64_t rows, in, out;
  };
  for (const Shape& s : {Shape{300, 40, 24}, Shape{256, 64, 32}}) {
    Buffer x({s.rows, s.in}), w({s.out, s.in}), b({s.out}), dy({s.rows, s.out});
    testing::FillRandom(x, 6);
    testing::FillRandom(w, 7);
    testing::FillRandom(b, 8);
    testing::FillRandom(dy, 9);
    for (DType p : {DType::kBF16, DType::kF16}) {
      const ops::PrecisionScope scope(p);
      Buffer y({s.rows, s.out}), dx({s.rows, s.in}), dw({s.out, s.in}), db({s.out});
      ops::LinearForward(x.t(), w.t(), b.t(), y.t());
      ops::LinearBackward(x.t(), w.t(), dy.t(), dx.t(), dw.t(), db.t());
      for (bool fused : {true, false}) {
        cuda::SetGemmEpilogues(fused);
        for (bool typed : {false, true}) {
          const DType stored = typed ? p : DType::kF32;
          StoredOnDevice gx(x, stored), gdy(dy, stored), gy(Zeros(y), stored),
              gdx(Zeros(dx), stored);
          OnDevice gw(w), gb(b), gdw(Zeros(dw)), gdb(Zeros(db));
          const int64_t runs = cuda::GemmEpilogueRuns();
          ops::LinearForward(gx.t(), gw.t(), gb.t(), gy.t());
          ops::LinearBackward(gx.t(), gw.t(), gdy.t(), gdx.t(), gdw.t(), gdb.t());
          const std::string name = std::string(ops::PrecisionName(p)) + " linear " +
                                   std::to_string(s.rows) + "x" + std::to_string(s.in) + "x" +
                                   std::to_string(s.out) + (typed ? " typed" : " fp32-stored") +
                                   (fused ? " fused" : " unfused");
          const int64_t fused_runs = cuda::GemmEpilogueRuns() - runs;
          if (!fused) {
            EXPECT_EQ(fused_runs, 0) << name;
          } else if (s.in % 8 == 0 && s.out % 8 == 0) {
            EXPECT_EQ(fused_runs, 2) << name << ": cuBLASLt declined an epilogue";
          }
          ExpectWithinAUnit(gy.ToHost(), y.data, p, name + " forward");
          ExpectWithinAUnit(gdx.ToHost(), dx.data, p, name + " data gradient");
          ExpectWithinAUnit(gdw.ToHost(), dw.data, p, name + " weight gradient");
          ExpectWithinAUnit(gdb.ToHost(), db.data, p, name + " bias gradient");
        }
      }
      cuda::SetGemmEpilogues(true);
    }
  }
}

}  // namespace
}  // namespace mlperf
