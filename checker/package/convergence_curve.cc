#include "checker/package/convergence_curve.h"

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"

namespace mlperf::package {
namespace {

// The metadata key the RCP checker reads for `benchmark` (rcp_convergence.cc).
std::string XKey(const meta::BenchmarkMeta* bench, const std::string& ruleset) {
  if (!bench) return "epoch_num";
  switch (bench->converged_at) {
    case meta::ConvergedAt::kEvalSamplesCount:
      return "samples_count";
    case meta::ConvergedAt::kFidAndClip:
      return bench->EvalStepKey(ruleset);
    default:
      return "epoch_num";
  }
}

ConvergenceCurve& CurveFor(RunCurves& run, const std::string& metric) {
  for (ConvergenceCurve& c : run.curves) {
    if (c.metric == metric) return c;
  }
  run.curves.push_back({.metric = metric});
  return run.curves.back();
}

}  // namespace

RunCurves ExtractCurves(const mllog::ParsedLog& log, const std::string& benchmark,
                        const std::string& ruleset) {
  RunCurves run;
  run.x_key = XKey(meta::FindBenchmark(benchmark), ruleset);
  for (const mllog::LogLine& line : log.lines) {
    if (line.key != "eval_accuracy" && line.key != "eval_error") continue;
    const json::Value* x = line.metadata.Find(run.x_key);
    if (!x || !x->is_number()) continue;
    // stable_diffusion logs one metric per line, named in metadata.
    const json::Value* metric = line.metadata.Find("metric");
    const std::string name = metric && metric->is_string() ? metric->as_string() : line.key;
    if (line.value.is_number()) {
      CurveFor(run, name).points.push_back({x->as_float(), line.value.as_float(), line.file_line});
    } else if (line.value.is_object()) {  // maskrcnn: {"BBOX": .., "SEGM": ..}
      for (const auto& m : line.value.as_object()) {
        if (!m.second.is_number()) continue;
        CurveFor(run, fmt::format("{}[{}]", name, m.first))
            .points.push_back({x->as_float(), m.second.as_float(), line.file_line});
      }
    }
  }
  return run;
}

std::vector<QualityTarget> QualityTargets(const checker::RuleLibrary& rules,
                                          const std::string& ruleset, const std::string& division,
                                          const std::string& benchmark) {
  std::vector<QualityTarget> targets;
  const meta::BenchmarkMeta* bench = meta::FindBenchmark(benchmark);
  if (bench && bench->converged_at == meta::ConvergedAt::kFidAndClip) {
    targets.push_back({.metric = "FID", .value = bench->fid_at_most, .at_least = false});
    targets.push_back({.metric = "CLIP", .value = bench->clip_at_least, .at_least = true});
    return targets;
  }
  const checker::RuleFile* file = rules.Find(
      fmt::format("{}/{}_{}", ruleset, division.empty() ? "closed" : division, benchmark));
  if (!file) return targets;
  // "v >= 0.759", "v['BBOX'] >= 0.377", "v <= 0.058", "0.15 <= v": the first
  // bound per metric is the target (later ones are sanity ranges such as v < 1.0).
  static const std::regex kValueFirst(R"(v(?:\['(\w+)'\])?\s*(>=|<=)\s*([0-9][0-9.eE+-]*))");
  static const std::regex kNumberFirst(R"(([0-9][0-9.eE+-]*)\s*(<=|>=)\s*v(?:\['(\w+)'\])?)");
  for (const checker::KeyRecord& record : file->records) {
    if (!record.target) continue;
    struct Found {
      size_t pos;
      QualityTarget t;
    };
    std::vector<Found> found;
    const std::string& text = record.target->expr.text();
    for (auto it = std::sregex_iterator(text.begin(), text.end(), kValueFirst);
         it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      found.push_back(
          {static_cast<size_t>(m.position()),
           {.metric = m[1].matched ? fmt::format("{}[{}]", record.name, m[1].str()) : record.name,
            .value = std::strtod(m[3].str().c_str(), nullptr),
            .at_least = m[2] == ">="}});
    }
    for (auto it = std::sregex_iterator(text.begin(), text.end(), kNumberFirst);
         it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      found.push_back(
          {static_cast<size_t>(m.position()),
           {.metric = m[3].matched ? fmt::format("{}[{}]", record.name, m[3].str()) : record.name,
            .value = std::strtod(m[1].str().c_str(), nullptr),
            .at_least = m[2] == "<="}});
    }
    std::sort(found.begin(), found.end(),
              [](const Found& a, const Found& b) { return a.pos < b.pos; });
    for (const Found& f : found) {
      bool seen = false;
      for (const QualityTarget& t : targets) seen = seen || t.metric == f.t.metric;
      if (!seen) targets.push_back(f.t);
    }
  }
  return targets;
}

}  // namespace mlperf::package
