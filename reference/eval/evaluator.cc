#include "reference/eval/evaluator.h"

#include <algorithm>

#include "base/check.h"

namespace mlperf::eval {

void RatioEvaluator::Add(const models::Batch& batch) {
  const models::MetricSums b = model_.EvaluateBatch(batch);
  sums_.numerator += b.numerator;
  sums_.denominator += b.denominator;
}

double RatioEvaluator::Finish(dist::Communicator& comm) {
  float sums[2] = {static_cast<float>(sums_.numerator), static_cast<float>(sums_.denominator)};
  comm.AllReduceSum(sums, 2);
  return sums[1] > 0.0f ? static_cast<double>(sums[0]) / sums[1] : 0.0;
}

std::vector<float> GatherRecords(dist::Communicator& comm, std::span<const float> mine,
                                 int record_size) {
  MLPERF_CHECK(record_size > 0 && mine.size() % static_cast<size_t>(record_size) == 0);
  const int world = comm.world_size(), rank = comm.rank();
  // The counts first, then the records in slots of the largest count: a
  // sum over ranks of buffers that are zero outside each rank's own slot
  // gathers them exactly.
  // A count travels as two floats below 2^24 each, so it stays exact.
  constexpr int64_t kLow = int64_t{1} << 24;
  std::vector<float> halves(2 * static_cast<size_t>(world), 0.0f);
  const int64_t own = static_cast<int64_t>(mine.size()) / record_size;
  halves[2 * rank] = static_cast<float>(own / kLow);
  halves[2 * rank + 1] = static_cast<float>(own % kLow);
  comm.AllReduceSum(halves.data(), 2 * world);
  std::vector<int64_t> counts(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r)
    counts[r] =
        static_cast<int64_t>(halves[2 * r]) * kLow + static_cast<int64_t>(halves[2 * r + 1]);
  const size_t slot =
      static_cast<size_t>(*std::max_element(counts.begin(), counts.end())) * record_size;
  std::vector<float> slots(slot * static_cast<size_t>(world), 0.0f);
  std::copy(mine.begin(), mine.end(), slots.begin() + static_cast<ptrdiff_t>(slot * rank));
  if (!slots.empty()) comm.AllReduceSum(slots.data(), static_cast<int64_t>(slots.size()));
  std::vector<float> all;
  for (int r = 0; r < world; ++r) {
    const auto first = slots.begin() + static_cast<ptrdiff_t>(slot * r);
    all.insert(all.end(), first, first + static_cast<ptrdiff_t>(counts[r]) * record_size);
  }
  return all;
}

}  // namespace mlperf::eval
