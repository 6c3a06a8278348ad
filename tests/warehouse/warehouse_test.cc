// The warehouse's parts on made-up data: the SQLite layer's typed values and
// refusals, the schema, the named queries' derived columns, provenance, and
// the dashboard's pages.

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "warehouse/dashboard.h"
#include "warehouse/database.h"
#include "warehouse/provenance.h"
#include "warehouse/queries.h"
#include "warehouse/result_format.h"
#include "warehouse/schema.h"

namespace mlperf::warehouse {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "warehouse_test_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void WriteFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::unique_ptr<Database> NewDb(const TempDir& dir) {
  absl::StatusOr<std::unique_ptr<Database>> db = OpenDatabase((dir.path() / "w.db").string(), true);
  EXPECT_TRUE(db.ok()) << db.status();
  EXPECT_TRUE(EnsureSchema(**db).ok());
  return *std::move(db);
}

TEST(Sqlite, ValuesComeBackTyped) {
  TempDir dir;
  std::unique_ptr<Database> db = NewDb(dir);
  ASSERT_TRUE(
      db->ExecuteScript("CREATE TABLE t (a BIGINT, b DOUBLE PRECISION, c TEXT, d TEXT)").ok());
  ASSERT_TRUE(db->InsertMany("t", {"a", "b", "c", "d"},
                             {{7LL, 0.1, std::string("x'?\""), DbValue()},
                              {-1LL, 1e300, std::string(""), std::string("é")}})
                  .ok());
  absl::StatusOr<QueryResult> r =
      db->Query("SELECT a, b, c, d FROM t WHERE a > ? ORDER BY a", {-5LL});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows.size(), 2u);
  EXPECT_EQ(std::get<long long>(r->rows[1][0]), 7);
  EXPECT_EQ(std::get<double>(r->rows[1][1]), 0.1);
  EXPECT_EQ(std::get<std::string>(r->rows[1][2]), "x'?\"");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(r->rows[1][3]));
  EXPECT_EQ(ValueText(r->rows[0][1]), "1e+300");  // Python's repr
  EXPECT_EQ(r->columns, (std::vector<std::string>{"a", "b", "c", "d"}));
  // A wrong parameter count is an error, not a silent null.
  EXPECT_FALSE(db->Query("SELECT a FROM t WHERE a = ?", {}).ok());
}

TEST(Sqlite, RefusesWhatIsNotADatabaseFile) {
  TempDir dir;
  EXPECT_FALSE(OpenDatabase(dir.path().string(), true).ok());  // a folder
  const fs::path log = dir.path() / "result_0.txt";
  WriteFile(log, ":::MLLOG {\"key\": \"x\"}\n");
  absl::StatusOr<std::unique_ptr<Database>> db = OpenDatabase(log.string(), true);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.status().message().find("result_0.txt"), std::string::npos);
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, ":::MLLOG {\"key\": \"x\"}\n");  // untouched
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(OpenDatabase(fifo.string(), true).ok());  // refused, not waited on
  // Queries never create a database.
  EXPECT_FALSE(OpenDatabase((dir.path() / "missing.db").string(), false).ok());
  EXPECT_FALSE(fs::exists(dir.path() / "missing.db"));
}

TEST(Schema, MadeOnceAndVersionChecked) {
  TempDir dir;
  std::unique_ptr<Database> db = NewDb(dir);
  EXPECT_TRUE(EnsureSchema(*db).ok());  // a second time: nothing to do
  ASSERT_TRUE(db->Execute("UPDATE schema_version SET version = 99").ok());
  absl::Status s = EnsureSchema(*db);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("99"), std::string::npos);
}

// One package with results at several scales and two rounds.
void AddResult(Database& db, const std::string& round, const std::string& system,
               const std::string& benchmark, long long accelerators, DbValue score,
               const std::string& verdict = "PASS", const std::string& model = "X100") {
  const std::string package = round + "/Org";
  (void)db.Execute(
      "INSERT INTO packages (package, round, ruleset, submitter, verdict, input_error, "
      "source_path, content_sha256, files, bytes, checker_version) "
      "SELECT ?, ?, '3.0.0', 'Org', 'PASS', 0, '/x', 'h', 0, 0, 'v' WHERE NOT EXISTS "
      "(SELECT 1 FROM packages WHERE package = ?)",
      {package, round, package});
  ASSERT_TRUE(db.InsertMany("systems",
                            {"package", "system", "submitter", "accelerators",
                             "accelerator_model_name", "description_valid"},
                            {{package, system, std::string("Org"), accelerators, model, 1LL}})
                  .ok());
  ASSERT_TRUE(db.InsertMany("results",
                            {"package", "system", "benchmark", "division", "verdict", "runs",
                             "compliant_runs", "dropped_runs", "rcp_scaling_factor", "score"},
                            {{package, system, benchmark, std::string("closed"), verdict, 5LL, 5LL,
                              0LL, 1.0, score}})
                  .ok());
}

