#pragma once
// Dtype dispatch for kernels and opmath types; Scalar and castTo live in core/scalar.h.

#include "core/error.h"
#include "core/half.h"
#include "core/scalar.h"
#include "core/scalar_type.h"
#include "core/tensor.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace torchless::ops {

using torchless::castTo;
using torchless::kIsReducedFloat;
using torchless::Scalar;

/// The type arithmetic runs in: float for Half/BFloat16, the type itself otherwise.
template <typename T>
struct OpMathT {
  using type = T;
};
template <>
struct OpMathT<Half> {
  using type = float;
};
template <>
struct OpMathT<BFloat16> {
  using type = float;
};
template <typename T>
using OpMath = typename OpMathT<T>::type;

/// The accumulation type of reductions: double for floating types, int64 for integers.
template <typename T>
struct AccT {
  using type = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
};
template <typename T>
using Acc = typename AccT<T>::type;

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T> || kIsReducedFloat<T>;

[[noreturn]] void notImplemented(const char* op, ScalarType dtype);

/// Calls fn(T{}) for every real dtype (floating, integral, Bool); complex and the rest throw
/// `"op" not implemented for 'ComplexFloat'` as PyTorch words it.
template <typename Fn>
decltype(auto) dispatchAll(ScalarType dt, const char* op, Fn&& fn) {
  return switchDtype<DtypeSet::kReal>(dt, std::forward<Fn>(fn),
                                      [dt, op] { notImplemented(op, dt); });
}

/// Float, Double, Half, BFloat16.
template <typename Fn>
decltype(auto) dispatchFloating(ScalarType dt, const char* op, Fn&& fn) {
  switch (dt) {
    case ScalarType::Float: return fn(float{});
    case ScalarType::Double: return fn(double{});
    case ScalarType::Half: return fn(Half{});
    case ScalarType::BFloat16: return fn(BFloat16{});
    default: notImplemented(op, dt);
  }
}

/// All real dtypes but Bool.
template <typename Fn>
decltype(auto) dispatchNumeric(ScalarType dt, const char* op, Fn&& fn) {
  if (dt == ScalarType::Bool) notImplemented(op, dt);
  return dispatchAll(dt, op, std::forward<Fn>(fn));
}

/// Integral dtypes, with or without Bool.
template <typename Fn>
decltype(auto) dispatchIntegral(ScalarType dt, bool includeBool, const char* op, Fn&& fn) {
  switch (dt) {
    case ScalarType::Long: return fn(int64_t{});
    case ScalarType::Int: return fn(int32_t{});
    case ScalarType::Short: return fn(int16_t{});
    case ScalarType::Char: return fn(int8_t{});
    case ScalarType::Byte: return fn(uint8_t{});
    case ScalarType::Bool:
      if (includeBool) return fn(bool{});
      notImplemented(op, dt);
    default: notImplemented(op, dt);
  }
}

/// The C++ type of a dtype tag in dispatch lambdas: `using T = TagT<decltype(tag)>;`.
template <typename Tag>
using TagT = std::decay_t<Tag>;

/// Dispatch on element size only (copies, gathers): fn receives an unsigned type of that size.
template <typename Fn>
decltype(auto) dispatchBySize(size_t itemsize, Fn&& fn) {
  struct B16 {
    uint64_t a, b;
  };
  switch (itemsize) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    case 8: return fn(uint64_t{});
    case 16: return fn(B16{});
    default: throw Error(fmt::format("unsupported element size {}", itemsize));
  }
}

/// Wraps a possibly negative dim into [0, ndim) (PyTorch's maybe_wrap_dim; a 0-dim tensor
/// accepts 0 and -1). Throws "Dimension out of range (expected to be in range of [-2, 1], but
/// got 2)".
int64_t wrapDim(int64_t dim, int64_t ndim);

/// c10::canCast: whether an in-place result of type `from` may be written into `to`.
bool canCast(ScalarType from, ScalarType to);

/// Python's default dtype (torch.get_default_dtype()): Float.
constexpr ScalarType kDefaultFloat = ScalarType::Float;

}  // namespace torchless::ops
