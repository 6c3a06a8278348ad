// Decoder::LoadMegatronGpt: the GPT-3 reference's checkpoint, Megatron's
// distributed checkpoint in Zarr arrays, read by name. Megatron names and
// stacks the layers' tensors (language_model.encoder.layers.<part> with the
// layer first); its query_key_value projection holds, head after head, that
// head's query, key and value rows (the forward views its output as
// [heads, 3 x head_dim] and splits the last dimension in three).
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "base/files.h"
#include "base/json.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "reference/io/zarr.h"
#include "reference/models/decoder.h"

namespace mlperf::models {
namespace {

namespace fs = std::filesystem;

constexpr char kLayers[] = "language_model.encoder.layers.";

// Megatron's name for each of ours that is not a layer's (nullopt: a
// layer's, found by its suffix).
std::optional<std::string> TopLevelName(const std::string& ours) {
  if (ours == "model.embed_tokens.weight") return "language_model.embedding.word_embeddings.weight";
  if (ours == "model.embed_positions.weight")
    return "language_model.embedding.position_embeddings.weight";
  if (ours == "model.norm.weight") return "language_model.encoder.final_layernorm.weight";
  if (ours == "model.norm.bias") return "language_model.encoder.final_layernorm.bias";
  return std::nullopt;
}

// A layer's tensor: Megatron's stacked name for our suffix after
// "model.layers.N.", and which third of query_key_value (0, 1, 2) q, k, v
// take (-1: the whole tensor).
struct LayerPart {
  std::string name;
  int third = -1;
};

std::optional<LayerPart> LayerName(const std::string& suffix) {
  static const std::pair<const char*, LayerPart> kParts[] = {
      {"input_layernorm.weight", {"input_layernorm.weight"}},
      {"input_layernorm.bias", {"input_layernorm.bias"}},
      {"self_attn.q_proj.weight", {"self_attention.query_key_value.weight", 0}},
      {"self_attn.k_proj.weight", {"self_attention.query_key_value.weight", 1}},
      {"self_attn.v_proj.weight", {"self_attention.query_key_value.weight", 2}},
      {"self_attn.q_proj.bias", {"self_attention.query_key_value.bias", 0}},
      {"self_attn.k_proj.bias", {"self_attention.query_key_value.bias", 1}},
      {"self_attn.v_proj.bias", {"self_attention.query_key_value.bias", 2}},
      {"self_attn.o_proj.weight", {"self_attention.dense.weight"}},
      {"self_attn.o_proj.bias", {"self_attention.dense.bias"}},
      {"post_attention_layernorm.weight", {"post_attention_layernorm.weight"}},
      {"post_attention_layernorm.bias", {"post_attention_layernorm.bias"}},
      {"mlp.fc_in.weight", {"mlp.dense_h_to_4h.weight"}},
      {"mlp.fc_in.bias", {"mlp.dense_h_to_4h.bias"}},
      {"mlp.fc_out.weight", {"mlp.dense_4h_to_h.weight"}},
      {"mlp.fc_out.bias", {"mlp.dense_4h_to_h.bias"}},
  };
  for (const auto& [ours, part] : kParts)
    if (suffix == ours) return part;
  return std::nullopt;
}

// Entry `layer` of a stacked array (-1: the whole array) of shape `shape`.
absl::StatusOr<std::vector<float>> ReadEntry(const fs::path& dir, int64_t layer, int64_t layers,
                                             const std::vector<int64_t>& shape) {
  absl::StatusOr<io::ZarrArray> array = io::ZarrArray::Open(dir);
  if (!array.ok()) return array.status();
  std::vector<int64_t> want = shape;
  if (layer >= 0) want.insert(want.begin(), layers);
  if (array->shape() != want)
    return absl::FailedPreconditionError(
        fmt::format("{}: shape {}, the model needs {}", dir.string(), array->shape(), want));
  std::vector<int64_t> first(want.size(), 0), count = want;
  if (layer >= 0) {
    first[0] = layer;
    count[0] = 1;
  }
  int64_t n = 1;
  for (int64_t c : count) n *= c;
  std::vector<float> out(n);
  if (absl::Status s = array->Read(first, count, out); !s.ok()) return s;
  return out;
}

absl::Status CheckGptConfig(const DecoderConfig& c, const std::string& dir) {
  if (c.layer_norm && c.learned_positions > 0 && c.gelu && c.bias && c.tie_embeddings &&
      c.kv_heads == c.heads)
    return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("{}: a Megatron GPT checkpoint needs the GPT configuration (LayerNorm, learned "
                  "positions, GELU, biases, tied output layer, as many key/value heads as heads)",
                  dir));
}

}  // namespace

