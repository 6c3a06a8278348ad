// The system description: every field the official checker requires, in its
// order, valid under old and new rulesets; the undetected list; and the
// values run_closed's packages have always carried.
#include "runtime/system_info.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/json.h"
#include "checker/package/system_desc.h"

namespace mlperf::runtime {
namespace {

std::string Value(const SystemDescription& d, const std::string& field) {
  for (const auto& [f, v] : d.fields)
    if (f == field) return v;
  ADD_FAILURE() << "no field " << field;
  return "";
}

TEST(SystemInfo, HasTheOfficialFieldsInOrderAndPassesTheChecker) {
  for (const int gpus : {0, 8}) {
    const SystemDescription d = DescribeSystem(
        {.system_name = "sys", .nodes = 2, .gpus_per_node = gpus, .probe_hardware = true});
    std::vector<std::string> names;
    for (const auto& [field, value] : d.fields) names.push_back(field);
    EXPECT_EQ(names, package::RequiredSystemDescFields());

    const absl::StatusOr<json::Value> doc =
        json::Parse(SystemDescriptionText(d), {.encoding = json::Encoding::kUtf8});
    ASSERT_TRUE(doc.ok()) << doc.status();
    for (const std::string ruleset : {"3.0.0", "6.1.0"}) {
      const package::SystemDescCheck check = package::CheckSystemDesc(*doc, ruleset);
      EXPECT_TRUE(check.valid) << ruleset << ": "
                               << (check.reasons.empty() ? "" : check.reasons[0]);
    }
    for (const auto& [field, value] : doc->as_object()) EXPECT_TRUE(value.is_string()) << field;
  }
}

TEST(SystemInfo, ListsExactlyTheFieldsItCouldNotDetect) {
  const SystemDescription d = DescribeSystem(
      {.system_name = "sys", .nodes = 2, .gpus_per_node = 2, .probe_hardware = true});
  std::vector<std::string> unknown;
  for (const auto& [field, value] : d.fields)
    if (value == "unknown") unknown.push_back(field);
  EXPECT_EQ(d.undetected, unknown);
  // Nothing in /proc or /sys tells these.
  for (const char* field : {"cooling", "host_memory_configuration", "host_networking_topology"})
    EXPECT_NE(std::find(d.undetected.begin(), d.undetected.end(), field), d.undetected.end())
        << field;
  // A GPU CUDA cannot see is unknown, not a made-up name.
  EXPECT_NE(Value(d, "accelerator_model_name"), "unknown GPU");
}

TEST(SystemInfo, TakesTheRequestsNamesAndNotes) {
  const SystemDescription d = DescribeSystem({.submitter = "Org",
                                              .system_name = "name \"quoted\"",
                                              .division = "open",
                                              .status = "Preview",
                                              .hw_notes = "hw",
                                              .sw_notes = "sw"});
  EXPECT_EQ(Value(d, "submitter"), "Org");
  EXPECT_EQ(Value(d, "system_name"), "name \"quoted\"");
  EXPECT_EQ(Value(d, "division"), "open");
  EXPECT_EQ(Value(d, "status"), "Preview");
  EXPECT_EQ(Value(d, "number_of_nodes"), "1");
  EXPECT_EQ(Value(d, "accelerators_per_node"), "0");
  EXPECT_EQ(Value(d, "accelerator_model_name"), "N/A (CPU training)");
  EXPECT_EQ(Value(d, "hw_notes"), "hw");
  EXPECT_EQ(Value(d, "sw_notes"), "sw");
}

TEST(SystemInfo, WritesOneFieldPerLine) {
  SystemDescription d;
  d.fields = {{"a", "x\"y"}, {"b", ""}};
  EXPECT_EQ(SystemDescriptionText(d), "{\n  \"a\": \"x\\\"y\",\n  \"b\": \"\"\n}\n");
}

// run_closed's packages keep the bytes they always had: no storage or
// network probing, and its own notes.
TEST(SystemInfo, RunClosedKeepsItsValues) {
  benchmarks::RunPlan plan;
  plan.demo = true;
  plan.system_name = "cpu-demo-generated-data";
  plan.world_size = 2;
  const absl::StatusOr<json::Value> doc =
      json::Parse(SystemDescriptionJson(plan), {.encoding = json::Encoding::kUtf8});
  ASSERT_TRUE(doc.ok()) << doc.status();
  const auto field = [&](const char* name) { return doc->Find(name)->as_string(); };
  EXPECT_EQ(field("division"), "closed");
  EXPECT_EQ(field("status"), "Research, Development, or Internal (RDI)");
  EXPECT_EQ(field("system_name"), "cpu-demo-generated-data (demonstration on generated data)");
  EXPECT_EQ(field("host_storage_type"), "unknown");
  EXPECT_EQ(field("host_networking"), "N/A (single node)");
  const std::string demo =
      "DEMONSTRATION on generated data: small members of the benchmarks' model families on "
      "generated data sets (see the package README), not a real MLPerf result";
  EXPECT_EQ(field("hw_notes"), demo);
  EXPECT_TRUE(
      field("sw_notes")
          .starts_with(
              demo +
              "; 2 CPU process(es) in all; convolutions and linear layers in fp32, fp32 master "
              "weights; kernel switches: "))
      << field("sw_notes");

  plan.demo = false;
  plan.options.nodes = 2;
  plan.options.gpus = 4;
  plan.system_name = "2xnode-4xgpu";
  const absl::StatusOr<json::Value> gpu =
      json::Parse(SystemDescriptionJson(plan), {.encoding = json::Encoding::kUtf8});
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ(gpu->Find("system_name")->as_string(), "2xnode-4xgpu");
  EXPECT_EQ(gpu->Find("host_networking")->as_string(), "as provided by the MPI launcher");
  EXPECT_EQ(gpu->Find("hw_notes")->as_string(), "4 process(es) per node, one per GPU");
  EXPECT_NE(gpu->Find("accelerator_model_name")->as_string(), "unknown");
}

}  // namespace
}  // namespace mlperf::runtime
