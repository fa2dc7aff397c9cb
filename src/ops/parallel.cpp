#include "ops/parallel.h"

#include "core/strided_copy.h"
#include "ops/core_parallelism.h"

namespace torchless::ops {

void setNumThreads(int n) {
  if (n <= 0) n = omp_get_num_procs();
  omp_set_num_threads(n);
}

int getNumThreads() { return omp_get_max_threads(); }

void installCoreParallelism() {
  setParallelForHook([](int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    parallelFor(n, grain, fn);
  });
}

}  // namespace torchless::ops
