#pragma once
// Threads chosen by an op's amount of work (Note [Thread budget]).
//
// Note [Thread budget]
// A parallel region wakes the team's workers (they sleep ~20 us after a region: Note [OpenMP
// wait policy] in tools/launcher/) and ends on a barrier: about 10 us on this
// project's 2-core VMs when the cores are idle, much more when another process holds one. An
// op whose whole work takes less than that runs slower on 2 threads than on 1 (issue 13: a
// 2-layer d=128 encoder took 1.41 ms at 2 threads against 0.25 ms at 1; mobilenet_v2's late
// 7x7 layers). So an op that knows its work asks threadsForWork() how many threads it is worth
// and runs under a ThreadLimit of that many: oneDNN sizes its parallel work from the OpenMP
// thread count both when a primitive is created and when it runs, so the limit covers both
// (and caches keyed by omp_get_max_threads() then key on the limited count).

#include <omp.h>

namespace torchless::ops {

/// Floating-point operations (a multiply-add counts 2) that make one more thread worth waking:
/// about 40 us of one core's work at ~100 GFLOP/s, several times a wake-up and barrier.
constexpr double kWorkPerThread = 4e6;

/// The threads an op of `flops` floating-point operations should use: one per kWorkPerThread,
/// at least 1, at most the current OpenMP thread count. Note [Thread budget].
int threadsForWork(double flops);

/// Limits the calling thread's OpenMP thread count (what parallel regions, and oneDNN
/// primitives created or run meanwhile, use) to `n` while the guard lives, when `n` is below
/// the current count; restores the count on destruction. Note [Thread budget].
class ThreadLimit {
 public:
  explicit ThreadLimit(int n) : saved_(omp_get_max_threads()) {
    if (n >= 1 && n < saved_) omp_set_num_threads(n);
  }
  ~ThreadLimit() {
    if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
  }
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;

 private:
  int saved_;
};

}  // namespace torchless::ops
