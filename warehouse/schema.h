// The warehouse's tables, the same text on SQLite and PostgreSQL (types both
// know: TEXT, BIGINT, DOUBLE PRECISION; keys made of names, no sequences).
// docs/results_db.md describes every column.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "warehouse/database.h"

namespace mlperf::warehouse {

inline constexpr long long kSchemaVersion = 1;

// The CREATE statements (tables, then views).
std::string_view SchemaSql();

// Creates what is missing; an error for a database another schema version made.
absl::Status EnsureSchema(Database& db);

// The tables a package's rows live in, children first (what re-ingesting deletes).
inline constexpr std::string_view kPackageTables[] = {
    "checks", "run_keys", "runs", "results", "system_fields", "systems", "packages"};

}  // namespace mlperf::warehouse
