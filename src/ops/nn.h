#pragma once
// Other nn.functional ops: embedding, dropout in eval, prelu, glu, threshold, upsampling.

#include "core/tensor.h"
#include "ops/dispatch.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace torchless::ops {

/// F.embedding(indices, weight, padding_idx): weight [V, D], indices Long/Int any shape ->
/// [*indices.shape, D]. padding_idx only matters for training; accepted and ignored here.
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t paddingIdx = -1);
/// F.dropout / feature_dropout / alpha_dropout with training=false, or with p = 0 or an empty
/// input (ATen's _dropout_impl): the input itself. Throws for training with 0 < p (random).
/// training=true throws (torchless runs inference only).
Tensor dropout(const Tensor& x, double p = 0.5, bool training = false);
/// aten::im2col (F.unfold, nn.Unfold): x [N, C, H, W] or [C, H, W] -> [N, C * kh * kw, L], L the
/// oh * ow sliding blocks; column c * kh * kw + i * kw + j of block (r, s) is x[c, r * sh - ph +
/// i * dh, s * sw - pw + j * dw], 0 outside (ATen's im2col). kernelSize, dilation, padding and
/// stride have 2 entries. Throws torchless::Error with PyTorch's messages for bad sizes.
Tensor im2col(const Tensor& x, const IntList& kernelSize, const IntList& dilation,
              const IntList& padding, const IntList& stride);
/// aten::col2im (F.fold, nn.Fold): the inverse layout of im2col, overlapping entries summed:
/// cols [N, C * kh * kw, L] or [C * kh * kw, L] -> [N, C, H, W] for outputSize (H, W). Throws
/// torchless::Error with PyTorch's messages when the sizes do not fit.
Tensor col2im(const Tensor& cols, const IntList& outputSize, const IntList& kernelSize,
              const IntList& dilation, const IntList& padding, const IntList& stride);
/// F.prelu(x, weight): weight has 1 or C (= x.size(1)) elements.
Tensor prelu(const Tensor& x, const Tensor& weight);
/// F.glu(x, dim=-1): a * sigmoid(b) of the two halves.
Tensor glu(const Tensor& x, int64_t dim = -1);
/// F.threshold(x, threshold, value): x > threshold ? x : value.
Tensor threshold(const Tensor& x, const Scalar& threshold, const Scalar& value);
/// The dtypes PyTorch's CPU nearest upsampling takes (float, double, bfloat16, uint8); throws
/// torchless::Error with its message for the others.
void checkNearestDtype(const Tensor& x);
/// aten::upsample_nearest{1,2,3}d(x [N, C, *k], output_size, scales): PyTorch's legacy
/// "nearest" index rule (floor(dst * scale)).
Tensor upsampleNearest(const Tensor& x, const IntList& outputSize,
                       const std::vector<std::optional<double>>& scales = {});
/// One output index of a linear interpolation along a dim: the two source indices and their
/// weights (Note [bilinear arithmetic] in nn.cpp).
template <class A>
struct LinearTap {
  int64_t i0, i1;
  A l0, l1;
};
/// The taps of PyTorch's CPU upsample_bilinear2d along one dim of size `in` resized to `out`
/// (area_pixel_compute_scale and compute_source_index_and_lambda, Note [bilinear arithmetic]);
/// `scale` is the dim's scale factor when given. A: the weights' type (float for float).
/// PyTorch's area_pixel_compute_scale: the source step per output index of a dim resized from
/// `in` to `out` ((in - 1) / (out - 1) with align_corners, else 1 / scale when given, else
/// in / out), in A.
template <class A>
A areaPixelScale(int64_t in, int64_t out, bool alignCorners, std::optional<double> scale) {
  if (alignCorners) return out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0);
  if (scale && *scale > 0) return static_cast<A>(1.0 / *scale);
  return static_cast<A>(in) / static_cast<A>(out);
}
template <class A>
std::vector<LinearTap<A>> linearTaps(int64_t in, int64_t out, bool alignCorners,
                                     std::optional<double> scale) {
  const A ratio = areaPixelScale<A>(in, out, alignCorners, scale);
  std::vector<LinearTap<A>> t;
  t.reserve(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    if (in == out) {
      t.push_back({o, o, A(1), A(0)});
      continue;
    }
    double src = alignCorners ? static_cast<double>(ratio) * static_cast<double>(o)
                              : static_cast<double>(ratio) * (static_cast<double>(o) + 0.5) - 0.5;
    if (!alignCorners && src < 0) src = 0;
    const auto i0 = static_cast<int64_t>(src);
    const int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
    const auto l1 = static_cast<A>(std::min(std::max(src - static_cast<double>(i0), 0.0), 1.0));
    t.push_back({i0, i1, static_cast<A>(A(1) - l1), l1});
  }
  return t;
}
/// aten::upsample_bilinear2d(x [N, C, H, W], output_size, align_corners, scales_h, scales_w).
Tensor upsampleBilinear2d(const Tensor& x, const IntList& outputSize, bool alignCorners,
                          std::optional<double> scalesH = std::nullopt,
                          std::optional<double> scalesW = std::nullopt);
