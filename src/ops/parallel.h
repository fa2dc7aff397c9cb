#pragma once
// Threads: OpenMP is the one thread runtime (the same libgomp oneDNN is built with).

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace torchless::ops {

/// Sets the number of threads kernels (and oneDNN) use for parallel regions started by the
/// calling thread (OpenMP keeps the count per thread); n <= 0 means the number of cores, and
/// the adaptive default of adaptThreadsToLoad() returns. Other threads are not affected.
void setNumThreads(int n);
/// The number of threads a parallel region will use.
int getNumThreads();

/// Calls fn(begin, end) over [0, n) split in contiguous chunks across threads when n is at
/// least `grain` (and we are not already inside a parallel region); serially otherwise.
template <typename Fn>
void parallelFor(int64_t n, int64_t grain, const Fn& fn) {
  if (n <= 0) return;
  int threads = 1;
  if (n >= 2 * std::max<int64_t>(grain, 1) && !omp_in_parallel())
    threads =
        static_cast<int>(std::min<int64_t>(omp_get_max_threads(), n / std::max<int64_t>(grain, 1)));
  if (threads <= 1) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num();
    const int64_t nt = omp_get_num_threads();
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t b = t * chunk;
    const int64_t e = std::min(n, b + chunk);
    if (b < e) fn(b, e);
  }
}

}  // namespace torchless::ops
