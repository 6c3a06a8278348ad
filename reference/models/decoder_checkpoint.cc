// Decoder::LoadHuggingFace: transformers' Llama checkpoints (one file, or
// shards listed by model.safetensors.index.json) read by name.
#include <deque>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/files.h"
#include "base/json.h"
#include "fmt/format.h"
#include "reference/dist/communicator.h"
#include "reference/io/safetensors.h"
#include "reference/kernels/ops/elementwise.h"
#include "reference/models/decoder.h"

namespace mlperf::models {
namespace {

namespace fs = std::filesystem;

constexpr char kIndex[] = "model.safetensors.index.json";
constexpr uint64_t kMaxIndexBytes = 64 << 20;

// Which file holds each tensor: every name the index's weight_map lists, or
// "" (any) for a single file.
absl::StatusOr<std::map<std::string, std::string>> WeightMap(const fs::path& path,
                                                             std::string* single) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    *single = path.string();
    return std::map<std::string, std::string>{};
  }
  if (!fs::is_directory(path, ec))
    return absl::NotFoundError(
        fmt::format("{}: neither a .safetensors file nor a checkpoint folder", path.string()));
  const fs::path index = path / kIndex;
  if (!fs::exists(index, ec)) {
    const fs::path whole = path / "model.safetensors";
    if (!fs::is_regular_file(whole, ec))
      return absl::NotFoundError(
          fmt::format("{}: no {} and no model.safetensors there", path.string(), kIndex));
    *single = whole.string();
    return std::map<std::string, std::string>{};
  }
  absl::StatusOr<std::string> text = base::ReadSmallFile(index, kMaxIndexBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<json::Value> doc = json::Parse(*text);
  const json::Value* map = doc.ok() ? doc->Find("weight_map") : nullptr;
  if (map == nullptr || !map->is_object())
    return absl::DataLossError(fmt::format("{}: no weight_map object", index.string()));
  std::map<std::string, std::string> files;
  for (const auto& [name, file] : map->as_object()) {
    const fs::path shard(file.is_string() ? file.as_string() : "");
    // A shard outside the folder (an absolute path, "..") is refused.
    if (!file.is_string() || shard.empty() || shard.is_absolute() || shard.filename() != shard)
      return absl::DataLossError(
          fmt::format("{}: tensor \"{}\" maps to no plain file name", index.string(), name));
    files[name] = (path / shard).string();
  }
  return files;
}

// A q/k/v projection's name in a fused-qkv checkpoint, "" for any other.
std::string FusedQkvName(const std::string& name) {
  for (const char* part : {"q_proj.weight", "k_proj.weight", "v_proj.weight"}) {
    const std::string suffix = std::string("self_attn.") + part;
    if (name.size() > suffix.size() && name.ends_with(suffix))
      return name.substr(0, name.size() - suffix.size()) + "self_attn.qkv_proj.weight";
  }
  return "";
}

}  // namespace

absl::Status Decoder::ReadWeight(const io::SafetensorsFile& file, const std::string& name,
                                 const core::Shape& whole, std::vector<float>& out) const {
  const std::string fused = FusedQkvName(name);
  if (file.tensors().contains(name) || fused.empty() || !file.tensors().contains(fused))
    return file.CopyToFloats(name, whole, out.data());
  // Rows q, then k, then v: this projection's rows of the fused weight.
  const int64_t head_dim = config_.hidden / config_.heads;
  const int64_t q = config_.heads * head_dim, kv = config_.kv_heads * head_dim;
  const core::Shape fused_shape({q + 2 * kv, config_.hidden});
  std::vector<float> all(fused_shape.numel());
  if (absl::Status s = file.CopyToFloats(fused, fused_shape, all.data()); !s.ok()) return s;
  const int64_t first_row = name.ends_with("q_proj.weight")   ? 0
                            : name.ends_with("k_proj.weight") ? q
                                                              : q + kv;
  if (whole.numel() != (first_row == 0 ? q : kv) * config_.hidden)
    return absl::InvalidArgumentError(fmt::format("{}: not a q/k/v projection's shape", name));
  std::copy_n(all.begin() + first_row * config_.hidden, whole.numel(), out.begin());
  return absl::OkStatus();
}

