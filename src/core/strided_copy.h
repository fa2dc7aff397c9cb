#pragma once
// Note [Strided copy]
// Copying a strided view into dense row-major memory (Tensor::clone, Tensor::contiguous) is the
// copy behind every permute/transpose/slice that a kernel needs dense. It is done by run, not by
// element:
//   - size-1 dims are dropped and adjacent dims that are contiguous in the source are merged
//     (a slice of rows becomes one dim per run of whole rows);
//   - when the innermost remaining dim has source stride 1, each run is one memcpy;
//   - when another dim has source stride 1 (a transpose: NCHW <-> NHWC, the K^T of attention),
//     the two dims are copied in square tiles so that reads and writes both stay in cache;
//   - otherwise a typed strided gather per row.
// The outer rows (and tiles) are split across threads through the parallel-for hook that the
// operator library installs at start-up (ops::installCoreParallelism, called by initKernels());
// core itself has no thread runtime (design.md: core uses std and fmt only), so without the hook
// (core's unit tests) the copy runs serially.

#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/tensor.h"

namespace torchless {

/// Runs fn(begin, end) over [0, n) in chunks, possibly in parallel; grain is the smallest chunk
/// worth a thread. The default runs fn(0, n) on the calling thread.
using ParallelForHook = void (*)(int64_t n, int64_t grain,
                                 const std::function<void(int64_t, int64_t)>& fn);

/// Installs the parallel-for used by copyToDense (nullptr restores the serial default). Called
/// once at start-up, before any copy runs.
void setParallelForHook(ParallelForHook hook);

/// Copies the elements of a strided array (sizes, strides in elements, itemSize bytes each,
/// starting at src) into dense row-major memory at dst, which must hold numel * itemSize bytes
/// and not overlap src. Strides may be 0 (broadcast) but not negative. Works for any itemSize;
/// 1, 2, 4, 8 and 16 take typed loops. See Note [Strided copy].
void copyToDense(void* dst, const void* src, const IntList& sizes, const IntList& strides,
                 size_t itemSize);

}  // namespace torchless