/// aten::upsample_trilinear3d(x [N, C, D, H, W], output_size, align_corners, scales_d, _h,
/// _w): linear along each of the three dims with upsample_bilinear2d's taps, W innermost.
Tensor upsampleTrilinear3d(const Tensor& x, const IntList& outputSize, bool alignCorners,
                           std::optional<double> scalesD = std::nullopt,
                           std::optional<double> scalesH = std::nullopt,
                           std::optional<double> scalesW = std::nullopt);
/// aten::upsample_bicubic2d(x [N, C, H, W], output_size, align_corners, scales_h, scales_w):
/// Keys' cubic convolution (A = -0.75) over 4 x 4 source pixels, indices clamped at the
/// borders, as PyTorch's CPU kernel (rows interpolated along W, then the four along H).
Tensor upsampleBicubic2d(const Tensor& x, const IntList& outputSize, bool alignCorners,
                         std::optional<double> scalesH = std::nullopt,
                         std::optional<double> scalesW = std::nullopt);
/// One dim of PyTorch's antialiased resize (aten::_upsample_{bilinear,bicubic}2d_aa; ATen's
/// _compute_indices_weights_aa, after Pillow's Resample.c): output index o reads `count[o]`
/// source elements from `first[o]`, weighted by w[o * width ...]. The filter (a triangle, or
/// Keys' cubic with a = -0.5) is stretched by the scale when shrinking, and each output's
/// weights are normalised to sum to 1. T: float or double, the tensor's dtype.
template <class T>
struct AntialiasTaps {
  std::vector<int64_t> first, count;
  std::vector<T> w;
  int64_t width = 0;
};
/// The taps of a dim of size `in` resized to `out` (both > 0); `scale` is the dim's scale
/// factor when given. Windows that fall outside the input (inconsistent scale factors) are
/// empty, and so are their outputs' sums.
template <class T>
AntialiasTaps<T> antialiasTaps(int64_t in, int64_t out, bool alignCorners,
                               std::optional<double> scale, bool cubic);
/// aten::_upsample_bilinear2d_aa / _upsample_bicubic2d_aa (x [N, C, H, W] float or double,
/// output_size [OH, OW], align_corners, scales_h, scales_w) -> [N, C, OH, OW]: F.interpolate
/// with antialias=True. Separable: along W first, then along H, each output a sum of its taps
/// in order, as ATen's CPU kernel. Throws PyTorch's errors for other ranks, empty sizes and
/// other dtypes.
Tensor upsampleAntialias2d(const Tensor& x, const IntList& outputSize, bool alignCorners,
                           std::optional<double> scalesH, std::optional<double> scalesW,
                           bool cubic);
/// F.interpolate(x, size or scale_factor, mode "nearest" | "bilinear", align_corners):
/// scale factors give floor(in * scale) outputs and are passed on as scales.
Tensor interpolate(const Tensor& x, const std::optional<IntList>& size,
                   const std::optional<std::vector<double>>& scaleFactor,
                   const std::string& mode = "nearest",
                   std::optional<bool> alignCorners = std::nullopt);

}  // namespace torchless::ops
