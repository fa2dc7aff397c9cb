#pragma once
// oneDNN glue shared by linalg, conv, pool: one CPU engine and stream, memory descriptors
// for strided float tensors.

#include "core/tensor.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

namespace torchless::ops::dnnl_utils {

/// The process-wide CPU engine.
dnnl::engine& engine();
/// A stream on engine() (one per thread).
dnnl::stream& stream();
/// A plain f32 memory descriptor with the tensor's sizes and strides.
dnnl::memory::desc stridedDesc(const Tensor& t);
/// A memory object over the tensor's data (no copy).
dnnl::memory wrap(const dnnl::memory::desc& md, const Tensor& t);

// Note [Scratchpads of shared primitives]
// oneDNN as Debian builds it (OpenMP runtime, DNNL_ENABLE_CONCURRENT_EXEC off) gives a primitive
// made with the library-managed scratchpad (the default) a buffer global to the thread that
// made it, and such a primitive "should be executed in the same thread it was created in"
// (oneDNN's scratchpad_mode docs). Ours are not: the caches below, the convolution and matmul
// caches and the engine's plans are shared by every thread of the process (a server warms up on
// its loading thread and runs on request threads; an SDK user loads on one thread and calls on
// others), and a primitive run on another thread writes through a scratchpad sized for the
// thread that made it (the server crashed in a Winograd kernel). So every primitive we keep is
// made with userScratchpad(), and each execution passes the running thread's buffer
// (threadScratchpad, one per thread, grown to the largest any primitive asked for, like
// oneDNN's own); two executions never share a buffer because a thread runs one at a time.

/// An attribute asking for the user-managed scratchpad (Note [Scratchpads of shared
/// primitives]); add post-ops and scales to it as to a default one.
dnnl::primitive_attr userScratchpad();
/// The calling thread's scratchpad for oneDNN primitives, at least `bytes` long (grown, never
/// shrunk; allocates only when a primitive needs more than any before it on this thread).
/// Throws std::bad_alloc when the memory cannot be had.
void* threadScratchpad(size_t bytes);
/// Runs `prim` (made with userScratchpad()) on this thread's stream with `args` and this
/// thread's scratchpad when the primitive needs one (DNNL_ARG_SCRATCHPAD is set in `args`),
/// then waits for it. Throws dnnl::error as the primitive does.
void execute(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory>& args);

// Note [oneDNN primitive cache]
// Creating a oneDNN primitive costs as much as running a small one (tens of microseconds), so
// the kernels that call oneDNN per op (softmax, layer_norm) keep one primitive per distinct
// problem in a process-wide cache of at most kMaxCachedPrimitives entries, emptied when full
// (as Note [oneDNN matmul cache] in linalg.cpp). The key holds everything the primitive
// depends on: a kind tag, the sizes, the flags, and the thread count (oneDNN sizes its work
// for the OpenMP threads present when the primitive is made).

/// The key of a cached primitive; unused entries stay 0.
using PrimitiveKey = std::array<int64_t, 12>;

/// The cached primitive for `key`, or null. Thread-safe.
std::shared_ptr<dnnl::primitive> findPrimitive(const PrimitiveKey& key);
/// Stores `prim` under `key` and returns it. Thread-safe.
std::shared_ptr<dnnl::primitive> storePrimitive(const PrimitiveKey& key, dnnl::primitive prim);

/// The cached primitive for `key`, made by `make()` (returning a dnnl::primitive) on a miss.
template <class Make>
std::shared_ptr<dnnl::primitive> cachedPrimitive(const PrimitiveKey& key, Make&& make) {
  if (auto p = findPrimitive(key)) return p;
  return storePrimitive(key, make());
}

}  // namespace torchless::ops::dnnl_utils
