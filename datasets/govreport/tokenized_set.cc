#include "datasets/govreport/tokenized_set.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "datasets/npy.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace mlperf::govreport {

namespace fs = std::filesystem;

namespace {

// A whole 1-D array of `dtype` in `path`, mapped.
absl::StatusOr<std::pair<std::unique_ptr<datasets::MappedFile>, const char*>> MapVector(
    const fs::path& path, const std::string& dtype, int64_t* count) {
  absl::StatusOr<datasets::NpyArray> header = datasets::ReadNpyHeader(path);
  if (!header.ok()) return header.status();
  if (header->dtype != dtype || header->shape.size() != 1) {
    return absl::InvalidArgumentError(
        fmt::format("{}: expected a vector of {}, found {} of shape [{}]", path.string(), dtype,
                    header->dtype, fmt::join(header->shape, ", ")));
  }
  absl::StatusOr<std::unique_ptr<datasets::MappedFile>> file = datasets::MappedFile::Open(path);
  if (!file.ok()) return file.status();
  *count = header->shape[0];
  const char* data = (*file)->data() + header->data_offset;
  return std::pair{std::move(*file), data};
}

}  // namespace

absl::StatusOr<std::unique_ptr<TokenizedSet>> TokenizedSet::Open(const fs::path& dir,
                                                                 std::string_view split) {
  std::unique_ptr<TokenizedSet> set(new TokenizedSet());
  const std::string prefix = (dir / fmt::format("{}_", split)).string();
  set->name_ = prefix;
  int64_t ids = 0, labels = 0, offsets = 0;
  auto id_map = MapVector(prefix + "input_ids.npy", "<i4", &ids);
  if (!id_map.ok()) return id_map.status();
  auto label_map = MapVector(prefix + "labels.npy", "<i4", &labels);
  if (!label_map.ok()) return label_map.status();
  auto offset_map = MapVector(prefix + "offsets.npy", "<i8", &offsets);
  if (!offset_map.ok()) return offset_map.status();
  if (ids != labels) {
    return absl::InvalidArgumentError(
        fmt::format("{}labels.npy: {} labels for {} tokens in input_ids.npy", prefix, labels, ids));
  }
  if (offsets < 2) {
    return absl::InvalidArgumentError(
        fmt::format("{}offsets.npy: no sample ({} offsets)", prefix, offsets));
  }
  set->offsets_.resize(static_cast<size_t>(offsets));
  std::memcpy(set->offsets_.data(), offset_map->second, set->offsets_.size() * sizeof(int64_t));
  if (set->offsets_.front() != 0 || set->offsets_.back() != ids) {
    return absl::InvalidArgumentError(
        fmt::format("{}offsets.npy: runs from {} to {}, the arrays hold {} tokens", prefix,
                    set->offsets_.front(), set->offsets_.back(), ids));
  }
  for (int64_t i = 0; i + 1 < offsets; ++i) {
    if (set->offsets_[i + 1] <= set->offsets_[i]) {
      return absl::InvalidArgumentError(
          fmt::format("{}offsets.npy: sample {} is empty or runs backwards", prefix, i));
    }
    set->longest_ = std::max(set->longest_, set->length(i));
  }
  set->ids_file_ = std::move(id_map->first);
  set->ids_ = reinterpret_cast<const int32_t*>(id_map->second);
  set->labels_file_ = std::move(label_map->first);
  set->labels_ = reinterpret_cast<const int32_t*>(label_map->second);
  return set;
}

absl::Status TokenizedSet::Read(int64_t i, int64_t seq_len, int64_t vocab_size, int32_t* tokens,
                                int32_t* labels) const {
  const int64_t n = length(i), first = offsets_[i];
  if (n > seq_len) {
    return absl::OutOfRangeError(fmt::format(
        "{}input_ids.npy: sample {} has {} tokens, the model reads {}", name_, i, n, seq_len));
  }
  // Unaligned reads: np.save aligns its data to 64 bytes, but be safe.
  for (int64_t t = 0; t < seq_len; ++t) {
    int32_t id = 0, next = kIgnored;
    if (t < n) std::memcpy(&id, ids_ + first + t, sizeof(id));
    if (t + 1 < n) std::memcpy(&next, labels_ + first + t + 1, sizeof(next));
    if (id < 0 || id >= vocab_size || (next != kIgnored && (next < 0 || next >= vocab_size))) {
      return absl::OutOfRangeError(
          fmt::format("{}: sample {} holds a token or label outside the vocabulary of {} ({})",
                      name_, i, vocab_size, id < 0 || id >= vocab_size ? id : next));
    }
    tokens[t] = id;
    labels[t] = next;
  }
  return absl::OkStatus();
}

absl::Status WriteTokenizedSet(const fs::path& dir, std::string_view split,
                               std::span<const Sample> samples) {
  std::vector<int32_t> ids, labels;
  std::vector<int64_t> offsets = {0};
  for (const Sample& s : samples) {
    if (s.input_ids.size() != s.labels.size() || s.input_ids.empty())
      return absl::InvalidArgumentError(
          "a sample's tokens and labels differ in length or are empty");
    ids.insert(ids.end(), s.input_ids.begin(), s.input_ids.end());
    labels.insert(labels.end(), s.labels.begin(), s.labels.end());
    offsets.push_back(static_cast<int64_t>(ids.size()));
  }
  const std::string prefix = (dir / fmt::format("{}_", split)).string();
  const int64_t n = static_cast<int64_t>(ids.size());
  if (absl::Status s = datasets::WriteNpy(prefix + "input_ids.npy", "<i4", {n}, ids.data());
      !s.ok())
    return s;
  if (absl::Status s = datasets::WriteNpy(prefix + "labels.npy", "<i4", {n}, labels.data());
      !s.ok())
    return s;
  return datasets::WriteNpy(prefix + "offsets.npy", "<i8", {static_cast<int64_t>(offsets.size())},
                            offsets.data());
}

}  // namespace mlperf::govreport
