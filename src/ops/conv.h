#pragma once
// Convolution, 1-d/2-d/3-d, plain and transposed, grouped and dilated: one implementation
// parameterized by the number of spatial dims. Float32 runs on oneDNN (convolution /
// deconvolution forward inference); other dtypes on a direct reference loop that also
// serves as the oracle for the oneDNN path. 'same'/'valid' string padding is resolved by the
// caller into explicit padding.

#include "core/tensor.h"

#include <optional>
#include <string>
#include <utility>

namespace torchless::ops {

/// aten::convolution(input, weight, bias, stride, padding, dilation, transposed,
/// output_padding, groups). input [N, C, *spatial] (batched only, as at::_convolution); weight
/// [OC, C/groups, *k] or, transposed, [C, OC/groups, *k]. stride/padding/dilation/
/// output_padding may have one value for all dims. Throws as PyTorch ("Given groups=1, weight
/// of size [8, 4, 3, 3], expected input[1, 3, 10, 10] to have 4 channels, but got 3 channels
/// instead").
Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   const IntList& stride, const IntList& padding, const IntList& dilation,
                   bool transposed, const IntList& outputPadding, int64_t groups);
/// F.conv1d/2d/3d with integer padding.
Tensor convNd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              const IntList& stride = {1}, const IntList& padding = {0},
              const IntList& dilation = {1}, int64_t groups = 1);
/// F.conv_transpose1d/2d/3d(input, weight, bias, stride, padding, output_padding, groups,
/// dilation).
Tensor convTransposeNd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                       const IntList& stride = {1}, const IntList& padding = {0},
                       const IntList& outputPadding = {0}, int64_t groups = 1,
                       const IntList& dilation = {1});
/// The activation a fused convolution applies to its result (oneDNN eltwise post-ops).
enum class ConvActivation { None, Relu, Clamp, Sigmoid, Silu, Hardswish, GeluErf, GeluTanh };
/// "none", "relu", "clamp", "sigmoid", "silu", "hardswish", "gelu" (erf), "gelu_tanh";
/// throws torchless::Error for any other name.
ConvActivation convActivationFromString(const std::string& name);

/// act(convNd(input, weight, bias, ...) + residual) in one oneDNN primitive (sum and eltwise
/// post-ops) for float32; any other case (dtype, a residual whose shape or dtype differs from
/// the output's, unbatched input, shapes oneDNN refuses) runs convNd, add and the activation
/// one after another with PyTorch's semantics. Clamp takes min = alpha, max = beta (infinite
/// for a missing bound). oneDNN's activations may differ from the separate ops in the last
/// bits (its exp/erf), and its clamp does not propagate NaN.
/// constantWeight: the caller guarantees the weight's elements never change while it is alive;
/// its reordered form is then cached (Note [oneDNN convolution cache] in conv.cpp).
/// channelsLastOutput: return a 4-D float result with channels-last strides (NHWC memory, as
/// torch.channels_last) when oneDNN runs it, so that a following convolution needs no layout
/// reorder; only for results no one else observes (the fusion pass decides). Inputs may be
/// contiguous or channels-last.
Tensor convolutionFused(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, const IntList& stride,
                        const IntList& padding, const IntList& dilation, int64_t groups,
                        const std::optional<Tensor>& residual, ConvActivation act, double alpha = 0,
                        double beta = 0, bool constantWeight = false,
                        bool channelsLastOutput = false);
/// A PyTorch convolution weight ([OC, C/g, k...], or transposed [C, OC/g, k...]) seen as the
/// weights oneDNN's (de)convolution takes: [g, OC/g, C/g, k...] for groups > 1, else
/// [OC, C, k...], with the strides that read PyTorch's contiguous layout in that order.
/// Returns {dims, strides}.
std::pair<IntList, IntList> dnnlConvWeightsView(const IntList& weightSizes, int64_t groups,
                                                bool transposed);

/// Number of cached oneDNN convolution primitives (for tests).
size_t convolutionCacheSize();

/// The reference (non-oneDNN) path, any real dtype; used for tests of the oneDNN path.
Tensor convolutionReference(const Tensor& input, const Tensor& weight,
                            const std::optional<Tensor>& bias, const IntList& stride,
                            const IntList& padding, const IntList& dilation, bool transposed,
                            const IntList& outputPadding, int64_t groups);

}  // namespace torchless::ops
