#pragma once
// Scalar steps of PyTorch's quantized arithmetic shared by the quantized kernels
// (ops/quantized.cpp, ops/quantized_norm.cpp; Note [Quantized arithmetic] in ops/quantized.h).

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace torchless::ops::qutil {

/// nearbyint(t) in the default rounding mode (half to even), inline: below 2^22 in magnitude,
/// adding and subtracting 1.5 * 2^23 rounds to an integer (the float spacing there is 1); above,
/// std::rint. (std::nearbyint saves the floating-point environment on every call.)
inline float roundHalfEven(float t) {
  if (std::fabs(t) < 4194304.0f) return (t + 12582912.0f) - 12582912.0f;
  return std::rint(t);
}

/// fma(s, q, p) in float, exactly, for an 8-bit integer q and p = -(s * zp) rounded to float:
/// s * q and p are multiples of s's last bit and their sum needs at most 33 bits, so the
/// double sum is exact and one rounding to float is the fma's (std::fma is a library call
/// without -mfma).
inline float fma8(float s, float q, float p) {
  return static_cast<float>(static_cast<double>(s) * static_cast<double>(q) +
                            static_cast<double>(p));
}

/// |t| below this converts to int64 in PyTorch's quantize; NaN, infinities and larger values
/// become INT64_MIN there, i.e. the dtype's lowest value after saturation (1e30 -> 0 in quint8,
/// 3e9 -> 255: the installed PyTorch 1.13 says so).
constexpr float kInt64Range = 9.223372036854775808e18f;

/// fbgemm::Quantize<T, LEGACY=false>: x * (1 / scale) in float, round half to even, + zp,
/// saturate. `inv` is 1.0f / float(scale).
inline int64_t quantizeOne(float x, float inv, int64_t zp, int64_t lo, int64_t hi) {
  const float t = x * inv;
  if (!(std::fabs(t) < kInt64Range)) return lo;
  const double r = static_cast<double>(roundHalfEven(t)) + static_cast<double>(zp);
  return static_cast<int64_t>(std::clamp(r, static_cast<double>(lo), static_cast<double>(hi)));
}

/// The input quantization of a dynamic linear (quantized::linear_dynamic and the quantized RNN
/// cells): fma(x, 1 / scale, zp) rounded once to float, then to an integer half to even,
/// saturated. fbgemm's QuantizeAvx2<T, LEGACY=true> (PackAWithQuantRowOffset) computes this, and
/// so does the installed PyTorch, whose Debian build has no fbgemm and runs the op on oneDNN:
/// 0 of 384,000 random inputs differ, against 1 for quantizeOne's round(x * inv) + zp, and the
/// dynamic_linear_ties case holds 256 such ties. `inv` is 1.0f / scale.
inline int64_t quantizeOneLegacy(float x, float inv, int64_t zp, int64_t lo, int64_t hi) {
  const float t = std::fma(x, inv, static_cast<float>(zp));
  if (!(std::fabs(t) < kInt64Range)) return lo;
  const double r = static_cast<double>(roundHalfEven(t));
  return static_cast<int64_t>(std::clamp(r, static_cast<double>(lo), static_cast<double>(hi)));
}

}  // namespace torchless::ops::qutil
