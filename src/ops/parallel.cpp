#include "ops/parallel.h"

namespace torchless::ops {

void setNumThreads(int n) {
  if (n <= 0) n = omp_get_num_procs();
  omp_set_num_threads(n);
}

int getNumThreads() { return omp_get_max_threads(); }

}  // namespace torchless::ops
