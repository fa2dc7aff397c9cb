#include "ops/elementwise.h"

#include "ops/fast_elementwise.h"
#include "ops/parallel.h"
#include "ops/tensor_iterator.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace torchless::ops {

// ---------------------------------------------------------------------------------------
// Type promotion (ATen's ResultTypeState)
// ---------------------------------------------------------------------------------------
namespace {

struct Operand {
  Tensor t;
  bool wrapped = false;
};

Operand wrapScalar(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Double: return {Tensor::scalar(s.toDouble()), true};
    case Scalar::Kind::Int: return {Tensor::scalar(s.toLong()), true};
    default: return {Tensor::scalarBool(s.toBool()), true};
  }
}

ScalarType promoteSkipUndefined(ScalarType a, ScalarType b) {
  if (a == ScalarType::Undefined) return b;
  if (b == ScalarType::Undefined) return a;
  return promoteTypes(a, b);
}

struct ResultTypeState {
  ScalarType dim = ScalarType::Undefined, zero = ScalarType::Undefined,
             wrapped = ScalarType::Undefined;
  void update(const Tensor& t, bool isWrapped) {
    ScalarType cur = t.dtype();
    if (isWrapped) {
      if (isComplexType(cur))
        cur = ScalarType::ComplexFloat;
      else if (isFloatingType(cur))
        cur = kDefaultFloat;
      wrapped = promoteSkipUndefined(wrapped, cur);
    } else if (t.dim() == 0) {
      zero = promoteSkipUndefined(zero, cur);
    } else {
      dim = promoteSkipUndefined(dim, cur);
    }
  }
};

ScalarType toComplex(ScalarType t) {
  return t == ScalarType::Double ? ScalarType::ComplexDouble : ScalarType::ComplexFloat;
}

ScalarType combineCategories(ScalarType higher, ScalarType lower) {
  if (isComplexType(higher)) return higher;
  if (isComplexType(lower)) return isFloatingType(higher) ? toComplex(higher) : lower;
  if (isFloatingType(higher)) return higher;
  if (higher == ScalarType::Bool || isFloatingType(lower))
    return promoteSkipUndefined(higher, lower);
  if (higher != ScalarType::Undefined) return higher;
  return lower;
}

ScalarType resultTypeOf(std::initializer_list<const Operand*> ops) {
  ResultTypeState s;
  for (const Operand* o : ops) s.update(o->t, o->wrapped);
  return combineCategories(s.dim, combineCategories(s.zero, s.wrapped));
}

Tensor castIfNeeded(const Tensor& t, ScalarType dt) { return t.dtype() == dt ? t : t.to(dt); }

template <typename T>
inline T maxProp(T a, T b) {
  if constexpr (kIsFloat<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a < b ? b : a;
}
template <typename T>
inline T minProp(T a, T b) {
  if constexpr (kIsFloat<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return b < a ? b : a;
}

bool anyZero(const Tensor& t) {
  bool found = false;
  dispatchAll(t.dtype(), "any_zero", [&](auto tag) {
    using T = decltype(tag);
    TensorIter it({t});
    it.forEachSerial([&](char** data, const int64_t* strides, int64_t n) {
      for (int64_t i = 0; i < n && !found; ++i)
        if (*reinterpret_cast<const T*>(data[0] + i * strides[0]) == T(0)) found = true;
    });
  });
  return found;
}

// Note [Elementwise fast paths]
// Float32 operands that are contiguous (and, for binary ops, of one shape) skip TensorIter
// and run the plain loops of ops/fast_elementwise.h, which give the same bits as the generic
// kernels. Everything else (other dtypes, strided or broadcast operands, empty tensors) takes
// the generic path.
bool fastF32(const Tensor& x) {
  return x.dtype() == ScalarType::Float && x.numel() > 0 && x.isContiguous();
}
bool fastF32Pair(const Tensor& a, const Tensor& b) {
  return fastF32(a) && fastF32(b) && a.sizes() == b.sizes();
}
template <typename F>
Tensor fastUnary(const Tensor& x, const F& f) {
  Tensor out = Tensor::empty(x.sizes(), ScalarType::Float);
  f(x.data<float>(), out.data<float>(), x.numel());
  return out;
}
// Float32 operands of one shape stored in one dense layout other than the contiguous one
// (two channels-last activations, two views permuted alike: ConvNeXt's residual adds) run the
// same plain loops over their memory in storage order: the same element pairs, and the
// result takes their strides, as PyTorch's TensorIterator gives it.
bool denseNonContiguous(const Tensor& x) {
  return x.dtype() == ScalarType::Float && x.numel() > 0 && !x.isContiguous() &&
         isNonOverlappingAndDense(x);
}
bool denseSameLayout(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.strides() == b.strides() && b.dtype() == ScalarType::Float &&
         denseNonContiguous(a);
}
// Operands the plain loops take: contiguous and of one shape, or of one dense layout.
bool flatF32Pair(const Tensor& a, const Tensor& b) {
  return fastF32Pair(a, b) || denseSameLayout(a, b);
}
// An empty float tensor with x's sizes and strides (x dense).
Tensor emptyFloatLike(const Tensor& x) {
  Storage buf = Storage::allocate(static_cast<size_t>(x.numel()) * sizeof(float));
  return Tensor::fromStorage(buf, 0, x.sizes(), x.strides(), ScalarType::Float);
}
// An in-place op may write self directly when `other` (read at the same index) is self's
// own elements or its bytes do not overlap self's: views of one storage (activations the
// engine plans into one arena) are told apart by the byte ranges they span.
bool safeInPlace(const Tensor& self, const Tensor& other) {
  if (!other.storage().isAlias(self.storage()) || other.rawData() == self.rawData()) return true;
  auto span = [](const Tensor& t) {
    int64_t last = 0;  // the offset of the last element, in elements (strides are not negative)
    for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
    const char* begin = static_cast<const char*>(t.rawData());
    return std::make_pair(begin, begin + (last + 1) * static_cast<int64_t>(t.itemsize()));
  };
  if (self.numel() == 0 || other.numel() == 0) return true;
  const auto [s0, s1] = span(self);
  const auto [o0, o1] = span(other);
  return s1 <= o0 || o1 <= s0;
}

}  // namespace

ScalarType resultType(const Tensor& a, const Tensor& b) {
  Operand x{a, false}, y{b, false};
  return resultTypeOf({&x, &y});
}

ScalarType resultType(const Tensor& a, const Scalar& s) {
  Operand x{a, false}, y = wrapScalar(s);
  return resultTypeOf({&x, &y});
}

ScalarType resultType(const std::vector<Tensor>& tensors) {
  ResultTypeState s;
  for (const auto& t : tensors) s.update(t, false);
  return combineCategories(s.dim, combineCategories(s.zero, s.wrapped));
}

Tensor& assignResult(Tensor& self, const Tensor& result) {
  TL_CHECK(canCast(result.dtype(), self.dtype()),
           "result type {} can't be cast to the desired output type {}", toString(result.dtype()),
           toString(self.dtype()));
  TL_CHECK(result.sizes() == self.sizes(),
           "output with shape {} doesn't match the broadcast shape {}", sizesToString(self.sizes()),
           sizesToString(result.sizes()));
  copyInto(self, result);
  return self;
}

// ---------------------------------------------------------------------------------------
// Unary
// ---------------------------------------------------------------------------------------
namespace {

// psi(x), the derivative of lgamma (torch.digamma): +-inf at 0 (the sign opposite to the
// zero's), NaN at negative integers; reflection for x < 0, the recurrence psi(x) = psi(x + 1)
// - 1/x up to x >= 10, then the asymptotic series in the Bernoulli numbers B_2k / 2k.
double digammaOf(double x) {
  constexpr double kPi = 3.14159265358979323846;
  if (x == 0) return std::copysign(std::numeric_limits<double>::infinity(), -x);
  if (std::isnan(x) || x == std::numeric_limits<double>::infinity()) return x;
  if (x < 0) {
    if (x == std::trunc(x)) return std::numeric_limits<double>::quiet_NaN();
    double whole;
    const double r = std::modf(x, &whole);  // tan(pi * r) is exact where tan(pi * x) is not
    return digammaOf(1 - x) - kPi / std::tan(kPi * r);
  }
  double acc = 0;
  for (; x < 10; x += 1) acc -= 1 / x;
  const double z = 1 / (x * x);
  // 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760, 1/12 (Horner in z)
  const double series =
      z *
      (1.0 / 12 +
       z * (-1.0 / 120 +
            z * (1.0 / 252 + z * (-1.0 / 240 + z * (1.0 / 132 + z * (-691.0 / 32760 + z / 12))))));
  return acc + std::log(x) - 0.5 / x - series;
}

// erf^-1(y) (torch.erfinv): +-inf at +-1, NaN outside [-1, 1]; Giles' single-precision
// approximation ("Approximating the erfinv function", 2010) refined by two Newton steps
// on erf in double.
double erfinvOf(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1 || y == -1) return std::copysign(std::numeric_limits<double>::infinity(), y);
  double w = -std::log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      p = c + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      p = c + p * w;
  }
  double x = p * y;
  constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
  for (int i = 0; i < 2; ++i) x -= (std::erf(x) - y) / (kTwoOverSqrtPi * std::exp(-x * x));
  return x;
}

