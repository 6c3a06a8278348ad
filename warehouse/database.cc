#include "warehouse/database.h"

#include <cmath>

#include "absl/strings/str_join.h"
#include "base/json_writer.h"
#include "fmt/format.h"

namespace mlperf::warehouse {

absl::Status InTransaction(Database& db, absl::FunctionRef<absl::Status()> body) {
  if (absl::Status s = db.Execute("BEGIN"); !s.ok()) return s;
  absl::Status s = body();
  if (s.ok()) s = db.Execute("COMMIT");
  if (!s.ok()) (void)db.Execute("ROLLBACK");
  return s;
}

bool IsPostgresTarget(std::string_view target) {
  return target.starts_with("postgresql://") || target.starts_with("postgres://");
}

absl::StatusOr<std::unique_ptr<Database>> OpenDatabase(const std::string& target, bool create) {
  if (target.empty()) return absl::InvalidArgumentError("--db: empty");
  return IsPostgresTarget(target) ? OpenPostgres(target) : OpenSqlite(target, create);
}

std::string InsertSql(std::string_view table, const std::vector<std::string>& columns,
                      size_t rows) {
  std::string group = "(";
  for (size_t i = 0; i < columns.size(); ++i) group += i ? ", ?" : "?";
  group += ")";
  std::string sql = fmt::format("INSERT INTO {} ({}) VALUES ", table, absl::StrJoin(columns, ", "));
  for (size_t r = 0; r < rows; ++r) {
    if (r) sql += ", ";
    sql += group;
  }
  return sql;
}

std::string ValueText(const DbValue& v) {
  if (const auto* i = std::get_if<long long>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return json::PythonFloatRepr(*d);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return "";
}

double ValueNumber(const DbValue& v) {
  if (const auto* i = std::get_if<long long>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::nan("");
}

DbValue FiniteOrNull(double d) { return std::isfinite(d) ? DbValue(d) : DbValue(); }

}  // namespace mlperf::warehouse
