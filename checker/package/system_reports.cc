#include "checker/package/system_reports.h"

#include "base/json.h"
#include "checker/package/layout.h"
#include "checker/package/system_desc.h"
#include "fmt/format.h"

namespace mlperf::package {

namespace fs = std::filesystem;

void CheckSystemDescriptions(const fs::path& org, const PackageOptions& options,
                             OrgReport& report) {
  absl::StatusOr<std::vector<DirEntry>> entries = ListDir(org / "systems");
  if (!entries.ok()) {
    report.errors.push_back(std::string(entries.status().message()));
    report.input_error = true;
    return;
  }
  const bool checked = FullPackageChecks(options.ruleset);
  for (const DirEntry& e : *entries) {
    if (!e.name.ends_with(".json")) continue;
    SystemReport s;
    s.name = e.name.substr(0, e.name.size() - 5);
    if (options.only_system && *options.only_system != s.name) continue;
    const fs::path path = org / "systems" / e.name;
    absl::StatusOr<std::string> text = ReadFileLimited(path, kMaxSystemDescBytes);
    absl::StatusOr<json::Value> desc = text.ok()
                                           ? json::Parse(*text, {.encoding = json::Encoding::kUtf8})
                                           : absl::StatusOr<json::Value>(text.status());
    // Before 1.0.0 the package checker checks no description (it reads only
    // the division, SystemDivision): what is wrong with one is a warning.
    std::vector<std::string>& findings = checked ? report.errors : report.warnings;
    if (!desc.ok()) {
      // A read error names the file already; a parse error does not.
      s.error = text.ok()
                    ? fmt::format("{}: {}", DisplayPath(path), std::string(desc.status().message()))
                    : std::string(desc.status().message());
      findings.push_back(fmt::format("system description cannot be read: {}", s.error));
      if (!text.ok() && checked) report.input_error = true;  // a FIFO, a device, too large
    } else {
      s.desc_loaded = true;
      s.desc = *std::move(desc);
      s.check = CheckSystemDesc(s.desc, options.ruleset);
      if (!s.check.valid) {
        std::string reasons;
        for (const std::string& r : s.check.reasons) reasons += (reasons.empty() ? "" : "; ") + r;
        findings.push_back(
            fmt::format("{}: system description check failed: {}", DisplayPath(path), reasons));
      }
    }
    report.systems.push_back(std::move(s));
  }
}

void ReadPrivateId(const fs::path& sys_dir, const std::string& system, OrgReport& report) {
  const fs::path path = sys_dir / "privateid.json";
  std::error_code ec;
  SystemReport* desc = nullptr;
  for (SystemReport& s : report.systems) desc = s.name == system ? &s : desc;
  if (!desc || !fs::exists(path, ec)) return;
  absl::StatusOr<std::string> text = ReadFileLimited(path, kMaxSmallFileBytes);
  absl::StatusOr<json::Value> id = text.ok()
                                       ? json::Parse(*text, {.encoding = json::Encoding::kUtf8})
                                       : absl::StatusOr<json::Value>(text.status());
  if (!id.ok() || !id->is_object()) {
    desc->private_id_unreadable = true;
    report.warnings.push_back(fmt::format(
        "{}: not a JSON object; the result summarizer leaves system {} out of its table",
        DisplayPath(path), DisplayName(system)));
    return;
  }
  if (const json::Value* v = id->Find("private_id"); v && !v->is_null())
    desc->private_id = v->is_string() ? v->as_string() : json::Dump(*v);
}

}  // namespace mlperf::package
