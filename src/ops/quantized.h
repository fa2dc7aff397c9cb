#pragma once
// Quantized tensors and PyTorch's quantized CPU kernels (fbgemm's integers).
//
// Note [Quantized arithmetic]
// A quantized tensor holds integers q (quint8 [0, 255], qint8 [-128, 127], qint32) and a
// QuantizerInfo (core/tensor.h): real value = (q - zero_point) * scale, per tensor or per
// channel along `axis`. The kernels here reproduce the integers PyTorch 1.13 computes on an
// x86 CPU with fbgemm (the default quantized engine there), not just the real values:
//   quantize    q = clamp(nearbyint(x * (1.0f / float(scale))) + zp)       (fbgemm::Quantize,
//               non-legacy: multiply by the float reciprocal, round half to even, then add zp;
//               the sum goes through int64 before saturating, so NaN, infinities and values
//               past 2^63 give the dtype's lowest integer);
//   dequantize  x = float(scale) * float(q - zp)                            (fbgemm::Dequantize);
//   conv/linear acc = sum (a - a_zp) * (w - w_zp) in int32 (exact: fbgemm's row/column offset
//               correction; padding contributes a_zp, i.e. 0), then requantized in float as
//               PyTorch's x86 engine (onednn through ideep, reciprocal scales) does:
//                 s = float(1/a_scale) * float(1/w_scale),  M = float(1/y_scale) / s,
//                 y = clamp(nearbyint((float(acc) + bias * s) * M + y_zp))
//               per output channel for per-channel weights; `_relu` clamps below at y_zp.
//               (fbgemm's ReQuantizeOutput differs only in float rounding and in adding y_zp
//               after rounding: at ties.)
//   add         fbgemm's vector path: dequantize as fma(scale, q, -(scale * zp)), add in float,
//               quantize with the output's qparams;
//   mul         c = (a - a_zp) * (b - b_zp) in int32, y = clamp(y_zp + lrintf(c * M)),
//               M = a_scale * b_scale * (1 / y_scale) in float;
//   dynamic     linear_dynamic picks the input's qparams from its min/max as
//               fbgemm::ChooseQuantizationParams does (quint8, [0, 127] with reduce_range),
//               quantizes it (fbgemm's legacy rounding, nearbyint(zp + x / scale)), multiplies
//               in int32 and returns float acc * a_scale * w_scale + bias.
// Where PyTorch picks a vector or scalar path by the CPU's instruction set (add, batch_norm,
// hardswish ...), the two can differ by one quantum at exact ties; the tests say where.

#include "core/tensor.h"

#include <optional>
#include <vector>