TEST(Queries, BestKeepsTheFastestPerScaleAndTies) {
  TempDir dir;
  std::unique_ptr<Database> db = NewDb(dir);
  AddResult(*db, "v3.0", "a8", "bert", 8, 10.0);
  AddResult(*db, "v3.0", "b8", "bert", 8, 9.0);
  AddResult(*db, "v3.0", "c8", "bert", 8, 9.0);          // a tie: both kept
  AddResult(*db, "v3.0", "d8", "bert", 8, 1.0, "FAIL");  // failed: never best
  AddResult(*db, "v3.0", "e64", "bert", 64, 2.0);
  absl::StatusOr<QueryResult> best = RunNamedQuery(*db, "best", {});
  ASSERT_TRUE(best.ok()) << best.status();
  ASSERT_EQ(best->rows.size(), 3u);
  EXPECT_EQ(ValueText(best->rows[0][5]), "b8");
  EXPECT_EQ(ValueText(best->rows[1][5]), "c8");
  EXPECT_EQ(ValueText(best->rows[2][3]), "2.0");

  absl::StatusOr<QueryResult> scaling = RunNamedQuery(*db, "scaling", {});
  ASSERT_TRUE(scaling.ok());
  const auto& big = scaling->rows.back();  // 64 accelerators: 9/2 = 4.5x on 8x the devices
  EXPECT_EQ(std::get<double>(big[4]), 4.5);
  EXPECT_EQ(std::get<double>(big[5]), 4.5 / 8);

  absl::StatusOr<QueryResult> tput = RunNamedQuery(*db, "throughput", {});
  ASSERT_TRUE(tput.ok());
  ASSERT_EQ(tput->rows.size(), 1u);                     // one round, benchmark and model
  EXPECT_EQ(std::get<double>(tput->rows[0][5]), 72.0);  // 9 min x 8 beats 2 min x 64 = 128
  EXPECT_EQ(std::get<double>(tput->rows[0][6]), 60.0 / 72.0);
}

TEST(Queries, ScoreDiffsUseTheTolerance) {
  TempDir dir;
  std::unique_ptr<Database> db = NewDb(dir);
  AddResult(*db, "v3.0", "a8", "bert", 8, 10.0);
  AddResult(*db, "v3.0", "b8", "bert", 8, DbValue());  // no score recomputed
  ASSERT_TRUE(db->InsertMany("published_scores",
                             {"round", "submitter", "system", "benchmark", "minutes", "source"},
                             {{std::string("v3.0"), std::string("Org"), std::string("a8"),
                               std::string("bert"), 10.0005, std::string("s")},
                              {std::string("v3.0"), std::string("Org"), std::string("b8"),
                               std::string("bert"), 7.0, std::string("s")}})
                  .ok());
  absl::StatusOr<QueryResult> r = RunNamedQuery(*db, "score-diffs", {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows.size(), 1u);  // 0.0005 min is within 0.001
  EXPECT_EQ(ValueText(r->rows[0][2]), "b8");
  QueryFilters strict;
  strict.tolerance = 1e-5;
  r = RunNamedQuery(*db, "score-diffs", strict);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->rows.size(), 2u);
}

TEST(Queries, UnknownNamesAndMissingFiltersSaySo) {
  TempDir dir;
  std::unique_ptr<Database> db = NewDb(dir);
  absl::StatusOr<QueryResult> r = RunNamedQuery(*db, "fastest", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("best"), std::string::npos);  // lists the known ones
  EXPECT_FALSE(RunNamedQuery(*db, "history", {}).ok());
  EXPECT_FALSE(RunNamedQuery(*db, "rcp", {}).ok());
}