// Float-producing math: integers and Bool go to Float first.
template <typename F>
Tensor unaryFloat(const Tensor& x, const char* name, const F& f) {
  if (isComplexType(x.dtype())) notImplemented(name, x.dtype());
  const ScalarType outT = isFloatingType(x.dtype()) ? x.dtype() : kDefaultFloat;
  Tensor in = castIfNeeded(x, outT);
  Tensor out = Tensor::empty(x.sizes(), outT);
  TensorIter it({out, in});
  dispatchFloating(outT, name, [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    cpuKernel<T, T>(it, [&](T v) { return static_cast<T>(f(static_cast<A>(v))); });
  });
  return out;
}

// Floating inputs only (activations): "silu_cpu" not implemented for 'Long'.
template <typename F>
Tensor unaryFloatOnly(const Tensor& x, const char* name, const F& f) {
  if (!isFloatingType(x.dtype())) notImplemented(name, x.dtype());
  return unaryFloat(x, name, f);
}

// Same dtype in and out; f is called with the opmath value and a T tag.
template <typename F>
Tensor unarySame(const Tensor& x, const char* name, bool allowBool, const F& f) {
  if (!allowBool && x.dtype() == ScalarType::Bool) notImplemented(name, x.dtype());
  Tensor out = Tensor::empty(x.sizes(), x.dtype());
  TensorIter it({out, x});
  dispatchAll(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    cpuKernel<T, T>(it, [&](T v) { return castTo<T>(f(static_cast<A>(v))); });
  });
  return out;
}

template <typename F>
Tensor unaryToBool(const Tensor& x, const char* name, const F& f) {
  Tensor out = Tensor::empty(x.sizes(), ScalarType::Bool);
  TensorIter it({out, x});
  dispatchAll(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    cpuKernel<bool, T>(it, [&](T v) { return static_cast<bool>(f(static_cast<A>(v))); });
  });
  return out;
}

// Floor-like ops: identity (a copy) on integers, Bool refused.
template <typename F>
Tensor unaryRounding(const Tensor& x, const char* name, const F& f) {
  if (x.dtype() == ScalarType::Bool) notImplemented(name, x.dtype());
  if (isIntegralType(x.dtype(), false)) return x.clone();
  return unaryFloat(x, name, f);
}

}  // namespace

Tensor abs(const Tensor& x) {
  if (isComplexType(x.dtype())) {  // |z| as the real dtype (torch.abs of a complex tensor)
    const bool f = x.dtype() == ScalarType::ComplexFloat;
    Tensor c = x.contiguous();
    Tensor out = Tensor::empty(x.sizes(), f ? ScalarType::Float : ScalarType::Double);
    for (int64_t i = 0; i < c.numel(); ++i) {
      if (f)
        out.data<float>()[i] = std::abs(c.data<std::complex<float>>()[i]);
      else
        out.data<double>()[i] = std::abs(c.data<std::complex<double>>()[i]);
    }
    return out;
  }
  return unarySame(x, "abs_cpu", false, [](auto v) {
    using A = decltype(v);
    if constexpr (std::is_unsigned_v<A>)
      return v;
    else
      return v < A(0) ? A(-v) : v;
  });
}

Tensor neg(const Tensor& x) {
  TL_CHECK(x.dtype() != ScalarType::Bool,
           "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
           "invert a mask, use the `~` or `logical_not()` operator instead.");
  return unarySame(x, "neg_cpu", false, [](auto v) { return -v; });
}

Tensor sqrt(const Tensor& x) {
  return unaryFloat(x, "sqrt_vml_cpu", [](auto v) { return std::sqrt(v); });
}
Tensor rsqrt(const Tensor& x) {
  return unaryFloat(x, "rsqrt_cpu", [](auto v) { return decltype(v)(1) / std::sqrt(v); });
}
Tensor exp(const Tensor& x) {
  return unaryFloat(x, "exp_vml_cpu", [](auto v) { return std::exp(v); });
}
Tensor log(const Tensor& x) {
  return unaryFloat(x, "log_vml_cpu", [](auto v) { return std::log(v); });
}
Tensor log1p(const Tensor& x) {
  return unaryFloat(x, "log1p_vml_cpu", [](auto v) { return std::log1p(v); });
}
Tensor exp2(const Tensor& x) {
  return unaryFloat(x, "exp2", [](auto v) { return std::exp2(v); });
}
Tensor erfc(const Tensor& x) {
  return unaryFloat(x, "erfc_vml_cpu", [](auto v) { return std::erfc(v); });
}
Tensor sinc(const Tensor& x) {
  return unaryFloat(x, "sinc_cpu", [](auto v) {
    using A = decltype(v);
    if (v == A(0)) return A(1);
    const A px = A(3.14159265358979323846) * v;
    return std::sin(px) / px;
  });
}
Tensor entr(const Tensor& x) {
  return unaryFloat(x, "entr_cpu", [](auto v) {
    using A = decltype(v);
    if (std::isnan(v)) return v;
    if (v > A(0)) return -v * std::log(v);
    if (v == A(0)) return A(0);
    return -std::numeric_limits<A>::infinity();
  });
}
Tensor ndtr(const Tensor& x) {
  return unaryFloat(x, "ndtr_cpu", [](auto v) {
    using A = decltype(v);
    return A(0.5) * std::erfc(-v * A(0.70710678118654752440));
  });
}
Tensor logNdtr(const Tensor& x) {
  return unaryFloat(x, "log_ndtr_cpu", [](auto v) {
    using A = decltype(v);
    return std::log(A(0.5) * std::erfc(-v * A(0.70710678118654752440)));
  });
}

