#include "reference/models/bert_checkpoint.h"

#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "reference/io/safetensors.h"
#include "reference/io/tf_checkpoint.h"

namespace mlperf::models {
namespace {

using core::DType;
using core::Tensor;

// One stored tensor that makes up (a block of rows of) one of our
// parameters; `transpose` for TensorFlow's [in, out] dense kernels.
struct Part {
  std::string name;
  bool transpose = false;
};

// Our parameter `ours` is its parts stacked along dimension 0.
using Sources = std::map<std::string, std::vector<Part>>;

// Reads stored tensor `name` into an fp32 host tensor of the stored shape.
using ReadFn = std::function<absl::Status(const std::string& name, const Tensor& dst)>;

Sources TfSources(const BertConfig& c) {
  Sources s;
  auto dense = [&](const std::string& ours, const std::string& tf) {
    s[ours + ".weight"] = {{tf + "/kernel", true}};
    s[ours + ".bias"] = {{tf + "/bias"}};
  };
  auto norm = [&](const std::string& ours, const std::string& tf) {
    s[ours + ".weight"] = {{tf + "/gamma"}};
    s[ours + ".bias"] = {{tf + "/beta"}};
  };
  for (const char* table : {"word_embeddings", "position_embeddings", "token_type_embeddings"})
    s[absl::StrCat("bert.embeddings.", table, ".weight")] = {
        {absl::StrCat("bert/embeddings/", table)}};
  norm("bert.embeddings.LayerNorm", "bert/embeddings/LayerNorm");
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string ours = absl::StrCat("bert.encoder.layer.", l);
    const std::string tf = absl::StrCat("bert/encoder/layer_", l);
    const std::string self = tf + "/attention/self/";
    s[ours + ".attention.qkv.weight"] = {
        {self + "query/kernel", true}, {self + "key/kernel", true}, {self + "value/kernel", true}};
    s[ours + ".attention.qkv.bias"] = {
        {self + "query/bias"}, {self + "key/bias"}, {self + "value/bias"}};
    dense(ours + ".attention.output", tf + "/attention/output/dense");
    norm(ours + ".attention.output.LayerNorm", tf + "/attention/output/LayerNorm");
    dense(ours + ".intermediate.dense", tf + "/intermediate/dense");
    dense(ours + ".output.dense", tf + "/output/dense");
    norm(ours + ".output.LayerNorm", tf + "/output/LayerNorm");
  }
  dense("bert.pooler.dense", "bert/pooler/dense");
  dense("cls.predictions.transform.dense", "cls/predictions/transform/dense");
  norm("cls.predictions.transform.LayerNorm", "cls/predictions/transform/LayerNorm");
  s["cls.predictions.bias"] = {{"cls/predictions/output_bias"}};
  // modeling.py keeps this one as [2, hidden] and multiplies by its transpose.
  s["cls.seq_relationship.weight"] = {{"cls/seq_relationship/output_weights"}};
  s["cls.seq_relationship.bias"] = {{"cls/seq_relationship/output_bias"}};
  return s;
}

// transformers' names are ours but for the split attention projections.
Sources HfSources(const Bert& model) {
  Sources s;
  for (const layers::Parameter& p : model.parameter_tensors()) {
    std::string name = p.name;
    if (const size_t at = name.find(".attention.qkv."); at != std::string::npos) {
      const std::string head = name.substr(0, at) + ".attention.self.";
      const std::string kind = name.substr(at + std::strlen(".attention.qkv."));
      s[name] = {{head + "query." + kind}, {head + "key." + kind}, {head + "value." + kind}};
      continue;
    }
    for (const char* kind : {"weight", "bias"}) {
      if (name.ends_with(absl::StrCat(".attention.output.", kind)))
        name = name.substr(0, name.size() - std::strlen(kind)) + "dense." + kind;
    }
    s[p.name] = {{name}};
  }
  return s;
}

// Stored shape of one of `parts` parts of our parameter of shape `ours`.
core::Shape PartShape(const core::Shape& ours, size_t parts, bool transpose) {
  const int64_t rows = ours[0] / static_cast<int64_t>(parts);
  if (ours.rank() == 1) return {rows};
  return transpose ? core::Shape{ours[1], rows} : core::Shape{rows, ours[1]};
}

// `status` with the parameter it was read for appended.
absl::Status For(const absl::Status& status, const std::string& ours) {
  return absl::Status(status.code(),
                      absl::StrCat(std::string(status.message()), " (for ", ours, ")"));
}

// Fills every parameter of `model` from `read` through `sources`, into a
// host copy first so that a failure changes nothing.
absl::Status Load(Bert& model, const Sources& sources, const ReadFn& read) {
  std::vector<float> params = model.ParametersToHost(), buffers = model.BuffersToHost();
  std::map<std::string, Tensor> host;
  for (const io::NamedTensor& t : model.NamedHostTensors(params, buffers)) host[t.name] = t.tensor;
  std::vector<float> part;
  for (const layers::Parameter& p : model.parameter_tensors()) {
    auto it = sources.find(p.name);
    if (it == sources.end())
      return absl::InternalError(absl::StrCat("no checkpoint name for BERT parameter ", p.name));
    const Tensor dst = host.at(p.name);
    const std::vector<Part>& parts = it->second;
    const int64_t cols = dst.shape().rank() == 2 ? dst.dim(1) : 1;
    const int64_t rows = dst.dim(0) / static_cast<int64_t>(parts.size());
    for (size_t k = 0; k < parts.size(); ++k) {
      const core::Shape shape = PartShape(dst.shape(), parts.size(), parts[k].transpose);
      part.resize(static_cast<size_t>(shape.numel()));
      if (absl::Status s = read(parts[k].name, Tensor(part.data(), shape, DType::kF32)); !s.ok())
        return For(s, p.name);
      float* out = dst.f32() + static_cast<int64_t>(k) * rows * cols;
      if (!parts[k].transpose) {
        std::memcpy(out, part.data(), part.size() * sizeof(float));
        continue;
      }
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) out[i * cols + j] = part[j * rows + i];
    }
  }
  model.ParametersFromHost(params);
  return absl::OkStatus();
}

