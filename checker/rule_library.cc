#include "checker/rule_library.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "checker/rule_reader.h"
#include "quality_targets/embedded_rules.h"

namespace mlperf::checker {

bool RulesetLess(const std::string& a, const std::string& b) {
  std::vector<absl::string_view> x = absl::StrSplit(a, '.');
  std::vector<absl::string_view> y = absl::StrSplit(b, '.');
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    int p = 0, q = 0;
    if (absl::SimpleAtoi(x[i], &p) && absl::SimpleAtoi(y[i], &q)) {
      if (p != q) return p < q;
    } else if (x[i] != y[i]) {
      return x[i] < y[i];
    }
  }
  return x.size() < y.size();
}

absl::StatusOr<RuleLibrary> RuleLibrary::FromSources(const std::vector<RuleSource>& sources) {
  RuleLibrary lib;
  for (const RuleSource& src : sources) {
    absl::string_view path = src.path;
    if (!absl::ConsumePrefix(&path, "training/") || !absl::ConsumeSuffix(&path, ".rules")) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(path, '/');
    if (parts.size() != 2) continue;
    const std::string id = absl::StrCat(parts[0], "/", parts[1]);
    absl::StatusOr<RuleFile> file = ReadRuleFile(src.text, id);
    if (!file.ok()) return file.status();
    lib.files_.emplace(id, *std::move(file));
  }
  return lib;
}

absl::StatusOr<RuleLibrary> RuleLibrary::Embedded() {
  std::vector<RuleSource> sources;
  for (const EmbeddedFile& f : EmbeddedRuleFiles())
    sources.push_back({f.path, std::string(f.text)});
  return FromSources(sources);
}

absl::StatusOr<RuleLibrary> RuleLibrary::FromDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path root(dir);
  if (!fs::is_directory(root / "training", ec)) {
    return absl::NotFoundError(
        absl::StrCat("--rules-dir ", dir, ": no training/ directory inside"));
  }
  std::vector<RuleSource> sources;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code file_ec;
    if (!it->is_regular_file(file_ec) || it->path().extension() != ".rules") continue;
    std::ifstream in(it->path(), std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", it->path().string()));
    std::stringstream text;
    text << in.rdbuf();
    sources.push_back({fs::relative(it->path(), root).generic_string(), text.str()});
  }
  if (ec) return absl::NotFoundError(absl::StrCat("--rules-dir ", dir, ": ", ec.message()));
  return FromSources(sources);
}

std::vector<std::string> RuleLibrary::Rulesets() const {
  std::vector<std::string> out;
  for (const auto& [id, file] : files_) {
    if (absl::EndsWith(id, "/common")) out.push_back(file.ruleset);
  }
  std::sort(out.begin(), out.end(), RulesetLess);
  return out;
}

bool RuleLibrary::HasRuleset(const std::string& ruleset) const {
  return files_.count(ruleset + "/common") > 0;
}

const RuleFile* RuleLibrary::Find(const std::string& id) const {
  auto it = files_.find(id);
  return it == files_.end() ? nullptr : &it->second;
}

}  // namespace mlperf::checker
