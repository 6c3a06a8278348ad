// Decoder::LoadHuggingFace against checkpoints transformers itself writes
// (tests/llm/llama_checkpoint.py under /usr/bin/python3: save_pretrained,
// bf16, several shards and model.safetensors.index.json): the loaded model's
// logits equal transformers' on the widened weights; a tensor-parallel rank
// loads its slices of the same tensors; a damaged checkpoint (a tensor
// missing from the index, a shard named outside the folder, another model's
// shapes, no checkpoint at all) is refused naming the file and the tensor,
// the model left as it was. Skips where transformers is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/dist/communicator.h"
#include "reference/io/safetensors.h"
#include "reference/models/decoder.h"
#include "tests/core/parity_util.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::models {
namespace {

namespace fs = std::filesystem;

DecoderConfig Small() {
  return {.vocab_size = 48,
          .hidden = 32,
          .layers = 2,
          .heads = 4,
          .kv_heads = 2,
          .intermediate = 40,
          .seq_len = 10,
          .rope_scaling = {.factor = 0.0}};
}

// One checkpoint, written once for the suite.
class DecoderCheckpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    have_ = testing::PythonHas("torch, transformers, safetensors");
    if (!have_) return;
    dir_ = fs::temp_directory_path() / fmt::format("llama_checkpoint_{}", ::getpid());
    fs::remove_all(dir_);
    const DecoderConfig c = Small();
    const std::string cmd =
        fmt::format("/usr/bin/python3 {}/tests/llm/llama_checkpoint.py {} {} {} {} {} {} {} {}",
                    MLPERF_SOURCE_DIR, dir_.string(), c.vocab_size, c.hidden, c.layers, c.heads,
                    c.kv_heads, c.intermediate, c.seq_len);
    written_ = std::system(cmd.c_str()) == 0;
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    if (!have_) GTEST_SKIP() << "PyTorch or transformers is missing for /usr/bin/python3";
    ASSERT_TRUE(written_) << "tests/llm/llama_checkpoint.py failed";
  }

  static inline fs::path dir_;
  static inline bool have_ = false, written_ = false;
};

TEST_F(DecoderCheckpointTest, ShardedBf16CheckpointGivesTransformersLogits) {
  int shards = 0;
  for (const auto& entry : fs::directory_iterator(dir_))
    shards += entry.path().filename().string().starts_with("model-") ? 1 : 0;
  EXPECT_GE(shards, 2) << "save_pretrained wrote one shard; the test wants several";
  const DecoderConfig c = Small();
  Decoder model(c, 2, 1);
  ASSERT_TRUE(model.LoadHuggingFace(dir_.string()).ok());
  absl::StatusOr<io::SafetensorsFile> expected =
      io::SafetensorsFile::Read((dir_ / "logits.safetensors").string());
  ASSERT_TRUE(expected.ok()) << expected.status();
  const std::vector<float> tokens = testing::Load(*expected, "tokens");
  OwnedBatch owned;
  int32_t* ids = owned.Add({2, c.seq_len}, core::DType::kI32).as<int32_t>();
  int32_t* labels = owned.Add({2, c.seq_len}, core::DType::kI32).as<int32_t>();
  for (size_t i = 0; i < tokens.size(); ++i) {
    ids[i] = static_cast<int32_t>(tokens[i]);
    labels[i] = 0;
  }
  owned.batch.count = 2;
  model.ForwardTrain(owned.batch);
  const core::Tensor& logits = model.logits();
  EXPECT_LT(testing::NormError({logits.f32(), static_cast<size_t>(logits.numel())},
                               testing::Load(*expected, "logits")),
            1e-5);

  // One of two tensor-parallel ranks reads its slices of the same tensors.
  std::unique_ptr<dist::Communicator> comm = dist::MakeSingleProcessCommunicator();
  Decoder half(c, 2, Placement{.rank = 1, .world_size = 2, .comm = comm.get()}, 1);
  ASSERT_TRUE(half.LoadHuggingFace(dir_.string()).ok());
  const std::vector<float> whole = model.ParametersToHost(), mine = half.ParametersToHost();
  const std::vector<TensorSlice> ws = model.slices(), ms = half.slices();
  for (size_t i = 0; i < ms.size(); ++i) {
    const Decoder::Slice& s = half.parameter_slices()[i];
    const core::Shape shape = half.parameter_tensors()[i].value.shape();
    const int64_t rows = shape[0], columns = shape.rank() > 1 ? shape[1] : 1;
    const int64_t full_columns = s.dim == 1 ? s.full : columns;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t col = 0; col < columns; ++col) {
        const int64_t at = s.dim == 0   ? (s.first() + r) * full_columns + col
                           : s.dim == 1 ? r * full_columns + s.first() + col
                                        : r * columns + col;
        ASSERT_EQ(mine[ms[i].offset + r * columns + col], whole[ws[i].offset + at])
            << half.parameter_tensors()[i].name;
      }
  }
}

