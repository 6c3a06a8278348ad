// BERT's sequence packing (datasets/bert/packing.h): best-fit decreasing on a
// worked example and its invariants on random samples (each sample in one
// row, rows within the limits, the same rows every time), and the point of
// it: a batch of packed rows (models::Bert, packed_sequences 3) trains what
// the same samples unpacked train: the same masked-LM and next-sentence
// losses and the same gradient of every parameter, within summation order.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <vector>

#include "datasets/bert/generated.h"
#include "datasets/bert/loader.h"
#include "datasets/bert/packing.h"
#include "reference/core/philox.h"
#include "reference/models/bert.h"

namespace mlperf::datasets::bert {
namespace {

TEST(BertPacking, BestFitDecreasingOnAWorkedExample) {
  // By length: 300 opens row 0 (212 left), 250 opens row 1 (262 left), 200
  // takes the tighter row 0 (12 left), 100 and 60 go to row 1 (162, 102).
  const std::vector<SampleSize> sizes = {{300, 40}, {200, 30}, {250, 38}, {100, 15}, {60, 9}};
  EXPECT_EQ(PackSamples(sizes, {.seq_len = 512}).members,
            (std::vector<int32_t>{0, 1, -1, 2, 3, 4}));
  // Masked-LM slots bind too: 200 no longer fits row 0's 76 - 40 slots.
  const std::vector<SampleSize> slots = {{300, 40}, {200, 37}, {250, 38}};
  EXPECT_EQ(PackSamples(slots, {.seq_len = 512}).members,
            (std::vector<int32_t>{0, -1, -1, 2, 1, -1}));
  // At most three samples a row.
  const std::vector<SampleSize> short_ones(7, SampleSize{10, 1});
  const Packs three = PackSamples(short_ones, {.seq_len = 512});
  EXPECT_EQ(three.members, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, -1, -1}));
  EXPECT_EQ(three.rows(), 3);
  EXPECT_EQ(std::vector<int32_t>(three.row(2).begin(), three.row(2).end()),
            std::vector<int32_t>{6});
}

