#pragma once
// Elementwise kernels: unary math and activations, binary arithmetic/comparison/logical ops
// with broadcasting and PyTorch's type promotion (torch.result_type: dimensioned tensors win
// over 0-dim tensors, which win over Python numbers, within a category bool < int < float),
// where, clamp, masked_fill, lerp, addcmul/addcdiv.
//
// Every function returns a new contiguous tensor of the broadcast shape unless it ends in
// `_` (in place, returns self). Unsupported dtypes throw torchless::Error worded as PyTorch
// (`"abs_cpu" not implemented for 'Bool'`).

#include "core/tensor.h"
#include "ops/dispatch.h"

#include <optional>
#include <string>

namespace torchless::ops {

// ---- type promotion ----

/// torch.result_type(a, b) for tensors (a 0-dim tensor is a lower category than a sized one).
ScalarType resultType(const Tensor& a, const Tensor& b);
/// torch.result_type(a, s): s is a "wrapped number" (Python int/float/bool).
ScalarType resultType(const Tensor& a, const Scalar& s);
/// result_type over many tensors (cat, stack, where).
ScalarType resultType(const std::vector<Tensor>& tensors);

/// Writes `result` into `self` as an in-place op does (self.copy_(result) after checking
/// that result's dtype can be cast to self's and that its shape equals self's: "result type
/// Float can't be cast to the desired output type Long", "output with shape [3] doesn't match
/// the broadcast shape [2, 3]"). Returns self.
Tensor& assignResult(Tensor& self, const Tensor& result);

// ---- unary ----
// Math ops that produce floats (sqrt, exp, sin, sigmoid, ...) take integer and bool inputs
// and return Float, as PyTorch does; abs/neg/sign/floor/... keep integer dtypes.

Tensor abs(const Tensor& x);
Tensor neg(const Tensor& x);  // Bool throws PyTorch's "Negation, the `-` operator..."
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor log1p(const Tensor& x);
/// torch.expm1 / lgamma / digamma / erfinv: integers go to Float. digamma is +-inf at 0 and
/// NaN at negative integers; erfinv is +-inf at +-1 and NaN outside [-1, 1] (as PyTorch's).
Tensor expm1(const Tensor& x);
/// torch.exp2 / erfc / sinc (sin(pi x) / (pi x), 1 at 0) and torch.special.entr (-x log x: 0
/// at 0, -inf below), ndtr (the standard normal CDF) and log_ndtr: integers go to Float.
Tensor exp2(const Tensor& x);
Tensor erfc(const Tensor& x);
Tensor sinc(const Tensor& x);
Tensor entr(const Tensor& x);
Tensor ndtr(const Tensor& x);
Tensor logNdtr(const Tensor& x);
Tensor lgamma(const Tensor& x);
Tensor digamma(const Tensor& x);
Tensor erfinv(const Tensor& x);
/// torch.frac: x - trunc(x), floating dtypes only ("frac_cpu" not implemented for 'Long').
Tensor frac(const Tensor& x);
/// torch.logit(x, eps): log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given.
Tensor logit(const Tensor& x, std::optional<double> eps = std::nullopt);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
/// torch.sinh / cosh / asinh / acosh / atanh: integers and bool -> the default float dtype.
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor asinh(const Tensor& x);
Tensor acosh(const Tensor& x);
Tensor atanh(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor floor(const Tensor& x);  // integers: a copy; Bool throws
Tensor ceil(const Tensor& x);
Tensor trunc(const Tensor& x);
/// torch.round(x, decimals=0): half to even.
Tensor round(const Tensor& x, int64_t decimals = 0);
Tensor sign(const Tensor& x);
Tensor logicalNot(const Tensor& x);  // -> Bool
Tensor bitwiseNot(const Tensor& x);  // integral and Bool only
Tensor isnan(const Tensor& x);       // -> Bool
Tensor isinf(const Tensor& x);       // -> Bool (integers: false)
Tensor isfinite(const Tensor& x);    // -> Bool (integers: true)

// Activations (torch.nn.functional); relu/relu6/hardtanh accept integers, the rest are
// floating only ("silu_cpu" not implemented for 'Long').
Tensor relu(const Tensor& x);
Tensor relu6(const Tensor& x);
/// F.gelu(x, approximate="none"|"tanh").
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor silu(const Tensor& x);
Tensor hardswish(const Tensor& x);
Tensor hardsigmoid(const Tensor& x);
Tensor hardtanh(const Tensor& x, const Scalar& minVal = -1.0, const Scalar& maxVal = 1.0);
Tensor leakyRelu(const Tensor& x, const Scalar& negativeSlope = 0.01);
/// aten::elu(self, alpha, scale, input_scale).
Tensor elu(const Tensor& x, const Scalar& alpha = 1.0, const Scalar& scale = 1.0,
           const Scalar& inputScale = 1.0);
Tensor selu(const Tensor& x);
Tensor softplus(const Tensor& x, const Scalar& beta = 1.0, const Scalar& threshold = 20.0);
Tensor mish(const Tensor& x);

// ---- binary (broadcasting, type promotion) ----

/// a + alpha * b (aten::add.Tensor / add.Scalar). Integral results refuse a float alpha.
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
/// a - alpha * b; Bool operands throw as PyTorch does.
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
/// aten::rsub: b - alpha * a.
Tensor rsub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor rsub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
/// aten::div(a, b, rounding_mode): nullopt = true division (integers -> Float), "trunc",
/// "floor". Integer division by zero with a rounding mode throws "ZeroDivisionError".
Tensor div(const Tensor& a, const Tensor& b,
           const std::optional<std::string>& roundingMode = std::nullopt);
Tensor div(const Tensor& a, const Scalar& b,
           const std::optional<std::string>& roundingMode = std::nullopt);
Tensor floorDivide(const Tensor& a, const Tensor& b);
Tensor floorDivide(const Tensor& a, const Scalar& b);
/// Python's %: the result has the sign of b. Integer b == 0 throws "ZeroDivisionError".
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Scalar& b);
/// C's fmod: the result has the sign of a.
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Scalar& b);
/// aten::pow.Tensor_Tensor / Tensor_Scalar / Scalar. Integer base with a negative integer
/// Scalar exponent throws "Integers to negative integer powers are not allowed.".
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Scalar& b);
Tensor pow(const Scalar& a, const Tensor& b);
Tensor atan2(const Tensor& a, const Tensor& b);
/// torch.hypot: sqrt(a^2 + b^2) without overflow, broadcast; floating dtypes only.
Tensor hypot(const Tensor& a, const Tensor& b);
/// Elementwise max/min propagating NaN.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

