#pragma once
// Reductions, scans, softmax, sort/topk. A `dims` list that is empty reduces over every dim
// (aten::sum.dim_IntList with dim=[]), as PyTorch 1.13 does. Floating sums accumulate in
// double; integer and Bool sums/products return Long unless a dtype is given.

#include "core/tensor.h"
#include "ops/dispatch.h"

#include <optional>
#include <tuple>
#include <vector>

namespace torchless::ops {

/// torch.sum(x, dims, keepdim, dtype).
Tensor sum(const Tensor& x, const IntList& dims = {}, bool keepdim = false,
           std::optional<ScalarType> dtype = std::nullopt);
/// torch.mean: floating (or given floating dtype) only ("mean(): could not infer output dtype.
/// Input dtype must be either a floating point or complex dtype. Got: Long").
Tensor mean(const Tensor& x, const IntList& dims = {}, bool keepdim = false,
            std::optional<ScalarType> dtype = std::nullopt);
/// torch.prod(x, dtype) over all / torch.prod(x, dim, keepdim, dtype).
Tensor prod(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
            std::optional<ScalarType> dtype = std::nullopt);
/// torch.max(x) / torch.min(x): NaN propagates; empty input throws.
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
/// torch.max(x, dim, keepdim) -> (values, indices Long); the first NaN or first extreme wins.
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
/// torch.amax / amin over dims.
Tensor amax(const Tensor& x, const IntList& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const IntList& dims = {}, bool keepdim = false);
/// torch.argmax / argmin: dim=None gives the flat index.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
/// torch.var / std (correction=1 is Bessel's; dims nullopt = all).
Tensor var(const Tensor& x, const std::optional<IntList>& dims = std::nullopt,
           std::optional<double> correction = std::nullopt, bool keepdim = false);
Tensor std(const Tensor& x, const std::optional<IntList>& dims = std::nullopt,
           std::optional<double> correction = std::nullopt, bool keepdim = false);
/// torch.norm(x, p, dims, keepdim): p a number (2 default, inf/-inf, 0, 1, ...); "fro" is p=2.
Tensor norm(const Tensor& x, std::optional<double> p = 2.0, const IntList& dims = {},
            bool keepdim = false);
/// torch.all / any -> Bool (Byte input gives Byte, as PyTorch).
Tensor all(const Tensor& x);
Tensor all(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor any(const Tensor& x);
Tensor any(const Tensor& x, int64_t dim, bool keepdim = false);
/// torch.cumsum / cumprod along dim (integers -> Long unless dtype).
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
/// F.softmax / log_softmax along dim, computed in dtype when given (floating only).
Tensor softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor logSoftmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
/// torch.logsumexp(x, dims, keepdim); integers -> Float.
Tensor logsumexp(const Tensor& x, const IntList& dims, bool keepdim = false);
/// torch.topk -> (values, indices); NaN counts as largest; ties in ATen's order (Note [Sort and
/// topk orders] in reduction.cpp), unsorted as ATen leaves them when sorted is false.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true);
/// torch.sort -> (values, indices); NaN sorts as largest; ties in index order when stable, else
/// in the order of ATen's unstable sort (Note [Sort and topk orders] in reduction.cpp).
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false,
                                bool stable = false);
/// torch.argsort: the indices of the unstable sort(x, dim, descending).
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);

}  // namespace torchless::ops
