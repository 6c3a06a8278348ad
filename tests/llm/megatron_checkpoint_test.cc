// Decoder::LoadMegatronGpt against a Megatron GPT checkpoint in its Zarr
// form (tests/llm/megatron_gpt_checkpoint.py: a transformers GPT-2 model of
// the same architecture written under Megatron's names, layers stacked,
// queries, keys and values merged head by head, chunked): the loaded model's
// logits equal transformers'; a missing tensor, another model's shapes, a
// Llama configuration and another backend are refused in one line naming
// the folder, the model left as it was. Skips where zarr or transformers is
// missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/io/safetensors.h"
#include "reference/models/decoder.h"
#include "tests/core/parity_util.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::models {
namespace {

namespace fs = std::filesystem;

DecoderConfig SmallGpt() {
  return {.vocab_size = 50,
          .hidden = 24,
          .layers = 3,
          .heads = 3,
          .kv_heads = 3,
          .intermediate = 96,
          .seq_len = 10,
          .rope_scaling = {},
          .tie_embeddings = true,
          .layer_norm = true,
          .learned_positions = 16,
          .gelu = true,
          .bias = true};
}

class MegatronCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::PythonHas("zarr, torch, transformers"))
      GTEST_SKIP() << "zarr, PyTorch or transformers is missing for /usr/bin/python3";
    dir_ = fs::temp_directory_path() / fmt::format("megatron_gpt_{}", ::getpid());
    fs::remove_all(dir_);
    const DecoderConfig c = SmallGpt();
    const std::string cmd = fmt::format(
        "/usr/bin/python3 {}/tests/llm/megatron_gpt_checkpoint.py {} {} {} {} {} {} {} {}",
        MLPERF_SOURCE_DIR, dir_.string(), c.vocab_size, c.hidden, c.layers, c.heads, c.intermediate,
        c.seq_len, c.learned_positions);
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    checkpoint_ = (dir_ / "checkpoint").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string checkpoint_;
};

TEST_F(MegatronCheckpointTest, GivesTransformersLogits) {
  const DecoderConfig c = SmallGpt();
  Decoder model(c, 2, 1);
  ASSERT_TRUE(model.LoadMegatronGpt(checkpoint_).ok());
  absl::StatusOr<io::SafetensorsFile> expected =
      io::SafetensorsFile::Read((dir_ / "expected.safetensors").string());
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
}

TEST_F(MegatronCheckpointTest, DamagedCheckpointsAreRefusedAndChangeNothing) {
  const DecoderConfig c = SmallGpt();
  Decoder model(c, 1, 1);
  const std::vector<float> before = model.ParametersToHost();
  const auto refused = [&](Decoder& m, const std::string& says) {
    const absl::Status s = m.LoadMegatronGpt(checkpoint_);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(checkpoint_), std::string::npos) << s;
    EXPECT_NE(s.message().find(says), std::string::npos) << s;
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s;
  };
  // Another model's shapes: a wider feed-forward.
  DecoderConfig wider = c;
  wider.intermediate = 48;
  Decoder other(wider, 1, 1);
  refused(other, "shape");
  // A Llama configuration.
  DecoderConfig llama = c;
  llama.layer_norm = false;
  Decoder not_gpt(llama, 1, 1);
  refused(not_gpt, "GPT configuration");
  // A tensor missing (the last layers' feed-forward bias): the model keeps
  // its weights though the earlier tensors were read.
  fs::remove_all(fs::path(checkpoint_) / "language_model.encoder.layers.mlp.dense_4h_to_h.bias");
  refused(model, "dense_4h_to_h.bias");
  EXPECT_EQ(model.ParametersToHost(), before);
  // Another backend.
  std::ofstream(fs::path(checkpoint_) / "metadata.json") << R"({"sharded_backend": "torch_dist"})";
  refused(model, "sharded_backend");
}

// What SaveMegatronGpt writes LoadMegatronGpt reads back exactly, the zarr
// package opens it with Megatron's stacked shapes, and an existing folder is
// never written into.
TEST_F(MegatronCheckpointTest, SavedCheckpointLoadsBackExactly) {
  const DecoderConfig c = SmallGpt();
  Decoder saved(c, 1, 3), loaded(c, 1, 4);
  const std::string out = (dir_ / "saved").string();
  ASSERT_TRUE(saved.SaveMegatronGpt(out).ok());
  ASSERT_NE(saved.ParametersToHost(), loaded.ParametersToHost());
  ASSERT_TRUE(loaded.LoadMegatronGpt(out).ok());
  EXPECT_EQ(saved.ParametersToHost(), loaded.ParametersToHost());
  const std::string cmd = fmt::format(
      "/usr/bin/python3 -c \"import zarr; a = zarr.open('{}/"
      "language_model.encoder.layers.self_attention.query_key_value.weight'); "
      "assert a.shape == ({}, {}, {}), a.shape\"",
      out, c.layers, 3 * c.hidden, c.hidden);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const absl::Status again = saved.SaveMegatronGpt(out);
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists) << again;
}

}  // namespace
}  // namespace mlperf::models
