// How DLRM's embedding tables are laid out over the ranks: a table larger
// than an even share of all tables' bytes is split by rows over every rank
// (row-wise), the others are held whole, each by one rank (table-wise),
// placed largest first on the rank with the fewest bytes so far. Every rank
// computes the same plan from the same sizes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "reference/kernels/ops/recommendation.h"

namespace mlperf::models {

struct EmbeddingSharding {
  static constexpr int kRowWise = -1;
  int world_size = 1;
  std::vector<int64_t> table_rows;
  std::vector<int> owner;  // per table: the rank holding it whole, or kRowWise

  int64_t tables() const { return static_cast<int64_t>(owner.size()); }
  bool row_wise(int64_t t) const { return owner[static_cast<size_t>(t)] == kRowWise; }
  // The rows of table t that `rank` holds, as the embedding ops take them:
  // the whole table (full_rows 0) on its owner, rows [R r / W, R (r + 1) / W)
  // of a row-wise one, none (rows 0) elsewhere.
  ops::TableShard ShardOf(int64_t t, int rank) const;
  // The tables `rank` pools (whole, or the part its rows give), ascending:
  // its whole tables and every row-wise one.
  std::vector<int64_t> PooledBy(int rank) const;
};

// The tables share their width: rows are what is balanced.
// `row_wise_tables`: the tables to split by rows; empty, those larger than
// an even share of all tables (none on one rank).
EmbeddingSharding PlanEmbeddingSharding(std::span<const int64_t> table_rows, int world_size,
                                        std::span<const int64_t> row_wise_tables = {});

}  // namespace mlperf::models
