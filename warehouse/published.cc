#include "warehouse/published.h"

#include "checker/package/claims_audit.h"
#include "checker/package/layout.h"
#include "fmt/format.h"

namespace mlperf::warehouse {

absl::StatusOr<int> ImportPublished(Database& db, const std::string& path) {
  absl::StatusOr<std::string> text = package::ReadFileLimited(path, package::kMaxSmallFileBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<package::Claim>> claims = package::ParseClaimsCsv(*text, path);
  if (!claims.ok()) return claims.status();
  absl::Status stored = InTransaction(db, [&]() -> absl::Status {
    for (const package::Claim& c : *claims) {
      std::string source = path;
      for (const auto& [name, value] : c.other_columns) {
        if (name == "source" && !value.empty()) source = value;
      }
      const std::string round = "v" + c.version;
      if (absl::Status s = db.Execute(
              "DELETE FROM published_scores WHERE round = ? AND submitter = ? AND system = ? "
              "AND benchmark = ?",
              {round, c.submitter, c.system, c.benchmark});
          !s.ok())
        return s;
      if (absl::Status s = db.Execute(
              "INSERT INTO published_scores (round, submitter, system, benchmark, minutes, "
              "source) VALUES (?, ?, ?, ?, ?, ?)",
              {round, c.submitter, c.system, c.benchmark, c.minutes, source});
          !s.ok())
        return s;
    }
    return absl::OkStatus();
  });
  if (!stored.ok()) return stored;
  return static_cast<int>(claims->size());
}

}  // namespace mlperf::warehouse
