// Running OpenBLAS in the calling thread, for kernels that split work over
// their own OpenMP team and call single-threaded GEMMs from each thread. On
// few cores an OpenMP team spinning next to OpenBLAS's own thread pool costs
// more than either parallelises, so such kernels keep the pool asleep.
#pragma once

#include <cblas.h>
#include <omp.h>

#include <cstdint>

namespace mlperf::cpu {

class BlasInCallingThread {
 public:
  BlasInCallingThread() : saved_(openblas_get_num_threads()) {
    if (saved_ != 1) openblas_set_num_threads(1);
  }
  ~BlasInCallingThread() {
    if (saved_ != 1) openblas_set_num_threads(saved_);
  }
  BlasInCallingThread(const BlasInCallingThread&) = delete;
  BlasInCallingThread& operator=(const BlasInCallingThread&) = delete;

 private:
  int saved_;
};

// The calling OpenMP thread's contiguous share [begin, end) of `total` items.
inline void ThreadShare(int64_t total, int64_t* begin, int64_t* end) {
  const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
  *begin = total * t / n;
  *end = total * (t + 1) / n;
}

}  // namespace mlperf::cpu
