// Runs independent work items on several threads: the one parallel loop of the
// command-line tools (logs checked in parallel).
#pragma once

#include <cstddef>
#include <functional>

namespace mlperf::base {

// Calls fn(i) once for every i in [0, n_items), on up to `threads` threads
// (<= 0: one per core), never more threads than items; the calling thread is
// one of them. Items are handed out in order as threads become free, so a few
// slow items do not hold up the rest. fn must not throw.
void ParallelFor(size_t n_items, int threads, const std::function<void(size_t)>& fn);

// The number of threads ParallelFor uses for these arguments.
int ParallelForThreads(size_t n_items, int threads);

}  // namespace mlperf::base
