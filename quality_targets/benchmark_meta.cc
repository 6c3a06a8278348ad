#include "quality_targets/benchmark_meta.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_split.h"
#include "base/json.h"

namespace mlperf::meta {
namespace {

struct Meta {
  std::map<std::string, BenchmarkMeta, std::less<>> benchmarks;
  std::map<std::string, std::vector<std::string>> allowed;
  std::vector<std::string> rcp_rulesets;
  SystemDescriptionRules system;
};

// The data is compiled in and tested (tests/quality_targets), so a malformed
// file is a build of broken data: say what is wrong and stop.
[[noreturn]] void Broken(const std::string& what) {
  std::fprintf(stderr, "quality_targets/benchmarks.json: %s\n", what.c_str());
  std::abort();
}

const json::Value& Need(const json::Value& obj, std::string_view key, const std::string& where) {
  const json::Value* v = obj.Find(key);
  if (!v) Broken(where + ": no '" + std::string(key) + "'");
  return *v;
}

std::vector<std::string> Strings(const json::Value& v, const std::string& where) {
  if (!v.is_array()) Broken(where + ": not a list");
  std::vector<std::string> out;
  for (const json::Value& s : v.as_array()) {
    if (!s.is_string()) Broken(where + ": not a list of strings");
    out.push_back(s.as_string());
  }
  return out;
}

ConvergedAt ParseConvergedAt(const std::string& s, const std::string& where) {
  if (s == "epoch_num") return ConvergedAt::kEpochNum;
  if (s == "epoch_num_or_train_samples") return ConvergedAt::kEpochNumOrTrainSamples;
  if (s == "eval_samples_count") return ConvergedAt::kEvalSamplesCount;
  if (s == "fid_and_clip") return ConvergedAt::kFidAndClip;
  Broken(where + ": unknown rcp_converged_at '" + s + "'");
}

BenchmarkMeta ParseBenchmark(const std::string& name, const json::Value& e) {
  const std::string where = "benchmark " + name;
  BenchmarkMeta b;
  b.name = name;
  const json::Value& files = Need(e, "result_files", where);
  if (!files.is_int()) Broken(where + ": result_files is not an integer");
  b.result_files = static_cast<int>(files.as_int());
  if (const json::Value* v = e.Find("rcp_runs")) b.rcp_runs = static_cast<int>(v->as_int());
  if (const json::Value* v = e.Find("olympic_drop_per_side"))
    b.olympic_drop_per_side = static_cast<int>(v->as_int());
  if (const json::Value* v = e.Find("rcp_checked")) b.rcp_checked = v->as_bool();
  if (const json::Value* v = e.Find("rcp_converged_at"))
    b.converged_at = ParseConvergedAt(v->as_string(), where);
  if (b.converged_at == ConvergedAt::kFidAndClip) {
    b.fid_at_most = Need(e, "fid_at_most", where).as_float();
    b.clip_at_least = Need(e, "clip_at_least", where).as_float();
    for (const json::Member& m : Need(e, "eval_step_key", where).as_object())
      b.eval_step_key[m.first] = m.second.as_string();
    if (!b.eval_step_key.contains("default")) Broken(where + ": eval_step_key has no default");
  }
  if (const json::Value* v = e.Find("rcp_min_mean_allowance")) {
    b.min_mean_allowance_samples = Need(*v, "samples", where).as_float();
    b.min_mean_allowance_from = Need(*v, "from_ruleset", where).as_string();
  }
  return b;
}

Meta Load() {
  std::span<const EmbeddedFile> files = EmbeddedBenchmarkMeta();
  if (files.size() != 1) Broken("not embedded exactly once");
  absl::StatusOr<json::Value> doc = json::Parse(files[0].text);
  if (!doc.ok()) Broken(std::string(doc.status().message()));
  Meta m;
  for (const json::Member& b : Need(*doc, "benchmarks", "top level").as_object())
    m.benchmarks.emplace(b.first, ParseBenchmark(b.first, b.second));
  for (const json::Member& r : Need(*doc, "allowed_benchmarks", "top level").as_object()) {
    m.allowed[r.first] = Strings(r.second, "allowed_benchmarks " + r.first);
    for (const std::string& b : m.allowed[r.first]) {
      if (!m.benchmarks.contains(b)) Broken("allowed_benchmarks " + r.first + ": unknown " + b);
    }
  }
  m.rcp_rulesets = Strings(Need(*doc, "rcp_rulesets", "top level"), "rcp_rulesets");
  const json::Value& sys = Need(*doc, "system_description", "top level");
  m.system.required_fields = Strings(Need(sys, "required_fields", "system_description"), "fields");
  m.system.status_values = Strings(Need(sys, "status_values", "system_description"), "status");
  m.system.status_checked_from = Need(sys, "status_checked_from", "system_description").as_string();
  return m;
}

const Meta& Data() {
  static const Meta* const kMeta = new Meta(Load());
  return *kMeta;
}

std::vector<long> Components(const std::string& version) {
  std::vector<long> out;
  for (const std::string& part : std::vector<std::string>(absl::StrSplit(version, '.')))
    out.push_back(std::strtol(part.c_str(), nullptr, 10));
  return out;
}

}  // namespace

std::string BenchmarkMeta::EvalStepKey(const std::string& ruleset) const {
  auto it = eval_step_key.find(ruleset);
  return it != eval_step_key.end() ? it->second : eval_step_key.at("default");
}

const BenchmarkMeta* FindBenchmark(std::string_view name) {
  auto it = Data().benchmarks.find(name);
  return it == Data().benchmarks.end() ? nullptr : &it->second;
}

std::optional<int> ResultFiles(std::string_view benchmark) {
  const BenchmarkMeta* b = FindBenchmark(benchmark);
  return b ? std::optional<int>(b->result_files) : std::nullopt;
}

std::optional<int> RcpRuns(std::string_view benchmark) {
  const BenchmarkMeta* b = FindBenchmark(benchmark);
  return b ? b->rcp_runs : std::nullopt;
}

int OlympicDropPerSide(std::string_view benchmark) {
  const BenchmarkMeta* b = FindBenchmark(benchmark);
  return b ? b->olympic_drop_per_side : 1;
}

std::vector<std::string> AllowedBenchmarks(const std::string& ruleset) {
  const auto& allowed = Data().allowed;
  auto it = allowed.find(ruleset);
  if (it == allowed.end()) {
    const size_t dot = ruleset.rfind('.');
    if (dot != std::string::npos) it = allowed.find(ruleset.substr(0, dot));
  }
  return it == allowed.end() ? std::vector<std::string>{} : it->second;
}

const std::vector<std::string>& RcpRulesets() { return Data().rcp_rulesets; }

const SystemDescriptionRules& SystemDescription() { return Data().system; }

bool RulesetAtLeast(const std::string& ruleset, const std::string& minimum) {
  std::vector<long> a = Components(ruleset), b = Components(minimum);
  const size_t n = std::max(a.size(), b.size());
  a.resize(n, 0);
  b.resize(n, 0);
  return a >= b;
}

}  // namespace mlperf::meta