namespace torchless::ops {

/// The integer range of a quantized dtype (quint8, qint8, qint32). Throws for other dtypes.
std::pair<int64_t, int64_t> quantRange(ScalarType qdtype);
/// The integer dtype holding a quantized dtype's values (quint8 -> uint8, qint8 -> int8,
/// qint32 -> int32). Throws for other dtypes.
ScalarType underlyingType(ScalarType qdtype);

/// A new contiguous per-tensor affine quantized tensor (uninitialized integers).
Tensor emptyQuantized(const IntList& sizes, ScalarType qdtype, double scale, int64_t zeroPoint);

/// torch.quantize_per_tensor: float x -> qdtype. Throws when x is not float32, scale <= 0 or
/// the zero point is outside the dtype's range.
Tensor quantizePerTensor(const Tensor& x, double scale, int64_t zeroPoint, ScalarType qdtype);
/// torch.quantize_per_channel: scales (float64 [C]) and zero_points (int64 [C]) along axis.
Tensor quantizePerChannel(const Tensor& x, const Tensor& scales, const Tensor& zeroPoints,
                          int64_t axis, ScalarType qdtype);
/// Tensor.dequantize(): float32 values of a quantized tensor; a float tensor is returned as is.
Tensor dequantize(const Tensor& q);
/// Tensor.int_repr(): the integers (uint8 / int8 / int32), contiguous.
Tensor intRepr(const Tensor& q);
/// A quantized tensor over integers `ints` (uint8/int8/int32 matching qdtype) with q's
/// quantizer (the inverse of intRepr; the data is shared when contiguous).
Tensor withQuantizerOf(const Tensor& ints, const Tensor& q);

/// q_scale / q_zero_point (per-tensor only; throws otherwise), per-channel scales (float64),
/// zero points (int64) and axis (throws for per-tensor tensors).
double qScale(const Tensor& q);
int64_t qZeroPoint(const Tensor& q);
Tensor qPerChannelScales(const Tensor& q);
Tensor qPerChannelZeroPoints(const Tensor& q);
int64_t qPerChannelAxis(const Tensor& q);

/// quantized::conv{1,2,3}d / conv_transpose{1,2,3}d over a quint8 input [N, C, *spatial]
/// with a qint8 weight ([OC, C/g, *k]; transposed: [C, OC/g, *k]) per tensor or per channel
/// (axis 0; transposed: axis 1 is not supported by PyTorch either), float bias [OC].
/// `spatial` lists have one entry per spatial dim. Returns quint8 with (outScale, outZp),
/// channels-last for a non-transposed 2-d conv as in PyTorch.
Tensor qconv(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
             const IntList& stride, const IntList& padding, const IntList& dilation, int64_t groups,
             bool transposed, const IntList& outputPadding, double outScale, int64_t outZp,
             bool relu);
/// TORCHLESS_QCONV_REFERENCE=1 (read once): quantized conv and linear run the reference loops,
/// not oneDNN, in the kernels and in the engine's int8 layers.
bool qconvReferenceLoops();

/// What oneDNN's u8 x s8 convolution needs to give PyTorch's integers for a non-transposed
/// quantized conv or linear (Note [oneDNN int8 accumulators]) with input scale `inScale`:
/// per output channel output scales `mult` (float(1/out_scale) / (float(1/in_scale) *
/// float(1/w_scale))) and the bias in accumulator units. `symmetric` is false when a weight
/// zero point is not 0 (oneDNN's path does not take those). Throws when the weight is not
/// qint8 [OC, ...] quantized per tensor or along axis 0, or the bias is not float32 [OC].
struct QConvScales {
  std::vector<float> mult, bias;
  bool hasBias = false, symmetric = true;
};
QConvScales qconvScales(double inScale, const Tensor& weight, const std::optional<Tensor>& bias,
                        double outScale);

/// quantized::linear(_relu): quint8 x [*, K], qint8 weight [N, K], float bias [N].
Tensor qlinear(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
               double outScale, int64_t outZp, bool relu);
/// quantized::linear_dynamic(_relu): float x [*, K], qint8 weight [N, K] -> float [*, N].
Tensor qlinearDynamic(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                      bool reduceRange, bool relu);
/// quantized::linear_dynamic_fp16: weight already rounded to fp16 (float tensor).
Tensor qlinearDynamicFp16(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                          bool relu);

/// quantized::add / add_relu / mul / mul_relu (tensors broadcast as in PyTorch).
Tensor qadd(const Tensor& a, const Tensor& b, double scale, int64_t zeroPoint, bool relu);
Tensor qmul(const Tensor& a, const Tensor& b, double scale, int64_t zeroPoint, bool relu);
/// quantized::add.Scalar / mul.Scalar: PyTorch's scalar forms (output qparams derived).
Tensor qaddScalar(const Tensor& a, double b, bool relu);
Tensor qmulScalar(const Tensor& a, double b);
/// quantized::cat(_relu): output qparams given, or the first input's when none.
Tensor qcat(const std::vector<Tensor>& xs, int64_t dim, std::optional<double> scale,
            std::optional<int64_t> zeroPoint, bool relu);

/// Elementwise maps on quantized tensors that PyTorch computes through float:
/// y = quantize(f(dequantize(x))) with the given output qparams.
Tensor qrelu(const Tensor& x);
Tensor qhardswish(const Tensor& x, double scale, int64_t zeroPoint);
Tensor qsigmoid(const Tensor& x, double scale, int64_t zeroPoint);
Tensor qtanh(const Tensor& x);
Tensor qleakyRelu(const Tensor& x, double slope, double scale, int64_t zeroPoint);
Tensor qclamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi);
/// quantized::threshold / aten::threshold on a quantized tensor: y = x > threshold ? x : value
/// on the dequantized values (fbgemm's fma dequantize), quantized with x's own qparams, as
/// PyTorch's qthreshold kernel. Its scalar tail dequantizes as (q - zp) * scale, so where a
/// dequantized value equals the threshold PyTorch's answer depends on the element's position
/// and the CPU's vector width; we give the vector body's.
Tensor qthreshold(const Tensor& x, double threshold, double value);
/// quantized::batch_norm{,1d,2d,3d}(_relu) over [N, C, *].
Tensor qbatchNorm(const Tensor& x, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, const Tensor& mean, const Tensor& var,
                  double eps, double scale, int64_t zeroPoint, bool relu);

/// aten::mean on a quantized tensor (output keeps the input's qparams), as PyTorch 1.13's
/// mean_out_quantized_cpu: over innermost dims of a contiguous tensor (or all dims), the integer
/// sum over float(count), rounded half to even (qmean_inner_dim_kernel); otherwise dequantize,
/// float mean, quantize_per_tensor with the input's qparams. `dims` empty means all.
Tensor qmean(const Tensor& x, const IntList& dims, bool keepdim);
/// quantized::layer_norm over the last normalized_shape.size() dims, as PyTorch's
/// quantized_normalize_kernel: mean and variance from integer sums in float, in units of the
/// input scale; s = scale_x / sqrt(var * scale_x^2 + eps) (eps in real units, in double);
/// y = fma(((q - zp) - mean) * s, gamma, beta), quantized with (scale, zeroPoint). Throws when
/// normalized_shape does not match the input's trailing sizes or weight/bias are not float32 of
/// that many elements. (ops/quantized_norm.cpp)
Tensor qlayerNorm(const Tensor& x, const IntList& normalizedShape,
                  const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  double eps, double scale, int64_t zeroPoint);
