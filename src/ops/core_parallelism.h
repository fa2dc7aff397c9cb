#pragma once
// The operator library's threads for core's own loops (core has no thread runtime).

namespace torchless::ops {

/// Lets core's strided copy (Note [Strided copy] in core/strided_copy.h) split large copies
/// across the OpenMP threads through parallelFor. Called once at start-up by initKernels().
void installCoreParallelism();

/// Note [Threads that never hurt]
/// With the default thread count (no setNumThreads(n > 0)), sets the calling thread's OpenMP
/// thread count for the next call to the cores that other processes leave idle: the CPU time
/// the whole machine spent (/proc/stat) minus this process's own, over the time since the last
/// look (at least 100 ms apart; cheaper calls reuse the last answer), at least 1. A team larger
/// than the idle cores waits in every parallel region for a worker the scheduler gave to
/// someone else, which made 2 threads several times slower than 1 on a half-busy machine
/// (issue 13). Called by Module::runMethod before each call; does nothing when the user chose
/// a thread count or /proc/stat cannot be read.
void adaptThreadsToLoad();

/// Note [Warm cores during a call]
/// Between two parallel regions the team's workers sleep at once (Note [OpenMP wait policy] in
/// tools/thread_env.cpp), and the core a worker ran on goes idle. Waking it for the next region
/// costs far more on a virtual machine than on bare metal: an idle virtual CPU halts, and a halted
/// one is woken through the hypervisor. A convolutional net at batch 1 starts 50-100 regions per
/// call (every layer, and the reorders around a Winograd convolution), so at 2 threads those
/// wake-ups ate most of what the second core gave (issue 13: mobilenet_v2 as fast at 2 threads
/// as at 1, where ONNX Runtime, whose pool spins, was 1.3x faster). While a WarmCores lives,
/// helper threads, one per other thread of the calling thread's team, spin on the other cores
/// at SCHED_IDLE priority: the scheduler runs them only on a core nothing else wants, and takes
/// the core back at once for any other thread (the OpenMP worker they keep warm, or another
/// process). So the virtual CPUs do not halt between the call's regions, and nothing spins once
/// the call returns: the helpers sleep when the last WarmCores of the process ends. Nothing is
/// started when the team has 1 thread, or with TORCHLESS_WARM_CORES=0 (to compare).
/// Module::runMethod keeps one for each call.
class WarmCores {
 public:
  WarmCores();
  ~WarmCores();
  WarmCores(const WarmCores&) = delete;
  WarmCores& operator=(const WarmCores&) = delete;
  /// Number of WarmCores of the process that keep helpers spinning now.
  static int engaged();

 private:
  bool engaged_ = false;
};

}  // namespace torchless::ops
