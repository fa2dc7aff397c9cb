#pragma once
// Scalar: a Python number as TorchScript passes it to operators (c10::Scalar for the real
// types), and castTo: static_cast with PyTorch's conventions, used by tensor casts and kernels.

#include "core/half.h"
#include "core/scalar_type.h"

#include <cstdint>
#include <limits>
#include <type_traits>

namespace torchless {

/// c10::Scalar for the real types: a bool, an int64 or a double, as TorchScript passes them.
class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Double };
  Scalar() : kind_(Kind::Int), i_(0) {}
  Scalar(double v) : kind_(Kind::Double), d_(v) {}      // NOLINT
  Scalar(float v) : kind_(Kind::Double), d_(v) {}       // NOLINT
  Scalar(int64_t v) : kind_(Kind::Int), i_(v) {}        // NOLINT
  Scalar(int v) : kind_(Kind::Int), i_(v) {}            // NOLINT
  Scalar(bool v) : kind_(Kind::Bool), i_(v ? 1 : 0) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool isFloatingPoint() const { return kind_ == Kind::Double; }
  bool isIntegral() const { return kind_ == Kind::Int; }
  bool isBoolean() const { return kind_ == Kind::Bool; }
  double toDouble() const { return kind_ == Kind::Double ? d_ : static_cast<double>(i_); }
  int64_t toLong() const { return kind_ == Kind::Double ? static_cast<int64_t>(d_) : i_; }
  bool toBool() const { return kind_ == Kind::Double ? d_ != 0.0 : i_ != 0; }
  /// The dtype of the wrapped-number tensor PyTorch makes from it: Double, Long or Bool.
  ScalarType type() const {
    return kind_ == Kind::Double ? ScalarType::Double
           : kind_ == Kind::Int  ? ScalarType::Long
                                 : ScalarType::Bool;
  }
  /// The value cast to T (as c10::Scalar::to<T>).
  template <typename T>
  T to() const;

 private:
  Kind kind_;
  union {
    double d_;
    int64_t i_;
  };
};

template <typename T>
constexpr bool kIsReducedFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// static_cast with PyTorch's conventions: to bool is `!= 0`, 16-bit floats go through float,
/// NaN to integer is 0 and out-of-range floats saturate (C++ leaves both undefined).
template <typename To, typename From>
inline To castTo(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (kIsReducedFloat<From>)
      return static_cast<float>(v) != 0.0f;
    else
      return v != From{};
  } else if constexpr (kIsReducedFloat<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (kIsReducedFloat<From>) {
    return castTo<To>(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (!(v == v)) return To{};
    if (v >= static_cast<From>(std::numeric_limits<To>::max()))
      return std::numeric_limits<To>::max();
    if (v <= static_cast<From>(std::numeric_limits<To>::lowest()))
      return std::numeric_limits<To>::lowest();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <typename T>
T Scalar::to() const {
  switch (kind_) {
    case Kind::Double: return castTo<T>(d_);
    case Kind::Int: return castTo<T>(i_);
    default: return castTo<T>(i_ != 0);
  }
}

}  // namespace torchless