Tensor expm1(const Tensor& x) {
  return unaryFloat(x, "expm1_vml_cpu", [](auto v) { return std::expm1(v); });
}
Tensor frac(const Tensor& x) {
  return unaryFloatOnly(x, "frac_cpu", [](auto v) { return v - std::trunc(v); });
}
Tensor lgamma(const Tensor& x) {
  return unaryFloat(x, "lgamma_vml_cpu", [](auto v) { return std::lgamma(v); });
}
Tensor digamma(const Tensor& x) {
  return unaryFloat(x, "digamma", [](auto v) { return castTo<decltype(v)>(digammaOf(v)); });
}
Tensor erfinv(const Tensor& x) {
  return unaryFloat(x, "erfinv_vml_cpu", [](auto v) { return castTo<decltype(v)>(erfinvOf(v)); });
}
Tensor logit(const Tensor& x, std::optional<double> eps) {
  return unaryFloat(x, "logit_cpu", [eps](auto v) {
    using A = decltype(v);
    // the low bound first, as PyTorch (eps > 0.5 crosses them); NaN stays NaN
    if (eps) v = v < A(*eps) ? A(*eps) : (v > A(1) - A(*eps) ? A(1) - A(*eps) : v);
    return std::log(v / (A(1) - v));
  });
}

Tensor log10(const Tensor& x) {
  return unaryFloat(x, "log10_vml_cpu", [](auto v) { return std::log10(v); });
}
Tensor sin(const Tensor& x) {
  return unaryFloat(x, "sin_vml_cpu", [](auto v) { return std::sin(v); });
}
Tensor cos(const Tensor& x) {
  return unaryFloat(x, "cos_vml_cpu", [](auto v) { return std::cos(v); });
}
Tensor tan(const Tensor& x) {
  return unaryFloat(x, "tan_vml_cpu", [](auto v) { return std::tan(v); });
}
Tensor asin(const Tensor& x) {
  return unaryFloat(x, "asin_vml_cpu", [](auto v) { return std::asin(v); });
}
Tensor acos(const Tensor& x) {
  return unaryFloat(x, "acos_vml_cpu", [](auto v) { return std::acos(v); });
}
Tensor sinh(const Tensor& x) {
  return unaryFloat(x, "sinh_cpu", [](auto v) { return std::sinh(v); });
}
Tensor cosh(const Tensor& x) {
  return unaryFloat(x, "cosh_cpu", [](auto v) { return std::cosh(v); });
}
Tensor asinh(const Tensor& x) {
  return unaryFloat(x, "asinh_cpu", [](auto v) { return std::asinh(v); });
}
Tensor acosh(const Tensor& x) {
  return unaryFloat(x, "acosh_cpu", [](auto v) { return std::acosh(v); });
}
Tensor atanh(const Tensor& x) {
  return unaryFloat(x, "atanh_cpu", [](auto v) { return std::atanh(v); });
}
Tensor atan(const Tensor& x) {
  return unaryFloat(x, "atan_vml_cpu", [](auto v) { return std::atan(v); });
}
Tensor tanh(const Tensor& x) {
  return unaryFloat(x, "tanh_vml_cpu", [](auto v) { return std::tanh(v); });
}
Tensor erf(const Tensor& x) {
  return unaryFloat(x, "erf_vml_cpu", [](auto v) { return std::erf(v); });
}
Tensor sigmoid(const Tensor& x) {
  if (fastF32(x)) return fastUnary(x, fast::sigmoid);
  return unaryFloat(x, "sigmoid_cpu", [](auto v) {
    using A = decltype(v);
    return A(1) / (A(1) + std::exp(-v));
  });
}
Tensor reciprocal(const Tensor& x) {
  return unaryFloat(x, "reciprocal_cpu", [](auto v) { return decltype(v)(1) / v; });
}
Tensor floor(const Tensor& x) {
  return unaryRounding(x, "floor_vml_cpu", [](auto v) { return std::floor(v); });
}
Tensor ceil(const Tensor& x) {
  return unaryRounding(x, "ceil_vml_cpu", [](auto v) { return std::ceil(v); });
}
Tensor trunc(const Tensor& x) {
  return unaryRounding(x, "trunc_vml_cpu", [](auto v) { return std::trunc(v); });
}

Tensor round(const Tensor& x, int64_t decimals) {
  if (decimals == 0)
    return unaryRounding(x, "round_vml_cpu", [](auto v) { return std::nearbyint(v); });
  TL_CHECK(!isIntegralType(x.dtype(), true),
           "round_cpu: decimals is only supported for floating types");
  const bool negDec = decimals < 0;
  const double tenPow = std::pow(10.0, static_cast<double>(negDec ? -decimals : decimals));
  return unaryFloat(x, "round_cpu", [=](auto v) {
    using A = decltype(v);
    const A p = static_cast<A>(tenPow);
    return negDec ? A(std::nearbyint(v / p) * p) : A(std::nearbyint(v * p) / p);
  });
}

Tensor sign(const Tensor& x) {
  if (x.dtype() == ScalarType::Bool) return x.clone();
  return unarySame(x, "sign_cpu", false, [](auto v) {
    using A = decltype(v);
    return A((A(0) < v) - (v < A(0)));
  });
}

Tensor logicalNot(const Tensor& x) {
  return unaryToBool(x, "logical_not_cpu", [](auto v) { return !castTo<bool>(v); });
}

Tensor bitwiseNot(const Tensor& x) {
  if (!isIntegralType(x.dtype(), true)) notImplemented("bitwise_not_cpu", x.dtype());
  Tensor out = Tensor::empty(x.sizes(), x.dtype());
  TensorIter it({out, x});
  dispatchIntegral(x.dtype(), true, "bitwise_not_cpu", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>)
      cpuKernel<T, T>(it, [](T v) { return !v; });
    else
      cpuKernel<T, T>(it, [](T v) { return static_cast<T>(~v); });
  });
  return out;
}

Tensor isnan(const Tensor& x) {
  return unaryToBool(x, "isnan", [](auto v) { return v != v; });
}

Tensor isinf(const Tensor& x) {
  return unaryToBool(x, "isinf", [](auto v) {
    if constexpr (std::is_floating_point_v<decltype(v)>)
      return std::isinf(v);
    else
      return false;
  });
}

Tensor isfinite(const Tensor& x) {
  return unaryToBool(x, "isfinite", [](auto v) {
    if constexpr (std::is_floating_point_v<decltype(v)>)
      return std::isfinite(v);
    else
      return true;
  });
}

