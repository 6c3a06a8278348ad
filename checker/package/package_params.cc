#include "checker/package/package_params.h"

namespace mlperf::package {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// Python's readlines(): each line keeps its '\n'; the last may lack one.
std::vector<std::string_view> ReadLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    size_t len = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(0, len));
    text.remove_prefix(len);
  }
  return lines;
}

}  // namespace

PackageParams ParsePackageParams(std::string_view text) {
  PackageParams p;
  for (std::string_view line : ReadLines(text)) {
    if (line == "rcp-bypass") {
      p.rcp_bypass = true;
    } else if (line == "seed-checker-bypass") {
      p.seed_checker_bypass = true;
    } else if (std::string_view t = Trim(line); t == "rcp-bypass" || t == "seed-checker-bypass") {
      p.ignored_requests.emplace_back(t);
    }
  }
  return p;
}

OrgParamsRequest ParseOrgParams(std::string_view text) {
  OrgParamsRequest r;
  for (std::string_view line : ReadLines(text)) {
    std::string_view t = Trim(line);
    if (t.starts_with("--")) t.remove_prefix(2);
    if (t.empty()) continue;
    if (t == "rcp-bypass" || t == "rcp_bypass") {
      r.rcp_bypass = true;
    } else if (t == "seed-checker-bypass" || t == "seed_checker_bypass") {
      r.seed_checker_bypass = true;
    } else {
      r.other_lines.emplace_back(t);
    }
  }
  return r;
}

}  // namespace mlperf::package