absl::Status Decoder::SaveMegatronGpt(const std::string& dir) const {
  const DecoderConfig& c = config_;
  if (absl::Status s = CheckGptConfig(c, dir); !s.ok()) return s;
  std::error_code ec;
  if (fs::exists(dir, ec))
    return absl::AlreadyExistsError(fmt::format("{}: exists already; nothing is replaced", dir));
  const std::vector<float> params = ParametersToHost();
  std::map<std::string, std::pair<const float*, std::vector<int64_t>>> ours;
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    const core::Tensor& v = registry_.parameters[i].value;
    std::vector<int64_t> shape;
    for (int d = 0; d < v.shape().rank(); ++d) shape.push_back(v.shape()[d]);
    ours[registry_.parameters[i].name] = {params.data() + slices()[i].offset, shape};
  }
  if (!fs::create_directories(dir, ec))
    return absl::PermissionDeniedError(fmt::format("{}: {}", dir, ec.message()));
  if (absl::Status s = base::WriteFileAtomically(fs::path(dir) / "metadata.json",
                                                 R"({"sharded_backend": "zarr"})");
      !s.ok())
    return s;
  const auto count = [](const std::vector<int64_t>& shape) {
    return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  };
  // The top-level tensors, then each layer part stacked over the layers.
  for (const auto& [name, entry] : ours) {
    const std::optional<std::string> top = TopLevelName(name);
    if (!top) continue;
    if (absl::Status s = io::WriteZarrArray(
            fs::path(dir) / *top, entry.second,
            std::span<const float>(entry.first, static_cast<size_t>(count(entry.second))));
        !s.ok())
      return s;
  }
  const int64_t head_dim = c.hidden / c.heads;
  std::map<std::string, std::vector<float>> stacked;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string prefix = fmt::format("model.layers.{}.", l);
    for (const auto& [name, entry] : ours) {
      if (!name.starts_with(prefix)) continue;
      const std::optional<LayerPart> part = LayerName(name.substr(prefix.size()));
      if (!part) return absl::InternalError(fmt::format("{}: no Megatron name for {}", dir, name));
      const auto& [data, shape] = entry;
      const int64_t n = count(shape);
      // q, k and v fill their thirds of query_key_value, head by head.
      std::vector<int64_t> one = shape;
      if (part->third >= 0) one[0] *= 3;
      const int64_t size = count(one);
      one.insert(one.begin(), c.layers);
      shapes[part->name] = one;
      std::vector<float>& out = stacked[part->name];
      out.resize(static_cast<size_t>(c.layers * size));
      float* at = out.data() + l * size;
      if (part->third < 0) {
        std::copy(data, data + n, at);
        continue;
      }
      const int64_t columns = shape.size() > 1 ? shape[1] : 1;
      for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t r = 0; r < head_dim; ++r)
          std::copy(data + (h * head_dim + r) * columns, data + (h * head_dim + r + 1) * columns,
                    at + ((h * 3 + part->third) * head_dim + r) * columns);
    }
  }
  for (const auto& [name, data] : stacked)
    if (absl::Status s = io::WriteZarrArray(fs::path(dir) / (kLayers + name), shapes[name], data);
        !s.ok())
      return s;
  return absl::OkStatus();
}

absl::Status Decoder::LoadMegatronGpt(const std::string& dir) {
  const DecoderConfig& c = config_;
  if (absl::Status s = CheckGptConfig(c, dir); !s.ok()) return s;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return absl::NotFoundError(fmt::format("{}: not a checkpoint folder", dir));
  // Megatron's metadata names the backend; only Zarr is read.
  const fs::path metadata = fs::path(dir) / "metadata.json";
  if (fs::exists(metadata, ec)) {
    absl::StatusOr<std::string> text = base::ReadSmallFile(metadata, 1 << 20);
    if (!text.ok()) return text.status();
    absl::StatusOr<json::Value> doc = json::Parse(*text);
    const json::Value* backend = doc.ok() ? doc->Find("sharded_backend") : nullptr;
    if (backend == nullptr || !backend->is_string() || backend->as_string() != "zarr")
      return absl::UnimplementedError(
          fmt::format("{}: not a Zarr checkpoint (sharded_backend \"zarr\")", metadata.string()));
  }
  const int64_t head_dim = c.hidden / c.heads;
  // Into a host copy: a failed load leaves the model as it was.
  std::vector<float> params = ParametersToHost();
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    const layers::Parameter& p = registry_.parameters[i];
    const core::Tensor value = HostParameter(p.value, params);
    std::vector<int64_t> shape;
    for (int d = 0; d < value.shape().rank(); ++d) shape.push_back(value.shape()[d]);
    if (std::optional<std::string> top = TopLevelName(p.name)) {
      absl::StatusOr<std::vector<float>> got = ReadEntry(fs::path(dir) / *top, -1, 0, shape);
      if (!got.ok()) return got.status();
      std::copy(got->begin(), got->end(), value.f32());
      continue;
    }
    // model.layers.N.<suffix>, N the layer.
    constexpr size_t kPrefix = sizeof("model.layers.") - 1;
    const size_t dot = p.name.find('.', kPrefix);
    const std::optional<LayerPart> part =
        p.name.starts_with("model.layers.") && dot != std::string::npos
            ? LayerName(p.name.substr(dot + 1))
            : std::nullopt;
    if (!part) return absl::InternalError(fmt::format("{}: no Megatron name for {}", dir, p.name));
    const int64_t layer = std::stoll(p.name.substr(kPrefix, dot - kPrefix));
    const fs::path array = fs::path(dir) / (kLayers + part->name);
    if (part->third < 0) {
      absl::StatusOr<std::vector<float>> got = ReadEntry(array, layer, c.layers, shape);
      if (!got.ok()) return got.status();
      std::copy(got->begin(), got->end(), value.f32());
      continue;
    }
    // q, k or v: rows [h * 3 * head_dim + third * head_dim, + head_dim) of
    // query_key_value for each head h.
    std::vector<int64_t> whole = shape;
    whole[0] *= 3;
    absl::StatusOr<std::vector<float>> got = ReadEntry(array, layer, c.layers, whole);
    if (!got.ok()) return got.status();
    const int64_t columns = shape.size() > 1 ? shape[1] : 1;
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t r = 0; r < head_dim; ++r) {
        const float* from = got->data() + ((h * 3 + part->third) * head_dim + r) * columns;
        std::copy(from, from + columns, value.f32() + (h * head_dim + r) * columns);
      }
  }
  ParametersFromHost(params);
  return absl::OkStatus();
}

}  // namespace mlperf::models