Tensor relu(const Tensor& x) {
  TL_CHECK(x.dtype() != ScalarType::Bool, "Boolean inputs not supported for relu");
  if (fastF32(x)) return fastUnary(x, fast::relu);
  return unarySame(x, "clamp_min_cpu", false, [](auto v) {
    using A = decltype(v);
    return maxProp(v, A(0));
  });
}

Tensor relu6(const Tensor& x) { return hardtanh(x, 0, 6); }

Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate == "tanh") {
    return unaryFloatOnly(x, "GeluKernelImpl", [](auto v) {
      using A = decltype(v);
      const A kBeta = A(M_SQRT2 * M_2_SQRTPI * 0.5);
      const A kKappa = A(0.044715);
      const A inner = kBeta * (v + kKappa * v * v * v);
      return A(0.5) * v * (A(1) + std::tanh(inner));
    });
  }
  TL_CHECK(approximate == "none", "approximate argument must be either none or tanh.");
  return unaryFloatOnly(x, "GeluKernelImpl", [](auto v) {
    using A = decltype(v);
    return v * A(0.5) * (A(1) + std::erf(v * A(M_SQRT1_2)));
  });
}

Tensor silu(const Tensor& x) {
  if (fastF32(x)) return fastUnary(x, fast::silu);
  return unaryFloatOnly(x, "silu_cpu", [](auto v) {
    using A = decltype(v);
    return v / (A(1) + std::exp(-v));
  });
}

Tensor hardswish(const Tensor& x) {
  if (fastF32(x)) return fastUnary(x, fast::hardswish);
  return unaryFloatOnly(x, "hardswish_cpu", [](auto v) {
    using A = decltype(v);
    return v * std::min(std::max(v + A(3), A(0)), A(6)) / A(6);
  });
}

Tensor hardsigmoid(const Tensor& x) {
  return unaryFloatOnly(x, "hardsigmoid_cpu", [](auto v) {
    using A = decltype(v);
    return std::min(std::max(v + A(3), A(0)), A(6)) / A(6);
  });
}

Tensor hardtanh(const Tensor& x, const Scalar& minVal, const Scalar& maxVal) {
  TL_CHECK(x.dtype() != ScalarType::Bool, "Bool inputs not supported for hardtanh");
  const double lo = minVal.toDouble(), hi = maxVal.toDouble();
  TL_CHECK(!(x.dtype() == ScalarType::Byte && (lo < 0 || hi < 0)),
           "cannot do hardtanh on an unsigned type with negative limits");
  if (fastF32(x)) {
    const float l = castTo<float>(lo), h = castTo<float>(hi);
    if (l <= h)  // min(max(v, l), h) equals the kernel below then (NaN bounds fail l <= h)
      return fastUnary(x, [&](const float* i, float* o, int64_t n) { fast::clamp(i, o, n, l, h); });
  }
  return unarySame(x, "hardtanh_cpu", false, [=](auto v) {
    using A = decltype(v);
    if constexpr (kIsFloat<A>) {
      if (v != v) return v;
    }
    const A l = castTo<A>(lo), h = castTo<A>(hi);
    return v < l ? l : (v > h ? h : v);
  });
}

Tensor leakyRelu(const Tensor& x, const Scalar& negativeSlope) {
  const double s = negativeSlope.toDouble();
  return unaryFloatOnly(x, "leaky_relu_cpu", [=](auto v) {
    using A = decltype(v);
    return v > A(0) ? v : v * A(s);
  });
}

Tensor elu(const Tensor& x, const Scalar& alpha, const Scalar& scale, const Scalar& inputScale) {
  const double neg = alpha.toDouble() * scale.toDouble(), pos = scale.toDouble(),
               in = inputScale.toDouble();
  return unaryFloatOnly(x, "elu_cpu", [=](auto v) {
    using A = decltype(v);
    return v <= A(0) ? (std::exp(v * A(in)) - A(1)) * A(neg) : v * A(pos);
  });
}

Tensor selu(const Tensor& x) {
  return elu(x, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1.0);
}

Tensor softplus(const Tensor& x, const Scalar& beta, const Scalar& threshold) {
  const double b = beta.toDouble(), th = threshold.toDouble();
  return unaryFloatOnly(x, "softplus_cpu", [=](auto v) {
    using A = decltype(v);
    return v * A(b) > A(th) ? v : std::log1p(std::exp(v * A(b))) / A(b);
  });
}

Tensor mish(const Tensor& x) {
  return unaryFloatOnly(x, "mish_cpu",
                        [](auto v) { return v * std::tanh(std::log1p(std::exp(v))); });
}

// ---------------------------------------------------------------------------------------
// Binary
// ---------------------------------------------------------------------------------------
namespace {

enum class BinOp {
  Add,
  Sub,
  Mul,
  Div,
  DivTrunc,
  DivFloor,
  Rem,
  Fmod,
  Pow,
  Atan2,
  Hypot,
  Max,
  Min,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  LAnd,
  LOr,
  LXor,
  BAnd,
  BOr,
  BXor,
  LShift,
  RShift,
};

const char* binName(BinOp op) {
  switch (op) {
    case BinOp::Add: return "add_cpu";
    case BinOp::Sub: return "sub_cpu";
    case BinOp::Mul: return "mul_cpu";
    case BinOp::Div: return "div_true_cpu";
    case BinOp::DivTrunc: return "div_trunc_cpu";
    case BinOp::DivFloor: return "div_floor_cpu";
    case BinOp::Rem: return "remainder_cpu";
    case BinOp::Fmod: return "fmod_cpu";
    case BinOp::Pow: return "pow";
    case BinOp::Atan2: return "atan2_cpu";
    case BinOp::Hypot: return "hypot_cpu";
    case BinOp::Max: return "maximum_cpu";
    case BinOp::Min: return "minimum_cpu";
    case BinOp::BAnd: return "bitwise_and_cpu";
    case BinOp::BOr: return "bitwise_or_cpu";
    case BinOp::BXor: return "bitwise_xor_cpu";
    case BinOp::LShift: return "lshift_cpu";
    case BinOp::RShift: return "rshift_cpu";
    default: return "comparison_cpu";
  }
}

bool isComparison(BinOp op) { return op >= BinOp::Eq && op <= BinOp::LXor; }

template <typename A>
inline A powInt(A base, A exp) {
  if constexpr (std::is_same_v<A, bool>) {
    return base || !exp;
  } else {
    if constexpr (std::is_signed_v<A>) {
      if (exp < 0) {
        if (base == 1) return 1;
        if (base == -1) return (exp % 2 == 0) ? 1 : -1;
        return 0;
      }
    }
    A result = 1;
    while (exp) {
      if (exp & 1) result = static_cast<A>(result * base);
      exp = static_cast<A>(exp / 2);
      base = static_cast<A>(base * base);
    }
    return result;
  }
}

// Note [Integer division overflow]
// INT_MIN / -1 and INT_MIN % -1 trap (SIGFPE) on x86. PyTorch crashes there; we give NumPy's
// answers instead: the quotient wraps (INT_MIN // -1 == INT_MIN) and the remainder is 0. This
// covers div(rounding_mode='trunc'|'floor'), floor_divide, remainder and fmod on int tensors,
// and TorchScript's int `//` and `%` (runtime/builtin_ops.cpp). Division by zero is unchanged.
template <class T>
inline T wrappingDiv(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1)
      return static_cast<T>(static_cast<std::make_unsigned_t<T>>(0) -
                            static_cast<std::make_unsigned_t<T>>(a));
  }
  return static_cast<T>(a / b);
}
template <class T>
inline T wrappingRem(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return T(0);
  }
  return static_cast<T>(a % b);
}