TEST(BertPacking, EverySampleOnceWithinTheLimits) {
  const PackingLimits limits{.seq_len = 128, .max_predictions = 20, .max_sequences = 3};
  std::vector<SampleSize> sizes;
  for (uint64_t i = 0; i < 5000; ++i) {
    const auto tokens = static_cast<int32_t>(8 + core::PhiloxBits(3, 0, i) % 121);
    sizes.push_back(
        {tokens, static_cast<int32_t>(std::min<int64_t>(20, (tokens * 15 + 50) / 100))});
  }
  const Packs packs = PackSamples(sizes, limits);
  EXPECT_EQ(PackSamples(sizes, limits).members, packs.members);
  std::vector<int> seen(sizes.size(), 0);
  for (int64_t r = 0; r < packs.rows(); ++r) {
    const std::span<const int32_t> row = packs.row(r);
    ASSERT_GE(row.size(), 1u);
    ASSERT_LE(row.size(), 3u);
    int64_t tokens = 0, predictions = 0;
    for (const int32_t i : row) {
      ++seen[i];
      tokens += sizes[i].tokens;
      predictions += sizes[i].predictions;
    }
    ASSERT_LE(tokens, limits.seq_len);
    ASSERT_LE(predictions, limits.max_predictions);
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  // Lengths uniform over 8..128 pack about two to a row.
  const double factor = static_cast<double>(sizes.size()) / static_cast<double>(packs.rows());
  EXPECT_GT(factor, 1.8);
  std::printf("%zu samples in %ld rows: %.3f a row\n", sizes.size(), packs.rows(), factor);
}

// Samples of different lengths (padding after), two segments, masked slots
// inside, unused slots after them.
std::vector<PretrainingExample> Samples(const PretrainingShape& shape, int64_t vocab, int n) {
  std::vector<PretrainingExample> out;
  for (int b = 0; b < n; ++b) {
    PretrainingExample e(shape);
    const auto draw = [&](uint64_t stream, uint64_t i, int64_t bound) {
      return static_cast<int32_t>(core::PhiloxBits(91, stream, b * 1000 + i) % bound);
    };
    const int64_t length = 4 + draw(9, 0, shape.seq_len - 3);
    for (int64_t t = 0; t < length; ++t) {
      e.input_ids[t] = draw(0, t, vocab);
      e.segment_ids[t] = t >= length / 2 ? 1 : 0;
      e.input_mask[t] = 1.0f;
    }
    const int64_t used = std::min<int64_t>(shape.max_predictions, 1 + length / 5);
    for (int64_t m = 0; m < used; ++m) {
      e.masked_lm_positions[m] = static_cast<int32_t>(1 + m * ((length - 1) / used));
      e.masked_lm_ids[m] = draw(1, m, vocab);
      e.masked_lm_weights[m] = 1.0f;
    }
    e.next_sentence_label = draw(2, 0, 2);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<float> Gradients(models::Bert& model, const models::Batch& batch, float* loss) {
  *loss = model.ForwardTrain(batch);
  model.Backward();
  return model.GradientsToHost();
}

TEST(BertPacking, PackedRowsTrainWhatTheSamplesUnpackedTrain) {
  const models::BertConfig base{.vocab_size = 89,
                                .hidden = 32,
                                .layers = 2,
                                .heads = 4,
                                .intermediate = 64,
                                .max_positions = 40,
                                .seq_len = 32,
                                .max_predictions = 8,
                                .hidden_dropout = 0.0f,
                                .attention_dropout = 0.0f};
  const PretrainingShape shape{.seq_len = base.seq_len, .max_predictions = base.max_predictions};
  const int kSamples = 12;
  std::vector<PretrainingExample> samples = Samples(shape, base.vocab_size, kSamples);

  // Unpacked: one sample a row.
  models::OwnedBatch unpacked;
  int32_t* ids = unpacked.Add({kSamples, shape.seq_len}, core::DType::kI32).as<int32_t>();
  int32_t* seg = unpacked.Add({kSamples, shape.seq_len}, core::DType::kI32).as<int32_t>();
  float* mask = unpacked.Add({kSamples, shape.seq_len}, core::DType::kF32).f32();
  const int64_t p = shape.max_predictions;
  int32_t* pos = unpacked.Add({kSamples, p}, core::DType::kI32).as<int32_t>();
  int32_t* lab = unpacked.Add({kSamples, p}, core::DType::kI32).as<int32_t>();
  float* wts = unpacked.Add({kSamples, p}, core::DType::kF32).f32();
  int32_t* next = unpacked.Add({kSamples}, core::DType::kI32).as<int32_t>();
  std::vector<SampleSize> sizes;
  std::vector<PretrainingRow> rows_of;
  for (int b = 0; b < kSamples; ++b) {
    PretrainingExample& e = samples[b];
    std::copy(e.input_ids.begin(), e.input_ids.end(), ids + b * shape.seq_len);
    std::copy(e.segment_ids.begin(), e.segment_ids.end(), seg + b * shape.seq_len);
    std::copy(e.input_mask.begin(), e.input_mask.end(), mask + b * shape.seq_len);
    std::copy(e.masked_lm_positions.begin(), e.masked_lm_positions.end(), pos + b * p);
    std::copy(e.masked_lm_ids.begin(), e.masked_lm_ids.end(), lab + b * p);
    std::copy(e.masked_lm_weights.begin(), e.masked_lm_weights.end(), wts + b * p);
    next[b] = e.next_sentence_label;
    rows_of.push_back(e.row());
    sizes.push_back(SizeOf(rows_of.back(), shape));
  }
  unpacked.batch.count = kSamples;

  // Packed: PackSamples' rows.
  const PackingLimits limits{.seq_len = shape.seq_len, .max_predictions = p, .max_sequences = 3};
  const Packs packs = PackSamples(sizes, limits);
  const int64_t rows = packs.rows();
  ASSERT_LT(rows, kSamples);  // it does pack
  PackedBertBatch packed(rows, limits);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<PretrainingRow> members;
    for (const int32_t i : packs.row(r)) members.push_back(rows_of[i]);
    packed.Fill(r, members, shape);
  }
  EXPECT_EQ(packed.sequences(), kSamples);
  models::Batch packed_batch;
  const auto view = [&](auto& v, core::Shape s, core::DType t) {
    packed_batch.inputs.push_back(core::Tensor(v.data(), s, t));
  };
  const int64_t k = limits.max_sequences;
  view(packed.input_ids, {rows, shape.seq_len}, core::DType::kI32);
  view(packed.segment_ids, {rows, shape.seq_len}, core::DType::kI32);
  view(packed.input_mask, {rows, shape.seq_len}, core::DType::kF32);
  view(packed.positions, {rows, shape.seq_len}, core::DType::kI32);
  view(packed.masked_lm_positions, {rows, p}, core::DType::kI32);
  view(packed.masked_lm_ids, {rows, p}, core::DType::kI32);
  view(packed.masked_lm_weights, {rows, p}, core::DType::kF32);
  view(packed.next_sentence_positions, {rows, k}, core::DType::kI32);
  view(packed.next_sentence_labels, {rows, k}, core::DType::kI32);
  view(packed.next_sentence_weights, {rows, k}, core::DType::kF32);
  packed_batch.count = rows;

  models::Bert one(base, kSamples, 5);
  models::BertConfig packed_config = base;
  packed_config.packed_sequences = 3;
  models::Bert many(packed_config, rows, 5);
  ASSERT_EQ(one.ParametersToHost(), many.ParametersToHost());
  float loss_one = 0.0f, loss_many = 0.0f;
  const std::vector<float> g_one = Gradients(one, unpacked.batch, &loss_one);
  const std::vector<float> g_many = Gradients(many, packed_batch, &loss_many);
  EXPECT_NEAR(one.ToHost(one.mlm_loss())[0], many.ToHost(many.mlm_loss())[0], 2e-6);
  // The packed loss divides by sum(w) + 1e-5 rather than the count.
  EXPECT_NEAR(one.ToHost(one.nsp_loss())[0], many.ToHost(many.nsp_loss())[0], 2e-6);
  EXPECT_NEAR(loss_one, loss_many, 4e-6);
  double worst = 0.0, norm = 0.0;
  for (size_t i = 0; i < g_one.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(g_one[i] - g_many[i])));
    norm = std::max(norm, static_cast<double>(std::fabs(g_one[i])));
  }
  EXPECT_LT(worst, 1e-5 * norm) << "largest gradient " << norm;
  EXPECT_GT(norm, 0.0);
}

