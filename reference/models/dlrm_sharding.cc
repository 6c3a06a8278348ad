#include "reference/models/dlrm_sharding.h"

#include <algorithm>
#include <numeric>

#include "base/check.h"

namespace mlperf::models {

ops::TableShard EmbeddingSharding::ShardOf(int64_t t, int rank) const {
  const int64_t rows = table_rows[static_cast<size_t>(t)];
  if (row_wise(t)) {
    const int64_t first = rows * rank / world_size, end = rows * (rank + 1) / world_size;
    return {.first_row = first, .rows = end - first, .full_rows = rows};
  }
  if (owner[static_cast<size_t>(t)] == rank) return {.first_row = 0, .rows = rows, .full_rows = 0};
  return {.first_row = 0, .rows = 0, .full_rows = rows};
}

std::vector<int64_t> EmbeddingSharding::PooledBy(int rank) const {
  std::vector<int64_t> pooled;
  for (int64_t t = 0; t < tables(); ++t)
    if (row_wise(t) || owner[static_cast<size_t>(t)] == rank) pooled.push_back(t);
  return pooled;
}

EmbeddingSharding PlanEmbeddingSharding(std::span<const int64_t> table_rows, int world_size,
                                        std::span<const int64_t> row_wise_tables) {
  MLPERF_CHECK(world_size >= 1);
  const auto tables = static_cast<int64_t>(table_rows.size());
  EmbeddingSharding plan{.world_size = world_size,
                         .table_rows = {table_rows.begin(), table_rows.end()},
                         .owner = std::vector<int>(table_rows.size(), 0)};
  const int64_t total = std::accumulate(table_rows.begin(), table_rows.end(), int64_t{0});
  std::vector<int64_t> load(static_cast<size_t>(world_size), 0);  // rows per rank
  for (int64_t t = 0; t < tables; ++t) {
    const int64_t rows = table_rows[static_cast<size_t>(t)];
    const bool listed =
        std::find(row_wise_tables.begin(), row_wise_tables.end(), t) != row_wise_tables.end();
    // rows > total / world, in integers.
    if (row_wise_tables.empty() ? world_size > 1 && rows * world_size > total : listed) {
      plan.owner[static_cast<size_t>(t)] = EmbeddingSharding::kRowWise;
      for (int r = 0; r < world_size; ++r) load[static_cast<size_t>(r)] += plan.ShardOf(t, r).rows;
    }
  }
  std::vector<int64_t> whole;
  for (int64_t t = 0; t < tables; ++t)
    if (!plan.row_wise(t)) whole.push_back(t);
  std::stable_sort(whole.begin(), whole.end(), [&](int64_t a, int64_t b) {
    return table_rows[static_cast<size_t>(a)] > table_rows[static_cast<size_t>(b)];
  });
  for (const int64_t t : whole) {
    const auto least = std::min_element(load.begin(), load.end()) - load.begin();
    plan.owner[static_cast<size_t>(t)] = static_cast<int>(least);
    load[static_cast<size_t>(least)] += table_rows[static_cast<size_t>(t)];
  }
  return plan;
}

}  // namespace mlperf::models
