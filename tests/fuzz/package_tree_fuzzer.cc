// libFuzzer target: a submission tree built from the input, checked as a
// whole package the way compliance_check does it. The input is a sequence of
// NUL-separated (path, content) pairs; paths are kept to [A-Za-z0-9._-] names
// at most six deep under a v4.0 round folder (so the ruleset comes from the
// path), and a pair that cannot be created (a file where a folder is) is left
// out. Every tree must end in a verdict, never a crash, sanitizer report or
// hang. Odd first bytes also ask for the CSV and HTML reports (and JSON on
// stdout), which must then be written whole. Run with -close_fd_mask=1: the
// report goes to stdout.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "base/files.h"
#include "checker/package/cli_package.h"
#include "checker/rule_library.h"
#include "tests/fuzz/fuzz_file.h"

ABSL_DECLARE_FLAG(std::string, csv);
ABSL_DECLARE_FLAG(std::string, html);
ABSL_DECLARE_FLAG(std::string, results_table);
ABSL_DECLARE_FLAG(std::string, results_table_json);

namespace {

namespace fs = std::filesystem;

const mlperf::checker::RuleLibrary& Rules() {
  static const mlperf::checker::RuleLibrary* rules = [] {
    auto lib = mlperf::checker::RuleLibrary::Embedded();
    if (!lib.ok()) std::abort();  // the embedded rules are tested; this is a build defect
    return new mlperf::checker::RuleLibrary(*std::move(lib));
  }();
  return *rules;
}

// The relative path the fuzzer meant, or empty where it names nothing usable.
fs::path SafePath(std::string_view raw) {
  fs::path out;
  int depth = 0;
  std::string part;
  auto flush = [&] {
    if (part.empty() || part == "." || part == "..") return part.clear(), true;
    out /= part;
    part.clear();
    return ++depth <= 6;
  };
  for (char c : raw) {
    if (c == '/') {
      if (!flush()) return {};
    } else if ((std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') &&
               part.size() < 64) {
      part += c;
    }
  }
  if (!flush()) return {};
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fs::path root = mlperf::fuzz::ScratchPath("_tree");
  std::error_code ec;
  fs::remove_all(root, ec);
  const fs::path round = root / "v4.0";
  fs::create_directories(round, ec);
  std::vector<std::string_view> fields;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (!rest.empty() && fields.size() < 128) {
    const size_t nul = rest.find('\0');
    fields.push_back(rest.substr(0, nul));
    rest = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
  }
  for (size_t i = 0; i + 1 < fields.size(); i += 2) {
    const fs::path rel = SafePath(fields[i]);
    if (rel.empty()) continue;
    const fs::path file = round / rel;
    fs::create_directories(file.parent_path(), ec);
    if (ec || fs::is_directory(file, ec)) continue;
    (void)mlperf::fuzz::WriteFile(file, fields[i + 1].data(), fields[i + 1].size());
  }
  mlperf::package::CliOptions options;
  options.default_ruleset = "4.0.0";
  options.jobs = 1;
  const bool reports = size > 0 && (data[0] & 1);
  options.json = reports;
  static const fs::path csv = mlperf::fuzz::ScratchPath(".csv"),
                        html = mlperf::fuzz::ScratchPath(".html"),
                        results = mlperf::fuzz::ScratchPath("_results.csv"),
                        results_json = mlperf::fuzz::ScratchPath("_results.json");
  for (const fs::path& p : {csv, html, results, results_json}) fs::remove(p, ec);
  absl::SetFlag(&FLAGS_csv, reports ? csv.string() : "");
  absl::SetFlag(&FLAGS_html, reports ? html.string() : "");
  absl::SetFlag(&FLAGS_results_table, reports ? results.string() : "");
  absl::SetFlag(&FLAGS_results_table_json, reports ? results_json.string() : "");
  const int status = mlperf::package::RunPackageCli({round.string()}, options, Rules());
  if (status < 0 || status > 2) __builtin_trap();  // the documented exit statuses only
  if (reports && status != 2) {
    // Written whole: the page ends as it began, the table has its header.
    absl::StatusOr<std::string> page = mlperf::base::ReadSmallFile(html, 64 << 20);
    absl::StatusOr<std::string> table = mlperf::base::ReadSmallFile(csv, 64 << 20);
    absl::StatusOr<std::string> full = mlperf::base::ReadSmallFile(results, 64 << 20);
    absl::StatusOr<std::string> rows = mlperf::base::ReadSmallFile(results_json, 64 << 20);
    if (!page.ok() || !page->starts_with("<!DOCTYPE html>") || !page->ends_with("</html>\n") ||
        !table.ok() || !full.ok() || !full->starts_with("round,") || !rows.ok() ||
        !rows->starts_with("["))
      __builtin_trap();
  }
  fs::remove_all(root, ec);
  return 0;
}
