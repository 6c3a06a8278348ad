#include "warehouse/dashboard.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "base/svg_chart.h"
#include "base/version.h"
#include "fmt/format.h"
#include "warehouse/queries.h"

namespace mlperf::warehouse {
namespace {

using base::XmlEscape;

constexpr char kStyle[] = R"(
body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1100px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.path{color:#666;font-size:.85em}figure{margin:.5em 0}
)";

std::string Page(const std::string& title, const std::string& body) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>{}</title>\n"
      "<style>{}</style></head>\n<body>\n<h1>{}</h1>\n<p class=\"path\">{}</p>\n{}</body></html>\n",
      XmlEscape(title), kStyle, XmlEscape(title), XmlEscape(base::VersionLine("results_db")), body);
}

// "v3.0" -> 3.0 on the chart's x axis.
double RoundNumber(const std::string& round) {
  return std::strtod(round.c_str() + (round.starts_with("v") ? 1 : 0), nullptr);
}

// A table of a query's columns, each cell carrying data-col for the browser test.
std::string Table(const QueryResult& r, const char* id) {
  std::string out = fmt::format("<table id=\"{}\"><thead><tr>", id);
  for (const std::string& c : r.columns) out += "<th>" + XmlEscape(c) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (const auto& row : r.rows) {
    out += "<tr>";
    for (size_t i = 0; i < row.size(); ++i) {
      const bool number = !std::holds_alternative<std::string>(row[i]);
      out += fmt::format("<td{} data-col=\"{}\">{}</td>", number ? " class=\"num\"" : "",
                         XmlEscape(r.columns[i]), XmlEscape(ValueText(row[i])));
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

absl::StatusOr<std::string> BenchmarkPage(Database& db, const std::string& benchmark) {
  QueryFilters f;
  f.benchmark = benchmark;
  absl::StatusOr<QueryResult> best = RunNamedQuery(db, "best", f);
  if (!best.ok()) return best.status();
  absl::StatusOr<QueryResult> throughput = RunNamedQuery(db, "throughput", f);
  if (!throughput.ok()) return throughput.status();

  base::LineChart scale{.id = "scale",
                        .title = "Best time to train by accelerator count, per round",
                        .x_label = "accelerators",
                        .y_label = "minutes",
                        .log2_x = true,
                        .log10_y = true};
  std::map<std::string, base::ChartSeries> by_round;
  for (const auto& row : best->rows) {
    const std::string round = ValueText(row[0]);
    base::ChartSeries& s = by_round[round];
    s.name = round;
    const std::pair<double, double> p{ValueNumber(row[2]), ValueNumber(row[3])};
    if (s.points.empty() || s.points.back().first != p.first) s.points.push_back(p);
  }
  for (auto& [round, s] : by_round) scale.series.push_back(std::move(s));

  base::LineChart per_acc{.id = "throughput",
                          .title = "Trainings per accelerator-hour (best), per accelerator model",
                          .x_label = "round",
                          .y_label = "trainings per accelerator-hour",
                          .y_from_zero = true};
  std::map<std::string, base::ChartSeries> by_model;
  for (const auto& row : throughput->rows) {
    const std::string model = ValueText(row[2]).empty() ? "(unknown)" : ValueText(row[2]);
    base::ChartSeries& s = by_model[model];
    s.name = model;
    s.points.push_back({RoundNumber(ValueText(row[0])), ValueNumber(row[6])});
  }
  for (auto& [model, s] : by_model) {
    std::sort(s.points.begin(), s.points.end());
    per_acc.series.push_back(std::move(s));
  }

  std::string body = "<p><a href=\"index.html\">All benchmarks</a></p>\n";
  body += "<h2>Time to train against scale</h2>\n<figure>" + base::RenderSvg(scale) + "</figure>\n";
  body += "<h2>Per-accelerator throughput over the rounds</h2>\n<figure>" +
          base::RenderSvg(per_acc) + "</figure>\n";
  body += "<h2>Fastest passing results (closed division)</h2>\n" + Table(*best, "best");
  body += "<h2>Per-accelerator throughput</h2>\n" + Table(*throughput, "throughput-table");
  return Page(fmt::format("{}: results in the warehouse", benchmark), body);
}

}  // namespace

std::string PageFile(const std::string& benchmark) {
  std::string name;
  for (char c : benchmark)
    name +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  if (name.empty() || name == "index" || name.starts_with(".")) name = "_" + name;
  return name + ".html";
}

absl::StatusOr<std::vector<DashboardPage>> BuildDashboard(Database& db) {
  absl::StatusOr<QueryResult> summary = db.Query(R"sql(
SELECT r.benchmark, COUNT(*) AS results, COUNT(DISTINCT p.round) AS rounds,
       COUNT(DISTINCT p.submitter) AS submitters,
       SUM(CASE WHEN r.verdict = 'PASS' THEN 1 ELSE 0 END) AS passed
FROM results r JOIN packages p ON p.package = r.package
GROUP BY r.benchmark
)sql");
  if (!summary.ok()) return summary.status();
  SortRows(*summary);
  std::vector<DashboardPage> pages;
  std::set<std::string> files;
  std::string index =
      "<table id=\"benchmarks\"><thead><tr><th>benchmark</th><th>results</th><th>rounds</th>"
      "<th>submitters</th><th>passed</th></tr></thead><tbody>\n";
  for (const auto& row : summary->rows) {
    const std::string benchmark = ValueText(row[0]);
    std::string file = PageFile(benchmark);
    while (!files.insert(file).second) file = "_" + file;  // two names that clean alike
    absl::StatusOr<std::string> page = BenchmarkPage(db, benchmark);
    if (!page.ok()) return page.status();
    pages.push_back({file, *std::move(page)});
    index += fmt::format(
        "<tr><td data-col=\"benchmark\"><a href=\"{}\">{}</a></td>"
        "<td class=\"num\" data-col=\"results\">{}</td><td class=\"num\" "
        "data-col=\"rounds\">{}</td>"
        "<td class=\"num\" data-col=\"submitters\">{}</td>"
        "<td class=\"num\" data-col=\"passed\">{}</td></tr>\n",
        XmlEscape(file), XmlEscape(benchmark), ValueText(row[1]), ValueText(row[2]),
        ValueText(row[3]), ValueText(row[4]));
  }
  index += "</tbody></table>\n";
  if (summary->rows.empty()) index = "<p>The warehouse holds no results yet.</p>\n";
  pages.insert(pages.begin(), {"index.html", Page("Results warehouse", index)});
  return pages;
}

}  // namespace mlperf::warehouse
