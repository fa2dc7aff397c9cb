#pragma once
// Order statistics and running extremes along a dim: torch.median, torch.kthvalue,
// torch.cummax / cummin. NaN orders as PyTorch's CPU kernels order it: a row holding NaN has
// the median NaN (at its first NaN), kthvalue sorts NaN past every number, and a running
// extreme turns NaN at a NaN and stays NaN, its index following each later NaN.

#include "core/tensor.h"

#include <tuple>

namespace torchless::ops {

/// torch.median(x): the lower median of all elements (sorted[(n - 1) / 2]); NaN when any is
/// NaN or x is empty.
Tensor median(const Tensor& x);
/// torch.median(x, dim, keepdim) -> (values, indices Long). Throws for an empty dim.
std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim);
/// torch.nanmedian(x) / (x, dim, keepdim): the median of the values that are not NaN (NaN when
/// all are).
Tensor nanmedian(const Tensor& x);
std::tuple<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim);
/// torch.kthvalue(x, k, dim, keepdim) -> (values, indices Long): the k-th smallest (1-based).
/// Throws "kthvalue(): selected number k out of range for dimension d".
std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim);
/// torch.mode(x, dim, keepdim) -> (values, indices Long): the most frequent value of each row
/// (the smallest of equally frequent ones) and an index of it, the one ATen's CPU kernel reports
/// (the last of its run in std::sort's order of the row's (value, index) pairs).
std::tuple<Tensor, Tensor> mode(const Tensor& x, int64_t dim, bool keepdim);
/// torch.msort(x): x sorted along dim 0 (the values of the unstable sort).
Tensor msort(const Tensor& x);
/// torch.cummax / cummin(x, dim) -> (values, indices Long), x's shape; ties take the later
/// index.
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim);
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim);

}  // namespace torchless::ops
