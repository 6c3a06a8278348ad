#include "warehouse/schema.h"

#include "fmt/format.h"

namespace mlperf::warehouse {

std::string_view SchemaSql() {
  return R"sql(
CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS packages (
  package TEXT PRIMARY KEY,
  round TEXT NOT NULL,
  ruleset TEXT NOT NULL,
  submitter TEXT NOT NULL,
  verdict TEXT NOT NULL,
  input_error BIGINT NOT NULL,
  source_path TEXT NOT NULL,
  content_sha256 TEXT NOT NULL,
  files BIGINT NOT NULL,
  bytes BIGINT NOT NULL,
  repo_commit TEXT,
  checker_version TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS systems (
  package TEXT NOT NULL,
  system TEXT NOT NULL,
  submitter TEXT,
  division TEXT,
  availability TEXT,
  system_name TEXT,
  number_of_nodes BIGINT,
  accelerator_model_name TEXT,
  accelerators_per_node BIGINT,
  accelerators BIGINT,
  host_processor_model_name TEXT,
  framework TEXT,
  description_valid BIGINT NOT NULL,
  description_error TEXT,
  PRIMARY KEY (package, system)
);
CREATE TABLE IF NOT EXISTS system_fields (
  package TEXT NOT NULL,
  system TEXT NOT NULL,
  field TEXT NOT NULL,
  value TEXT,
  PRIMARY KEY (package, system, field)
);
CREATE TABLE IF NOT EXISTS results (
  package TEXT NOT NULL,
  system TEXT NOT NULL,
  benchmark TEXT NOT NULL,
  division TEXT,
  verdict TEXT NOT NULL,
  required_runs BIGINT,
  runs BIGINT NOT NULL,
  compliant_runs BIGINT NOT NULL,
  dropped_runs BIGINT NOT NULL,
  olympic_mean DOUBLE PRECISION,
  rcp_scaling_factor DOUBLE PRECISION NOT NULL,
  score DOUBLE PRECISION,
  energy DOUBLE PRECISION,
  global_batch_size DOUBLE PRECISION,
  convergence_mean DOUBLE PRECISION,
  rcp_status TEXT,
  rcp_message TEXT,
  rcp_record TEXT,
  rcp_mean DOUBLE PRECISION,
  rcp_stdev DOUBLE PRECISION,
  rcp_min_epochs DOUBLE PRECISION,
  PRIMARY KEY (package, system, benchmark)
);
CREATE TABLE IF NOT EXISTS runs (
  package TEXT NOT NULL,
  system TEXT NOT NULL,
  benchmark TEXT NOT NULL,
  run TEXT NOT NULL,
  file_sha256 TEXT,
  seed TEXT,
  run_start_ms DOUBLE PRECISION,
  run_stop_ms DOUBLE PRECISION,
  minutes DOUBLE PRECISION,
  status TEXT,
  converged BIGINT NOT NULL,
  compliant BIGINT NOT NULL,
  counted BIGINT NOT NULL,
  convergence DOUBLE PRECISION,
  epochs_to_converge DOUBLE PRECISION,
  samples_to_converge DOUBLE PRECISION,
  global_batch_size DOUBLE PRECISION,
  PRIMARY KEY (package, system, benchmark, run)
);
CREATE TABLE IF NOT EXISTS run_keys (
  package TEXT NOT NULL,
  system TEXT NOT NULL,
  benchmark TEXT NOT NULL,
  run TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (package, system, benchmark, run, key)
);
CREATE TABLE IF NOT EXISTS checks (
  package TEXT NOT NULL,
  system TEXT NOT NULL,
  benchmark TEXT NOT NULL,
  run TEXT NOT NULL,
  position BIGINT NOT NULL,
  level TEXT NOT NULL,
  message TEXT NOT NULL,
  PRIMARY KEY (package, position)
);
CREATE TABLE IF NOT EXISTS published_scores (
  round TEXT NOT NULL,
  submitter TEXT NOT NULL,
  system TEXT NOT NULL,
  benchmark TEXT NOT NULL,
  minutes DOUBLE PRECISION NOT NULL,
  source TEXT NOT NULL,
  PRIMARY KEY (round, submitter, system, benchmark)
);
CREATE VIEW rounds AS
  SELECT round, ruleset, COUNT(*) AS packages FROM packages GROUP BY round, ruleset;
CREATE VIEW submitters AS
  SELECT submitter, COUNT(*) AS packages, MIN(round) AS first_round, MAX(round) AS last_round
  FROM packages GROUP BY submitter;
CREATE VIEW benchmarks AS
  SELECT benchmark, COUNT(*) AS results FROM results GROUP BY benchmark;
)sql";
}

absl::Status EnsureSchema(Database& db) {
  // The views have no IF NOT EXISTS on both engines: the schema is made once.
  absl::StatusOr<QueryResult> have = db.Query(
      db.kind() == "sqlite"
          ? "SELECT COUNT(*) FROM sqlite_master WHERE name = 'schema_version'"
          : "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'schema_version' "
            "AND table_schema = current_schema()");
  if (!have.ok()) return have.status();
  const bool exists = std::get<long long>(have->rows.at(0).at(0)) > 0;
  if (!exists) {
    return InTransaction(db, [&] {
      return db.ExecuteScript(std::string(SchemaSql()) + "INSERT INTO schema_version VALUES (" +
                              std::to_string(kSchemaVersion) + ");");
    });
  }
  absl::StatusOr<QueryResult> version = db.Query("SELECT MAX(version) FROM schema_version");
  if (!version.ok()) return version.status();
  const DbValue& v = version->rows.at(0).at(0);
  if (!std::holds_alternative<long long>(v) || std::get<long long>(v) != kSchemaVersion) {
    return absl::FailedPreconditionError(
        fmt::format("the database has schema version {}, this tool reads version {}", ValueText(v),
                    kSchemaVersion));
  }
  return absl::OkStatus();
}

}  // namespace mlperf::warehouse
