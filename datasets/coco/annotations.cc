#include "datasets/coco/annotations.h"

#include <string>

#include "absl/status/status.h"
#include "base/files.h"
#include "base/json.h"
#include "fmt/format.h"

namespace mlperf::datasets::coco {
namespace {

using json::Value;

// Large enough for the OpenImages subset's training annotations.
constexpr uint64_t kMaxJsonBytes = uint64_t{4} << 30;

absl::Status Bad(std::string_view where, std::string_view why) {
  return absl::InvalidArgumentError(fmt::format("{}: {}", where, why));
}

absl::StatusOr<int64_t> Int(const Value& entry, std::string_view key, std::string_view where) {
  const Value* v = entry.Find(key);
  if (v == nullptr) return Bad(where, fmt::format("no {}", key));
  if (!v->is_int() || v->is_big_int()) return Bad(where, fmt::format("{} is not an integer", key));
  return v->as_int();
}

absl::StatusOr<double> Number(const Value& entry, std::string_view key, std::string_view where) {
  const Value* v = entry.Find(key);
  if (v == nullptr) return Bad(where, fmt::format("no {}", key));
  if (!v->is_number()) return Bad(where, fmt::format("{} is not a number", key));
  return v->as_float();
}

absl::Status Box(const Value& entry, std::string_view where, double box[4]) {
  const Value* v = entry.Find("bbox");
  if (v == nullptr) return Bad(where, "no bbox");
  if (!v->is_array() || v->as_array().size() != 4) return Bad(where, "bbox is not 4 numbers");
  for (int i = 0; i < 4; ++i) {
    const Value& x = v->as_array()[static_cast<size_t>(i)];
    if (!x.is_number()) return Bad(where, "bbox is not 4 numbers");
    box[i] = x.as_float();
  }
  return absl::OkStatus();
}

absl::StatusOr<const json::Array*> List(const Value& root, std::string_view key) {
  const Value* v = root.Find(key);
  if (v == nullptr) return Bad("annotations file", fmt::format("no \"{}\" list", key));
  if (!v->is_array()) return Bad("annotations file", fmt::format("\"{}\" is not a list", key));
  return &v->as_array();
}

absl::StatusOr<Value> ParseJson(std::string_view text) {
  json::ParseOptions options;
  options.encoding = json::Encoding::kUtf8;
  return json::Parse(text, options);
}

#define COCO_ASSIGN(lhs, expr)                    \
  do {                                            \
    auto value_or = (expr);                       \
    if (!value_or.ok()) return value_or.status(); \
    lhs = *value_or;                              \
  } while (0)

}  // namespace

absl::StatusOr<Dataset> ParseDataset(std::string_view json_text) {
  absl::StatusOr<Value> root = ParseJson(json_text);
  if (!root.ok()) return root.status();
  if (!root->is_object()) return Bad("annotations file", "not a JSON object");
  Dataset out;
  const json::Array* list = nullptr;
  COCO_ASSIGN(list, List(*root, "images"));
  out.images.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    const Value& e = (*list)[i];
    const std::string where = fmt::format("images[{}]", i);
    Image image;
    COCO_ASSIGN(image.id, Int(e, "id", where));
    if (const Value* name = e.Find("file_name"); name != nullptr && name->is_string())
      image.file_name = name->as_string();
    if (const Value* w = e.Find("width"); w != nullptr && w->is_int()) image.width = w->as_int();
    if (const Value* h = e.Find("height"); h != nullptr && h->is_int()) image.height = h->as_int();
    out.images.push_back(std::move(image));
  }
  COCO_ASSIGN(list, List(*root, "categories"));
  for (size_t i = 0; i < list->size(); ++i) {
    const Value& e = (*list)[i];
    int64_t id = 0;
    COCO_ASSIGN(id, Int(e, "id", fmt::format("categories[{}]", i)));
    out.category_ids.push_back(id);
    const Value* name = e.Find("name");
    out.category_names.push_back(name != nullptr && name->is_string() ? name->as_string() : "");
  }
  COCO_ASSIGN(list, List(*root, "annotations"));
  out.annotations.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    const Value& e = (*list)[i];
    const std::string where = fmt::format("annotations[{}]", i);
    Annotation a;
    COCO_ASSIGN(a.id, Int(e, "id", where));
    COCO_ASSIGN(a.image_id, Int(e, "image_id", where));
    COCO_ASSIGN(a.category_id, Int(e, "category_id", where));
    if (absl::Status s = Box(e, where, a.bbox); !s.ok()) return s;
    COCO_ASSIGN(a.area, Number(e, "area", where));
    if (const Value* crowd = e.Find("iscrowd"); crowd != nullptr) {
      if (!crowd->is_int() && !crowd->is_bool()) return Bad(where, "iscrowd is not 0 or 1");
      a.iscrowd = crowd->as_int() != 0;
    }
    out.annotations.push_back(a);
  }
  return out;
}

absl::StatusOr<std::vector<Detection>> ParseDetections(std::string_view json_text) {
  absl::StatusOr<Value> root = ParseJson(json_text);
  if (!root.ok()) return root.status();
  if (!root->is_array()) return Bad("results file", "not a JSON list");
  std::vector<Detection> out;
  out.reserve(root->as_array().size());
  for (size_t i = 0; i < root->as_array().size(); ++i) {
    const Value& e = root->as_array()[i];
    const std::string where = fmt::format("results[{}]", i);
    if (!e.is_object()) return Bad(where, "not an object");
    Detection d;
    COCO_ASSIGN(d.image_id, Int(e, "image_id", where));
    COCO_ASSIGN(d.category_id, Int(e, "category_id", where));
    if (absl::Status s = Box(e, where, d.bbox); !s.ok()) return s;
    COCO_ASSIGN(d.score, Number(e, "score", where));
    out.push_back(d);
  }
  return out;
}

absl::StatusOr<Dataset> ReadDataset(const std::filesystem::path& path) {
  absl::StatusOr<std::string> text = base::ReadSmallFile(path, kMaxJsonBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<Dataset> out = ParseDataset(*text);
  if (!out.ok())
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", path.string(), std::string(out.status().message())));
  return out;
}

absl::StatusOr<std::vector<Detection>> ReadDetections(const std::filesystem::path& path) {
  absl::StatusOr<std::string> text = base::ReadSmallFile(path, kMaxJsonBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<Detection>> out = ParseDetections(*text);
  if (!out.ok())
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", path.string(), std::string(out.status().message())));
  return out;
}

}  // namespace mlperf::datasets::coco
