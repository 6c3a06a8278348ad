// Database over SQLite 3: one file, a rollback journal (a transaction cut
// short by a crash or a signal is undone on the next open), and a busy
// timeout so that a reader and a writer wait for each other.

#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "fmt/format.h"
#include "warehouse/database.h"

namespace mlperf::warehouse {
namespace {

class Statement {
 public:
  explicit Statement(sqlite3_stmt* s) : s_(s) {}
  ~Statement() { sqlite3_finalize(s_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  sqlite3_stmt* get() const { return s_; }

 private:
  sqlite3_stmt* s_;
};

class SqliteDatabase : public Database {
 public:
  SqliteDatabase(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteDatabase() override { sqlite3_close_v2(db_); }

  std::string_view kind() const override { return "sqlite"; }

  absl::Status Execute(std::string_view sql, const std::vector<DbValue>& params) override {
    absl::StatusOr<QueryResult> r = Query(sql, params);
    return r.status();
  }

  absl::StatusOr<QueryResult> Query(std::string_view sql,
                                    const std::vector<DbValue>& params) override {
    absl::StatusOr<std::unique_ptr<Statement>> st = Prepare(sql);
    if (!st.ok()) return st.status();
    if (absl::Status s = Bind(**st, params); !s.ok()) return s;
    QueryResult out;
    sqlite3_stmt* s = (*st)->get();
    const int n = sqlite3_column_count(s);
    for (int i = 0; i < n; ++i) out.columns.push_back(sqlite3_column_name(s, i));
    for (;;) {
      const int rc = sqlite3_step(s);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return Error("query");
      std::vector<DbValue> row;
      row.reserve(n);
      for (int i = 0; i < n; ++i) row.push_back(Column(s, i));
      out.rows.push_back(std::move(row));
    }
    return out;
  }

  absl::Status ExecuteScript(std::string_view sql) override {
    char* message = nullptr;
    const std::string text(sql);
    if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message) == SQLITE_OK)
      return absl::OkStatus();
    const std::string why = message ? message : "unknown error";
    sqlite3_free(message);
    return absl::InternalError(fmt::format("{}: {}", path_, why));
  }

  absl::Status InsertMany(std::string_view table, const std::vector<std::string>& columns,
                          const std::vector<std::vector<DbValue>>& rows) override {
    if (rows.empty()) return absl::OkStatus();
    absl::StatusOr<std::unique_ptr<Statement>> st = Prepare(InsertSql(table, columns, 1));
    if (!st.ok()) return st.status();
    for (const std::vector<DbValue>& row : rows) {
      sqlite3_reset((*st)->get());
      if (absl::Status s = Bind(**st, row); !s.ok()) return s;
      if (sqlite3_step((*st)->get()) != SQLITE_DONE) return Error("insert");
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Error(std::string_view what) const {
    return absl::InternalError(fmt::format("{}: {}: {}", path_, what, sqlite3_errmsg(db_)));
  }

  absl::StatusOr<std::unique_ptr<Statement>> Prepare(std::string_view sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &s, nullptr) !=
        SQLITE_OK) {
      sqlite3_finalize(s);
      return Error("SQL");
    }
    if (s == nullptr) return absl::InvalidArgumentError("empty SQL statement");
    return std::make_unique<Statement>(s);
  }

  absl::Status Bind(Statement& st, const std::vector<DbValue>& params) {
    sqlite3_stmt* s = st.get();
    sqlite3_clear_bindings(s);
    if (static_cast<int>(params.size()) != sqlite3_bind_parameter_count(s)) {
      return absl::InvalidArgumentError(fmt::format("the statement takes {} parameters, {} given",
                                                    sqlite3_bind_parameter_count(s),
                                                    params.size()));
    }
    for (size_t i = 0; i < params.size(); ++i) {
      const int at = static_cast<int>(i) + 1;
      int rc = SQLITE_OK;
      if (const auto* v = std::get_if<long long>(&params[i])) {
        rc = sqlite3_bind_int64(s, at, *v);
      } else if (const auto* d = std::get_if<double>(&params[i])) {
        rc = sqlite3_bind_double(s, at, *d);
      } else if (const auto* t = std::get_if<std::string>(&params[i])) {
        rc = sqlite3_bind_text(s, at, t->data(), static_cast<int>(t->size()), SQLITE_TRANSIENT);
      } else {
        rc = sqlite3_bind_null(s, at);
      }
      if (rc != SQLITE_OK) return Error("bind");
    }
    return absl::OkStatus();
  }

  static DbValue Column(sqlite3_stmt* s, int i) {
    switch (sqlite3_column_type(s, i)) {
      case SQLITE_INTEGER:
        return static_cast<long long>(sqlite3_column_int64(s, i));
      case SQLITE_FLOAT:
        return sqlite3_column_double(s, i);
      case SQLITE_NULL:
        return std::monostate{};
      default: {
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
        return std::string(text ? text : "", static_cast<size_t>(sqlite3_column_bytes(s, i)));
      }
    }
  }

  sqlite3* db_;
  std::string path_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Database>> OpenSqlite(const std::string& path, bool create) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      return absl::InvalidArgumentError(fmt::format("{}: not a database file", path));
  } else if (errno != ENOENT) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", path, std::strerror(errno)));
  } else if (!create) {
    return absl::NotFoundError(
        fmt::format("{}: no such database (results_db ingest makes one)", path));
  }
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    const std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close_v2(db);
    return absl::InvalidArgumentError(fmt::format("{}: {}", path, why));
  }
  sqlite3_busy_timeout(db, 30000);
  auto out = std::make_unique<SqliteDatabase>(db, path);
  // A file that is not a database fails here, before anything is written.
  if (absl::StatusOr<QueryResult> r = out->Query("SELECT count(*) FROM sqlite_master", {}); !r.ok())
    return absl::InvalidArgumentError(std::string(r.status().message()));
  return out;
}

}  // namespace mlperf::warehouse
