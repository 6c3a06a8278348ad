// BERT against Hugging Face transformers' BertForPreTraining on PyTorch
// (tests/bert/bert_parity.py, run with /usr/bin/python3): the same weights
// through our safetensors file, the same batch (padded samples of different
// lengths, unused masked-LM slots of weight 0), dropout off. The masked-LM
// and next-sentence logits and both losses agree within fp32 tolerance, and
// every parameter gradient is about as close to the fp64 result as
// PyTorch's own fp32 one. Packed rows (one to three sequences a row, each
// attending only to itself) against transformers given the same rows as a
// 3-D attention mask and restarting positions. Skips where PyTorch or
// transformers is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "base/environment.h"
#include "fmt/format.h"
#include "reference/core/philox.h"
#include "reference/io/safetensors.h"
#include "reference/models/bert.h"
#include "tests/core/parity_util.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::models {
namespace {

using testing::Compare;
using testing::Errors;
using testing::TempPath;

std::span<const float> SpanOf(const core::Tensor& t) {
  return {t.f32(), static_cast<size_t>(t.numel())};
}

// A batch with learnable-looking structure: samples of different lengths
// (padding after), two segments, masked slots inside each sample and unused
// slots (position 0, label 0, weight 0) after them.
OwnedBatch MakeBatch(const BertConfig& c, int64_t batch) {
  const int64_t s = c.seq_len, p = c.max_predictions;
  OwnedBatch owned;
  int32_t* ids = owned.Add({batch, s}, core::DType::kI32).as<int32_t>();
  int32_t* segments = owned.Add({batch, s}, core::DType::kI32).as<int32_t>();
  float* mask = owned.Add({batch, s}, core::DType::kF32).f32();
  int32_t* positions = owned.Add({batch, p}, core::DType::kI32).as<int32_t>();
  int32_t* labels = owned.Add({batch, p}, core::DType::kI32).as<int32_t>();
  float* weights = owned.Add({batch, p}, core::DType::kF32).f32();
  int32_t* next = owned.Add({batch}, core::DType::kI32).as<int32_t>();
  auto draw = [](uint64_t stream, int64_t i, int64_t bound) {
    return static_cast<int64_t>(core::PhiloxBits(61, stream, static_cast<uint64_t>(i)) %
                                static_cast<uint64_t>(bound));
  };
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t length = s - (b * 5) % (s / 2);  // s, s - 5, ...
    for (int64_t t = 0; t < s; ++t) {
      ids[b * s + t] = t < length ? static_cast<int32_t>(draw(0, b * s + t, c.vocab_size)) : 0;
      segments[b * s + t] = t >= length / 2 && t < length ? 1 : 0;
      mask[b * s + t] = t < length ? 1.0f : 0.0f;
    }
    const int64_t used = std::max<int64_t>(1, p - b);
    for (int64_t k = 0; k < p; ++k) {
      const int64_t i = b * p + k;
      const bool real = k < used;
      // Distinct positions 1 + k * stride inside the sample.
      positions[i] = real ? static_cast<int32_t>(1 + k * ((length - 1) / used)) : 0;
      labels[i] = real ? static_cast<int32_t>(draw(1, i, c.vocab_size)) : 0;
      weights[i] = real ? 1.0f : 0.0f;
    }
    next[b] = static_cast<int32_t>(draw(2, b, 2));
  }
  owned.batch.count = batch;
  return owned;
}

