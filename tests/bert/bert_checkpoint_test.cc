// BERT's starting checkpoints onto models::Bert: the tiny BERT TensorFlow
// wrote under the reference's names (tests/bert/fixtures) lands where it
// should (transposed dense kernels, query/key/value fused, the
// next-sentence weights as they are), the same weights under Hugging Face's
// names (converted by the fixture script, independently of the C++ table)
// give the identical model, our TensorFlow writer round-trips bit for bit,
// and a missing or misshaped tensor is an error naming it that leaves the
// model unchanged.
#include "reference/models/bert_checkpoint.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/environment.h"
#include "fmt/format.h"
#include "reference/io/safetensors.h"
#include "reference/io/tf_checkpoint.h"
#include "reference/models/bert.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::models {
namespace {

namespace fs = std::filesystem;
using core::DType;
using core::Tensor;

const std::string kFixtures = std::string(MLPERF_SOURCE_DIR) + "/tests/bert/fixtures";
const std::string kTinyBert = kFixtures + "/tiny_bert/model.ckpt-28252";

// The fixture's size: 2 layers, hidden 32, 4 heads, intermediate 64, vocab
// 97, 40 positions.
BertConfig TinyConfig() {
  BertConfig c;
  c.vocab_size = 97;
  c.hidden = 32;
  c.layers = 2;
  c.heads = 4;
  c.intermediate = 64;
  c.max_positions = 40;
  c.seq_len = 16;
  c.max_predictions = 4;
  return c;
}

class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::temp_directory_path() / fmt::format("bert_ckpt_{}_{}", name, ::getpid())) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// Our parameters by name, copied to the host.
std::map<std::string, std::vector<float>> Parameters(const Bert& model) {
  std::map<std::string, std::vector<float>> out;
  for (const layers::Parameter& p : model.parameter_tensors()) out[p.name] = model.ToHost(p.value);
  return out;
}

// A TensorFlow-named fp32 tensor as TensorFlow read it (the fixture's
// expected values), with its shape.
struct Stored {
  std::vector<float> values;
  int64_t rows = 0, cols = 0;
  float at(int64_t i, int64_t j) const { return values[i * cols + j]; }
};
Stored Expected(const std::string& name) {
  static const io::SafetensorsFile file =
      *io::SafetensorsFile::Read(kFixtures + "/tiny_bert_expected.safetensors");
  const io::StoredTensor& t = file.tensors().at(name);
  Stored s;
  s.values.resize(static_cast<size_t>(t.shape.numel()));
  s.rows = t.shape[0];
  s.cols = t.shape.rank() == 2 ? t.shape[1] : 1;
  EXPECT_TRUE(file.CopyTo(name, Tensor(s.values.data(), t.shape, DType::kF32)).ok()) << name;
  return s;
}

TEST(BertCheckpointTest, LoadsTheReferenceNamesFromTensorFlow) {
  Bert model(TinyConfig(), 2);
  const absl::Status s = LoadBertTfCheckpoint(model, kTinyBert);
  ASSERT_TRUE(s.ok()) << s;
  const auto ours = Parameters(model);

  // Embedding tables as stored.
  EXPECT_EQ(ours.at("bert.embeddings.word_embeddings.weight"),
            Expected("bert/embeddings/word_embeddings").values);
  EXPECT_EQ(ours.at("bert.embeddings.LayerNorm.weight"),
            Expected("bert/embeddings/LayerNorm/gamma").values);
  // A dense kernel, [in, out] in TensorFlow, is our [out, in].
  const Stored kernel = Expected("bert/encoder/layer_1/intermediate/dense/kernel");
  ASSERT_EQ(kernel.rows, 32);
  ASSERT_EQ(kernel.cols, 64);
  const std::vector<float>& w = ours.at("bert.encoder.layer.1.intermediate.dense.weight");
  for (int64_t o = 0; o < 64; ++o)
    for (int64_t i = 0; i < 32; ++i) ASSERT_EQ(w[o * 32 + i], kernel.at(i, o)) << o << "," << i;
  // query, key and value stacked in that order, each transposed.
  const std::vector<float>& qkv = ours.at("bert.encoder.layer.0.attention.qkv.weight");
  const std::vector<float>& qkv_bias = ours.at("bert.encoder.layer.0.attention.qkv.bias");
  ASSERT_EQ(qkv.size(), 96u * 32u);
  int64_t part = 0;
  for (const char* name : {"query", "key", "value"}) {
    const std::string self = fmt::format("bert/encoder/layer_0/attention/self/{}/", name);
    const Stored k = Expected(self + "kernel");
    const Stored b = Expected(self + "bias");
    for (int64_t o = 0; o < 32; ++o) {
      EXPECT_EQ(qkv_bias[part * 32 + o], b.values[o]) << name;
      for (int64_t i = 0; i < 32; ++i)
        ASSERT_EQ(qkv[(part * 32 + o) * 32 + i], k.at(i, o)) << name << " " << o << "," << i;
    }
    ++part;
  }
  // The attention output projection and the heads.
  const Stored out = Expected("bert/encoder/layer_0/attention/output/dense/kernel");
  EXPECT_EQ(ours.at("bert.encoder.layer.0.attention.output.weight")[1 * 32 + 0], out.at(0, 1));
  EXPECT_EQ(ours.at("bert.encoder.layer.0.attention.output.bias"),
            Expected("bert/encoder/layer_0/attention/output/dense/bias").values);
  // output_weights is [2, hidden] in the reference and not transposed.
  EXPECT_EQ(ours.at("cls.seq_relationship.weight"),
            Expected("cls/seq_relationship/output_weights").values);
  EXPECT_EQ(ours.at("cls.predictions.bias"), Expected("cls/predictions/output_bias").values);
  EXPECT_EQ(ours.at("cls.predictions.transform.LayerNorm.bias"),
            Expected("cls/predictions/transform/LayerNorm/beta").values);
}

