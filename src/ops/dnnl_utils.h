#pragma once
// oneDNN glue shared by linalg, conv, pool: one CPU engine and stream, memory descriptors
// for strided float tensors.

#include "core/tensor.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <cstdint>
#include <memory>

namespace torchless::ops::dnnl_utils {

/// The process-wide CPU engine.
dnnl::engine& engine();
/// A stream on engine() (one per thread).
dnnl::stream& stream();
/// A plain f32 memory descriptor with the tensor's sizes and strides.
dnnl::memory::desc stridedDesc(const Tensor& t);
/// A memory object over the tensor's data (no copy).
dnnl::memory wrap(const dnnl::memory::desc& md, const Tensor& t);

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
