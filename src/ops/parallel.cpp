#include "ops/parallel.h"

#include "core/strided_copy.h"
#include "ops/core_parallelism.h"
#include "ops/thread_budget.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace torchless::ops {

namespace {

// Whether setNumThreads chose this thread's count. OpenMP keeps the thread count per thread
// (libgomp: the calling thread's ICVs), so the choice is per thread too: other threads keep the
// default of Note [Threads that never hurt].
thread_local bool gUserThreads = false;

double seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Busy CPU seconds of the whole machine since boot (/proc/stat's first line; steal counts as
// busy), or a negative number when it cannot be read.
double machineBusySeconds() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return -1;
  unsigned long long v[8] = {};
  const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                            &v[3], &v[4], &v[5], &v[6], &v[7]);
  std::fclose(f);
  if (n < 4) return -1;
  unsigned long long busy = 0;
  for (int i = 0; i < n; ++i)
    if (i != 3 && i != 4) busy += v[i];  // all but idle and iowait
  static const long hz = sysconf(_SC_CLK_TCK);
  return static_cast<double>(busy) / static_cast<double>(hz > 0 ? hz : 100);
}

// The last look at the machine (Note [Threads that never hurt]).
struct LoadSample {
  std::mutex mu;
  double wall = -1, busy = -1, own = 0;
  int threads = 0;  // the answer of the last look; 0 = none yet
};
LoadSample& loadSample() {
  static LoadSample s;
  return s;
}

// Takes the first look (the next call compares against it).
void sampleLoad() {
  LoadSample& s = loadSample();
  std::lock_guard<std::mutex> lock(s.mu);
  s.wall = seconds(CLOCK_MONOTONIC);
  s.busy = machineBusySeconds();
  s.own = seconds(CLOCK_PROCESS_CPUTIME_ID);
}

}  // namespace

void setNumThreads(int n) {
  gUserThreads = n > 0;
  if (n <= 0) n = omp_get_num_procs();
  omp_set_num_threads(n);
}

void adaptThreadsToLoad() {
  if (gUserThreads) return;
  const int procs = omp_get_num_procs();
  if (procs <= 1) return;
  LoadSample& s = loadSample();
  int threads;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    const double wall = seconds(CLOCK_MONOTONIC);
    if (s.threads == 0 || wall - s.wall >= 0.1) {
      const double busy = machineBusySeconds(), own = seconds(CLOCK_PROCESS_CPUTIME_ID);
      if (busy < 0) return;
      if (s.busy >= 0 && wall - s.wall >= 0.02) {
        const double others = std::max(0.0, (busy - s.busy) - (own - s.own)) / (wall - s.wall);
        s.threads = std::clamp(procs - static_cast<int>(std::lround(others)), 1, procs);
      } else if (s.threads == 0) {
        s.threads = procs;
      }
      s.wall = wall;
      s.busy = busy;
      s.own = own;
    }
    threads = s.threads;
  }
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

int getNumThreads() { return omp_get_max_threads(); }

int threadsForWork(double flops) {
  const int most = omp_get_max_threads();
  if (!(flops >= 2 * kWorkPerThread) || most <= 1) return 1;  // also NaN
  const double n = std::floor(flops / kWorkPerThread);
  return n >= most ? most : static_cast<int>(n);
}

void installCoreParallelism() {
  sampleLoad();
  setParallelForHook([](int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    parallelFor(n, grain, fn);
  });
}

}  // namespace torchless::ops