TEST(BertCheckpointTest, HuggingFaceNamesGiveTheSameModel) {
  Bert from_tf(TinyConfig(), 2), from_hf(TinyConfig(), 2);
  ASSERT_TRUE(LoadBertTfCheckpoint(from_tf, kTinyBert).ok());
  const absl::Status s = LoadBertHfSafetensors(from_hf, kFixtures + "/tiny_bert_hf.safetensors");
  ASSERT_TRUE(s.ok()) << s;
  // Every parameter, not only the ones checked above: the two name tables
  // were written independently (Python and C++).
  const auto tf = Parameters(from_tf), hf = Parameters(from_hf);
  ASSERT_EQ(tf.size(), hf.size());
  for (const auto& [name, values] : tf) EXPECT_EQ(values, hf.at(name)) << name;
  EXPECT_EQ(from_tf.ParametersToHost(), from_hf.ParametersToHost());
}

TEST(BertCheckpointTest, HalfPrecisionHuggingFaceFilesAreWidened) {
  // Hub checkpoints are often saved in fp16 or bf16.
  TempDir dir("hf16");
  absl::StatusOr<io::SafetensorsFile> hf =
      io::SafetensorsFile::Read(kFixtures + "/tiny_bert_hf.safetensors");
  ASSERT_TRUE(hf.ok());
  for (const DType narrow : {DType::kF16, DType::kBF16}) {
    std::vector<std::vector<uint16_t>> storage;
    storage.reserve(hf->tensors().size());
    std::vector<io::NamedTensor> tensors;
    for (const auto& [name, t] : hf->tensors()) {
      if (t.dtype != DType::kF32) continue;
      std::vector<float> v(static_cast<size_t>(t.shape.numel()));
      ASSERT_TRUE(hf->CopyTo(name, Tensor(v.data(), t.shape, DType::kF32)).ok());
      std::vector<uint16_t>& h = storage.emplace_back(v.size());
      for (size_t i = 0; i < v.size(); ++i)
        h[i] = narrow == DType::kF16 ? core::FloatToHalf(v[i]) : core::FloatToBf16(v[i]);
      tensors.push_back({name, Tensor(h.data(), t.shape, narrow)});
    }
    const std::string path = dir / "narrow.safetensors";
    ASSERT_TRUE(io::SaveSafetensors(path, tensors).ok());
    Bert model(TinyConfig(), 2);
    const absl::Status s = LoadBertHfSafetensors(model, path);
    ASSERT_TRUE(s.ok()) << s;
    const std::vector<float> bias = Parameters(model).at("cls.seq_relationship.bias");
    const Stored stored = Expected("cls/seq_relationship/output_bias");
    for (size_t i = 0; i < bias.size(); ++i) {
      const float want = narrow == DType::kF16
                             ? core::HalfToFloat(core::FloatToHalf(stored.values[i]))
                             : core::Bf16ToFloat(core::FloatToBf16(stored.values[i]));
      EXPECT_EQ(bias[i], want) << i;
      EXPECT_NE(bias[i], stored.values[i]) << "rounding should show";
    }
  }
}

