#include "base/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace mlperf::base {

int ParallelForThreads(size_t n_items, int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return static_cast<int>(
      std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(n_items, 1)));
}

void ParallelFor(size_t n_items, int threads, const std::function<void(size_t)>& fn) {
  if (n_items == 0) return;
  const int n_threads = ParallelForThreads(n_items, threads);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < n_items; i = next++) fn(i);
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(n_threads - 1));
  for (int t = 1; t < n_threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

}  // namespace mlperf::base
