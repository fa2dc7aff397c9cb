#pragma once
// oneDNN glue shared by linalg, conv, pool: one CPU engine and stream, memory descriptors
// for strided float tensors.

#include "core/tensor.h"

#include <oneapi/dnnl/dnnl.hpp>

namespace torchless::ops::dnnl_utils {

/// The process-wide CPU engine.
dnnl::engine& engine();
/// A stream on engine() (one per thread).
dnnl::stream& stream();
/// A plain f32 memory descriptor with the tensor's sizes and strides.
dnnl::memory::desc stridedDesc(const Tensor& t);
/// A memory object over the tensor's data (no copy).
dnnl::memory wrap(const dnnl::memory::desc& md, const Tensor& t);

}  // namespace torchless::ops::dnnl_utils