TEST_F(DecoderCheckpointTest, DamagedCheckpointsAreRefusedAndChangeNothing) {
  const DecoderConfig c = Small();
  Decoder model(c, 1, 9);
  const std::vector<float> before = model.ParametersToHost();
  const fs::path index = dir_ / "model.safetensors.index.json";
  std::ifstream in(index);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  auto load_with = [&](const std::string& replaced, const std::string& by) {
    std::string t = text;
    const size_t at = t.find(replaced);
    EXPECT_NE(at, std::string::npos) << replaced;
    if (at != std::string::npos) t.replace(at, replaced.size(), by);
    std::ofstream(index, std::ios::trunc) << t;
    const absl::Status s = model.LoadHuggingFace(dir_.string());
    std::ofstream(index, std::ios::trunc) << text;
    return std::string(s.message());
  };
  EXPECT_NE(load_with("\"model.norm.weight\"", "\"model.norm.scale\"")
                .find("lists no tensor \"model.norm.weight\""),
            std::string::npos);
  const std::string outside = load_with("\"model-00001-of", "\"../model-00001-of");
  EXPECT_NE(outside.find("maps to no plain file name"), std::string::npos) << outside;
  // Another model's shapes: a wider SwiGLU.
  DecoderConfig wider = c;
  wider.intermediate = 48;
  Decoder other(wider, 1, 9);
  const absl::Status shapes = other.LoadHuggingFace(dir_.string());
  EXPECT_NE(std::string(shapes.message()).find("mlp.gate_proj.weight\": expected F32, BF16 or F16"),
            std::string::npos)
      << shapes;
  const absl::Status none = model.LoadHuggingFace((dir_ / "absent").string());
  EXPECT_NE(std::string(none.message()).find("neither a .safetensors file nor a checkpoint folder"),
            std::string::npos)
      << none;
  EXPECT_EQ(model.ParametersToHost(), before);
}

// Our own writer (the LoRA demonstration's base): shards that load back to
// the same weights (bf16: their rounding), config.json for transformers, a
// folder never replaced; and the reference's fused-qkv layout, q, k and v
// one after the other in self_attn.qkv_proj.weight, reads the same rows.
TEST(DecoderSaveHuggingFaceTest, ShardsLoadBackAndAFusedQkvReadsTheSameRows) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("llama_saved_{}", ::getpid());
  fs::remove_all(dir);
  const DecoderConfig c = Small();
  Decoder source(c, 1, 3);
  const std::vector<float> weights = source.ParametersToHost();
  ASSERT_TRUE(source.SaveHuggingFace((dir / "f32").string(), core::DType::kF32, 8 << 10).ok());
  int shards = 0;
  for (const auto& entry : fs::directory_iterator(dir / "f32"))
    shards += entry.path().filename().string().starts_with("model-") ? 1 : 0;
  EXPECT_GE(shards, 2);
  EXPECT_TRUE(fs::exists(dir / "f32" / "config.json"));
  EXPECT_EQ(source.SaveHuggingFace((dir / "f32").string(), core::DType::kF32, 8 << 10).code(),
            absl::StatusCode::kAlreadyExists);
  Decoder loaded(c, 1, 9);
  ASSERT_TRUE(loaded.LoadHuggingFace((dir / "f32").string()).ok());
  EXPECT_EQ(loaded.ParametersToHost(), weights);

  ASSERT_TRUE(source.SaveHuggingFace((dir / "bf16").string(), core::DType::kBF16, 1 << 20).ok());
  Decoder narrowed(c, 1, 9);
  ASSERT_TRUE(narrowed.LoadHuggingFace((dir / "bf16").string()).ok());
  const std::vector<float> rounded = narrowed.ParametersToHost();
  for (size_t i = 0; i < weights.size(); ++i)
    ASSERT_NEAR(rounded[i], weights[i], std::abs(weights[i]) * 0x1p-8f) << i;

  // One file of the same weights with each layer's q/k/v fused.
  std::vector<float> params = source.ParametersToHost(), buffers = source.BuffersToHost();
  std::vector<io::NamedTensor> named;
  std::vector<std::vector<float>> fused(c.layers);
  const int64_t kv_rows = c.kv_heads * (c.hidden / c.heads);
  for (const io::NamedTensor& t : source.NamedHostTensors(params, buffers)) {
    const std::string& n = t.name;
    const size_t at = n.find("self_attn.");
    const bool projection =
        at != std::string::npos && n.ends_with("_proj.weight") && !n.ends_with("o_proj.weight");
    if (!projection) {
      named.push_back(t);
      continue;
    }
    std::vector<float>& rows = fused[std::stoi(n.substr(std::string("model.layers.").size()))];
    rows.insert(rows.end(), t.tensor.f32(), t.tensor.f32() + t.tensor.numel());
    if (n.ends_with("v_proj.weight"))
      named.push_back(
          {n.substr(0, at) + "self_attn.qkv_proj.weight",
           core::Tensor(rows.data(), {c.hidden + 2 * kv_rows, c.hidden}, core::DType::kF32)});
  }
  ASSERT_TRUE(io::SaveSafetensors((dir / "fused.safetensors").string(), named).ok());
  Decoder from_fused(c, 1, 9);
  const absl::Status read = from_fused.LoadHuggingFace((dir / "fused.safetensors").string());
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(from_fused.ParametersToHost(), weights);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mlperf::models
