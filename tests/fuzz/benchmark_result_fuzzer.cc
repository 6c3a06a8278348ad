// libFuzzer target: a run_benchmark worker's result file (the JSON a
// configuration's processes leave for the driver) read as the driver reads
// it. Every input must end in a result or an error, never a crash; a result
// that was read must survive writing and reading again unchanged.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/files.h"
#include "base/json.h"
#include "tests/fuzz/fuzz_file.h"
#include "throughput/result.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlperf;
  static const auto path = fuzz::ScratchPath(".json");
  fuzz::MustWriteFile(path, data, size);
  const absl::StatusOr<std::string> text = base::ReadSmallFile(path, 16 << 20);
  if (!text.ok()) __builtin_trap();  // a regular file within the bound is always read
  const absl::StatusOr<json::Value> parsed = json::Parse(*text);
  if (!parsed.ok()) return 0;
  const absl::StatusOr<throughput::ConfigResult> result = throughput::ResultFromJson(*parsed);
  if (!result.ok()) return 0;
  const std::string once = json::Dump(throughput::ToJson(*result));
  const absl::StatusOr<json::Value> again = json::Parse(once);
  if (!again.ok()) __builtin_trap();
  const absl::StatusOr<throughput::ConfigResult> back = throughput::ResultFromJson(*again);
  if (!back.ok() || json::Dump(throughput::ToJson(*back)) != once) __builtin_trap();
  return 0;
}
