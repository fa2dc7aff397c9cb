#pragma once
// The operator library's threads for core's own loops (core has no thread runtime).

namespace torchless::ops {

/// Lets core's strided copy (Note [Strided copy] in core/strided_copy.h) split large copies
/// across the OpenMP threads through parallelFor. Called once at start-up by initKernels().
void installCoreParallelism();

}  // namespace torchless::ops
