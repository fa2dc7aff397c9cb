#pragma once
// Float32 fast paths of the hottest elementwise ops (activations and residual adds of convnets)
// over plain contiguous buffers. Each loop is compiled twice (AVX2 and the baseline x86-64,
// chosen at load time by GCC's function multiversioning), split across threads for large n,
// and gives bit-identical results to the generic TensorIter kernels in elementwise.cpp
// (same formulas, same float arithmetic). `y` may equal `x` (in place).

#include <cstdint>

namespace torchless::ops::fast {

/// y = x < 0 ? 0 : x (NaN stays NaN), as aten::relu.
void relu(const float* x, float* y, int64_t n);
/// y = min(max(x, lo), hi) with std::min/std::max semantics (NaN in x stays NaN); lo <= hi,
/// neither NaN (hardtanh, relu6, clamp). Use -inf/+inf for a missing bound.
void clamp(const float* x, float* y, int64_t n, float lo, float hi);
/// y = 1 / (1 + exp(-x)).
void sigmoid(const float* x, float* y, int64_t n);
/// y = x / (1 + exp(-x)).
void silu(const float* x, float* y, int64_t n);
/// y = x * min(max(x + 3, 0), 6) / 6.
void hardswish(const float* x, float* y, int64_t n);
/// y = a + b (alpha == 1) or a + alpha * b.
void add(const float* a, const float* b, float* y, int64_t n, float alpha);
/// y = a * b.
void mul(const float* a, const float* b, float* y, int64_t n);

}  // namespace torchless::ops::fast
