#include "checker/package/consistency_notes.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/ascii.h"
#include "fmt/format.h"

namespace mlperf::package {
namespace {

// Letters and digits only, lower case: "1x NVIDIA DGX-H100" -> "1xnvidiadgxh100".
std::string Squeeze(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c)) out += static_cast<char>(std::tolower(c));
  }
  return out;
}

// A field's text, cut where no real name or status reaches: a description
// may hold a megabyte in one field, and the notes compare and quote these.
constexpr size_t kMaxFieldChars = 256;

std::string Text(const json::Value* v) {
  if (!v || v->is_null()) return "";
  return (v->is_string() ? v->as_string() : json::Dump(*v)).substr(0, kMaxFieldChars);
}

std::optional<long long> Whole(const std::string& s) {
  if (s.empty() || s.size() > 12 ||
      !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
    return std::nullopt;
  return std::stoll(s);
}

// The log's short status and the description's long one name the same
// thing (the 3.x rules log "onprem", 4.0 descriptions say "Available
// on-premise"); a 3.x description's plain "available" covers both
// on-premise and cloud.
std::string StatusClass(const std::string& status) {
  const std::string s = absl::AsciiStrToLower(status);
  if (s == "onprem" || s.starts_with("available on-prem") || s == "on-premise") return "onprem";
  if (s == "cloud" || s == "available cloud") return "cloud";
  if (s == "research" || s == "rdi" || s.starts_with("research, development")) return "research";
  if (s == "preview") return "preview";
  return s;
}

bool SameStatus(const std::string& logged, const std::string& described) {
  const std::string a = StatusClass(logged), b = StatusClass(described);
  return a == b || (b == "available" && (a == "onprem" || a == "cloud"));
}

// "Habana" names the organisation "Intel-HabanaLabs".
bool SameOrganisation(const std::string& logged, const std::string& described) {
  const std::string a = Squeeze(logged), b = Squeeze(described);
  return !a.empty() && !b.empty() &&
         (a.find(b) != std::string::npos || b.find(a) != std::string::npos);
}

// Whether `word` differs in one letter from a same-length stretch of `name`
// ("hgx" in "nyx1xnvidiadgxb200", "a100" in "xe8545x4h100"): the same slot
// of a product name with another value. A differing digit is not counted
// ("sxm4" against "sxm8..." is a generation or size, written many ways).
bool OneLetterOff(const std::string& word, const std::string& name) {
  if (word.size() < 3 || word.size() > name.size()) return false;
  for (size_t i = 0; i + word.size() <= name.size(); ++i) {
    int letters = 0, others = 0;
    for (size_t k = 0; k < word.size(); ++k) {
      if (word[k] == name[i + k]) continue;
      const bool letter = std::isalpha(static_cast<unsigned char>(word[k])) &&
                          std::isalpha(static_cast<unsigned char>(name[i + k]));
      ++(letter ? letters : others);
    }
    if (letters == 1 && others == 0) return true;
  }
  return false;
}

// A platform contradicts the system's names when neither contains the other
// (letters and digits only) and one of its words is a name's word with one
// letter changed (DGX for HGX, H100 for A100). Platforms that only say less
// or more ("X86", "NVIDIA DGX H100" for "dgxh100_n8") do not contradict.
bool ContradictsSystem(const std::string& platform, const std::vector<std::string>& names) {
  const std::string p = Squeeze(platform);
  std::vector<std::string> words(1);
  for (unsigned char c : platform) {
    if (std::isalnum(c)) {
      words.back() += static_cast<char>(std::tolower(c));
    } else if (!words.back().empty()) {
      words.emplace_back();
    }
  }
  for (const std::string& n : names) {
    const std::string q = Squeeze(n);
    if (p.empty() || q.empty() || p.find(q) != std::string::npos || q.find(p) != std::string::npos)
      return false;
  }
  for (const std::string& w : words) {
    bool present = false, conflict = false;
    for (const std::string& n : names) {
      const std::string q = Squeeze(n);
      present = present || q.find(w) != std::string::npos;
      conflict = conflict || OneLetterOff(w, q);
    }
    if (!present && conflict) return true;
  }
  return false;
}

// A value still holding a logging template's placeholder.
bool Placeholder(const std::string& value) {
  return absl::AsciiStrToLower(value).find("placeholder") != std::string::npos;
}

// "8xNVIDIA DGX H100" -> (8, "NVIDIA DGX H100").
std::pair<std::optional<long long>, std::string> SplitPlatform(const std::string& platform) {
  size_t i = 0;
  while (i < platform.size() && std::isdigit(static_cast<unsigned char>(platform[i]))) ++i;
  if (i > 0 && i < 12 && i < platform.size() && (platform[i] == 'x' || platform[i] == 'X'))
    return {std::stoll(platform.substr(0, i)), platform.substr(i + 1)};
  return {std::nullopt, platform};
}

// Platforms named "<nodes>x<server>x<count><accelerator>" ("1xXE9680x8H100-SXM-80GB")
// give the accelerators per node; most names do not ("1xNVIDIA DGX H100"),
// and the logs carry no count of their own (d_batch_size is not per device
// where samples are packed: NVIDIA's 3.0 BERT logs 768 = 16 x 48 on 8 GPUs).
std::optional<long long> PlatformAccelerators(const std::string& name) {
  for (size_t i = 1; i + 2 < name.size(); ++i) {
    if ((name[i] != 'x' && name[i] != 'X') || !std::isalnum(static_cast<unsigned char>(name[i - 1])))
      continue;
    size_t j = i + 1;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
    if (j > i + 1 && j - i < 8 && j < name.size() && std::isalpha(static_cast<unsigned char>(name[j])))
      return std::stoll(name.substr(i + 1, j - i - 1));
  }
  return std::nullopt;
}

// Logs that disagree on one field with one value.
struct Disagreement {
  int logs = 0;
  std::set<std::string> benchmarks;
};

}  // namespace

