#pragma once
// aten::grid_sampler / grid_sampler_2d on CPU (F.grid_sample).

#include "core/tensor.h"

#include <cstdint>

namespace torchless::ops {

/// grid_sampler(input [N, C, H, W], grid [N, Ho, Wo, 2] (x, y in [-1, 1]), interpolation_mode
/// (0 bilinear, 1 nearest, 2 bicubic), padding_mode (0 zeros, 1 border, 2 reflection),
/// align_corners) -> [N, C, Ho, Wo] of input's dtype (float or double), following PyTorch's
/// aten/src/ATen/native/GridSampler.cpp (nearest rounds half to even; bicubic uses A = -0.75 and
/// pads each tap). 5-d inputs (3-d sampling) and other dtypes throw torchless::Error, as do
/// mismatched shapes, with PyTorch's messages.
Tensor gridSampler(const Tensor& input, const Tensor& grid, int64_t interpolationMode,
                   int64_t paddingMode, bool alignCorners);

}  // namespace torchless::ops