template <typename A>
inline A floorDivFloat(A a, A b) {
  if (b == A(0)) return a / b;
  A mod = std::fmod(a, b);
  A div = (a - mod) / b;
  if (mod != A(0) && (b < A(0)) != (mod < A(0))) div -= A(1);
  A floordiv;
  if (div != A(0)) {
    floordiv = std::floor(div);
    if (div - floordiv > A(0.5)) floordiv += A(1);
  } else {
    floordiv = std::copysign(A(0), a / b);
  }
  return floordiv;
}

template <typename T>
void runArith(BinOp op, const TensorIter& it, const Scalar& alpha) {
  using A = OpMath<T>;
  constexpr bool fl = kIsFloat<T>;
  switch (op) {
    case BinOp::Add: {
      const A al = alpha.to<A>();
      cpuKernel<T, T, T>(it, [al](T a, T b) { return castTo<T>(A(a) + al * A(b)); });
      return;
    }
    case BinOp::Sub: {
      const A al = alpha.to<A>();
      cpuKernel<T, T, T>(it, [al](T a, T b) { return castTo<T>(A(a) - al * A(b)); });
      return;
    }
    case BinOp::Mul:
      cpuKernel<T, T, T>(it, [](T a, T b) { return castTo<T>(A(a) * A(b)); });
      return;
    case BinOp::Div:
      if constexpr (fl) cpuKernel<T, T, T>(it, [](T a, T b) { return castTo<T>(A(a) / A(b)); });
      return;
    case BinOp::DivTrunc:
      if constexpr (fl) {
        cpuKernel<T, T, T>(it, [](T a, T b) { return castTo<T>(std::trunc(A(a) / A(b))); });
      } else if constexpr (!std::is_same_v<T, bool>) {
        cpuKernel<T, T, T>(it, [](T a, T b) { return wrappingDiv(a, b); });
      }
      return;
    case BinOp::DivFloor:
      if constexpr (fl) {
        cpuKernel<T, T, T>(it, [](T a, T b) { return castTo<T>(floorDivFloat(A(a), A(b))); });
      } else if constexpr (!std::is_same_v<T, bool>) {
        cpuKernel<T, T, T>(it, [](T a, T b) {
          if constexpr (std::is_signed_v<T>) {
            T q = wrappingDiv(a, b);
            if ((wrappingRem(a, b) != 0) && ((a < 0) != (b < 0))) --q;
            return q;
          } else {
            return static_cast<T>(a / b);
          }
        });
      }
      return;
    case BinOp::Rem:
      if constexpr (fl) {
        cpuKernel<T, T, T>(it, [](T a, T b) {
          A m = std::fmod(A(a), A(b));
          if (m != A(0) && ((A(b) < A(0)) != (m < A(0)))) m += A(b);
          return castTo<T>(m);
        });
      } else if constexpr (!std::is_same_v<T, bool>) {
        cpuKernel<T, T, T>(it, [](T a, T b) {
          T r = wrappingRem(a, b);
          if constexpr (std::is_signed_v<T>) {
            if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
          }
          return r;
        });
      }
      return;
    case BinOp::Fmod:
      if constexpr (fl)
        cpuKernel<T, T, T>(it, [](T a, T b) { return castTo<T>(std::fmod(A(a), A(b))); });
      else if constexpr (!std::is_same_v<T, bool>)
        cpuKernel<T, T, T>(it, [](T a, T b) { return wrappingRem(a, b); });
      return;
    case BinOp::Pow:
      if constexpr (fl)
        cpuKernel<T, T, T>(it, [](T a, T b) { return castTo<T>(std::pow(A(a), A(b))); });
      else
        cpuKernel<T, T, T>(it, [](T a, T b) { return powInt<T>(a, b); });
      return;
    case BinOp::Atan2:
      if constexpr (fl)
        cpuKernel<T, T, T>(it, [](T a, T b) { return castTo<T>(std::atan2(A(a), A(b))); });
      return;
    case BinOp::Hypot:
      if constexpr (fl)
        cpuKernel<T, T, T>(it, [](T a, T b) { return castTo<T>(std::hypot(A(a), A(b))); });
      return;
    case BinOp::Max:
      cpuKernel<T, T, T>(it, [](T a, T b) { return castTo<T>(maxProp(A(a), A(b))); });
      return;
    case BinOp::Min:
      cpuKernel<T, T, T>(it, [](T a, T b) { return castTo<T>(minProp(A(a), A(b))); });
      return;
    case BinOp::BAnd:
      if constexpr (std::is_integral_v<T>)
        cpuKernel<T, T, T>(it, [](T a, T b) { return static_cast<T>(a & b); });
      return;
    case BinOp::BOr:
      if constexpr (std::is_integral_v<T>)
        cpuKernel<T, T, T>(it, [](T a, T b) { return static_cast<T>(a | b); });
      return;
    case BinOp::BXor:
      if constexpr (std::is_integral_v<T>)
        cpuKernel<T, T, T>(it, [](T a, T b) { return static_cast<T>(a ^ b); });
      return;
    // PyTorch's BinaryOpsKernel.cpp lshift / rshift of integers (a shift past the width or by a
    // negative count gives 0, or the sign for >>).
    case BinOp::LShift:
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        cpuKernel<T, T, T>(it, [](T a, T b) {
          constexpr T kBits = static_cast<T>(sizeof(T) * 8);
          if (static_cast<std::make_signed_t<T>>(b) < 0 || b >= kBits) return T(0);
          return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) << b);
        });
      }
      return;
    case BinOp::RShift:
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        cpuKernel<T, T, T>(it, [](T a, T b) {
          constexpr T kBits = static_cast<T>(sizeof(T) * 8);
          if (static_cast<std::make_signed_t<T>>(b) < 0 || b >= kBits)
            return static_cast<T>(a >> (kBits - 1));
          return static_cast<T>(a >> b);
        });
      }
      return;
    default: break;
  }
  TL_INTERNAL_ASSERT(false, "runArith: unexpected op");
}

