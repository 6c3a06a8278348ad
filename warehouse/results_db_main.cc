// results_db: the results warehouse (docs/results_db.md). Ingests submission
// packages with compliance_check's own checker into SQLite or PostgreSQL,
// answers the questions auditors ask as named queries or plain SQL, and
// renders a static dashboard.
//
// Exit codes: 0 done; 2 usage, input or database error (an ingest still
// stores every package it could read, bad ones recorded with their errors).

#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/string_view.h"
#include "base/exit_codes.h"
#include "base/flags.h"
#include "base/output.h"
#include "base/version.h"
#include "checker/package/layout.h"
#include "checker/package/rcp_table.h"
#include "checker/rule_library.h"
#include "fmt/format.h"
#include "warehouse/dashboard.h"
#include "warehouse/ingest.h"
#include "warehouse/published.h"
#include "warehouse/queries.h"
#include "warehouse/result_format.h"
#include "warehouse/schema.h"

ABSL_FLAG(std::string, db, "results.db",
          "the warehouse: a SQLite file (made on the first ingest) or postgresql://user@host/db");
ABSL_FLAG(std::string, ruleset, "",
          "ingest: the training ruleset of packages outside a vN.M round folder, e.g. 5.0.0");
ABSL_FLAG(bool, rcp_bypass, false, "ingest: check as the package checker's --rcp-bypass");
ABSL_FLAG(bool, seed_checker_bypass, false, "ingest: skip the seed checker, as the official flag");
ABSL_FLAG(std::string, commit, "",
          "ingest: the results repository's commit (default: read from the git work tree)");
ABSL_FLAG(bool, force, false, "ingest: check and store again even when nothing changed");
ABSL_FLAG(int, jobs, 0, "ingest: threads for hashing and checking; 0 = one per core");
ABSL_FLAG(std::string, benchmark, "", "query: only this benchmark");
ABSL_FLAG(std::string, round, "", "query: only this round, e.g. v3.0");
ABSL_FLAG(std::string, system, "", "query history: this system (folder or system_name)");
ABSL_FLAG(std::string, submitter, "", "query history: this submitter");
ABSL_FLAG(std::string, package, "", "query rcp: this package, e.g. v3.0/NVIDIA");
ABSL_FLAG(std::string, division, "closed", "query: closed or open");
ABSL_FLAG(double, tolerance, 0.001, "query score-diffs: minutes of difference that count");
ABSL_FLAG(std::string, format, "table", "query and sql output: table, csv or json");
ABSL_FLAG(std::string, out, "", "dashboard: the folder to write the pages into (made if missing)");