// Packed rows: row b holds 1 + b % 3 sequences of different lengths (the
// last one leaving padding), positions restarting, two segments each,
// masked slots spread over the sequences, a next-sentence slot per sequence
// and unused slots (weight 0) after them.
OwnedBatch MakePackedBatch(const BertConfig& c, int64_t batch) {
  const int64_t s = c.seq_len, p = c.max_predictions, k = c.packed_sequences;
  OwnedBatch owned;
  int32_t* ids = owned.Add({batch, s}, core::DType::kI32).as<int32_t>();
  int32_t* segments = owned.Add({batch, s}, core::DType::kI32).as<int32_t>();
  float* mask = owned.Add({batch, s}, core::DType::kF32).f32();
  int32_t* position = owned.Add({batch, s}, core::DType::kI32).as<int32_t>();
  int32_t* mlm_positions = owned.Add({batch, p}, core::DType::kI32).as<int32_t>();
  int32_t* labels = owned.Add({batch, p}, core::DType::kI32).as<int32_t>();
  float* weights = owned.Add({batch, p}, core::DType::kF32).f32();
  int32_t* first = owned.Add({batch, k}, core::DType::kI32).as<int32_t>();
  int32_t* next = owned.Add({batch, k}, core::DType::kI32).as<int32_t>();
  float* next_weights = owned.Add({batch, k}, core::DType::kF32).f32();
  auto draw = [](uint64_t stream, int64_t i, int64_t bound) {
    return static_cast<int64_t>(core::PhiloxBits(67, stream, static_cast<uint64_t>(i)) %
                                static_cast<uint64_t>(bound));
  };
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t sequences = 1 + b % 3;
    int64_t start = 0;
    for (int64_t q = 0; q < k; ++q) {
      const int64_t i = b * k + q;
      const bool real = q < sequences;
      // Lengths 9, 7, ... leaving padding after the last.
      const int64_t length = real ? 9 - 2 * q : 0;
      first[i] = real ? static_cast<int32_t>(start) : 0;
      next[i] = real ? static_cast<int32_t>(draw(2, i, 2)) : 0;
      next_weights[i] = real ? 1.0f : 0.0f;
      for (int64_t t = start; t < start + length; ++t) {
        ids[b * s + t] = static_cast<int32_t>(draw(0, b * s + t, c.vocab_size));
        segments[b * s + t] = t - start >= length / 2 ? 1 : 0;
        mask[b * s + t] = static_cast<float>(q + 1);
        position[b * s + t] = static_cast<int32_t>(t - start);
      }
      start += length;
    }
    for (int64_t t = start; t < s; ++t) {
      ids[b * s + t] = segments[b * s + t] = position[b * s + t] = 0;
      mask[b * s + t] = 0.0f;
    }
    const int64_t used = std::min<int64_t>(p, 2 * sequences);
    for (int64_t m = 0; m < p; ++m) {
      const int64_t i = b * p + m;
      const bool real = m < used;
      mlm_positions[i] = real ? static_cast<int32_t>(1 + m * ((start - 1) / used)) : 0;
      labels[i] = real ? static_cast<int32_t>(draw(1, i, c.vocab_size)) : 0;
      weights[i] = real ? 1.0f : 0.0f;
    }
  }
  owned.batch.count = batch;
  return owned;
}