template <typename T>
void runCompare(BinOp op, const TensorIter& it) {
  using A = OpMath<T>;
  switch (op) {
    case BinOp::Eq: cpuKernel<bool, T, T>(it, [](T a, T b) { return A(a) == A(b); }); return;
    case BinOp::Ne: cpuKernel<bool, T, T>(it, [](T a, T b) { return A(a) != A(b); }); return;
    case BinOp::Lt: cpuKernel<bool, T, T>(it, [](T a, T b) { return A(a) < A(b); }); return;
    case BinOp::Le: cpuKernel<bool, T, T>(it, [](T a, T b) { return A(a) <= A(b); }); return;
    case BinOp::Gt: cpuKernel<bool, T, T>(it, [](T a, T b) { return A(a) > A(b); }); return;
    case BinOp::Ge: cpuKernel<bool, T, T>(it, [](T a, T b) { return A(a) >= A(b); }); return;
    case BinOp::LAnd:
      cpuKernel<bool, T, T>(it, [](T a, T b) { return castTo<bool>(a) && castTo<bool>(b); });
      return;
    case BinOp::LOr:
      cpuKernel<bool, T, T>(it, [](T a, T b) { return castTo<bool>(a) || castTo<bool>(b); });
      return;
    case BinOp::LXor:
      cpuKernel<bool, T, T>(it, [](T a, T b) { return castTo<bool>(a) != castTo<bool>(b); });
      return;
    default: break;
  }
  TL_INTERNAL_ASSERT(false, "runCompare: unexpected op");
}

Tensor binary(BinOp op, const Operand& a, const Operand& b, const Scalar& alpha = 1) {
  ScalarType ct = resultTypeOf({&a, &b});
  if (isComplexType(ct)) notImplemented(binName(op), ct);
  const bool integral = isIntegralType(ct, true);
  switch (op) {
    case BinOp::Add:
    case BinOp::Sub:
      if (op == BinOp::Sub) {
        TL_CHECK(!(a.t.dtype() == ScalarType::Bool && b.t.dtype() == ScalarType::Bool),
                 "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                 "`^` or `logical_xor()` operator instead.");
        TL_CHECK(a.t.dtype() != ScalarType::Bool && b.t.dtype() != ScalarType::Bool,
                 "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                 "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
      }
      TL_CHECK(!(isIntegralType(ct, true) && alpha.isFloatingPoint()),
               "For integral input tensors, argument alpha must not be a floating point number.");
      TL_CHECK(!(ct != ScalarType::Bool && alpha.isBoolean()),
               "Boolean alpha only supported for Boolean results.");
      break;
    case BinOp::Div:
    case BinOp::Atan2:
      if (integral) ct = kDefaultFloat;
      break;
    case BinOp::Hypot:
      if (integral) notImplemented(binName(op), ct);
      break;
    case BinOp::DivTrunc:
    case BinOp::DivFloor:
    case BinOp::Rem:
    case BinOp::Fmod:
      if (ct == ScalarType::Bool) notImplemented(binName(op), ct);
      if (integral && anyZero(b.t)) throw Error("ZeroDivisionError");
      break;
    case BinOp::Pow:
      if (ct == ScalarType::Bool) notImplemented(binName(op), ct);
      break;
    case BinOp::BAnd:
    case BinOp::BOr:
    case BinOp::BXor:
      if (!integral) notImplemented(binName(op), ct);
      break;
    case BinOp::LShift:
    case BinOp::RShift:
      if (!integral || ct == ScalarType::Bool) notImplemented(binName(op), ct);
      break;
    default: break;
  }
  const ScalarType outT = isComparison(op) ? ScalarType::Bool : ct;
  Tensor x = castIfNeeded(a.t, ct), y = castIfNeeded(b.t, ct);
  const IntList shape = broadcastShapes(x.sizes(), y.sizes());
  Tensor out = Tensor::empty(shape, outT);
  TensorIter it({out, x, y}, shape);
  dispatchAll(ct, binName(op), [&](auto tag) {
    using T = decltype(tag);
    if (isComparison(op))
      runCompare<T>(op, it);
    else
      runArith<T>(op, it, alpha);
  });
  return out;
}

Operand T_(const Tensor& t) { return {t, false}; }

BinOp divOp(const std::optional<std::string>& mode) {
  if (!mode) return BinOp::Div;
  if (*mode == "trunc") return BinOp::DivTrunc;
  if (*mode == "floor") return BinOp::DivFloor;
  throw Error(fmt::format(
      "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{}'", *mode));
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (flatF32Pair(a, b) && !alpha.isBoolean()) {
    Tensor out = emptyFloatLike(a);
    fast::add(a.data<float>(), b.data<float>(), out.data<float>(), a.numel(), alpha.to<float>());
    return out;
  }
  return binary(BinOp::Add, T_(a), T_(b), alpha);
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return binary(BinOp::Add, T_(a), wrapScalar(b), alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return binary(BinOp::Sub, T_(a), T_(b), alpha);
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return binary(BinOp::Sub, T_(a), wrapScalar(b), alpha);
}
Tensor rsub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return binary(BinOp::Sub, T_(b), T_(a), alpha);
}
Tensor rsub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return binary(BinOp::Sub, wrapScalar(b), T_(a), alpha);
}
namespace {

// True when `x` is a float [N, C, H, W] stored channels-last (NHWC memory, dense) and `s` a
// float [N or 1, C, 1, 1] with its channels adjacent: a per-channel scale, as
// squeeze-and-excitation blocks apply it to the engine's channels-last activations.
bool channelsLastTimesPerChannel(const Tensor& x, const Tensor& s) {
  if (x.dtype() != ScalarType::Float || s.dtype() != ScalarType::Float || x.dim() != 4 ||
      s.dim() != 4)
    return false;
  const IntList& xs = x.sizes();
  const IntList& st = x.strides();
  const int64_t C = xs[1], H = xs[2], W = xs[3];
  if (x.numel() == 0 || C < 2 || H * W < 2) return false;
  if (!(st[1] == 1 && st[3] == C && st[2] == C * W && st[0] == C * W * H)) return false;
  // s's elements at s.data<float>()[n * C + c], whatever strides its size-1 dims carry (a
  // convolution's channels-last [N, C, 1, 1] output has (C, 1, C, C)).
  const IntList& ss = s.sizes();
  const IntList& sst = s.strides();
  return (ss[0] == xs[0] || ss[0] == 1) && ss[1] == C && ss[2] == 1 && ss[3] == 1 && sst[1] == 1 &&
         (ss[0] == 1 || sst[0] == C);
}

// x * s for channelsLastTimesPerChannel(x, s): a channels-last result, as PyTorch's
// TensorIterator gives for these operands (in either order); the same float products.
Tensor mulChannelsLastPerChannel(const Tensor& x, const Tensor& s) {
  const int64_t N = x.sizes()[0], C = x.sizes()[1], H = x.sizes()[2], W = x.sizes()[3], HW = H * W;
  Storage buf = Storage::allocate(static_cast<size_t>(N * HW * C) * sizeof(float));
  Tensor out = Tensor::fromStorage(buf, 0, x.sizes(), x.strides(), ScalarType::Float);
  const float* xp = x.data<float>();
  const float* sp = s.data<float>();
  float* op = out.data<float>();
  const bool perSample = s.sizes()[0] == N && N > 1;
  parallelFor(N * HW, 1024, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* sc = sp + (perSample ? (r / HW) * C : 0);
      const float* in = xp + r * C;
      float* o = op + r * C;
      for (int64_t c = 0; c < C; ++c) o[c] = in[c] * sc[c];
    }
  });
  return out;
}

}  // namespace

