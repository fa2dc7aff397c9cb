#pragma once
// Matrix products. Float32 runs on oneDNN's matmul (strided operands, no copies for
// transposed views); other dtypes use plain loops accumulating in double / int64. Operands
// must share a dtype ("expected mat1 and mat2 to have the same dtype, but got: float !=
// double").

#include "core/tensor.h"
#include "ops/dispatch.h"

#include <optional>

namespace torchless::ops {

/// torch.mm: [M, K] x [K, N] -> [M, N]; "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)".
Tensor mm(const Tensor& a, const Tensor& b);
/// torch.bmm: [B, M, K] x [B, K, N] -> [B, M, N].
Tensor bmm(const Tensor& a, const Tensor& b);
/// torch.matmul with PyTorch's rules: dot, mv, vm, mm, and batched with broadcast batch dims.
Tensor matmul(const Tensor& a, const Tensor& b);
/// torch.mv: [M, K] x [K] -> [M].
Tensor mv(const Tensor& a, const Tensor& v);
/// torch.addmm: beta * self + alpha * (m1 @ m2); self broadcasts to [M, N]; beta == 0 ignores self.
Tensor addmm(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta = 1,
             const Scalar& alpha = 1);
/// torch.baddbmm: beta * self + alpha * bmm(b1, b2).
Tensor baddbmm(const Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta = 1,
               const Scalar& alpha = 1);
/// F.linear: x [*, in] x weight [out, in] (+ bias [out]) -> [*, out].
Tensor linear(const Tensor& x, const Tensor& weight,
              const std::optional<Tensor>& bias = std::nullopt);
/// torch.dot: 1-D x 1-D of equal length -> 0-dim.
Tensor dot(const Tensor& a, const Tensor& b);
/// torch.outer: [N] x [M] -> [N, M].
Tensor outer(const Tensor& a, const Tensor& b);

}  // namespace torchless::ops