TEST(Format, TableCsvAndJson) {
  QueryResult r{{"name", "minutes"}, {{std::string("a,\"b\""), 1.5}, {DbValue(), 2LL}}};
  EXPECT_EQ(FormatResult(r, Format::kCsv), "name,minutes\n\"a,\"\"b\"\"\",1.5\n,2\n");
  EXPECT_EQ(FormatResult(r, Format::kJson),
            "[\n  {\n    \"name\": \"a,\\\"b\\\"\",\n    \"minutes\": 1.5\n  },\n"
            "  {\n    \"name\": null,\n    \"minutes\": 2\n  }\n]\n");
  EXPECT_EQ(FormatResult(r, Format::kTable), "name   minutes\na,\"b\"  1.5\n       2\n(2 rows)\n");
  EXPECT_FALSE(ParseFormat("xml").ok());
}

TEST(Provenance, Sha256AndPackageDigest) {
  TempDir dir;
  WriteFile(dir.path() / "org/a.txt", "abc");
  absl::StatusOr<std::string> h = FileSha256(dir.path() / "org/a.txt");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  absl::StatusOr<PackageDigest> d1 = DigestPackage(dir.path() / "org", 2);
  ASSERT_TRUE(d1.ok());
  EXPECT_EQ(d1->files.size(), 1u);
  EXPECT_EQ(d1->bytes, 3);
  WriteFile(dir.path() / "org/sub/b.txt", "x");
  absl::StatusOr<PackageDigest> d2 = DigestPackage(dir.path() / "org", 2);
  ASSERT_TRUE(d2.ok());
  EXPECT_NE(d1->sha256, d2->sha256);
  EXPECT_EQ(d2->files.at("sub/b.txt").size(), 64u);
  // Moving the package elsewhere keeps its digest (relative paths).
  fs::rename(dir.path() / "org", dir.path() / "moved");
  absl::StatusOr<PackageDigest> d3 = DigestPackage(dir.path() / "moved", 1);
  ASSERT_TRUE(d3.ok());
  EXPECT_EQ(d3->sha256, d2->sha256);
}

TEST(Provenance, CommitFromAGitWorkTree) {
  TempDir dir;
  const std::string id = "0123456789abcdef0123456789abcdef01234567";
  WriteFile(dir.path() / "repo/.git/HEAD", "ref: refs/heads/main\n");
  WriteFile(dir.path() / "repo/.git/packed-refs", "# pack-refs\n" + id + " refs/heads/main\n");
  fs::create_directories(dir.path() / "repo/v3.0/Org");
  EXPECT_EQ(RepoCommit(dir.path() / "repo/v3.0/Org").value_or(""), id);
  WriteFile(dir.path() / "repo/.git/refs/heads/main", std::string(40, 'f') + "\n");
  EXPECT_EQ(RepoCommit(dir.path() / "repo/v3.0/Org").value_or(""), std::string(40, 'f'));
  EXPECT_FALSE(RepoCommit(dir.path()).has_value());
}

TEST(Dashboard, OnePagePerBenchmarkWithCharts) {
  TempDir dir;
  std::unique_ptr<Database> db = NewDb(dir);
  absl::StatusOr<std::vector<DashboardPage>> empty = BuildDashboard(*db);
  ASSERT_TRUE(empty.ok());
  ASSERT_EQ(empty->size(), 1u);
  EXPECT_NE(empty->front().html.find("no results yet"), std::string::npos);
  AddResult(*db, "v3.0", "a8", "bert", 8, 10.0);
  AddResult(*db, "v4.0", "a8", "bert", 8, 8.0);
  AddResult(*db, "v3.0", "z8", "<script>", 8, 1.0);  // a hostile benchmark folder name
  absl::StatusOr<std::vector<DashboardPage>> pages = BuildDashboard(*db);
  ASSERT_TRUE(pages.ok()) << pages.status();
  ASSERT_EQ(pages->size(), 3u);
  EXPECT_EQ((*pages)[0].file, "index.html");
  EXPECT_EQ((*pages)[1].file, "_script_.html");
  EXPECT_EQ((*pages)[2].file, "bert.html");
  for (const DashboardPage& p : *pages)
    EXPECT_EQ(p.html.find("<script"), std::string::npos) << p.file;
  EXPECT_NE((*pages)[2].html.find("<svg"), std::string::npos);
  EXPECT_NE((*pages)[2].html.find("v4.0"), std::string::npos);
}

}  // namespace
}  // namespace mlperf::warehouse
