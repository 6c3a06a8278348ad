// LoRA on the decoder (layers/lora.h, DecoderConfig::lora): on a small
// Llama in fp32, the logits, the loss and every adapter's gradient against
// transformers + peft (tests/llm/lora_parity.py, /usr/bin/python3), which
// loads the base weights and the adapters this side saved in peft's own
// format: one adapter over q, k and v (the MLPerf reference's qkv_proj)
// and one each. Training changes the adapters alone, the frozen bf16 base
// bit for bit unchanged; a bf16 base computes as its fp32 widening does;
// the adapters' files round-trip and never replace a folder; the dropout
// trains only. Skips the peft comparison where peft is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/core/philox.h"
#include "reference/io/safetensors.h"
#include "reference/kernels/ops/decoder.h"
#include "reference/models/decoder.h"
#include "reference/optim/adam.h"
#include "reference/optim/schedules.h"
#include "reference/trainer/trainer.h"
#include "tests/core/parity_util.h"
#include "tests/llm/token_batch.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::models {
namespace {

namespace fs = std::filesystem;
using testing::Compare;
using testing::Errors;
using testing::TempPath;

DecoderConfig Small(bool fused, core::DType frozen) {
  return {.vocab_size = 61,
          .hidden = 32,
          .layers = 2,
          .heads = 4,
          .kv_heads = 2,
          .intermediate = 48,
          .seq_len = 12,
          .rope_theta = 10000.0,
          .rope_scaling = {},
          .lora = {.rank = 4, .alpha = 8.0},
          .lora_fused_qkv = fused,
          .frozen_dtype = frozen};
}

// Adapters (B too, zero at initialisation) and norm scales away from their
// starting values, so that every path is seen.
void Perturb(Decoder& model) {
  std::vector<float> adapters = model.ParametersToHost();
  for (size_t i = 0; i < adapters.size(); ++i)
    adapters[i] = 0.2f * (core::PhiloxUniform(3, 0, i) - 0.5f);
  model.ParametersFromHost(adapters);
  for (const layers::Parameter& p : model.parameter_tensors()) {
    if (!p.batch_norm) continue;
    std::vector<float> scale(p.value.numel());
    for (size_t j = 0; j < scale.size(); ++j) scale[j] = 0.5f + core::PhiloxUniform(4, 0, j);
    model.SetParameter(p, scale);
  }
}

std::span<const float> SpanOf(const core::Tensor& t) {
  return {t.f32(), static_cast<size_t>(t.numel())};
}

void RunPeftParity(bool fused) {
  if (std::system("/usr/bin/python3 -c 'import torch, transformers, peft' 2>/dev/null") != 0)
    GTEST_SKIP() << "PyTorch, transformers or peft is missing for /usr/bin/python3 "
                    "(scripts/install_deps.sh --test)";
  const DecoderConfig c = Small(fused, core::DType::kF32);
  Decoder model(c, 2, 5);
  Perturb(model);
  const OwnedBatch owned = RandomTokenBatch(c, 2, 7);
  const std::string weights = TempPath("lora_w"), adapters = TempPath("lora_a");
  const std::string batch = TempPath("lora_x"), out = TempPath("lora_out");
  ASSERT_TRUE(model.SaveSafetensors(weights).ok());
  ASSERT_TRUE(model.SaveLoraAdapters(adapters).ok());
  const std::vector<io::NamedTensor> inputs = {{"tokens", owned.batch.inputs[0]},
                                               {"labels", owned.batch.inputs[1]}};
  ASSERT_TRUE(io::SaveSafetensors(batch, inputs).ok());
  const std::string cmd = fmt::format(
      "/usr/bin/python3 {}/tests/llm/lora_parity.py {} {} {} {} {} {} {} {} {} {} {} {} {}",
      MLPERF_SOURCE_DIR, weights, adapters, batch, out, c.vocab_size, c.hidden, c.layers, c.heads,
      c.kv_heads, c.intermediate, c.seq_len, c.rope_theta, fused ? 1 : 0);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  absl::StatusOr<io::SafetensorsFile> file = io::SafetensorsFile::Read(out);
  ASSERT_TRUE(file.ok()) << file.status();
  std::error_code ec;
  for (const std::string& p : {weights, batch, out}) std::remove(p.c_str());
  fs::remove_all(adapters, ec);
  EXPECT_EQ(Decoder::ParameterCount(c), model.num_parameters());

  const float loss = model.ForwardTrain(owned.batch);
  const Errors logits = Compare(*file, "logits", SpanOf(model.logits()));
  EXPECT_LT(logits.ours, 1e-5) << "logits (torch fp32 " << logits.torch << ")";
  const Errors loss_error = Compare(*file, "loss", {&loss, 1});
  EXPECT_LT(loss_error.ours, 1e-6) << "loss " << loss;
  model.Backward();
  int adapters_seen = 0;
  for (const layers::Parameter& p : model.parameter_tensors()) {
    if (!p.trainable) continue;
    ++adapters_seen;
    const Errors e = Compare(*file, "grad/" + p.name, SpanOf(p.grad));
    EXPECT_LT(e.ours, 4.0 * e.torch + 1e-6)
        << "gradient of " << p.name << " (torch fp32 " << e.torch << ")";
  }
  // A and B on each layer's one or three q/k/v adapters and its o_proj.
  EXPECT_EQ(adapters_seen, c.layers * 2 * (fused ? 2 : 4));
}

TEST(LoraTest, FusedQkvAdaptersMatchPeft) { RunPeftParity(true); }

TEST(LoraTest, SeparateAdaptersMatchPeft) { RunPeftParity(false); }

TEST(LoraTest, TrainingChangesTheAdaptersAloneAndTheBaseStaysBitForBit) {
  const DecoderConfig c = Small(true, core::DType::kBF16);
  Decoder model(c, 2, 5);
  const std::vector<std::byte> base = model.FrozenToHost();
  const std::vector<float> start = model.ParametersToHost();
  // Only the adapters have gradients and optimizer state.
  DecoderConfig without = c;
  without.lora.rank = 0;
  EXPECT_EQ(static_cast<int64_t>(start.size()),
            Decoder::ParameterCount(c) - Decoder::ParameterCount(without));
  EXPECT_EQ(model.GradientsToHost().size(), start.size());
  const std::unique_ptr<dist::Communicator> one = dist::MakeSingleProcessCommunicator();
  train::Trainer trainer(
      model,
      std::make_unique<optim::Adam>(
          optim::AdamOptions{.weight_decay = 1e-4f, .decoupled = true, .max_grad_norm = 0.3f},
          model.slices()),
      std::make_unique<optim::ConstantRate>(1e-2), {}, *one);
  for (uint64_t step = 0; step < 3; ++step)
    trainer.TrainStep(RandomTokenBatch(c, 2, 10 + step).batch);
  EXPECT_EQ(model.FrozenToHost(), base) << "the frozen base changed";
  const std::vector<float> after = model.ParametersToHost();
  int64_t changed = 0;
  for (size_t i = 0; i < after.size(); ++i) changed += after[i] != start[i];
  EXPECT_GT(changed, static_cast<int64_t>(after.size()) / 2);
}

TEST(LoraTest, ABf16BaseComputesAsItsFp32Widening) {
  const DecoderConfig narrow = Small(true, core::DType::kBF16);
  Decoder bf16(narrow, 2, 5);
  Perturb(bf16);
  const std::string weights = TempPath("lora_bf16"), adapters = TempPath("lora_bf16_a");
  ASSERT_TRUE(bf16.SaveSafetensors(weights).ok());  // the base in bf16
  ASSERT_TRUE(bf16.SaveLoraAdapters(adapters).ok());
  Decoder fp32(Small(true, core::DType::kF32), 2, 6);
  ASSERT_TRUE(fp32.LoadHuggingFace(weights).ok());
  ASSERT_TRUE(fp32.LoadLoraAdapters(adapters).ok());
  // Saving again refuses the existing folder.
  EXPECT_EQ(bf16.SaveLoraAdapters(adapters).code(), absl::StatusCode::kAlreadyExists);
  std::error_code ec;
  std::remove(weights.c_str());
  fs::remove_all(adapters, ec);
  EXPECT_EQ(fp32.ParametersToHost(), bf16.ParametersToHost()) << "the adapters round-trip";
  const OwnedBatch owned = RandomTokenBatch(narrow, 2, 9);
  EXPECT_EQ(bf16.ForwardTrain(owned.batch), fp32.ForwardTrain(owned.batch));
  EXPECT_EQ(bf16.ToHost(bf16.logits()), fp32.ToHost(fp32.logits()));
  bf16.Backward();
  fp32.Backward();
  EXPECT_EQ(bf16.GradientsToHost(), fp32.GradientsToHost());
}

// Recomputation replays each adapter's dropout mask: the same gradients.
TEST(LoraTest, RecomputationReplaysTheDropoutMasks) {
  DecoderConfig c = Small(true, core::DType::kBF16);
  c.lora.dropout = 0.3f;
  DecoderConfig again = c;
  again.recompute = true;
  Decoder kept(c, 2, 5), rebuilt(again, 2, 5);
  Perturb(kept);
  Perturb(rebuilt);
  for (uint64_t step = 0; step < 2; ++step) {
    const OwnedBatch owned = RandomTokenBatch(c, 2, 40 + step);
    EXPECT_EQ(kept.ForwardTrain(owned.batch), rebuilt.ForwardTrain(owned.batch));
    kept.Backward();
    rebuilt.Backward();
    EXPECT_EQ(kept.GradientsToHost(), rebuilt.GradientsToHost());
  }
}

TEST(LoraTest, DropoutTrainsOnlyAndEvaluationIsTheUndroppedModel) {
  DecoderConfig c = Small(true, core::DType::kF32);
  Decoder plain(c, 2, 5);
  c.lora.dropout = 0.5f;
  Decoder dropped(c, 2, 5);
  Perturb(plain);
  Perturb(dropped);
  const OwnedBatch owned = RandomTokenBatch(c, 2, 9);
  const MetricSums a = plain.EvaluateBatch(owned.batch), b = dropped.EvaluateBatch(owned.batch);
  EXPECT_EQ(a.numerator, b.numerator);
  EXPECT_NE(plain.ForwardTrain(owned.batch), dropped.ForwardTrain(owned.batch));
}

// The LoRA reference's loss (transformers' Trainer, one sample per device):
// each sample's mean over its counted labels, averaged over samples; the
// gradients the average of each sample's alone; the evaluation sums the
// samples' means. The mean over every counted label weighs them otherwise.
TEST(LoraTest, SampleMeanLossAveragesEachSamplesMean) {
  DecoderConfig c = Small(true, core::DType::kF32);
  c.sample_mean_loss = true;
  OwnedBatch both = RandomTokenBatch(c, 2, 21);
  int32_t* labels = both.batch.inputs[1].as<int32_t>();
  // Sample 0 counts 3 labels, sample 1 all 12 but its first 2.
  for (int64_t t = 0; t < c.seq_len; ++t) {
    if (t < 9) labels[t] = ops::kIgnoreLabel;
    if (t < 2) labels[c.seq_len + t] = ops::kIgnoreLabel;
  }
  std::vector<float> sample_losses, mean_gradients;
  double sample_sum = 0;
  for (int64_t b = 0; b < 2; ++b) {
    OwnedBatch one = RandomTokenBatch(c, 1, 0);
    for (int i = 0; i < 2; ++i)
      std::copy_n(both.batch.inputs[i].as<int32_t>() + b * c.seq_len, c.seq_len,
                  one.batch.inputs[i].as<int32_t>());
    Decoder alone(c, 1, 5);
    Perturb(alone);
    sample_losses.push_back(alone.ForwardTrain(one.batch));
    alone.Backward();
    const std::vector<float> g = alone.GradientsToHost();
    mean_gradients.resize(g.size());
    for (size_t i = 0; i < g.size(); ++i) mean_gradients[i] += 0.5f * g[i];
    sample_sum += alone.EvaluateBatch(one.batch).numerator;
  }
  Decoder together(c, 2, 5);
  Perturb(together);
  EXPECT_NEAR(together.ForwardTrain(both.batch), 0.5f * (sample_losses[0] + sample_losses[1]),
              1e-5f);
  together.Backward();
  const std::vector<float> g = together.GradientsToHost();
  ASSERT_EQ(g.size(), mean_gradients.size());
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], mean_gradients[i], 1e-6f + 1e-4f * std::abs(mean_gradients[i])) << i;
  const MetricSums sums = together.EvaluateBatch(both.batch);
  EXPECT_NEAR(sums.numerator, sample_sum, 1e-5);
  EXPECT_EQ(sums.denominator, 2);
  // Over every counted label instead: sample 1's ten labels weigh more.
  c.sample_mean_loss = false;
  Decoder by_label(c, 2, 5);
  Perturb(by_label);
  const float weighted = (3 * sample_losses[0] + 10 * sample_losses[1]) / 13;
  EXPECT_NEAR(by_label.ForwardTrain(both.batch), weighted, 1e-5f);
  EXPECT_GT(std::abs(weighted - 0.5f * (sample_losses[0] + sample_losses[1])), 1e-3f);
}

}  // namespace
}  // namespace mlperf::models
