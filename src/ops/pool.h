#pragma once
// Pooling, 1-d/2-d/3-d by one implementation over the canonical [N*C, D, H, W] form. Inputs
// are [N, C, *spatial] or unbatched [C, *spatial]; kernel/stride/padding/dilation lists may
// hold one value for all dims; an empty stride means stride = kernel (PyTorch's default).

#include "core/tensor.h"

#include <optional>
#include <tuple>

namespace torchless::ops {

/// F.max_poolNd(x, kernel, stride, padding, dilation, ceil_mode) -> (values, indices Long:
/// flat offsets within each input plane, as max_pool2d_with_indices). NaN wins.
std::tuple<Tensor, Tensor> maxPoolWithIndices(const Tensor& x, int64_t spatialDims,
                                              const IntList& kernel, const IntList& stride = {},
                                              const IntList& padding = {0},
                                              const IntList& dilation = {1}, bool ceilMode = false);
Tensor maxPool(const Tensor& x, int64_t spatialDims, const IntList& kernel,
               const IntList& stride = {}, const IntList& padding = {0},
               const IntList& dilation = {1}, bool ceilMode = false);
/// F.avg_poolNd(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override).
Tensor avgPool(const Tensor& x, int64_t spatialDims, const IntList& kernel,
               const IntList& stride = {}, const IntList& padding = {0}, bool ceilMode = false,
               bool countIncludePad = true, std::optional<int64_t> divisorOverride = std::nullopt);
/// F.adaptive_avg_poolNd(x, output_size).
Tensor adaptiveAvgPool(const Tensor& x, int64_t spatialDims, const IntList& outputSize);
/// F.adaptive_max_poolNd(x, output_size) -> (values, indices).
std::tuple<Tensor, Tensor> adaptiveMaxPool(const Tensor& x, int64_t spatialDims,
                                           const IntList& outputSize);

/// PyTorch's pooling_output_shape (with ceil_mode's "last window starts inside" rule).
int64_t poolingOutputSize(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                          bool ceilMode);

}  // namespace torchless::ops
