#include "closed_division/readme.h"

#include "fmt/format.h"

namespace mlperf::closed {

std::string CheckCommands(const RunPlan& plan, const std::string& org_dir) {
  const char* bypass = plan.rcp_batch_size ? "" : " --rcp-bypass";
  return fmt::format(
      "  compliance_check --ruleset {0}{1} {2}\n"
      "  python3 -m mlperf_logging.package_checker {2} training {0}{1}\n",
      kResnetRuleset, bypass, org_dir);
}

std::string PackageReadmeSection(const RunPlan& plan) {
  const ResnetRecipe& r = plan.recipe;
  std::string text;
  if (plan.demo) {
    text += fmt::format(
        "# {0}: DEMONSTRATION on generated data, not ImageNet\n\n"
        "The results in `results/{0}/resnet/` come from `run_closed` with no `--data`: a small\n"
        "member of the ResNet family (base width {1}, blocks {2}-{3}-{4}-{5}, {6}x{6} pixels, "
        "{7} classes)\n"
        "trained on a generated image set ({8} training and {9} validation images written as "
        "JPEG files\n"
        "in the ImageNet folder layout). They are NOT a ResNet-50 / ImageNet result and must "
        "never be\n"
        "reported as one. The logs follow the closed-division ResNet rules of training ruleset "
        "{10}\n"
        "(LARS or SGD keys, end LR 1e-4, poly power 2, evaluation every 4 epochs, target top-1 "
        "0.759).\n\n",
        plan.system_name, plan.model.base_width, plan.model.blocks[0], plan.model.blocks[1],
        plan.model.blocks[2], plan.model.blocks[3], plan.model.image_size, plan.model.num_classes,
        plan.train_samples, plan.eval_samples, kResnetRuleset);
  } else {
    text += fmt::format(
        "# {}: ResNet-50 v1.5, closed division\n\n"
        "Produced by `run_closed` on ImageNet ILSVRC-2012 ({} training / {} validation images), "
        "ruleset {}.\n\n",
        plan.system_name, plan.train_samples, plan.eval_samples, kResnetRuleset);
  }
  text += fmt::format(
      "Recipe: {} global batch {} ({} per process, {} processes), base LR {}, warm-up {} "
      "epochs,\n"
      "decay horizon {} epochs, momentum {}, weight decay {}, label smoothing {}; evaluations "
      "after\n"
      "epochs {} + 4k. Every run logs its own seed (from /dev/urandom unless --seed was given).\n\n",
      r.optimizer == Optimizer::kLars ? "LARS" : "SGD", r.global_batch_size, plan.batch_per_rank,
      plan.world_size, r.base_lr, r.warmup_epochs, r.decay_epochs, r.momentum, r.weight_decay,
      r.label_smoothing, r.first_eval_epoch);
  if (!plan.rcp_batch_size) {
    text += fmt::format(
        "No Reference Convergence Point exists for global batch size {}, so the package "
        "checkers\n"
        "need the RCP bypass (`--rcp-bypass`).\n\n",
        r.global_batch_size);
  }
  text += "Check with:\n\n```sh\n" + CheckCommands(plan, ".") + "```\n";
  return text;
}

}  // namespace mlperf::closed
