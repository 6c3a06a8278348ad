#include "benchmarks/readme.h"

#include "fmt/format.h"

namespace mlperf::benchmarks {

std::string ReadmeSection(const RunPlan& plan, const ReadmeFacts& f) {
  std::string text;
  if (plan.demo) {
    text = fmt::format(
        "# {0}: DEMONSTRATION on generated data, not {1}\n\n"
        "The results in `results/{0}/{2}/` come from `run_closed --bench {2}` with no `--data`:\n"
        "{3}, trained on {4}. They are NOT a {5} / {1} result and must never be\n"
        "reported as one. The logs follow the closed-division {5} rules of training ruleset {6}"
        "{7}.\n\n",
        plan.system_name, f.data_name, f.benchmark, f.member, f.generated, f.title, plan.ruleset,
        f.rules_detail.empty() ? "" : " (" + f.rules_detail + ")");
  } else {
    text = fmt::format(
        "# {}: {}, closed division\n\n"
        "Produced by `run_closed --bench {}` on {}, ruleset {}.\n\n",
        plan.system_name, f.title, f.benchmark, f.real_data, plan.ruleset);
  }
  return text + f.recipe + "\n\n" + RcpBypassNote(plan);
}

}  // namespace mlperf::benchmarks