// Comparisons -> Bool (computed in the promoted type).
Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Scalar& b);

// Logical -> Bool; bitwise on integral/Bool only.
Tensor logicalAnd(const Tensor& a, const Tensor& b);
Tensor logicalOr(const Tensor& a, const Tensor& b);
Tensor logicalXor(const Tensor& a, const Tensor& b);
Tensor bitwiseAnd(const Tensor& a, const Tensor& b);
Tensor bitwiseAnd(const Tensor& a, const Scalar& b);
Tensor bitwiseOr(const Tensor& a, const Tensor& b);
Tensor bitwiseOr(const Tensor& a, const Scalar& b);
Tensor bitwiseXor(const Tensor& a, const Tensor& b);
Tensor bitwiseXor(const Tensor& a, const Scalar& b);
/// a << b and a >> b (aten::__lshift__ / __rshift__) of integers (arithmetic for >>; a count
/// past the width or negative gives 0, or the sign for >>), as PyTorch 1.13's
/// BinaryOpsKernel.cpp. Bool (after promotion) and floating types throw "not implemented".
Tensor lshift(const Tensor& a, const Tensor& b);
Tensor lshift(const Tensor& a, const Scalar& b);
Tensor rshift(const Tensor& a, const Tensor& b);
Tensor rshift(const Tensor& a, const Scalar& b);

// ---- ternary and friends ----

/// torch.where(cond, a, b): cond is Bool (or Byte), a/b promoted together, all broadcast.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b);
/// torch.clamp with optional bounds (at least one given); NaN in x or a bound gives NaN;
/// min > max gives max. The result type includes the bounds (int tensor, float bound -> Float).
Tensor clamp(const Tensor& x, const std::optional<Scalar>& min, const std::optional<Scalar>& max);
Tensor clamp(const Tensor& x, const std::optional<Tensor>& min, const std::optional<Tensor>& max);
Tensor clampMin(const Tensor& x, const Scalar& min);
Tensor clampMin(const Tensor& x, const Tensor& min);
Tensor clampMax(const Tensor& x, const Scalar& max);
Tensor clampMax(const Tensor& x, const Tensor& max);
/// x.masked_fill(mask, value) (aten::masked_fill): mask Bool; x and mask broadcast together
/// (result shape is their broadcast, dtype x's). Throws for a non-Bool mask.
Tensor maskedFill(const Tensor& x, const Tensor& mask, const Scalar& value);
/// value must be a 0-dim tensor ("masked_fill_ only supports a 0-dimensional value tensor").
Tensor maskedFill(const Tensor& x, const Tensor& mask, const Tensor& value);
/// start + weight * (end - start), floating only.
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
/// self + value * t1 * t2 and self + value * t1 / t2.
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);

// ---- in place ----
// x.relu_() etc.: the result is written into self and self is returned. A contiguous Float
// self is updated directly without a temporary; otherwise the functional op's result is
// copied into self (dtype and shape checked as assignResult does).

Tensor& relu_(Tensor& self);
Tensor& hardtanh_(Tensor& self, const Scalar& minVal = -1.0, const Scalar& maxVal = 1.0);
Tensor& clamp_(Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max);
Tensor& sigmoid_(Tensor& self);
Tensor& silu_(Tensor& self);
Tensor& hardswish_(Tensor& self);
/// self += alpha * other (other broadcast to self's shape).
Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor& mul_(Tensor& self, const Tensor& other);

}  // namespace torchless::ops