// The loader's packed rows over generated shards: an epoch holds every
// sample once (each row's samples found back, token for token, among the
// shards' samples), GlobalSamples counts what the batches hold, and the
// evaluation's rows hold one sample each.
TEST(BertPacking, TheLoadersPackedRowsHoldEachSampleOnceAnEpoch) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("bert_packing_" + std::to_string(::getpid())))
          .string();
  GeneratedBertOptions g{.train_samples = 300, .train_shards = 2, .eval_samples = 20};
  g.max_predictions = 12;  // room for several samples' slots in a row
  g.min_symbols = 6;       // samples of 9 to 32 tokens: some pack
  ASSERT_TRUE(WriteGeneratedBertData(dir, g).ok());
  absl::StatusOr<BertFiles> files = ListBertData(dir);
  ASSERT_TRUE(files.ok());
  const PretrainingShape shape = g.shape();
  // Every training sample by its tokens (the generated ones are distinct
  // enough; equal ones just count twice).
  std::map<std::vector<int32_t>, int> wanted;
  {
    BertLoaderOptions o{.files = files->train, .train = false, .batch_size = 300, .shape = shape};
    absl::StatusOr<std::unique_ptr<BertLoader>> all = BertLoader::Open(o);
    ASSERT_TRUE(all.ok()) << all.status();
    BertBatch b;
    ASSERT_TRUE(*(*all)->Next(&b));
    for (int64_t i = 0; i < b.count; ++i) {
      std::vector<int32_t> tokens;
      for (int64_t t = 0; t < shape.seq_len && b.input_mask[i * shape.seq_len + t] != 0; ++t)
        tokens.push_back(b.input_ids[i * shape.seq_len + t]);
      ++wanted[tokens];
    }
  }
  const int64_t rows = 8;
  const PackingLimits limits{.seq_len = shape.seq_len, .max_predictions = shape.max_predictions};
  absl::StatusOr<Packs> packs = PackBertSamples(files->train, shape, limits, 2, "");
  ASSERT_TRUE(packs.ok()) << packs.status();
  BertLoaderOptions o{
      .files = files->train, .batch_size = rows, .seed = 4, .shape = shape, .packed_sequences = 3};
  // Without the packing: refused in one line.
  EXPECT_EQ(BertLoader::Open(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.packs = std::make_shared<const Packs>(*std::move(packs));
  absl::StatusOr<std::unique_ptr<BertLoader>> loader = BertLoader::Open(o);
  ASSERT_TRUE(loader.ok()) << loader.status();
  std::map<std::vector<int32_t>, int> seen;
  int64_t samples = 0;
  const int64_t batches = (*loader)->batches_per_epoch();
  for (int64_t n = 0; n < batches; ++n) {
    BertBatch b;
    ASSERT_TRUE(*(*loader)->Next(&b));
    ASSERT_EQ(b.batch_size, rows);
    ASSERT_EQ(b.samples, (*loader)->GlobalSamples(n, 1));
    samples += b.samples;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t q = 0; q < 3; ++q) {
        if (b.next_sentence_weights[r * 3 + q] == 0.0f) continue;
        const int64_t start = b.next_sentence_positions[r * 3 + q];
        std::vector<int32_t> tokens;
        for (int64_t t = start; t < shape.seq_len && b.input_mask[r * shape.seq_len + t] == q + 1;
             ++t) {
          ASSERT_EQ(b.positions[r * shape.seq_len + t], t - start);
          tokens.push_back(b.input_ids[r * shape.seq_len + t]);
        }
        ++seen[tokens];
      }
    }
  }
  EXPECT_EQ(samples, (*loader)->GlobalSamples(0, batches));
  // Rows left over an epoch leave their samples out: every one seen at most
  // as often as it exists, and nearly all seen.
  int64_t missing = 0;
  for (const auto& [tokens, n] : seen) EXPECT_LE(n, wanted[tokens]);
  for (const auto& [tokens, n] : wanted) missing += n - (seen.contains(tokens) ? seen[tokens] : 0);
  EXPECT_LT(missing, 3 * rows);
  EXPECT_GT(samples, rows * batches);  // it packs
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mlperf::datasets::bert
