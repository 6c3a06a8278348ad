#include "datasets/kits19/eval_cases.h"

#include <algorithm>
#include <array>
#include <set>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace mlperf::kits19 {
namespace {

constexpr std::array<int, 42> kEvaluationCases = {
    0,   3,   5,   6,   12,  24,  34,  41,  44,  49,  52,  56,  61,  65,
    66,  70,  76,  78,  80,  84,  86,  87,  92,  111, 112, 125, 128, 138,
    157, 160, 161, 162, 169, 171, 176, 185, 187, 189, 198, 203, 206, 207};

}  // namespace

int CaseId(const std::string& name) {
  if (name.size() != 10 || !name.starts_with("case_")) return -1;
  int id = 0;
  for (char c : name.substr(5)) {
    if (c < '0' || c > '9') return -1;
    id = id * 10 + (c - '0');
  }
  return id;
}

bool IsEvaluationCase(int case_id) {
  return std::binary_search(kEvaluationCases.begin(), kEvaluationCases.end(), case_id);
}

absl::StatusOr<CaseSplit> ListPreparedCases(const std::filesystem::path& dir) {
  std::error_code ec;
  std::set<std::string> images, labels;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (file.size() != 16 || !file.ends_with(".npy")) continue;
    const std::string name = file.substr(0, 10), suffix = file.substr(10, 2);
    if (CaseId(name) < 0) continue;
    if (suffix == "_x") images.insert(name);
    if (suffix == "_y") labels.insert(name);
  }
  if (ec) {
    return absl::NotFoundError(
        fmt::format("{}: cannot list the prepared cases: {}", dir.string(), ec.message()));
  }
  CaseSplit split;
  for (const std::string& name : images) {
    if (!labels.contains(name)) {
      return absl::NotFoundError(
          fmt::format("{}: missing (its _x.npy exists)", (dir / (name + "_y.npy")).string()));
    }
    (IsEvaluationCase(CaseId(name)) ? split.eval : split.train).push_back(name);
  }
  for (const std::string& name : labels) {
    if (!images.contains(name)) {
      return absl::NotFoundError(
          fmt::format("{}: missing (its _y.npy exists)", (dir / (name + "_x.npy")).string()));
    }
  }
  return split;
}

}  // namespace mlperf::kits19
