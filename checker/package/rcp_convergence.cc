#include "checker/package/rcp_convergence.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string_view>

#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"

namespace mlperf::package {
namespace {

constexpr std::string_view kToken = ":::MLLOG ";

// Which of the RCP reader's substrings a line's text contains. Each has an
// underscore, so one pass over the underscores finds them all (six separate
// searches were a tenth of checking a whole round).
struct Mentions {
  bool global_batch_size = false, submission_benchmark = false, eval = false, train_samples = false,
       run_stop = false;
};

Mentions Scan(std::string_view text) {
  Mentions m;
  auto at = [&](size_t begin, std::string_view word) {
    return begin <= text.size() && text.substr(begin).starts_with(word);
  };
  for (size_t p = text.find('_'); p != std::string_view::npos; p = text.find('_', p + 1)) {
    if (p >= 6 && at(p - 6, "global_batch_size")) m.global_batch_size = true;
    if (p >= 10 && at(p - 10, "submission_benchmark")) m.submission_benchmark = true;
    if (p >= 4 && (at(p - 4, "eval_error") || at(p - 4, "eval_accuracy"))) m.eval = true;
    if (p >= 5 && at(p - 5, "train_samples")) m.train_samples = true;
    if (p >= 3 && at(p - 3, "run_stop")) m.run_stop = true;
  }
  return m;
}

// Where the RCP checker reads the convergence point of `benchmark` (a value
// that names no known benchmark reads epoch_num).
meta::ConvergedAt ConvergedAt(const meta::BenchmarkMeta* benchmark) {
  return benchmark ? benchmark->converged_at : meta::ConvergedAt::kEpochNum;
}

bool IsString(const json::Value& v, std::string_view s) {
  return v.is_string() && v.as_string() == s;
}

std::string_view JsonText(std::string_view text) {
  if (text.starts_with(kToken)) text.remove_prefix(kToken.size());
  return text;
}

}  // namespace

bool ConvergenceReadsLine(const mllog::LogLine& line) {
  const Mentions m = Scan(JsonText(line.text));
  return m.global_batch_size || m.submission_benchmark || m.eval || m.train_samples || m.run_stop;
}

void KeepConvergenceLines(mllog::ParsedLog& log) {
  std::erase_if(log.lines, [](const mllog::LogLine& line) { return !ConvergenceReadsLine(line); });
  log.lines.shrink_to_fit();
}

double PythonRound3(double x) {
  // glibc's printf rounds the exact binary value, ties to even, as CPython's
  // float round does.
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%.3f", x);
  return std::strtod(buf, nullptr);
}

absl::StatusOr<RunConvergence> ReadRunConvergence(const mllog::ParsedLog& log,
                                                  const ConvergenceOptions& options) {
  RunConvergence run;
  bool use_train_samples = options.bert_train_samples;
  std::optional<double> conv_epoch;
  // stable_diffusion: eval step -> metric -> value; FID and CLIP arrive separately.
  std::map<double, std::map<std::string, double>> sd_evals;
  const meta::BenchmarkMeta* bench = nullptr;  // what run.benchmark names

  for (const mllog::LogLine& line : log.lines) {
    const std::string_view text = JsonText(line.text);
    auto fail = [&](const std::string& what) {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}: {} (the official RCP checker stops here with an exception)", log.path,
                      line.file_line, what));
    };
    auto metadata_number = [&](std::string_view field) -> absl::StatusOr<double> {
      const json::Value* v = line.metadata.Find(field);
      if (!v) return fail(fmt::format("'{}' line has no metadata '{}'", line.key, field));
      if (!v->is_number()) return fail(fmt::format("metadata '{}' is not a number", field));
      return v->as_float();
    };

    const Mentions mentions = Scan(text);
    if (mentions.global_batch_size) run.global_batch_size = line.value;
    if (mentions.submission_benchmark) {
      run.benchmark = line.value;
      bench = line.value.is_string() ? meta::FindBenchmark(line.value.as_string()) : nullptr;
      if (ConvergedAt(bench) != meta::ConvergedAt::kEpochNumOrTrainSamples)
        use_train_samples = false;
    }
    const bool eval = mentions.eval;
    const bool fid_and_clip = ConvergedAt(bench) == meta::ConvergedAt::kFidAndClip;
    if (fid_and_clip && eval) {
      absl::StatusOr<double> step = metadata_number(bench->EvalStepKey(options.ruleset));
      if (!step.ok()) return step.status();
      const json::Value* metric = line.metadata.Find("metric");
      if (!metric || !metric->is_string()) return fail("eval line has no string metadata 'metric'");
      if (!line.value.is_number()) return fail("eval value is not a number");
      sd_evals[*step][metric->as_string()] = line.value.as_float();
    } else if (ConvergedAt(bench) == meta::ConvergedAt::kEvalSamplesCount && eval) {
      absl::StatusOr<double> samples = metadata_number("samples_count");
      if (!samples.ok()) return samples.status();
      conv_epoch = *samples;
    } else if (!use_train_samples && eval) {
      const json::Value* epoch = line.metadata.Find("epoch_num");
      if (!epoch) return fail("eval line has no metadata 'epoch_num'");
      if (!epoch->is_number()) return fail("metadata 'epoch_num' is not a number");
      // round() keeps an int an int; only floats are rounded to 3 decimals.
      conv_epoch = epoch->is_float() ? PythonRound3(epoch->as_float()) : epoch->as_float();
    } else if (use_train_samples && mentions.train_samples) {
      if (!line.value.is_number()) return fail("train_samples value is not a number");
      conv_epoch = line.value.as_float();
    }

    if (mentions.run_stop && line.key == "run_stop") {
      const json::Value* status = line.metadata.Find("status");
      if (!status) return fail("run_stop has no metadata 'status'");
      if (IsString(*status, "success")) {
        run.converged = true;
        if (fid_and_clip) {
          // The first eval step meeting both targets.
          const meta::BenchmarkMeta& m = *bench;
          std::optional<double> first;
          for (const auto& [step, metrics] : sd_evals) {
            auto fid = metrics.find("FID"), clip = metrics.find("CLIP");
            if (fid == metrics.end() || clip == metrics.end()) {
              return fail(fmt::format("eval step {} lacks FID or CLIP", step));
            }
            if (fid->second <= m.fid_at_most && clip->second >= m.clip_at_least && !first)
              first = step;
          }
          if (!first) {
            return fail(fmt::format("no eval step meets FID <= {} and CLIP >= {}", m.fid_at_most,
                                    m.clip_at_least));
          }
          conv_epoch = *first;
        }
        if (!conv_epoch) return fail("successful run_stop before any eval line");
        run.epochs = *conv_epoch;
      } else {
        run.converged = false;
        run.epochs = kUnconvergedEpochs;
      }
    }
  }
  return run;
}

}  // namespace mlperf::package
