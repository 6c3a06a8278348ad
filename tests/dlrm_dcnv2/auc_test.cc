// The exact AUC against sklearn.metrics.roc_auc_score (tests/dlrm_dcnv2/auc_sklearn.py
// under /usr/bin/python3) to 1e-9: random scores, many ties, all scores
// equal, -0 and +0, scores of both signs and wide range, two million
// samples with ties; no value where sklearn refuses (one class, a NaN).
// Skips where scikit-learn is missing.
#include "reference/eval/auc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/core/philox.h"
#include "reference/io/safetensors.h"
#include "tests/core/parity_util.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::eval {
namespace {

struct Case {
  std::string name;
  std::vector<float> scores, labels;
};

float Uniform(uint64_t stream, uint64_t i) { return core::PhiloxUniform(5, stream, i); }

std::vector<Case> Cases() {
  std::vector<Case> cases;
  auto add = [&](const std::string& name, int64_t n, auto score, auto label) {
    Case c{name, {}, {}};
    for (int64_t i = 0; i < n; ++i) {
      c.labels.push_back(label(i));
      c.scores.push_back(score(i, c.labels.back()));
    }
    cases.push_back(std::move(c));
  };
  const auto half = [](int64_t i) { return Uniform(1, i) < 0.3f ? 1.0f : 0.0f; };
  add(
      "random", 10000, [](int64_t i, float y) { return Uniform(2, i) + 0.3f * y; }, half);
  add(
      "ties", 10000,
      [](int64_t i, float y) { return std::round(10 * (Uniform(3, i) + 0.2f * y)) / 10; }, half);
  add(
      "all_equal", 1000, [](int64_t, float) { return 0.5f; }, half);
  add(
      "signed_zeros", 8, [](int64_t i, float) { return i % 2 ? -0.0f : 0.0f; },
      [](int64_t i) { return static_cast<float>(i % 3 == 0); });
  add(
      "wide", 5000,
      [](int64_t i, float y) {
        return (Uniform(4, i) - 0.5f) * std::pow(10.0f, 30 * Uniform(6, i) - 15) + y * 1e-3f;
      },
      half);
  add(
      "saturated", 5000,
      [](int64_t i, float y) {
        return 1.0f / (1.0f + std::exp(-40 * (Uniform(7, i) - 0.5f + 0.1f * y)));
      },
      half);
  add(
      "two_million", 2000000,
      [](int64_t i, float y) { return std::round(1000 * (Uniform(8, i) + 0.1f * y)) / 1000; },
      half);
  add(
      "one_class", 100, [](int64_t i, float) { return Uniform(9, i); },
      [](int64_t) { return 1.0f; });
  add(
      "nan", 100, [](int64_t i, float) { return i == 50 ? NAN : Uniform(10, i); }, half);
  return cases;
}

TEST(ExactAuc, MatchesSklearnRocAucScore) {
  if (!testing::PythonHas("torch, sklearn"))
    GTEST_SKIP() << "scikit-learn or PyTorch is missing for /usr/bin/python3";
  const std::vector<Case> cases = Cases();
  std::vector<io::NamedTensor> named;
  for (const Case& c : cases) {
    const auto n = static_cast<int64_t>(c.scores.size());
    named.push_back({"scores/" + c.name,
                     core::Tensor(const_cast<float*>(c.scores.data()), {n}, core::DType::kF32)});
    named.push_back({"labels/" + c.name,
                     core::Tensor(const_cast<float*>(c.labels.data()), {n}, core::DType::kF32)});
  }
  const std::string in = testing::TempPath("auc_cases");
  const std::string out = in + ".txt";
  ASSERT_TRUE(io::SaveSafetensors(in, named).ok());
  const std::string cmd = fmt::format("/usr/bin/python3 {}/tests/dlrm_dcnv2/auc_sklearn.py {} {}",
                                      MLPERF_SOURCE_DIR, in, out);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream answers(out);
  std::string name, value;
  int compared = 0;
  while (answers >> name >> value) {
    const Case* c = nullptr;
    for (const Case& k : cases)
      if (k.name == name) c = &k;
    ASSERT_NE(c, nullptr) << name;
    std::vector<uint8_t> labels(c->labels.begin(), c->labels.end());
    const std::optional<double> ours = ExactAuc(c->scores, labels);
    if (value == "undefined") {
      EXPECT_FALSE(ours.has_value()) << name;
    } else {
      ASSERT_TRUE(ours.has_value()) << name;
      EXPECT_NEAR(*ours, std::stod(value), 1e-9) << name;
    }
    ++compared;
  }
  EXPECT_EQ(compared, static_cast<int>(cases.size()));
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}

TEST(ExactAuc, KnownValuesWithoutAnOracle) {
  // Perfect, reversed, and one tie between a positive and a negative.
  EXPECT_EQ(ExactAuc(std::vector<float>{0.1f, 0.9f}, std::vector<uint8_t>{0, 1}), 1.0);
  EXPECT_EQ(ExactAuc(std::vector<float>{0.9f, 0.1f}, std::vector<uint8_t>{0, 1}), 0.0);
  EXPECT_EQ(ExactAuc(std::vector<float>{0.5f, 0.5f, 0.9f}, std::vector<uint8_t>{0, 1, 1}), 0.75);
  EXPECT_FALSE(ExactAuc(std::vector<float>{}, std::vector<uint8_t>{}).has_value());
  EXPECT_FALSE(ExactAuc(std::vector<float>{0.1f}, std::vector<uint8_t>{0, 1}).has_value());
}

TEST(ExactAuc, ATiledSetWeightedEqualsTheSetWrittenOut) {
  constexpr int64_t kDistinct = 997, kTotal = 10007;
  std::vector<float> scores;
  std::vector<uint8_t> labels;
  for (int64_t k = 0; k < kDistinct; ++k) {
    labels.push_back(Uniform(11, k) < 0.4f);
    scores.push_back(std::round(20 * (Uniform(12, k) + 0.2f * labels.back())) / 20);  // ties
  }
  std::vector<float> all_scores;
  std::vector<uint8_t> all_labels;
  for (int64_t i = 0; i < kTotal; ++i) {
    all_scores.push_back(scores[i % kDistinct]);
    all_labels.push_back(labels[i % kDistinct]);
  }
  const std::vector<uint32_t> weights = TiledWeights(kDistinct, kTotal);
  EXPECT_EQ(weights[0], 11u);  // 10007 = 10 * 997 + 37
  EXPECT_EQ(weights[36], 11u);
  EXPECT_EQ(weights[37], 10u);
  const std::optional<double> tiled = ExactAuc(scores, labels, weights);
  const std::optional<double> written = ExactAuc(all_scores, all_labels);
  ASSERT_TRUE(tiled.has_value() && written.has_value());
  EXPECT_EQ(*tiled, *written);
  EXPECT_NE(*tiled, *ExactAuc(scores, labels));  // the weights matter here
}

}  // namespace
}  // namespace mlperf::eval
