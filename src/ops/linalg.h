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
/// torch.cdist (aten::cdist): x1 [*, P, M], x2 [*, R, M] (batch dims broadcast), float or
/// double -> [*, P, R], the p-norm distance of every pair of rows (p >= 0; inf the max). As ATen:
/// for p = 2 with compute_mode None and P or R over 25, or compute_mode 1, the matmul form
/// (_euclidean_dist: |x1|^2 - 2 x1.x2 + |x2|^2, clamped at 0, square root); else each pair's
/// differences directly. Throws PyTorch's errors for other dtypes, ranks, feature counts, p < 0
/// and compute modes.
Tensor cdist(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> computeMode);
/// F.pairwise_distance (aten::pairwise_distance): norm(x1 - x2 + eps, p) over the last dim of
/// the broadcast, keepdim as asked.
Tensor pairwiseDistance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim);
/// F.affine_grid (aten::affine_grid_generator): theta [N, 2, 3] and size [N, C, H, W] -> the
/// grid [N, H, W, 2], or theta [N, 3, 4] and size [N, C, D, H, W] -> [N, D, H, W, 3]: base
/// coordinates in [-1, 1] (pixel centres unless align_corners) times theta^T, as ATen's
/// make_base_grid + bmm. Throws for other shapes.
Tensor affineGridGenerator(const Tensor& theta, const IntList& size, bool alignCorners);

}  // namespace torchless::ops