std::vector<std::string> DescriptionNotes(const OrgReport& report) {
  // (system, field, log value, the description's side) -> the logs that say it.
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Disagreement> found;
  for (const BenchmarkDirReport& d : report.dirs) {
    if (d.skipped) continue;
    const SystemReport* sys = nullptr;
    for (const SystemReport& s : report.systems) {
      if (s.name == d.system && s.desc_loaded) sys = &s;
    }
    if (!sys) continue;
    const json::Value& desc = sys->desc;
    const std::string submitter = Text(desc.Find("submitter"));
    const std::string division = Text(desc.Find("division"));
    const std::string status = Text(desc.Find("status"));
    const std::string system_name = Text(desc.Find("system_name"));
    const std::optional<long long> nodes = Whole(Text(desc.Find("number_of_nodes")));
    const std::optional<long long> per_node = Whole(Text(desc.Find("accelerators_per_node")));
    auto note = [&](const std::string& field, const std::string& value, std::string expected) {
      Disagreement& g = found[{d.system, field, value, std::move(expected)}];
      ++g.logs;
      g.benchmarks.insert(d.benchmark);
    };
    for (const RunDetail& r : d.runs) {
      const auto& s = r.settings;
      auto logged = [&](const char* key) -> std::optional<std::string> {
        auto it = s.find(key);
        if (it == s.end()) return std::nullopt;
        return Text(&it->second);
      };
      for (const char* key : {"submission_org", "submission_division", "submission_status",
                              "submission_platform"}) {
        if (auto v = logged(key); v && Placeholder(*v)) note(key, *v, "");
      }
      if (auto v = logged("submission_org");
          v && !submitter.empty() && !Placeholder(*v) && !SameOrganisation(*v, submitter))
        note("submission_org", *v, fmt::format("submitter \"{}\"", submitter));
      if (auto v = logged("submission_division");
          v && !division.empty() && absl::AsciiStrToLower(*v) != absl::AsciiStrToLower(division))
        note("submission_division", *v, fmt::format("division \"{}\"", division));
      if (auto v = logged("submission_status"); v && !status.empty() && !SameStatus(*v, status))
        note("submission_status", *v, fmt::format("status \"{}\"", status));
      if (auto v = logged("submission_platform"); v && !Placeholder(*v)) {
        const auto [platform_nodes, platform_name] = SplitPlatform(*v);
        if (ContradictsSystem(platform_name, {system_name, d.system})) {
          note("submission_platform", *v,
               fmt::format("system_name \"{}\" (folder {})", system_name, d.system));
        } else if (platform_nodes && nodes && *platform_nodes != *nodes) {
          note("submission_platform", *v, fmt::format("number_of_nodes {}", *nodes));
        }
      }
      if (auto v = logged("submission_platform"); v && per_node && !Placeholder(*v)) {
        const std::optional<long long> count = PlatformAccelerators(SplitPlatform(*v).second);
        if (count && *count != *per_node)
          note("submission_platform", *v, fmt::format("accelerators_per_node {}", *per_node));
      }
    }
  }
  std::vector<std::string> out;
  for (const auto& [key, g] : found) {
    const auto& [system, field, value, expected] = key;
    std::string benchmarks;
    for (const std::string& b : g.benchmarks) benchmarks += (benchmarks.empty() ? "" : ", ") + b;
    const std::string what = fmt::format("{} \"{}\"", field, value);
    out.push_back(
        expected.empty()
            ? fmt::format("{}: {} in {} log(s) ({}) is still a logging template's placeholder",
                          system, what, g.logs, benchmarks)
            : fmt::format("{}: {} in {} log(s) ({}) disagrees with systems/{}.json: {}", system,
                          what, g.logs, benchmarks, system, expected));
  }
  return out;
}

}  // namespace mlperf::package