/// quantized::group_norm over x [N, C, *] (C divisible by numGroups): the statistics of
/// qlayerNorm per (sample, group), per-channel weight / bias [C] (float32). A channels-last 4-d
/// input gets PyTorch's NHWC kernel's arithmetic (y = fma(q - zp, s_c, fma(-s_c, mean, beta_c)))
/// instead of the NCHW one's (y = fma((q - zp) - mean, s_c, beta_c)); PyTorch's NHWC kernel sums
/// in float when H * W >= 512, where it can differ by one quantum. Output is contiguous.
Tensor qgroupNorm(const Tensor& x, int64_t numGroups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps, double scale, int64_t zeroPoint);
/// quantized::instance_norm: qgroupNorm with one group per channel.
Tensor qinstanceNorm(const Tensor& x, const std::optional<Tensor>& weight,
                     const std::optional<Tensor>& bias, double eps, double scale,
                     int64_t zeroPoint);
/// aten::upsample_bilinear2d on a per-tensor quantized x [N, C, H, W] (PyTorch's
/// upsample_bilinear2d_quantized_cpu): the integers are interpolated in float with float source
/// indices, no fused multiply-add, and requantized with x's own qparams (zp + nearbyint(value -
/// zp)); equal sizes copy. Throws for other ranks or empty sizes.
Tensor qupsampleBilinear2d(const Tensor& x, const IntList& outputSize, bool alignCorners,
                           std::optional<double> scalesH, std::optional<double> scalesW);
/// aten::hardsigmoid on a quantized tensor: quantize(min(max(x + 3, 0), 6) / 6) of the
/// fma-dequantized values, with PyTorch's fixed output qparams (scale 1/256, zero point 0;
/// qint8: -128; qint32: scale 2^-32).
Tensor qhardsigmoid(const Tensor& x);
/// quantized::softmax: quantize(softmax(dequantize(x), dim)) (PyTorch's non-qnnpack path).
Tensor qsoftmax(const Tensor& x, int64_t dim, double scale, int64_t zeroPoint);
/// quantized::elu / celu: quantize(elu(dequantize(x))).
Tensor qelu(const Tensor& x, double scale, int64_t zeroPoint, double alpha, double outScale,
            double inputScale);
/// quantized::matmul: quantize(matmul(dequantize(a), dequantize(b))) with (scale, zeroPoint).
Tensor qmatmul(const Tensor& a, const Tensor& b, double scale, int64_t zeroPoint);

/// Pooling on quantized tensors (same qparams out as in): max pool picks integers; average
/// pools sum integers and requantize as PyTorch's qavg_pool / qadaptive_avg_pool do.
Tensor qmaxPool(const Tensor& x, int64_t spatialDims, const IntList& kernel, const IntList& stride,
                const IntList& padding, const IntList& dilation, bool ceilMode);
Tensor qavgPool(const Tensor& x, int64_t spatialDims, const IntList& kernel, const IntList& stride,
                const IntList& padding, bool ceilMode, bool countIncludePad,
                std::optional<int64_t> divisorOverride);
Tensor qadaptiveAvgPool(const Tensor& x, int64_t spatialDims, const IntList& outputSize);

/// Applies a value-preserving float kernel (nearest upsampling, max of values, reshapes that
/// copy) to the integers of q: the result has q's qparams. Integers up to 2^24 are exact.
template <typename Fn>
Tensor onIntegers(const Tensor& q, Fn fn) {
  Tensor f = intRepr(q).to(ScalarType::Float);
  Tensor r = fn(f);
  Tensor ints = r.to(underlyingType(q.dtype()));
  return withQuantizerOf(ints, q);
}

/// quantized::embedding_bag_byte_rowwise_offsets / embedding_bag_4bit_rowwise_offsets:
/// weight rows hold the values then a float scale and bias (byte: uint8 values + float32
/// scale, bias; 4bit: packed nibbles (low nibble first) + fp16 scale, bias). Bags are summed
/// for mode 0 and for mode 1 alike, as the installed PyTorch 1.13 (no fbgemm) does; mode 2
/// (max) throws.
Tensor qembeddingBag(const Tensor& weight, const Tensor& indices,
                     const std::optional<Tensor>& offsets, int64_t bits, int64_t mode,
                     const std::optional<Tensor>& perSampleWeights, bool includeLastOffset);

}  // namespace torchless::ops
