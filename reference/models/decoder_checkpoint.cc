// Decoder::LoadHuggingFace: transformers' Llama checkpoints (one file, or
// shards listed by model.safetensors.index.json) read by name.
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/files.h"
#include "base/json.h"
#include "fmt/format.h"
#include "reference/io/safetensors.h"
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

}  // namespace

absl::Status Decoder::LoadHuggingFace(const std::string& path) {
  std::string single;
  absl::StatusOr<std::map<std::string, std::string>> where = WeightMap(path, &single);
  if (!where.ok()) return where.status();
  // The parameters grouped by the file that holds them.
  std::map<std::string, std::vector<size_t>> by_file;
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    const std::string& name = registry_.parameters[i].name;
    if (!single.empty()) {
      by_file[single].push_back(i);
      continue;
    }
    auto it = where->find(name);
    if (it == where->end())
      return absl::NotFoundError(fmt::format("{}: {} lists no tensor \"{}\"", path, kIndex, name));
    by_file[it->second].push_back(i);
  }
  // Into a host copy: a failed load leaves the model as it was. One shard
  // in memory at a time.
  std::vector<float> params = ParametersToHost();
  for (const auto& [file, indices] : by_file) {
    absl::StatusOr<io::SafetensorsFile> shard = io::SafetensorsFile::Read(file);
    if (!shard.ok()) return shard.status();
    for (size_t i : indices) {
      const core::Tensor value = HostParameter(registry_.parameters[i].value, params);
      const Slice& s = slices_[i];
      const core::Shape whole = s.dim < 0 ? value.shape() : value.shape().With(s.dim, s.full);
      std::vector<float> full(whole.numel());
      if (absl::Status st = shard->CopyToFloats(registry_.parameters[i].name, whole, full.data());
          !st.ok())
        return st;
      TakeSlice(full, whole, s, value);
    }
  }
  ParametersFromHost(params);
  return absl::OkStatus();
}

}  // namespace mlperf::models
