// The results warehouse's storage: one small interface over SQLite (a file,
// no server) and PostgreSQL (libpq), so that the schema, the ingest and every
// query are written once and give the same answers on both.
//
// SQL is written with '?' placeholders; the PostgreSQL side numbers them.
// Values come back typed (integer, float, text, null) whatever the engine's
// own types, so that a float prints the same from either.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mlperf::warehouse {

using DbValue = std::variant<std::monostate, long long, double, std::string>;

struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<DbValue>> rows;
};

class Database {
 public:
  virtual ~Database() = default;
  // "sqlite" or "postgresql".
  virtual std::string_view kind() const = 0;
  // One statement with '?' parameters.
  virtual absl::Status Execute(std::string_view sql, const std::vector<DbValue>& params = {}) = 0;
  virtual absl::StatusOr<QueryResult> Query(std::string_view sql,
                                            const std::vector<DbValue>& params = {}) = 0;
  // Several statements separated by ';', no parameters (the schema).
  virtual absl::Status ExecuteScript(std::string_view sql) = 0;
  // Rows into a table, as fast as the engine allows (a statement prepared
  // once; multi-row statements over a network).
  virtual absl::Status InsertMany(std::string_view table, const std::vector<std::string>& columns,
                                  const std::vector<std::vector<DbValue>>& rows) = 0;
};

// Runs `body` in a transaction: committed when it succeeds, rolled back when
// anything fails, so that nothing of it is left half done.
absl::Status InTransaction(Database& db, absl::FunctionRef<absl::Status()> body);

// "postgresql://..." or "postgres://..." (a libpq connection URI), else a
// SQLite file: created when missing only with `create`; anything but a
// regular file (a folder, a device, a FIFO) is refused, never opened. The
// error names the target.
absl::StatusOr<std::unique_ptr<Database>> OpenDatabase(const std::string& target, bool create);

bool IsPostgresTarget(std::string_view target);

absl::StatusOr<std::unique_ptr<Database>> OpenSqlite(const std::string& path, bool create);
absl::StatusOr<std::unique_ptr<Database>> OpenPostgres(const std::string& uri);

// "INSERT INTO table (a, b) VALUES " followed by `rows` groups of placeholders.
std::string InsertSql(std::string_view table, const std::vector<std::string>& columns, size_t rows);

// A value as text for tables and CSV: floats as Python's repr, null empty.
std::string ValueText(const DbValue& v);

// An integer or float as a double; NaN for text and null.
double ValueNumber(const DbValue& v);

// A finite number, else null.
DbValue FiniteOrNull(double d);

}  // namespace mlperf::warehouse