TEST(BertCheckpointTest, WriteThenLoadRoundTripsBitForBit) {
  TempDir dir("roundtrip");
  Bert written(TinyConfig(), 2);
  written.Initialize(1234);
  // Non-trivial LayerNorm scales and biases too.
  std::vector<float> params = written.ParametersToHost();
  for (size_t i = 0; i < params.size(); ++i) params[i] += static_cast<float>(i % 7) * 0.125f;
  written.ParametersFromHost(params);
  ASSERT_TRUE(WriteBertTfCheckpoint(written, dir / "model.ckpt-0").ok());

  Bert loaded(TinyConfig(), 2);
  loaded.Initialize(99);
  ASSERT_NE(Parameters(loaded), Parameters(written));
  const absl::Status s = LoadBertTfCheckpoint(loaded, dir / "model.ckpt-0");
  ASSERT_TRUE(s.ok()) << s;
  // Per tensor: the arena's alignment padding is no parameter.
  EXPECT_EQ(Parameters(loaded), Parameters(written));

  // The written checkpoint has the reference's trainable names and shapes
  // exactly: those of the TensorFlow fixture less its slots and step.
  absl::StatusOr<io::TfCheckpoint> ours = io::TfCheckpoint::Open(dir / "model.ckpt-0");
  absl::StatusOr<io::TfCheckpoint> reference = io::TfCheckpoint::Open(kTinyBert);
  ASSERT_TRUE(ours.ok() && reference.ok());
  std::map<std::string, std::string> want, got;
  for (const auto& [name, info] : reference->entries()) {
    if (name == "global_step" || name.ends_with("/adam_m") || name.ends_with("/adam_v") ||
        name.ends_with("/lamb_m"))
      continue;
    want[name] = info.shape.ToString();
  }
  for (const auto& [name, info] : ours->entries()) got[name] = info.shape.ToString();
  EXPECT_EQ(got, want);
}

TEST(BertCheckpointTest, MissingTensorIsNamedAndChangesNothing) {
  TempDir dir("missing");
  // The fixture's tensors less one key kernel, written by our writer.
  absl::StatusOr<io::TfCheckpoint> reference = io::TfCheckpoint::Open(kTinyBert);
  ASSERT_TRUE(reference.ok());
  std::vector<std::vector<float>> storage;
  storage.reserve(reference->entries().size());
  std::vector<io::NamedTensor> tensors;
  for (const auto& [name, info] : reference->entries()) {
    if (name == "bert/encoder/layer_1/attention/self/key/kernel" || name == "global_step") continue;
    std::vector<float>& v = storage.emplace_back(static_cast<size_t>(info.shape.numel()));
    ASSERT_TRUE(reference->CopyTo(name, Tensor(v.data(), info.shape, DType::kF32)).ok());
    tensors.push_back({name, Tensor(v.data(), info.shape, DType::kF32)});
  }
  ASSERT_TRUE(io::WriteTfCheckpoint(dir / "ckpt", tensors).ok());
  Bert model(TinyConfig(), 2);
  model.Initialize(5);
  const std::vector<float> before = model.ParametersToHost();
  const absl::Status s = LoadBertTfCheckpoint(model, dir / "ckpt");
  EXPECT_EQ(s.message(), dir / "ckpt.index" +
                             ": no tensor \"bert/encoder/layer_1/attention/self/key/kernel\" "
                             "(for bert.encoder.layer.1.attention.qkv.weight)");
  EXPECT_EQ(model.ParametersToHost(), before);
}

TEST(BertCheckpointTest, MisshapedTensorIsNamedAndChangesNothing) {
  // The fixture's intermediate size is 64; a model of 128 cannot take it.
  BertConfig config = TinyConfig();
  config.intermediate = 128;
  Bert model(config, 2);
  model.Initialize(5);
  const std::vector<float> before = model.ParametersToHost();
  const absl::Status s = LoadBertTfCheckpoint(model, kTinyBert);
  EXPECT_EQ(s.message(), kTinyBert +
                             ".index: tensor \"bert/encoder/layer_0/intermediate/dense/kernel\": "
                             "expected F32 [32, 128], found float32 [32, 64] "
                             "(for bert.encoder.layer.0.intermediate.dense.weight)");
  EXPECT_EQ(model.ParametersToHost(), before);
  // Fewer positions than the checkpoint's 40 is also a mismatch.
  config = TinyConfig();
  config.max_positions = 32;
  Bert short_model(config, 2);
  EXPECT_NE(std::string(LoadBertTfCheckpoint(short_model, kTinyBert).message())
                .find("bert/embeddings/position_embeddings"),
            std::string::npos);
}

