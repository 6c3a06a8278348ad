#include "checker/package/system_desc.h"

#include <cstdio>

#include "fmt/format.h"

namespace mlperf::package {

const std::vector<std::string>& RequiredSystemDescFields() {
  static const std::vector<std::string> kFields = {"submitter",
                                                   "division",
                                                   "status",
                                                   "system_name",
                                                   "number_of_nodes",
                                                   "host_processors_per_node",
                                                   "host_processor_model_name",
                                                   "host_processor_core_count",
                                                   "host_processor_vcpu_count",
                                                   "host_processor_frequency",
                                                   "host_processor_caches",
                                                   "host_processor_interconnect",
                                                   "host_memory_capacity",
                                                   "host_storage_type",
                                                   "host_storage_capacity",
                                                   "host_networking",
                                                   "host_networking_topology",
                                                   "host_memory_configuration",
                                                   "accelerators_per_node",
                                                   "accelerator_model_name",
                                                   "accelerator_host_interconnect",
                                                   "accelerator_frequency",
                                                   "accelerator_on-chip_memories",
                                                   "accelerator_memory_configuration",
                                                   "accelerator_memory_capacity",
                                                   "accelerator_interconnect",
                                                   "accelerator_interconnect_topology",
                                                   "cooling",
                                                   "hw_notes",
                                                   "framework",
                                                   "other_software_stack",
                                                   "operating_system",
                                                   "sw_notes"};
  return kFields;
}

SystemDescCheck CheckSystemDesc(const json::Value& desc, const std::string& ruleset) {
  SystemDescCheck c;
  for (const std::string& f : RequiredSystemDescFields()) {
    if (desc.Find(f) == nullptr) {
      c.valid = false;
      c.reasons.push_back(fmt::format("Missing field {}", f));
    }
  }
  // The availability values are enforced for training rulesets with major
  // version >= 4 (4.0.0 included); 3.x status values were free-form.
  int major = 0;
  if (std::sscanf(ruleset.c_str(), "%d", &major) == 1 && major >= 4) {
    static const char* const kStatuses[] = {"Available on-premise", "Available cloud",
                                            "Research, Development, or Internal (RDI)", "Preview"};
    if (const json::Value* status = desc.Find("status")) {
      bool allowed = false;
      for (const char* s : kStatuses)
        allowed = allowed || (status->is_string() && status->as_string() == s);
      if (!allowed) {
        c.valid = false;
        const std::string shown = status->is_string() ? status->as_string() : json::Dump(*status);
        c.reasons = {fmt::format(
            "Field status contains a non valid value: {}, must be one of [Available on-premise, "
            "Available cloud, Research, Development, or Internal (RDI), Preview]",
            shown)};
      }
    }
  }
  return c;
}

}  // namespace mlperf::package
