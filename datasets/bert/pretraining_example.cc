#include "datasets/bert/pretraining_example.h"

#include <cmath>
#include <limits>

#include "datasets/tfrecord.h"
#include "example.pb.h"
#include "fmt/format.h"

namespace mlperf::datasets::bert {
namespace {

using tfexample::Feature;
using FeatureMap = google::protobuf::Map<std::string, Feature>;

const char* KindName(const Feature& f) {
  switch (f.kind_case()) {
    case Feature::kBytesList:
      return "bytes";
    case Feature::kFloatList:
      return "float";
    case Feature::kInt64List:
      return "int64";
    default:
      return "empty";
  }
}

absl::Status Bad(const std::string& where, std::string_view feature, std::string_view what) {
  return absl::DataLossError(fmt::format("{}: feature {}: {}", where, feature, what));
}

// The feature `name` as `kind` with exactly `n` values.
absl::StatusOr<const Feature*> Find(const FeatureMap& features, const std::string& where,
                                    const std::string& name, Feature::KindCase kind, int64_t n) {
  auto it = features.find(name);
  if (it == features.end()) return Bad(where, name, "missing (not a BERT pretraining record?)");
  const Feature& f = it->second;
  const char* want = kind == Feature::kInt64List ? "int64" : "float";
  if (f.kind_case() != kind) {
    return Bad(where, name, fmt::format("is a {} list, expected {}", KindName(f), want));
  }
  const int size =
      kind == Feature::kInt64List ? f.int64_list().value_size() : f.float_list().value_size();
  if (size != n) {
    return Bad(where, name,
               fmt::format("{} {} values, expected {} (another sequence length or prediction "
                           "count?)",
                           size, want, n));
  }
  return &f;
}

// Copies an int64 feature into `out` (int32, or fp32 for the mask), each
// value within [lo, hi).
template <typename T>
absl::Status CopyInts(const FeatureMap& features, const std::string& where, const std::string& name,
                      int64_t n, int64_t lo, int64_t hi, T* out) {
  absl::StatusOr<const Feature*> f = Find(features, where, name, Feature::kInt64List, n);
  if (!f.ok()) return f.status();
  const auto& values = (*f)->int64_list().value();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = values[static_cast<int>(i)];
    if (v < lo || v >= hi) {
      return Bad(where, name,
                 fmt::format("value {} at index {} is outside [{}, {})", v, i, lo, hi));
    }
    out[i] = static_cast<T>(v);
  }
  return absl::OkStatus();
}

}  // namespace

PretrainingExample::PretrainingExample(const PretrainingShape& shape)
    : input_ids(static_cast<size_t>(shape.seq_len)),
      segment_ids(static_cast<size_t>(shape.seq_len)),
      input_mask(static_cast<size_t>(shape.seq_len)),
      masked_lm_positions(static_cast<size_t>(shape.max_predictions)),
      masked_lm_ids(static_cast<size_t>(shape.max_predictions)),
      masked_lm_weights(static_cast<size_t>(shape.max_predictions)) {}

PretrainingRow PretrainingExample::row() {
  return {input_ids.data(),           segment_ids.data(),   input_mask.data(),
          masked_lm_positions.data(), masked_lm_ids.data(), masked_lm_weights.data(),
          &next_sentence_label};
}

absl::Status ParsePretrainingExample(std::string_view serialized, const PretrainingShape& shape,
                                     const std::string& where, const PretrainingRow& row) {
  tfexample::Example example;
  if (!ParseExample(serialized, example)) {
    return absl::DataLossError(fmt::format("{}: not a valid tf.Example", where));
  }
  const FeatureMap& features = example.features().feature();
  const int64_t seq = shape.seq_len, preds = shape.max_predictions;
  const int64_t id_end =
      shape.vocab_size > 0 ? shape.vocab_size : int64_t{std::numeric_limits<int32_t>::max()} + 1;
  if (absl::Status s = CopyInts(features, where, "input_ids", seq, 0, id_end, row.input_ids);
      !s.ok())
    return s;
  if (absl::Status s = CopyInts(features, where, "segment_ids", seq, 0, 2, row.segment_ids);
      !s.ok())
    return s;
  // The mask is stored as int64 0/1; the model reads it as fp32.
  if (absl::Status s = CopyInts(features, where, "input_mask", seq, 0, 2, row.input_mask); !s.ok())
    return s;
  if (absl::Status s =
          CopyInts(features, where, "masked_lm_positions", preds, 0, seq, row.masked_lm_positions);
      !s.ok())
    return s;
  if (absl::Status s =
          CopyInts(features, where, "masked_lm_ids", preds, 0, id_end, row.masked_lm_ids);
      !s.ok())
    return s;
  if (absl::Status s =
          CopyInts(features, where, "next_sentence_labels", 1, 0, 2, row.next_sentence_label);
      !s.ok())
    return s;
  absl::StatusOr<const Feature*> weights =
      Find(features, where, "masked_lm_weights", Feature::kFloatList, preds);
  if (!weights.ok()) return weights.status();
  for (int64_t i = 0; i < preds; ++i) {
    const float w = (*weights)->float_list().value(static_cast<int>(i));
    if (w != 0.0f && w != 1.0f) {
      return Bad(where, "masked_lm_weights",
                 fmt::format("value {} at index {} is not 0 or 1", w, i));
    }
    row.masked_lm_weights[i] = w;
  }
  return absl::OkStatus();
}

absl::StatusOr<PretrainingExample> ParsePretrainingExample(std::string_view serialized,
                                                           const PretrainingShape& shape,
                                                           const std::string& where) {
  PretrainingExample example(shape);
  if (absl::Status s = ParsePretrainingExample(serialized, shape, where, example.row()); !s.ok())
    return s;
  return example;
}

std::string MakePretrainingExample(const PretrainingExample& e) {
  tfexample::Example example;
  auto& features = *example.mutable_features()->mutable_feature();
  auto ints = [&](const std::string& name, auto begin, auto end) {
    auto* list = features[name].mutable_int64_list();
    for (auto it = begin; it != end; ++it) list->add_value(static_cast<int64_t>(*it));
  };
  ints("input_ids", e.input_ids.begin(), e.input_ids.end());
  ints("input_mask", e.input_mask.begin(), e.input_mask.end());
  ints("segment_ids", e.segment_ids.begin(), e.segment_ids.end());
  ints("masked_lm_positions", e.masked_lm_positions.begin(), e.masked_lm_positions.end());
  ints("masked_lm_ids", e.masked_lm_ids.begin(), e.masked_lm_ids.end());
  auto* weights = features["masked_lm_weights"].mutable_float_list();
  for (float w : e.masked_lm_weights) weights->add_value(w);
  features["next_sentence_labels"].mutable_int64_list()->add_value(e.next_sentence_label);
  return example.SerializeAsString();
}

}  // namespace mlperf::datasets::bert