absl::Status Decoder::LoadHuggingFace(const std::string& path) {
  std::string single;
  absl::StatusOr<std::map<std::string, std::string>> where = WeightMap(path, &single);
  if (!where.ok()) return where.status();
  // The parameters grouped by the file that holds them.
  std::map<std::string, std::vector<size_t>> by_file;
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    const std::string& name = registry_.parameters[i].name;
    // A base checkpoint has no adapters: they keep their values.
    if (name.find(".lora_") != std::string::npos) continue;
    if (!single.empty()) {
      by_file[single].push_back(i);
      continue;
    }
    auto it = where->find(name);
    if (it == where->end()) it = where->find(FusedQkvName(name));
    if (it == where->end())
      return absl::NotFoundError(fmt::format("{}: {} lists no tensor \"{}\"", path, kIndex, name));
    by_file[it->second].push_back(i);
  }
  // Into a host copy: a failed load leaves the model as it was. One shard
  // in memory at a time.
  std::vector<float> params = ParametersToHost(), buffers = BuffersToHost();
  // Frozen parameters (a LoRA base) in their own type, by name.
  std::vector<std::byte> frozen = FrozenToHost();
  std::map<std::string, core::Tensor> frozen_views;
  for (const io::NamedTensor& t : NamedHostTensors(params, buffers, &frozen))
    frozen_views.emplace(t.name, t.tensor);
  for (const auto& [file, indices] : by_file) {
    absl::StatusOr<io::SafetensorsFile> shard = io::SafetensorsFile::Read(file);
    if (!shard.ok()) return shard.status();
    for (size_t i : indices) {
      const layers::Parameter& p = registry_.parameters[i];
      std::vector<float> narrow(p.trainable ? 0 : p.value.numel());
      const core::Tensor value =
          p.trainable ? HostParameter(p.value, params)
                      : core::Tensor(narrow.data(), p.value.shape(), core::DType::kF32);
      const Slice& s = slices_[i];
      const core::Shape whole = s.dim < 0 ? value.shape() : value.shape().With(s.dim, s.full);
      std::vector<float> full(whole.numel());
      if (absl::Status st = ReadWeight(*shard, p.name, whole, full); !st.ok()) return st;
      TakeSlice(full, whole, s, value);
      if (!p.trainable) ops::Cast(value, frozen_views.at(p.name));  // rounded to its type
    }
  }
  ParametersFromHost(params);
  FrozenFromHost(frozen);
  return absl::OkStatus();
}

