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

}  // namespace torchless::ops