void RunParity(const BertConfig& config, int64_t batch, double median_ratio = 2.0) {
  if (!testing::PythonHas("torch, transformers"))
    GTEST_SKIP() << "PyTorch or transformers is missing for /usr/bin/python3 "
                    "(scripts/install_deps.sh --test)";
  Bert model(config, batch);
  model.Initialize(71);
  // Non-trivial LayerNorm scales and shifts and biases.
  std::vector<float> params = model.ParametersToHost();
  const std::vector<TensorSlice> slices = model.slices();
  for (size_t i = 0; i < slices.size(); ++i) {
    const layers::Parameter& p = model.parameter_tensors()[i];
    if (!p.batch_norm && !p.bias) continue;
    const bool scale = p.batch_norm && p.name.ends_with(".weight");
    for (int64_t j = 0; j < slices[i].numel; ++j) {
      const float u = core::PhiloxUniform(72, i, static_cast<uint64_t>(j));
      params[slices[i].offset + j] = scale ? 0.5f + u : 0.2f * (u - 0.5f);
    }
  }
  model.ParametersFromHost(params);

  const bool packed = config.packed_sequences > 0;
  const OwnedBatch owned = packed ? MakePackedBatch(config, batch) : MakeBatch(config, batch);
  std::vector<const char*> names = {"input_ids",           "segment_ids",   "input_mask",
                                    "masked_lm_positions", "masked_lm_ids", "masked_lm_weights",
                                    "next_sentence_labels"};
  if (packed) {
    names = {"input_ids",
             "segment_ids",
             "input_mask",
             "positions",
             "masked_lm_positions",
             "masked_lm_ids",
             "masked_lm_weights",
             "next_sentence_positions",
             "next_sentence_labels",
             "next_sentence_weights"};
  }
  std::vector<io::NamedTensor> batch_tensors;
  for (size_t i = 0; i < names.size(); ++i)
    batch_tensors.push_back({names[i], owned.batch.inputs[i]});
  const std::string weights = TempPath("bert_parity_w"), batch_file = TempPath("bert_parity_x");
  const std::string out = TempPath("bert_parity_out");
  ASSERT_TRUE(model.SaveSafetensors(weights).ok());
  ASSERT_TRUE(io::SaveSafetensors(batch_file, batch_tensors).ok());
  const std::string cmd =
      fmt::format("/usr/bin/python3 {}/tests/bert/bert_parity.py {} {} {} {} {} {} {} {} {}",
                  MLPERF_SOURCE_DIR, weights, batch_file, out, config.vocab_size, config.hidden,
                  config.layers, config.heads, config.intermediate, config.max_positions);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  absl::StatusOr<io::SafetensorsFile> file = io::SafetensorsFile::Read(out);
  ASSERT_TRUE(file.ok()) << file.status();
  for (const std::string& p : {weights, batch_file, out}) std::remove(p.c_str());
  EXPECT_EQ(file->metadata().at("parameters"), std::to_string(model.num_parameters()));
  EXPECT_EQ(Bert::ParameterCount(config), model.num_parameters());

  const float loss = model.ForwardTrain(owned.batch);
  const Errors mlm = Compare(*file, "mlm_logits", SpanOf(model.mlm_logits()));
  const Errors nsp = Compare(*file, "nsp_logits", SpanOf(model.nsp_logits()));
  EXPECT_LT(mlm.ours, 1e-5) << "masked-LM logits (torch fp32 " << mlm.torch << ")";
  EXPECT_LT(nsp.ours, 1e-5) << "next-sentence logits (torch fp32 " << nsp.torch << ")";
  EXPECT_LT(Compare(*file, "mlm_loss", SpanOf(model.mlm_loss())).ours, 1e-5);
  EXPECT_LT(Compare(*file, "nsp_loss", SpanOf(model.nsp_loss())).ours, 1e-5);
  const Errors loss_error = Compare(*file, "loss", {&loss, 1});
  EXPECT_LT(loss_error.ours, 1e-5) << "loss " << loss;

  model.Backward();
  std::vector<double> ours, theirs;
  for (const layers::Parameter& p : model.parameter_tensors()) {
    const Errors e = Compare(*file, "grad/" + p.name, SpanOf(p.grad));
    EXPECT_LT(e.ours, 4.0 * e.torch + 1e-5)
        << "gradient of " << p.name << " (torch fp32 " << e.torch << ")";
    if (base::GetEnv("PARITY_VERBOSE"))
      std::printf("%s ours %.2e torch %.2e\n", p.name.c_str(), e.ours, e.torch);
    ours.push_back(e.ours);
    theirs.push_back(e.torch);
  }
  std::sort(ours.begin(), ours.end());
  std::sort(theirs.begin(), theirs.end());
  std::printf(
      "errors vs fp64: mlm logits %.1e (torch fp32 %.1e), nsp logits %.1e, loss %.1e; gradients "
      "median %.1e max %.1e (torch fp32 median %.1e max %.1e)\n",
      mlm.ours, mlm.torch, nsp.ours, loss_error.ours, ours[ours.size() / 2], ours.back(),
      theirs[theirs.size() / 2], theirs.back());
  EXPECT_LT(ours[ours.size() / 2], median_ratio * theirs[theirs.size() / 2] + 1e-7);
}

BertConfig Small() {
  return {.vocab_size = 97,
          .hidden = 32,
          .layers = 2,
          .heads = 4,
          .intermediate = 64,
          .max_positions = 40,
          .seq_len = 24,
          .max_predictions = 5,
          .hidden_dropout = 0.0f,
          .attention_dropout = 0.0f};
}

TEST(BertParityTest, SmallMemberMatchesTransformers) { RunParity(Small(), 3); }

TEST(BertParityTest, PackedRowsMatchTransformersWithAThreeDimensionalMask) {
  BertConfig c = Small();
  c.packed_sequences = 3;
  c.max_predictions = 6;
  RunParity(c, 4);
}

TEST(BertParityTest, BertLargeHasItsParameterCount) {
  // references.md 4.1: about 336.2 M with the heads, embeddings tied.
  EXPECT_EQ(Bert::ParameterCount(BertConfig()), 336'226'108);
  // The arenas of a measured model hold its parameters and gradients at least.
  EXPECT_GT(Bert::ArenaBytes(BertConfig(), 1), 2 * 4 * Bert::ParameterCount(BertConfig()));
}

// BERT-Large itself at sequence 128, run by hand with
// --gtest_also_run_disabled_tests. Its oracle keeps transformers' model in
// fp32 and fp64 with gradients: more than 20 GB (killed for memory on a
// 24 GiB machine, 2026-11-25), so it needs a larger machine.
TEST(BertParityTest, DISABLED_BertLargeMatchesTransformers) {
  BertConfig large;
  large.seq_len = 128;
  large.max_predictions = 20;
  large.hidden_dropout = large.attention_dropout = 0.0f;
  RunParity(large, 2);
}

}  // namespace
}  // namespace mlperf::models