absl::Status Decoder::SaveHuggingFace(const std::string& dir, core::DType dtype,
                                      int64_t shard_bytes) const {
  const DecoderConfig& c = config_;
  if (tp_ > 1 || c.lora.rank > 0 || c.layer_norm || c.gelu || c.bias || c.learned_positions > 0)
    return absl::FailedPreconditionError(
        "a Hugging Face base checkpoint holds a whole Llama model without adapters");
  if (dtype != core::DType::kF32 && dtype != core::DType::kBF16)
    return absl::InvalidArgumentError("a Hugging Face checkpoint is written in F32 or BF16");
  std::error_code ec;
  if (fs::exists(dir, ec))
    return absl::AlreadyExistsError(fmt::format("{}: exists already; nothing is replaced", dir));
  std::vector<float> params = ParametersToHost(), buffers = BuffersToHost();
  std::set<std::string> parameters;
  for (const layers::Parameter& p : registry_.parameters) parameters.insert(p.name);
  std::vector<io::NamedTensor> named = NamedHostTensors(params, buffers);
  std::erase_if(named, [&](const io::NamedTensor& t) { return !parameters.contains(t.name); });
  // Shards in registry order, each closed once it holds shard_bytes.
  std::deque<std::vector<std::byte>> stored;
  std::vector<std::vector<io::NamedTensor>> shards(1);
  int64_t in_shard = 0, total = 0;
  for (const io::NamedTensor& t : named) {
    const int64_t bytes = t.tensor.numel() * static_cast<int64_t>(core::DTypeSize(dtype));
    if (in_shard > 0 && in_shard + bytes > shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    std::vector<std::byte>& memory = stored.emplace_back(static_cast<size_t>(bytes));
    const core::Tensor out(memory.data(), t.tensor.shape(), dtype);
    ops::Cast(t.tensor, out);
    shards.back().push_back({t.name, out});
    in_shard += bytes;
    total += bytes;
  }
  if (!fs::create_directories(dir, ec))
    return absl::PermissionDeniedError(fmt::format("{}: {}", dir, ec.message()));
  json::Object weight_map;
  for (size_t k = 0; k < shards.size(); ++k) {
    const std::string file =
        fmt::format("model-{:05d}-of-{:05d}.safetensors", k + 1, shards.size());
    for (const io::NamedTensor& t : shards[k]) weight_map.emplace_back(t.name, file);
    if (absl::Status s =
            io::SaveSafetensors((fs::path(dir) / file).string(), shards[k], {{"format", "pt"}});
        !s.ok())
      return s;
  }
  json::Object config{{"architectures", json::Array{json::Value("LlamaForCausalLM")}},
                      {"model_type", "llama"},
                      {"hidden_act", "silu"},
                      {"hidden_size", c.hidden},
                      {"intermediate_size", c.intermediate},
                      {"num_attention_heads", c.heads},
                      {"num_hidden_layers", c.layers},
                      {"num_key_value_heads", c.kv_heads},
                      {"vocab_size", c.vocab_size},
                      {"max_position_embeddings", c.seq_len},
                      {"rms_norm_eps", static_cast<double>(c.norm_epsilon)},
                      {"rope_theta", c.rope_theta},
                      {"tie_word_embeddings", c.tie_embeddings},
                      {"attention_bias", false},
                      {"torch_dtype", dtype == core::DType::kBF16 ? "bfloat16" : "float32"}};
  if (c.rope_scaling.factor > 0) {
    config.emplace_back(
        "rope_scaling",
        json::Object{{"rope_type", "llama3"},
                     {"factor", c.rope_scaling.factor},
                     {"low_freq_factor", c.rope_scaling.low_freq_factor},
                     {"high_freq_factor", c.rope_scaling.high_freq_factor},
                     {"original_max_position_embeddings", c.rope_scaling.original_max_positions}});
  }
  const json::Value index(json::Object{{"metadata", json::Object{{"total_size", total}}},
                                       {"weight_map", std::move(weight_map)}});
  if (absl::Status s = base::WriteFileAtomically(fs::path(dir) / "config.json",
                                                 json::Dump(json::Value(std::move(config))) + "\n");
      !s.ok())
    return s;
  // The index last: a folder without it is not a checkpoint.
  return base::WriteFileAtomically(fs::path(dir) / kIndex, json::Dump(index) + "\n");
}

}  // namespace mlperf::models