// An fp32 tensor of a safetensors file, widened from fp16 or bf16 if need be.
absl::Status ReadSafetensor(const io::SafetensorsFile& file, const std::string& name,
                            const Tensor& dst) {
  auto it = file.tensors().find(name);
  if (it == file.tensors().end() ||
      (it->second.dtype != DType::kF16 && it->second.dtype != DType::kBF16))
    return file.CopyTo(name, dst);  // exact dtype and shape, or its own error
  std::vector<uint16_t> narrow(static_cast<size_t>(dst.numel()));
  if (absl::Status s = file.CopyTo(name, Tensor(narrow.data(), dst.shape(), it->second.dtype));
      !s.ok())
    return s;
  for (size_t i = 0; i < narrow.size(); ++i)
    dst.f32()[i] = it->second.dtype == DType::kF16 ? core::HalfToFloat(narrow[i])
                                                   : core::Bf16ToFloat(narrow[i]);
  return absl::OkStatus();
}

}  // namespace

absl::Status LoadBertTfCheckpoint(Bert& model, const std::string& prefix) {
  absl::StatusOr<io::TfCheckpoint> ckpt = io::TfCheckpoint::Open(prefix);
  if (!ckpt.ok()) return ckpt.status();
  return Load(model, TfSources(model.config()),
              [&](const std::string& name, const Tensor& dst) { return ckpt->CopyTo(name, dst); });
}

absl::Status WriteBertTfCheckpoint(const Bert& model, const std::string& prefix) {
  std::vector<float> params = model.ParametersToHost(), buffers = model.BuffersToHost();
  std::map<std::string, Tensor> host;
  for (const io::NamedTensor& t : model.NamedHostTensors(params, buffers)) host[t.name] = t.tensor;
  const Sources sources = TfSources(model.config());
  // Each stored tensor's values (a deque never moves them); the named views
  // below point into them.
  std::deque<std::vector<float>> stored;
  std::vector<io::NamedTensor> named;
  for (const layers::Parameter& p : model.parameter_tensors()) {
    auto it = sources.find(p.name);
    if (it == sources.end())
      return absl::InternalError(absl::StrCat("no checkpoint name for BERT parameter ", p.name));
    const Tensor src = host.at(p.name);
    const std::vector<Part>& parts = it->second;
    const int64_t cols = src.shape().rank() == 2 ? src.dim(1) : 1;
    const int64_t rows = src.dim(0) / static_cast<int64_t>(parts.size());
    for (size_t k = 0; k < parts.size(); ++k) {
      const core::Shape shape = PartShape(src.shape(), parts.size(), parts[k].transpose);
      const float* in = src.f32() + static_cast<int64_t>(k) * rows * cols;
      std::vector<float>& out = stored.emplace_back(in, in + rows * cols);
      if (parts[k].transpose) {
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) out[j * rows + i] = in[i * cols + j];
      }
      named.push_back({parts[k].name, Tensor(out.data(), shape, DType::kF32)});
    }
  }
  return io::WriteTfCheckpoint(prefix, named);
}

absl::Status LoadBertHfSafetensors(Bert& model, const std::string& path) {
  absl::StatusOr<io::SafetensorsFile> file = io::SafetensorsFile::Read(path);
  if (!file.ok()) return file.status();
  const std::string decoder = "cls.predictions.decoder.weight";
  if (file->tensors().count(decoder) != 0) {
    // Tied in transformers: the same values as the word embeddings, or a
    // model this one cannot represent.
    const core::Shape shape{model.config().vocab_size, model.config().hidden};
    std::vector<float> tied(static_cast<size_t>(shape.numel())), words(tied.size());
    if (absl::Status s = ReadSafetensor(*file, decoder, Tensor(tied.data(), shape, DType::kF32));
        !s.ok())
      return s;
    if (absl::Status s = ReadSafetensor(*file, "bert.embeddings.word_embeddings.weight",
                                        Tensor(words.data(), shape, DType::kF32));
        !s.ok())
      return s;
    if (std::memcmp(tied.data(), words.data(), tied.size() * sizeof(float)) != 0)
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor \"", decoder,
                       "\" differs from the word embeddings; this BERT ties its decoder to them"));
  }
  return Load(model, HfSources(model), [&](const std::string& name, const Tensor& dst) {
    return ReadSafetensor(*file, name, dst);
  });
}

}  // namespace mlperf::models