namespace {

namespace fs = std::filesystem;
namespace wh = mlperf::warehouse;
using mlperf::kExitOk;
using mlperf::kExitUsage;

constexpr std::string_view kFlagNames[] = {
    "db",        "ruleset", "rcp_bypass", "seed_checker_bypass", "commit",  "force",    "jobs",
    "benchmark", "round",   "system",     "submitter",           "package", "division", "tolerance",
    "format",    "out"};

std::string UsageText() {
  std::string text =
      "Usage: results_db [--db FILE|postgresql://...] COMMAND ...\n"
      "\n"
      "  ingest PATH...     check packages as compliance_check does and store them: an\n"
      "                     organisation folder, or a folder of them (a results repository,\n"
      "                     a vN.M round); one transaction per package, unchanged ones skipped\n"
      "  publish CSV        store published scores (official_time_to_train.csv's columns)\n"
      "  query NAME         a named query (below), as --format table, csv or json\n"
      "  sql 'SELECT ...'   plain SQL over the schema (results_db schema prints it)\n"
      "  dashboard --out D  one static HTML page per benchmark, and an index\n"
      "  schema             the tables and views\n"
      "\nNamed queries:\n";
  for (const wh::NamedQuery& q : wh::NamedQueries())
    text += fmt::format("  {:<12} {} ({})\n", q.name, q.summary, q.filters);
  text +=
      "\nExit status: 0 done, 2 usage, input or database error (ingest stores every package it\n"
      "can read, and records bad ones with their errors).\n\nFlags:\n";
  return text + mlperf::base::FlagsHelp(kFlagNames);
}

int Fail(absl::string_view message) {
  std::fprintf(stderr, "results_db: %.*s\n", static_cast<int>(message.size()), message.data());
  return kExitUsage;
}

absl::StatusOr<std::unique_ptr<wh::Database>> Open(bool create) {
  absl::StatusOr<std::unique_ptr<wh::Database>> db =
      wh::OpenDatabase(absl::GetFlag(FLAGS_db), create);
  if (!db.ok()) return db;
  if (absl::Status s = wh::EnsureSchema(**db); !s.ok()) return s;
  return db;
}

int Emit(const wh::QueryResult& result) {
  absl::StatusOr<wh::Format> format = wh::ParseFormat(absl::GetFlag(FLAGS_format));
  if (!format.ok()) return Fail(format.status().message());
  if (absl::Status s = mlperf::base::WriteStdout(wh::FormatResult(result, *format)); !s.ok())
    return Fail(s.message());
  return kExitOk;
}

struct IngestTarget {
  fs::path org;
  std::string ruleset;
  std::string unchecked_why;  // a package that cannot be checked
};

absl::StatusOr<std::vector<IngestTarget>> ResolveIngest(const std::vector<std::string>& paths,
                                                        const mlperf::checker::RuleLibrary& rules) {
  namespace pkg = mlperf::package;
  std::vector<IngestTarget> out;
  std::optional<std::string> given;
  if (const std::string r = absl::GetFlag(FLAGS_ruleset); !r.empty()) given = r;
  const auto ruleset_of = [&](const fs::path& p) { return pkg::PackageRuleset(p, given, rules); };
  for (const std::string& p : paths) {
    absl::StatusOr<pkg::PathTarget> t = pkg::ClassifyPath(p);
    if (!t.ok()) return t.status();
    if (t->kind == pkg::PathKind::kLogFile)
      return absl::InvalidArgumentError(
          fmt::format("{}: ingest takes package folders (an organisation with systems/ and "
                      "results/, or a folder of them), not files",
                      p));
    if (t->kind == pkg::PathKind::kBenchmarkDir || t->kind == pkg::PathKind::kSystemDir)
      return absl::InvalidArgumentError(
          fmt::format("{}: ingest stores whole packages; give the organisation folder {}", p,
                      t->organizations.empty() ? "" : pkg::DisplayPath(t->organizations.front())));
    for (const fs::path& org : t->organizations) {
      absl::StatusOr<std::string> r = ruleset_of(org);
      if (!r.ok()) return r.status();
      out.push_back({org, *r, ""});
    }
    for (const auto& [path, why] : t->unchecked) {
      absl::StatusOr<std::string> r = ruleset_of(path);
      if (!r.ok()) return r.status();
      out.push_back({path, *r, why});
    }
  }
  return out;
}

int Ingest(const std::vector<std::string>& paths) {
  if (paths.empty()) return Fail("ingest: give one or more package folders");
  absl::StatusOr<mlperf::checker::RuleLibrary> rules = mlperf::checker::RuleLibrary::Embedded();
  if (!rules.ok()) return Fail(rules.status().message());
  absl::StatusOr<std::vector<IngestTarget>> targets = ResolveIngest(paths, *rules);
  if (!targets.ok()) return Fail(targets.status().message());
  absl::StatusOr<std::unique_ptr<wh::Database>> db = Open(/*create=*/true);
  if (!db.ok()) return Fail(db.status().message());
  int status = kExitOk;
  std::string first_error;
  int input_errors = 0;
  for (const IngestTarget& t : *targets) {
    wh::IngestOptions options{
        .check = {.ruleset = t.ruleset,
                  .folder_ruleset = mlperf::package::RulesetFromPath(t.org),
                  .rcp_bypass = absl::GetFlag(FLAGS_rcp_bypass),
                  .seed_checker_bypass = absl::GetFlag(FLAGS_seed_checker_bypass),
                  .jobs = absl::GetFlag(FLAGS_jobs)},
        .force = absl::GetFlag(FLAGS_force)};
    if (const std::string c = absl::GetFlag(FLAGS_commit); !c.empty()) options.commit = c;
    absl::StatusOr<wh::IngestResult> r =
        t.unchecked_why.empty() ? wh::IngestPackage(**db, t.org, *rules, options)
                                : wh::IngestUncheckable(**db, t.org, t.ruleset, t.unchecked_why);
    if (!r.ok()) {
      // Nothing of this package was stored; the others go on.
      std::fprintf(stderr, "results_db: %s: not stored: %s\n",
                   mlperf::package::DisplayPath(t.org).c_str(),
                   std::string(r.status().message()).c_str());
      status = kExitUsage;
      continue;
    }
    const char* what = r->outcome == wh::IngestOutcome::kUnchanged  ? "unchanged"
                       : r->outcome == wh::IngestOutcome::kReplaced ? "replaced"
                                                                    : "stored";
    const std::string line =
        fmt::format("{} {}: {}{}, {} result{}, {} run{}\n", what, r->package, r->verdict,
                    r->input_error ? " (input error)" : "", r->results, r->results == 1 ? "" : "s",
                    r->runs, r->runs == 1 ? "" : "s");
    if (absl::Status s = mlperf::base::WriteStdout(line); !s.ok()) return Fail(s.message());
    if (r->input_error) {
      ++input_errors;
      if (first_error.empty()) first_error = r->first_error;
    }
  }
  if (input_errors > 0) {
    Fail(input_errors == 1 ? fmt::format("input error (recorded): {}", first_error.substr(0, 500))
                           : fmt::format("{} packages with input errors (recorded); the first: {}",
                                         input_errors, first_error.substr(0, 500)));
    status = kExitUsage;
  }
  return status;
}

int Publish(const std::vector<std::string>& args) {
  if (args.size() != 1) return Fail("publish: give one CSV file");
  absl::StatusOr<std::unique_ptr<wh::Database>> db = Open(/*create=*/true);
  if (!db.ok()) return Fail(db.status().message());
  absl::StatusOr<int> n = wh::ImportPublished(**db, args[0]);
  if (!n.ok()) return Fail(n.status().message());
  absl::Status s = mlperf::base::WriteStdout(
      fmt::format("stored {} published score{}\n", *n, *n == 1 ? "" : "s"));
  return s.ok() ? kExitOk : Fail(s.message());
}

int Query(const std::vector<std::string>& args) {
  if (args.size() != 1) return Fail("query: give one query name (see --help)");
  if (absl::StatusOr<wh::Format> f = wh::ParseFormat(absl::GetFlag(FLAGS_format)); !f.ok())
    return Fail(f.status().message());
  absl::StatusOr<std::unique_ptr<wh::Database>> db = Open(/*create=*/false);
  if (!db.ok()) return Fail(db.status().message());
  wh::QueryFilters filters{.benchmark = absl::GetFlag(FLAGS_benchmark),
                           .round = absl::GetFlag(FLAGS_round),
                           .system = absl::GetFlag(FLAGS_system),
                           .submitter = absl::GetFlag(FLAGS_submitter),
                           .package = absl::GetFlag(FLAGS_package),
                           .division = absl::GetFlag(FLAGS_division),
                           .tolerance = absl::GetFlag(FLAGS_tolerance)};
  absl::StatusOr<wh::QueryResult> r = wh::RunNamedQuery(**db, args[0], filters);
  if (!r.ok()) return Fail(r.status().message());
  return Emit(*r);
}

int Sql(const std::vector<std::string>& args) {
  if (args.size() != 1) return Fail("sql: give one SQL statement, quoted");
  if (absl::StatusOr<wh::Format> f = wh::ParseFormat(absl::GetFlag(FLAGS_format)); !f.ok())
    return Fail(f.status().message());
  absl::StatusOr<std::unique_ptr<wh::Database>> db = Open(/*create=*/false);
  if (!db.ok()) return Fail(db.status().message());
  absl::StatusOr<wh::QueryResult> r = (*db)->Query(args[0]);
  if (!r.ok()) return Fail(r.status().message());
  return Emit(*r);
}

int Dashboard(const std::vector<std::string>& args) {
  if (!args.empty()) return Fail("dashboard: takes no arguments; the folder is --out DIR");
  const fs::path out = absl::GetFlag(FLAGS_out);
  if (out.empty()) return Fail("dashboard: give the folder with --out DIR");
  std::error_code ec;
  if (fs::exists(fs::symlink_status(out, ec)) && !fs::is_directory(out, ec))
    return Fail(fmt::format("--out={}: not a folder", out.string()));
  absl::StatusOr<std::unique_ptr<wh::Database>> db = Open(/*create=*/false);
  if (!db.ok()) return Fail(db.status().message());
  absl::StatusOr<std::vector<wh::DashboardPage>> pages = wh::BuildDashboard(**db);
  if (!pages.ok()) return Fail(pages.status().message());
  if (!fs::is_directory(out, ec) && !fs::create_directory(out, ec))
    return Fail(fmt::format("--out={}: cannot make the folder: {}", out.string(), ec.message()));
  // No page may replace the database or another tool's report being written.
  mlperf::base::OutputGuard guard;
  if (!wh::IsPostgresTarget(absl::GetFlag(FLAGS_db))) guard.AddInput(absl::GetFlag(FLAGS_db));
  for (const wh::DashboardPage& p : *pages) {
    if (absl::Status s = guard.Claim("out", out / p.file); !s.ok()) return Fail(s.message());
  }
  for (const wh::DashboardPage& p : *pages) {
    if (absl::Status s = mlperf::base::WriteOutput(out / p.file, p.html); !s.ok())
      return Fail(s.message());
  }
  absl::Status s = mlperf::base::WriteStdout(fmt::format(
      "wrote {} page{} into {}\n", pages->size(), pages->size() == 1 ? "" : "s", out.string()));
  return s.ok() ? kExitOk : Fail(s.message());
}

int Main(int argc, char** argv) {
  absl::StatusOr<mlperf::base::ParsedArgs> parsed =
      mlperf::base::ParseFlags(argc, argv, kFlagNames, /*allow_positional=*/true);
  if (!parsed.ok()) return Fail(parsed.status().message());
  if (parsed->help) return mlperf::base::WriteStdout(UsageText()).ok() ? kExitOk : kExitUsage;
  if (parsed->version)
    return mlperf::base::WriteStdout(mlperf::base::VersionLine("results_db")).ok() ? kExitOk
                                                                                   : kExitUsage;
  if (parsed->positional.empty())
    return Fail("give a command: ingest, publish, query, sql, dashboard or schema (see --help)");
  const std::string command = parsed->positional.front();
  const std::vector<std::string> args(parsed->positional.begin() + 1, parsed->positional.end());
  if (command == "ingest") return Ingest(args);
  if (command == "publish") return Publish(args);
  if (command == "query") return Query(args);
  if (command == "sql") return Sql(args);
  if (command == "dashboard") return Dashboard(args);
  if (command == "schema") {
    return mlperf::base::WriteStdout(std::string(wh::SchemaSql()).substr(1)).ok() ? kExitOk
                                                                                  : kExitUsage;
  }
  return Fail(fmt::format("unknown command '{}' (see --help)", command));
}

}  // namespace

int main(int argc, char** argv) {
  return mlperf::base::RunTool("results_db", [&] { return Main(argc, argv); });
}