namespace mlperf::models {
namespace {

constexpr const char* kAdapterFile = "adapter_model.safetensors";
constexpr const char* kAdapterConfig = "adapter_config.json";
// peft's state-dict prefix for a model wrapped by get_peft_model.
constexpr const char* kPeftPrefix = "base_model.model.";

bool IsAdapter(const layers::Parameter& p) { return p.name.find(".lora_") != std::string::npos; }

// adapter_model.safetensors and adapter_config.json in a new folder `dir`.
absl::Status WriteAdapterFolder(const DecoderConfig& c, const std::string& dir,
                                const std::vector<io::NamedTensor>& adapters) {
  json::Array targets;
  for (const char* t : c.lora_fused_qkv
                           ? std::vector<const char*>{"qkv_proj", "o_proj"}
                           : std::vector<const char*>{"q_proj", "k_proj", "v_proj", "o_proj"})
    targets.emplace_back(t);
  const json::Value config(json::Object{{"peft_type", "LORA"},
                                        {"task_type", "CAUSAL_LM"},
                                        {"r", c.lora.rank},
                                        {"lora_alpha", c.lora.alpha},
                                        {"lora_dropout", static_cast<double>(c.lora.dropout)},
                                        {"target_modules", json::Value(std::move(targets))},
                                        {"bias", "none"},
                                        {"fan_in_fan_out", false},
                                        {"inference_mode", true},
                                        {"init_lora_weights", true}});
  std::error_code ec;
  if (!fs::create_directories(dir, ec))
    return absl::PermissionDeniedError(fmt::format("{}: {}", dir, ec.message()));
  if (absl::Status s = io::SaveSafetensors((fs::path(dir) / kAdapterFile).string(), adapters,
                                           {{"format", "pt"}});
      !s.ok())
    return s;
  return base::WriteFileAtomically(fs::path(dir) / kAdapterConfig, json::Dump(config) + "\n");
}

}  // namespace

absl::Status Decoder::SaveLoraAdapters(const std::string& dir) const {
  const DecoderConfig& c = config_;
  if (c.lora.rank == 0) return absl::FailedPreconditionError("this decoder has no LoRA adapters");
  // Under tensor parallelism every rank takes the same way: rank 0 decides.
  const bool writer = tp_rank_ == 0;
  std::error_code ec;
  float exists = writer && fs::exists(dir, ec) ? 1.0f : 0.0f;
  if (tp_ > 1) comm_->Broadcast(&exists, 1, 0);
  if (exists != 0.0f)
    return absl::AlreadyExistsError(fmt::format("{}: exists already; nothing is replaced", dir));
  // Each adapter whole: a split one's parts gathered from the ranks.
  std::vector<float> params = ParametersToHost();
  std::deque<std::vector<float>> wholes;  // the tensors' memory (stays put as it grows)
  std::vector<io::NamedTensor> adapters;
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    const layers::Parameter& p = registry_.parameters[i];
    if (!IsAdapter(p)) continue;
    const core::Tensor local = HostParameter(p.value, params);
    const Slice& s = slices_[i];
    const bool split = s.dim >= 0 && local.dim(s.dim) != s.full;
    const core::Shape whole = split ? local.shape().With(s.dim, s.full) : local.shape();
    std::vector<float>& full = wholes.emplace_back(whole.numel());
    if (!split) {
      PutSlice(local, s, whole, full);
    } else {
      std::vector<float> parts(static_cast<size_t>(tp_ * local.numel()));
      comm_->AllGather(local.data(), parts.data(), static_cast<int64_t>(local.bytes()));
      for (int k = 0; k < tp_; ++k) {
        Slice theirs = s;
        theirs.part = k;
        PutSlice(core::Tensor(parts.data() + k * local.numel(), local.shape(), core::DType::kF32),
                 theirs, whole, full);
      }
    }
    adapters.push_back({kPeftPrefix + p.name, core::Tensor(full.data(), whole, core::DType::kF32)});
  }
  const absl::Status status = writer ? WriteAdapterFolder(c, dir, adapters) : absl::OkStatus();
  float failed = status.ok() ? 0.0f : 1.0f;
  if (tp_ > 1) comm_->Broadcast(&failed, 1, 0);
  if (!writer && failed != 0.0f)
    return absl::InternalError(fmt::format("{}: tensor rank 0 could not write the adapters", dir));
  return status;
}

absl::Status Decoder::LoadLoraAdapters(const std::string& dir) {
  const std::string file = (fs::path(dir) / kAdapterFile).string();
  absl::StatusOr<io::SafetensorsFile> read = io::SafetensorsFile::Read(file);
  if (!read.ok()) return read.status();
  // Into a host copy: a failed load leaves the model as it was.
  std::vector<float> params = ParametersToHost();
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    const layers::Parameter& p = registry_.parameters[i];
    if (!IsAdapter(p)) continue;
    const core::Tensor value = HostParameter(p.value, params);
    const Slice& s = slices_[i];
    const core::Shape whole = s.dim < 0 ? value.shape() : value.shape().With(s.dim, s.full);
    std::vector<float> full(whole.numel());
    if (absl::Status st = read->CopyToFloats(kPeftPrefix + p.name, whole, full.data()); !st.ok())
      return st;
    TakeSlice(full, whole, s, value);
  }
  ParametersFromHost(params);
  return absl::OkStatus();
}

}  // namespace mlperf::models
