#pragma once
// Other nn.functional ops: embedding, dropout in eval, prelu, glu, threshold, upsampling.

#include "core/tensor.h"
#include "ops/dispatch.h"

#include <optional>
#include <string>

namespace torchless::ops {

/// F.embedding(indices, weight, padding_idx): weight [V, D], indices Long/Int any shape ->
/// [*indices.shape, D]. padding_idx only matters for training; accepted and ignored here.
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t paddingIdx = -1);
/// F.dropout / feature_dropout / alpha_dropout with training=false: the input itself.
/// training=true throws (torchless runs inference only).
Tensor dropout(const Tensor& x, double p = 0.5, bool training = false);
/// F.prelu(x, weight): weight has 1 or C (= x.size(1)) elements.
Tensor prelu(const Tensor& x, const Tensor& weight);
/// F.glu(x, dim=-1): a * sigmoid(b) of the two halves.
Tensor glu(const Tensor& x, int64_t dim = -1);
/// F.threshold(x, threshold, value): x > threshold ? x : value.
Tensor threshold(const Tensor& x, const Scalar& threshold, const Scalar& value);
/// aten::upsample_nearest{1,2,3}d(x [N, C, *k], output_size, scales): PyTorch's legacy
/// "nearest" index rule (floor(dst * scale)).
Tensor upsampleNearest(const Tensor& x, const IntList& outputSize,
                       const std::vector<std::optional<double>>& scales = {});
/// aten::upsample_bilinear2d(x [N, C, H, W], output_size, align_corners, scales_h, scales_w).
Tensor upsampleBilinear2d(const Tensor& x, const IntList& outputSize, bool alignCorners,
                          std::optional<double> scalesH = std::nullopt,
                          std::optional<double> scalesW = std::nullopt);
/// F.interpolate(x, size or scale_factor, mode "nearest" | "bilinear", align_corners):
/// scale factors give floor(in * scale) outputs and are passed on as scales.
Tensor interpolate(const Tensor& x, const std::optional<IntList>& size,
                   const std::optional<std::vector<double>>& scaleFactor,
                   const std::string& mode = "nearest",
                   std::optional<bool> alignCorners = std::nullopt);

}  // namespace torchless::ops