Tensor mul(const Tensor& a, const Tensor& b) {
  if (channelsLastTimesPerChannel(a, b)) return mulChannelsLastPerChannel(a, b);
  if (channelsLastTimesPerChannel(b, a)) return mulChannelsLastPerChannel(b, a);
  if (flatF32Pair(a, b)) {
    Tensor out = emptyFloatLike(a);
    fast::mul(a.data<float>(), b.data<float>(), out.data<float>(), a.numel());
    return out;
  }
  return binary(BinOp::Mul, T_(a), T_(b));
}
Tensor mul(const Tensor& a, const Scalar& b) { return binary(BinOp::Mul, T_(a), wrapScalar(b)); }
Tensor div(const Tensor& a, const Tensor& b, const std::optional<std::string>& m) {
  return binary(divOp(m), T_(a), T_(b));
}
Tensor div(const Tensor& a, const Scalar& b, const std::optional<std::string>& m) {
  return binary(divOp(m), T_(a), wrapScalar(b));
}
Tensor floorDivide(const Tensor& a, const Tensor& b) {
  return binary(BinOp::DivFloor, T_(a), T_(b));
}
Tensor floorDivide(const Tensor& a, const Scalar& b) {
  return binary(BinOp::DivFloor, T_(a), wrapScalar(b));
}
Tensor remainder(const Tensor& a, const Tensor& b) { return binary(BinOp::Rem, T_(a), T_(b)); }
Tensor remainder(const Tensor& a, const Scalar& b) {
  return binary(BinOp::Rem, T_(a), wrapScalar(b));
}
Tensor fmod(const Tensor& a, const Tensor& b) { return binary(BinOp::Fmod, T_(a), T_(b)); }
Tensor fmod(const Tensor& a, const Scalar& b) { return binary(BinOp::Fmod, T_(a), wrapScalar(b)); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(BinOp::Pow, T_(a), T_(b)); }
Tensor pow(const Tensor& a, const Scalar& b) {
  TL_CHECK(!(isIntegralType(a.dtype(), true) && b.isIntegral() && b.toLong() < 0),
           "Integers to negative integer powers are not allowed.");
  return binary(BinOp::Pow, T_(a), wrapScalar(b));
}
Tensor pow(const Scalar& a, const Tensor& b) { return binary(BinOp::Pow, wrapScalar(a), T_(b)); }
Tensor atan2(const Tensor& a, const Tensor& b) { return binary(BinOp::Atan2, T_(a), T_(b)); }
Tensor hypot(const Tensor& a, const Tensor& b) { return binary(BinOp::Hypot, T_(a), T_(b)); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinOp::Max, T_(a), T_(b)); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinOp::Min, T_(a), T_(b)); }

#define TL_CMP(name, OP)                                                                    \
  Tensor name(const Tensor& a, const Tensor& b) { return binary(BinOp::OP, T_(a), T_(b)); } \
  Tensor name(const Tensor& a, const Scalar& b) { return binary(BinOp::OP, T_(a), wrapScalar(b)); }
TL_CMP(eq, Eq)
TL_CMP(ne, Ne)
TL_CMP(lt, Lt)
TL_CMP(le, Le)
TL_CMP(gt, Gt)
TL_CMP(ge, Ge)
TL_CMP(bitwiseAnd, BAnd)
TL_CMP(bitwiseOr, BOr)
TL_CMP(bitwiseXor, BXor)
TL_CMP(lshift, LShift)
TL_CMP(rshift, RShift)
#undef TL_CMP
Tensor logicalAnd(const Tensor& a, const Tensor& b) { return binary(BinOp::LAnd, T_(a), T_(b)); }
Tensor logicalOr(const Tensor& a, const Tensor& b) { return binary(BinOp::LOr, T_(a), T_(b)); }
Tensor logicalXor(const Tensor& a, const Tensor& b) { return binary(BinOp::LXor, T_(a), T_(b)); }

// ---------------------------------------------------------------------------------------
// Ternary
// ---------------------------------------------------------------------------------------
namespace {

Tensor whereImpl(const Tensor& cond, const Operand& a, const Operand& b) {
  TL_CHECK(cond.dtype() == ScalarType::Bool || cond.dtype() == ScalarType::Byte,
           "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
           toString(cond.dtype()));
  const ScalarType ct = resultTypeOf({&a, &b});
  Tensor c = castIfNeeded(cond, ScalarType::Bool);
  Tensor x = castIfNeeded(a.t, ct), y = castIfNeeded(b.t, ct);
  const IntList shape = broadcastShapes(broadcastShapes(c.sizes(), x.sizes()), y.sizes());
  Tensor out = Tensor::empty(shape, ct);
  TensorIter it({out, c, x, y}, shape);
  dispatchAll(ct, "where_cpu", [&](auto tag) {
    using T = decltype(tag);
    cpuKernel<T, bool, T, T>(it, [](bool k, T p, T q) { return k ? p : q; });
  });
  return out;
}

}  // namespace

Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) {
  return whereImpl(c, T_(a), T_(b));
}
Tensor where(const Tensor& c, const Tensor& a, const Scalar& b) {
  return whereImpl(c, T_(a), wrapScalar(b));
}
Tensor where(const Tensor& c, const Scalar& a, const Tensor& b) {
  return whereImpl(c, wrapScalar(a), T_(b));
}
Tensor where(const Tensor& c, const Scalar& a, const Scalar& b) {
  return whereImpl(c, wrapScalar(a), wrapScalar(b));
}

Tensor clamp(const Tensor& x, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  TL_CHECK(min || max, "torch.clamp: At least one of 'min' or 'max' must not be None");
  Operand ox = T_(x), omin = min ? wrapScalar(*min) : Operand{},
          omax = max ? wrapScalar(*max) : Operand{};
  ScalarType ct =
      min && max ? resultTypeOf({&ox, &omin, &omax}) : resultTypeOf({&ox, min ? &omin : &omax});
  TL_CHECK(!isComplexType(ct), "clamp is not supported for complex types");
  if (ct == ScalarType::Float && fastF32(x)) {
    const float lo = min ? min->to<float>() : -std::numeric_limits<float>::infinity();
    const float hi = max ? max->to<float>() : std::numeric_limits<float>::infinity();
    return fastUnary(x, [&](const float* i, float* o, int64_t n) { fast::clamp(i, o, n, lo, hi); });
  }
  Tensor in = castIfNeeded(x, ct);
  Tensor out = Tensor::empty(x.sizes(), ct);
  TensorIter it({out, in});
  dispatchAll(ct, "clamp_scalar_cpu", [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    const bool hasLo = min.has_value(), hasHi = max.has_value();
    const A lo = hasLo ? min->to<A>() : A(0), hi = hasHi ? max->to<A>() : A(0);
    // std::min/std::max semantics: NaN in x stays NaN, a NaN bound is ignored (as PyTorch's
    // scalar clamp does).
    cpuKernel<T, T>(it, [=](T v) {
      A r = A(v);
      if (hasLo) r = std::max(r, lo);
      if (hasHi) r = std::min(r, hi);
      return castTo<T>(r);
    });
  });
  return out;
}

