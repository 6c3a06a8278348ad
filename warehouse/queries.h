// The questions people ask of the warehouse, as named queries. Each reads
// plain rows with SQL that both engines run alike, then derives its columns
// (bests, ratios, scaling) and sorts here, so that SQLite and PostgreSQL
// give the same answer to the last digit, whatever the server's collation.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "warehouse/database.h"

namespace mlperf::warehouse {

struct QueryFilters {
  std::string benchmark, round, system, submitter, package;  // empty: all
  std::string division = "closed";
  double tolerance = 0.001;  // score-diffs: minutes of difference that count (as --claims)
};

struct NamedQuery {
  std::string_view name;
  std::string_view summary;  // one line for --help
  std::string_view filters;  // the flags it reads
};

const std::vector<NamedQuery>& NamedQueries();

// Runs a named query; an error names the unknown query or a missing filter.
absl::StatusOr<QueryResult> RunNamedQuery(Database& db, std::string_view name,
                                          const QueryFilters& filters);

// Rows sorted by every column from the first: numbers numerically, text by
// bytes, nulls last.
void SortRows(QueryResult& result);

}  // namespace mlperf::warehouse
