// Database over PostgreSQL through libpq: '?' placeholders numbered $1..$n,
// parameters sent as text with their types, results typed from the column
// types, and the server's notices (CREATE ... IF NOT EXISTS) kept off stderr.

#include <libpq-fe.h>

#include <cmath>
#include <cstdlib>

#include "fmt/format.h"
#include "warehouse/database.h"

namespace mlperf::warehouse {
namespace {

// Type OIDs from PostgreSQL's catalog (pg_type.dat).
constexpr Oid kBool = 16, kInt8 = 20, kInt2 = 21, kInt4 = 23, kText = 25, kOid = 26, kFloat4 = 700,
              kFloat8 = 701, kNumeric = 1700;
// Rows per multi-row INSERT: well under the protocol's 65,535 parameters.
constexpr size_t kMaxParams = 30000;

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// '?' outside quotes, identifiers and comments becomes $1, $2, ...
std::string NumberPlaceholders(std::string_view sql) {
  std::string out;
  int n = 0;
  char quote = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '?') {
      out += fmt::format("${}", ++n);
      continue;
    }
    out += c;
  }
  return out;
}

std::string FloatText(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return fmt::format("{:.17g}", d);
}

class PostgresDatabase : public Database {
 public:
  explicit PostgresDatabase(PGconn* conn) : conn_(conn) {}
  ~PostgresDatabase() override { PQfinish(conn_); }

  std::string_view kind() const override { return "postgresql"; }

  absl::Status Execute(std::string_view sql, const std::vector<DbValue>& params) override {
    return Run(NumberPlaceholders(sql), params).status();
  }

  absl::StatusOr<QueryResult> Query(std::string_view sql,
                                    const std::vector<DbValue>& params) override {
    absl::StatusOr<Result> r = Run(NumberPlaceholders(sql), params);
    if (!r.ok()) return r.status();
    PGresult* res = r->get();
    QueryResult out;
    const int columns = PQnfields(res), rows = PQntuples(res);
    for (int c = 0; c < columns; ++c) out.columns.push_back(PQfname(res, c));
    out.rows.reserve(rows);
    for (int i = 0; i < rows; ++i) {
      std::vector<DbValue> row;
      row.reserve(columns);
      for (int c = 0; c < columns; ++c) row.push_back(Cell(res, i, c));
      out.rows.push_back(std::move(row));
    }
    return out;
  }

  absl::Status ExecuteScript(std::string_view sql) override {
    Result r(PQexec(conn_, std::string(sql).c_str()));
    return Check(r.get());
  }

  absl::Status InsertMany(std::string_view table, const std::vector<std::string>& columns,
                          const std::vector<std::vector<DbValue>>& rows) override {
    const size_t per_statement =
        std::max<size_t>(1, kMaxParams / std::max<size_t>(1, columns.size()));
    for (size_t at = 0; at < rows.size(); at += per_statement) {
      const size_t n = std::min(per_statement, rows.size() - at);
      std::vector<DbValue> params;
      params.reserve(n * columns.size());
      for (size_t i = at; i < at + n; ++i)
        params.insert(params.end(), rows[i].begin(), rows[i].end());
      if (absl::StatusOr<Result> r = Run(NumberPlaceholders(InsertSql(table, columns, n)), params);
          !r.ok())
        return r.status();
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Check(PGresult* r) const {
    const ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return absl::OkStatus();
    std::string why = r ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    for (char& c : why) c = c == '\n' ? ' ' : c;
    return absl::InternalError(fmt::format("postgresql: {}", why));
  }

  absl::StatusOr<Result> Run(const std::string& sql, const std::vector<DbValue>& params) {
    std::vector<std::string> text(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    std::vector<Oid> types(params.size(), 0);
    for (size_t i = 0; i < params.size(); ++i) {
      if (const auto* v = std::get_if<long long>(&params[i])) {
        text[i] = std::to_string(*v);
        types[i] = kInt8;
      } else if (const auto* d = std::get_if<double>(&params[i])) {
        text[i] = FloatText(*d);
        types[i] = kFloat8;
      } else if (const auto* t = std::get_if<std::string>(&params[i])) {
        text[i] = *t;
        types[i] = kText;
      } else {
        continue;  // null, its type inferred
      }
      values[i] = text[i].c_str();
    }
    Result r(PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), types.data(),
                          values.data(), nullptr, nullptr, 0));
    if (absl::Status s = Check(r.get()); !s.ok()) return s;
    return r;
  }

  static DbValue Cell(PGresult* res, int row, int column) {
    if (PQgetisnull(res, row, column)) return std::monostate{};
    const char* v = PQgetvalue(res, row, column);
    switch (PQftype(res, column)) {
      case kBool:
        return static_cast<long long>(v[0] == 't');
      case kInt2:
      case kInt4:
      case kInt8:
      case kOid:
        return std::strtoll(v, nullptr, 10);
      case kFloat4:
      case kFloat8:
      case kNumeric:
        return std::strtod(v, nullptr);  // accepts NaN and Infinity
      default:
        return std::string(v, static_cast<size_t>(PQgetlength(res, row, column)));
    }
  }

  PGconn* conn_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Database>> OpenPostgres(const std::string& uri) {
  // A server that does not answer is an error after 10 s, not a hang (the
  // URI's own connect_timeout, later in the list, wins).
  const char* keys[] = {"connect_timeout", "dbname", nullptr};
  const char* values[] = {"10", uri.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr) return absl::ResourceExhaustedError("postgresql: out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string why = PQerrorMessage(conn);
    PQfinish(conn);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    for (char& c : why) c = c == '\n' ? ' ' : c;
    return absl::UnavailableError(fmt::format("postgresql: cannot connect: {}", why));
  }
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  return std::make_unique<PostgresDatabase>(conn);
}

}  // namespace mlperf::warehouse