Tensor clamp(const Tensor& x, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  const bool hasMin = min && min->defined(), hasMax = max && max->defined();
  TL_CHECK(hasMin || hasMax, "torch.clamp: At least one of 'min' or 'max' must not be None");
  std::vector<Tensor> all{x};
  if (hasMin) all.push_back(*min);
  if (hasMax) all.push_back(*max);
  const ScalarType ct = resultType(all);
  Tensor r = castIfNeeded(x, ct);
  if (hasMin) r = maximum(r, castIfNeeded(*min, ct));
  if (hasMax) r = minimum(r, castIfNeeded(*max, ct));
  return r;
}

Tensor clampMin(const Tensor& x, const Scalar& min) {
  return clamp(x, std::optional<Scalar>(min), std::nullopt);
}
Tensor clampMin(const Tensor& x, const Tensor& min) {
  return clamp(x, std::optional<Tensor>(min), std::nullopt);
}
Tensor clampMax(const Tensor& x, const Scalar& max) {
  return clamp(x, std::nullopt, std::optional<Scalar>(max));
}
Tensor clampMax(const Tensor& x, const Tensor& max) {
  return clamp(x, std::nullopt, std::optional<Tensor>(max));
}

Tensor maskedFill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  TL_CHECK(mask.dtype() == ScalarType::Bool,
           "masked_fill_ only supports boolean masks, but got mask with dtype {}",
           toString(mask.dtype()));
  // Out of place, self and mask broadcast together (ATen's masked_fill: expand_outplace, then
  // a contiguous clone filled in place); masked_fill_ then rejects a result larger than self.
  const IntList shape = broadcastShapes(x.sizes(), mask.sizes());
  Tensor out = Tensor::empty(shape, x.dtype());
  TensorIter it({out, x, mask}, shape);
  dispatchAll(x.dtype(), "masked_fill", [&](auto tag) {
    using T = decltype(tag);
    const T v = value.to<T>();
    cpuKernel<T, T, bool>(it, [v](T a, bool m) { return m ? v : a; });
  });
  return out;
}

Tensor maskedFill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  TL_CHECK(value.dim() == 0,
           "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} "
           "dimension(s).",
           value.dim());
  if (isFloatingType(value.dtype())) return maskedFill(x, mask, Scalar(value.itemDouble()));
  if (value.dtype() == ScalarType::Bool) return maskedFill(x, mask, Scalar(value.itemBool()));
  return maskedFill(x, mask, Scalar(value.itemInt()));
}

Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight) {
  TL_CHECK(start.dtype() == end.dtype(), "expected dtype {} for `end` but got dtype {}",
           dtypeName(start.dtype()), dtypeName(end.dtype()));
  const IntList shape = broadcastShapes(start.sizes(), end.sizes());
  Tensor out = Tensor::empty(shape, start.dtype());
  TensorIter it({out, start, end}, shape);
  dispatchFloating(start.dtype(), "lerp_kernel_scalar", [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    const A w = weight.to<A>();
    cpuKernel<T, T, T>(it, [w](T s, T e) {
      const A a = A(s), b = A(e);
      return castTo<T>(std::abs(w) < A(0.5) ? a + w * (b - a) : b - (b - a) * (A(1) - w));
    });
  });
  return out;
}

Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  TL_CHECK(start.dtype() == end.dtype() && start.dtype() == weight.dtype(),
           "expected dtype {} for `end` but got dtype {}", dtypeName(start.dtype()),
           dtypeName(end.dtype()));
  const IntList shape =
      broadcastShapes(broadcastShapes(start.sizes(), end.sizes()), weight.sizes());
  Tensor out = Tensor::empty(shape, start.dtype());
  TensorIter it({out, start, end, weight}, shape);
  dispatchFloating(start.dtype(), "lerp_kernel_tensor", [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    cpuKernel<T, T, T, T>(it, [](T s, T e, T wt) {
      const A a = A(s), b = A(e), w = A(wt);
      return castTo<T>(std::abs(w) < A(0.5) ? a + w * (b - a) : b - (b - a) * (A(1) - w));
    });
  });
  return out;
}

Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return add(self, mul(t1, t2), value);
}

Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  TL_CHECK(!(isIntegralType(t1.dtype(), true) && isIntegralType(t2.dtype(), true)),
           "Integer division with addcdiv is no longer supported, and in a future release "
           "addcdiv will perform a true division of tensor1 and tensor2.");
  return add(self, div(t1, t2), value);
}

// ---------------------------------------------------------------------------------------
// In place (Note [Elementwise fast paths]): contiguous Float self is written directly;
// otherwise the functional result is copied into self (assignResult).
// ---------------------------------------------------------------------------------------

Tensor& relu_(Tensor& self) {
  if (fastF32(self)) {
    fast::relu(self.data<float>(), self.data<float>(), self.numel());
    return self;
  }
  return assignResult(self, relu(self));
}

Tensor& hardtanh_(Tensor& self, const Scalar& minVal, const Scalar& maxVal) {
  if (fastF32(self)) {
    const float l = castTo<float>(minVal.toDouble()), h = castTo<float>(maxVal.toDouble());
    if (l <= h) {
      fast::clamp(self.data<float>(), self.data<float>(), self.numel(), l, h);
      return self;
    }
  }
  return assignResult(self, hardtanh(self, minVal, maxVal));
}

Tensor& clamp_(Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  const bool floatBounds = (!min || !min->isBoolean()) && (!max || !max->isBoolean());
  if ((min || max) && floatBounds && fastF32(self)) {
    const float lo = min ? min->to<float>() : -std::numeric_limits<float>::infinity();
    const float hi = max ? max->to<float>() : std::numeric_limits<float>::infinity();
    fast::clamp(self.data<float>(), self.data<float>(), self.numel(), lo, hi);
    return self;
  }
  return assignResult(self, clamp(self, min, max));
}

Tensor& sigmoid_(Tensor& self) {
  if (fastF32(self)) {
    fast::sigmoid(self.data<float>(), self.data<float>(), self.numel());
    return self;
  }
  return assignResult(self, sigmoid(self));
}

Tensor& silu_(Tensor& self) {
  if (fastF32(self)) {
    fast::silu(self.data<float>(), self.data<float>(), self.numel());
    return self;
  }
  return assignResult(self, silu(self));
}

Tensor& hardswish_(Tensor& self) {
  if (fastF32(self)) {
    fast::hardswish(self.data<float>(), self.data<float>(), self.numel());
    return self;
  }
  return assignResult(self, hardswish(self));
}

Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  if (flatF32Pair(self, other) && !alpha.isBoolean() && safeInPlace(self, other)) {
    fast::add(self.data<float>(), other.data<float>(), self.data<float>(), self.numel(),
              alpha.to<float>());
    return self;
  }
  return assignResult(self, add(self, other, alpha));
}

Tensor& mul_(Tensor& self, const Tensor& other) {
  if (flatF32Pair(self, other) && safeInPlace(self, other)) {
    fast::mul(self.data<float>(), other.data<float>(), self.data<float>(), self.numel());
    return self;
  }
  return assignResult(self, mul(self, other));
}

}  // namespace torchless::ops