TEST(BertCheckpointTest, HuggingFaceFileErrors) {
  TempDir dir("hf");
  Bert model(TinyConfig(), 2);
  model.Initialize(3);
  // Our own names are not transformers' (attention.qkv): every file must
  // use the split names.
  ASSERT_TRUE(model.SaveSafetensors(dir / "ours.safetensors").ok());
  absl::Status s = LoadBertHfSafetensors(model, dir / "ours.safetensors");
  EXPECT_EQ(s.message(), dir / "ours.safetensors" +
                             ": no tensor \"bert.encoder.layer.0.attention.self.query.weight\" "
                             "(for bert.encoder.layer.0.attention.qkv.weight)");
  // A decoder that is not the word embeddings cannot be tied to them.
  absl::StatusOr<io::SafetensorsFile> hf =
      io::SafetensorsFile::Read(kFixtures + "/tiny_bert_hf.safetensors");
  ASSERT_TRUE(hf.ok());
  std::vector<std::vector<float>> storage;
  storage.reserve(hf->tensors().size() + 1);
  std::vector<io::NamedTensor> tensors;
  for (const auto& [name, t] : hf->tensors()) {
    if (t.dtype != DType::kF32) continue;
    std::vector<float>& v = storage.emplace_back(static_cast<size_t>(t.shape.numel()));
    ASSERT_TRUE(hf->CopyTo(name, Tensor(v.data(), t.shape, DType::kF32)).ok());
    tensors.push_back({name, Tensor(v.data(), t.shape, DType::kF32)});
  }
  std::vector<float>& decoder = storage.emplace_back(97 * 32, 0.5f);
  tensors.push_back(
      {"cls.predictions.decoder.weight", Tensor(decoder.data(), {97, 32}, DType::kF32)});
  ASSERT_TRUE(io::SaveSafetensors(dir / "untied.safetensors", tensors).ok());
  const std::vector<float> before = model.ParametersToHost();
  s = LoadBertHfSafetensors(model, dir / "untied.safetensors");
  EXPECT_EQ(s.message(), dir / "untied.safetensors" +
                             ": tensor \"cls.predictions.decoder.weight\" differs from the word "
                             "embeddings; this BERT ties its decoder to them");
  EXPECT_EQ(model.ParametersToHost(), before);
  // The decoder equal to the embeddings (as transformers saves it) loads.
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == "bert.embeddings.word_embeddings.weight")
      std::copy_n(tensors[i].tensor.f32(), decoder.size(), decoder.begin());
  }
  ASSERT_TRUE(io::SaveSafetensors(dir / "tied.safetensors", tensors).ok());
  s = LoadBertHfSafetensors(model, dir / "tied.safetensors");
  EXPECT_TRUE(s.ok()) << s;
}

// TensorFlow reads the BERT checkpoint we write (the embedded demo's
// starting point) with the reference's names: run where a Python with
// TensorFlow is named by MLPERF_TF_PYTHON (or python3 has it).
TEST(BertCheckpointTest, TensorFlowReadsTheWrittenBert) {
  const char* env = base::GetEnv("MLPERF_TF_PYTHON");
  const std::string python = env != nullptr ? env : "python3";
  if (std::system((python + " -c 'import tensorflow' > /dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "no TensorFlow for " << python << " (set MLPERF_TF_PYTHON)";
  TempDir dir("tf_reads");
  Bert model(TinyConfig(), 2);
  ASSERT_TRUE(LoadBertTfCheckpoint(model, kTinyBert).ok());
  ASSERT_TRUE(WriteBertTfCheckpoint(model, dir / "ckpt").ok());
  // TensorFlow's values of the written file against the fixture's, less the
  // slots and step the writer leaves out.
  absl::StatusOr<io::SafetensorsFile> expected =
      io::SafetensorsFile::Read(kFixtures + "/tiny_bert_expected.safetensors");
  ASSERT_TRUE(expected.ok());
  std::vector<std::vector<float>> storage;
  storage.reserve(expected->tensors().size());
  std::vector<io::NamedTensor> weights;
  for (const auto& [name, t] : expected->tensors()) {
    if (t.dtype != DType::kF32 || name.ends_with("/adam_m") || name.ends_with("/adam_v") ||
        name.ends_with("/lamb_m"))
      continue;
    std::vector<float>& v = storage.emplace_back(static_cast<size_t>(t.shape.numel()));
    ASSERT_TRUE(expected->CopyTo(name, Tensor(v.data(), t.shape, DType::kF32)).ok());
    weights.push_back({name, Tensor(v.data(), t.shape, DType::kF32)});
  }
  ASSERT_TRUE(io::SaveSafetensors(dir / "expected.safetensors", weights).ok());
  const std::string command =
      fmt::format("{} {}/tests/bert/make_tf_checkpoint_fixture.py verify {} {} 2>&1", python,
                  MLPERF_SOURCE_DIR, dir / "ckpt", dir / "expected.safetensors");
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

}  // namespace
}  // namespace mlperf::models
