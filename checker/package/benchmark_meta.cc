#include "checker/package/benchmark_meta.h"

#include <map>

namespace mlperf::package {
namespace {

std::optional<int> Lookup(const std::map<std::string, int>& table, const std::string& key) {
  auto it = table.find(key);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::optional<int> SubmissionRuns(const std::string& benchmark) {
  static const auto* const kRuns = new std::map<std::string, int>{
      {"bert", 10},
      {"dlrm_dcnv2", 10},
      {"gpt3", 3},
      {"maskrcnn", 5},
      {"resnet", 5},
      {"ssd", 5},
      {"retinanet", 5},
      {"unet3d", 40},
      {"rnnt", 10},
      {"stable_diffusion", 10},
      {"gnn", 10},
      {"rgat", 10},
      {"llama2_70b_lora", 10},
      {"flux1", 10},
      {"llama31_405b", 3},
      {"llama31_8b", 10},
      {"gpt_oss_20b", 10},
      {"deepseekv3_671b", 3},
      {"qwen35_397b_grpo", 3},
  };
  return Lookup(*kRuns, benchmark);
}

std::optional<int> RequiredResultFiles(const std::string& benchmark) {
  static const auto* const kFiles = new std::map<std::string, int>{
      {"bert", 10},
      {"dlrm", 5},
      {"dlrm_dcnv2", 10},
      {"gnmt", 10},
      {"gpt3", 3},
      {"maskrcnn", 5},
      {"minigo", 10},
      {"resnet", 5},
      {"ssd", 5},
      {"retinanet", 5},
      {"stable_diffusion", 10},
      {"transformer", 10},
      {"ncf", 10},
      {"rnnt", 10},
      {"unet3d", 40},
      {"gnn", 10},
      {"rgat", 10},
      {"llama2_70b_lora", 10},
      {"llama31_405b", 3},
      {"llama31_8b", 10},
      {"flux1", 10},
      {"gpt_oss_20b", 10},
      {"deepseekv3_671b", 3},
      {"qwen35_397b_grpo", 3},
  };
  return Lookup(*kFiles, benchmark);
}

std::vector<std::string> AllowedBenchmarks(const std::string& ruleset) {
  static const auto* const kAllowed = new std::map<std::string, std::vector<std::string>>{
      {"1.0", {"bert", "dlrm", "maskrcnn", "minigo", "resnet", "ssd", "rnnt", "unet3d"}},
      {"1.1", {"bert", "dlrm", "maskrcnn", "minigo", "resnet", "ssd", "rnnt", "unet3d"}},
      {"2.0", {"bert", "dlrm", "maskrcnn", "minigo", "resnet", "ssd", "rnnt", "unet3d"}},
      {"2.1", {"bert", "dlrm", "maskrcnn", "minigo", "resnet", "ssd", "rnnt", "unet3d"}},
      {"3.0", {"bert", "dlrm_dcnv2", "gpt3", "maskrcnn", "resnet", "ssd", "rnnt", "unet3d"}},
      {"3.1",
       {"bert", "dlrm_dcnv2", "gpt3", "maskrcnn", "resnet", "ssd", "rnnt", "unet3d",
        "stable_diffusion"}},
      {"4.0",
       {"bert", "dlrm_dcnv2", "gpt3", "resnet", "ssd", "unet3d", "stable_diffusion",
        "llama2_70b_lora", "stable_diffusion", "gnn"}},
      {"4.1", {"bert", "dlrm_dcnv2", "gpt3", "ssd", "stable_diffusion", "llama2_70b_lora", "gnn"}},
      {"5.0",
       {"bert", "dlrm_dcnv2", "retinanet", "stable_diffusion", "llama2_70b_lora", "rgat",
        "llama31_405b"}},
      {"5.1",
       {"llama31_8b", "dlrm_dcnv2", "retinanet", "flux1", "llama2_70b_lora", "rgat",
        "llama31_405b"}},
      {"6.0",
       {"llama31_8b", "dlrm_dcnv2", "flux1", "llama2_70b_lora", "llama31_405b", "gpt_oss_20b",
        "deepseekv3_671b"}},
      {"6.1",
       {"llama31_8b", "flux1", "llama2_70b_lora", "gpt_oss_20b", "deepseekv3_671b",
        "qwen35_397b_grpo"}},
  };
  auto it = kAllowed->find(ruleset);
  if (it == kAllowed->end()) it = kAllowed->find(ruleset.substr(0, 3));
  if (it == kAllowed->end()) return {};
  return it->second;
}

int OlympicDropPerSide(const std::string& benchmark) { return benchmark == "unet3d" ? 4 : 1; }

}  // namespace mlperf::package
