// Kernels of TorchScript's builtin number operators: int/float/bool/complex arithmetic,
// comparisons, math functions, bitwise ops on ints, casts, min/max, range helpers
// (torch/csrc/jit/runtime/register_prim_ops.cpp). List, dict and string builtins live in
// builtin_list_ops.cpp, builtin_dict_ops.cpp and builtin_str_ops.cpp.
//
// The overloads of one operator (`aten::add.int`, `.float`, `.int_float`, `.float_int`,
// `.complex` ..., and the generic `aten::add(Scalar a, Scalar b) -> Scalar`) share one
// kernel that computes in the widest kind of its operands (int < float < complex, bools
// count as ints) and converts to the schema's return type, as Python's arithmetic does.

#include "core/error.h"
#include "runtime/register_utils.h"

#include <atomic>
#include <cmath>
#include <iostream>
#include <limits>
#include <numeric>

namespace torchless {
namespace {

using namespace kreg;
using Complex = std::complex<double>;

// Python's floor division and modulo on ints (ZeroDivisionError on 0).
// INT64_MIN // -1 wraps to INT64_MIN and INT64_MIN % -1 is 0, as NumPy's int64 does (Note
// [Integer division overflow] in ops/elementwise.cpp); a plain `/` would trap with SIGFPE.
int64_t floordiv(int64_t a, int64_t b) {
  if (b == 0) throw ModelError("ZeroDivisionError: integer division or modulo by zero");
  if (b == -1) return static_cast<int64_t>(0ULL - static_cast<uint64_t>(a));
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t pymod(int64_t a, int64_t b) {
  if (b == 0) throw ModelError("ZeroDivisionError: integer division or modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
double pymodf(double a, double b) {
  if (b == 0) throw ModelError("ZeroDivisionError: float modulo");
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
int64_t ipow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) result *= base;
    base *= base;
    exp >>= 1;
  }
  return result;
}

enum class NumKind { Int, Float, Complex };
NumKind kindOf(const IValue& v) {
  if (v.isInt() || v.isBool()) return NumKind::Int;
  if (v.isDouble()) return NumKind::Float;
  if (v.isComplexDouble()) return NumKind::Complex;
  throw Error(fmt::format("expected a number but got {}", v.tagName()));
}
int64_t asInt(const IValue& v) { return v.isBool() ? (v.toBool() ? 1 : 0) : v.toInt(); }
double asFloat(const IValue& v) { return v.toScalarDouble(); }
Complex asComplex(const IValue& v) {
  return v.isComplexDouble() ? v.toComplexDouble() : Complex(v.toScalarDouble(), 0.0);
}

bool isNumberType(const TypePtr& t) {
  switch (t->kind()) {
    case TypeKind::IntType:
    case TypeKind::FloatType:
    case TypeKind::ComplexType:
    case TypeKind::NumberType: return true;
    default: return false;
  }
}

int64_t floatToInt(double d) {
  if (!std::isfinite(d)) {
    if (std::isnan(d)) throw ModelError("ValueError: cannot convert float NaN to integer");
    throw ModelError("OverflowError: cannot convert float infinity to integer");
  }
  return static_cast<int64_t>(d);
}

// Converts a computed number to the schema's return type.
IValue coerce(IValue v, TypeKind ret) {
  if (ret == TypeKind::FloatType && (v.isInt() || v.isBool())) return IValue(asFloat(v));
  if (ret == TypeKind::IntType && v.isDouble()) return IValue(floatToInt(v.toDouble()));
  return v;
}

using IntBin = std::function<IValue(int64_t, int64_t)>;
using FloatBin = std::function<IValue(double, double)>;
using ComplexBin = std::function<IValue(Complex, Complex)>;

// Registers one kernel for every two-number overload of `name` that has no kernel yet.
void numericBinary(KernelRegistry& r, const std::string& name, IntBin fi, FloatBin ff,
                   ComplexBin fc = nullptr) {
  for (const OpInfo* op : OperatorRegistry::global().lookup(name)) {
    const auto& args = op->schema.arguments();
    if (op->kernel || args.size() != 2 || op->schema.returns().size() != 1) continue;
    if (!isNumberType(args[0].type()) || !isNumberType(args[1].type())) continue;
    const TypeKind ret = op->schema.returns()[0].type()->kind();
    if (!fc && (args[0].type()->kind() == TypeKind::ComplexType ||
                args[1].type()->kind() == TypeKind::ComplexType))
      continue;
    r.registerKernel(op->key, kernel<2>([fi, ff, fc, ret](const IValue* a) {
                       const NumKind ka = kindOf(a[0]), kb = kindOf(a[1]);
                       if (ka == NumKind::Int && kb == NumKind::Int && fi)
                         return coerce(fi(asInt(a[0]), asInt(a[1])), ret);
                       if ((ka == NumKind::Complex || kb == NumKind::Complex)) {
                         if (!fc) throw Error("operation not supported for complex numbers");
                         return fc(asComplex(a[0]), asComplex(a[1]));
                       }
                       return coerce(ff(asFloat(a[0]), asFloat(a[1])), ret);
                     }));
  }
}

using FloatUn = std::function<IValue(double)>;
using IntUn = std::function<IValue(int64_t)>;
using ComplexUn = std::function<IValue(Complex)>;

// Registers one kernel for every one-number overload of `name` (aten::sqrt.int/.float/.Scalar).
void numericUnary(KernelRegistry& r, const std::string& name, FloatUn ff, IntUn fi = nullptr,
                  ComplexUn fc = nullptr) {
  for (const OpInfo* op : OperatorRegistry::global().lookup(name)) {
    const auto& args = op->schema.arguments();
    if (op->kernel || args.size() != 1 || op->schema.returns().size() != 1) continue;
    if (!isNumberType(args[0].type())) continue;
    if (!fc && args[0].type()->kind() == TypeKind::ComplexType) continue;
    const TypeKind ret = op->schema.returns()[0].type()->kind();
    r.registerKernel(op->key, kernel<1>([ff, fi, fc, ret](const IValue* a) {
                       const NumKind k = kindOf(a[0]);
                       if (k == NumKind::Int && fi) return coerce(fi(asInt(a[0])), ret);
                       if (k == NumKind::Complex) {
                         if (!fc) throw Error("operation not supported for complex numbers");
                         return fc(a[0].toComplexDouble());
                       }
                       return coerce(ff(asFloat(a[0])), ret);
                     }));
  }
}

template <typename F>
FloatUn fl(F f) {
  return [f](double x) { return IValue(static_cast<double>(f(x))); };
}

}  // namespace

void registerBuiltinKernels(KernelRegistry& r) {
  // ---- arithmetic ----
  numericBinary(
      r, "aten::add", [](int64_t a, int64_t b) { return IValue(a + b); },
      [](double a, double b) { return IValue(a + b); },
      [](Complex a, Complex b) { return IValue(a + b); });
  numericBinary(
      r, "aten::sub", [](int64_t a, int64_t b) { return IValue(a - b); },
      [](double a, double b) { return IValue(a - b); },
      [](Complex a, Complex b) { return IValue(a - b); });
  numericBinary(
      r, "aten::mul", [](int64_t a, int64_t b) { return IValue(a * b); },
      [](double a, double b) { return IValue(a * b); },
      [](Complex a, Complex b) { return IValue(a * b); });
  numericBinary(
      r, "aten::div", nullptr,
      [](double a, double b) {
        if (b == 0) throw ModelError("ZeroDivisionError: float division by zero");
        return IValue(a / b);
      },
      [](Complex a, Complex b) { return IValue(a / b); });
  numericBinary(
      r, "aten::floordiv", [](int64_t a, int64_t b) { return IValue(floordiv(a, b)); },
      [](double a, double b) {
        if (b == 0) throw ModelError("ZeroDivisionError: float divmod()");
        return IValue(std::floor(a / b));
      });
  numericBinary(
      r, "aten::__round_to_zero_floordiv",
      [](int64_t a, int64_t b) {
        if (b == 0) throw ModelError("ZeroDivisionError: integer division or modulo by zero");
        if (b == -1) return IValue(static_cast<int64_t>(0ULL - static_cast<uint64_t>(a)));
        return IValue(a / b);
      },
      [](double a, double b) { return IValue(std::trunc(a / b)); });
  numericBinary(
      r, "aten::remainder", [](int64_t a, int64_t b) { return IValue(pymod(a, b)); },
      [](double a, double b) { return IValue(pymodf(a, b)); });
  numericBinary(r, "aten::fmod", nullptr,
                [](double a, double b) { return IValue(std::fmod(a, b)); });
  numericBinary(r, "aten::mathremainder", nullptr,
                [](double a, double b) { return IValue(std::remainder(a, b)); });
  numericBinary(
      r, "aten::pow",
      [](int64_t a, int64_t b) {
        if (b < 0) return IValue(std::pow(static_cast<double>(a), static_cast<double>(b)));
        return IValue(ipow(a, b));
      },
      [](double a, double b) { return IValue(std::pow(a, b)); },
      [](Complex a, Complex b) { return IValue(std::pow(a, b)); });
  numericBinary(r, "aten::atan2", nullptr,
                [](double a, double b) { return IValue(std::atan2(a, b)); });
  numericBinary(r, "aten::copysign", nullptr,
                [](double a, double b) { return IValue(std::copysign(a, b)); });
  numericBinary(
      r, "aten::log", nullptr, [](double a, double b) { return IValue(std::log(a) / std::log(b)); },
      [](Complex a, Complex b) { return IValue(std::log(a) / std::log(b)); });
  numericBinary(
      r, "aten::gcd", [](int64_t a, int64_t b) { return IValue(std::gcd(a, b)); },
      [](double, double) -> IValue { throw Error("gcd() expects ints"); });
  numericBinary(
      r, "prim::max", [](int64_t a, int64_t b) { return IValue(std::max(a, b)); },
      [](double a, double b) {
        return IValue(std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b));
      });
  numericBinary(
      r, "prim::min", [](int64_t a, int64_t b) { return IValue(std::min(a, b)); },
      [](double a, double b) {
        return IValue(std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b));
      });

  // ---- comparisons (number pairs) ----
  numericBinary(
      r, "aten::eq", [](int64_t a, int64_t b) { return IValue(a == b); },
      [](double a, double b) { return IValue(a == b); },
      [](Complex a, Complex b) { return IValue(a == b); });
  numericBinary(
      r, "aten::ne", [](int64_t a, int64_t b) { return IValue(a != b); },
      [](double a, double b) { return IValue(a != b); },
      [](Complex a, Complex b) { return IValue(a != b); });
  numericBinary(
      r, "aten::lt", [](int64_t a, int64_t b) { return IValue(a < b); },
      [](double a, double b) { return IValue(a < b); });
  numericBinary(
      r, "aten::le", [](int64_t a, int64_t b) { return IValue(a <= b); },
      [](double a, double b) { return IValue(a <= b); });
  numericBinary(
      r, "aten::gt", [](int64_t a, int64_t b) { return IValue(a > b); },
      [](double a, double b) { return IValue(a > b); });
  numericBinary(
      r, "aten::ge", [](int64_t a, int64_t b) { return IValue(a >= b); },
      [](double a, double b) { return IValue(a >= b); });
  // bool == bool, Device == Device, enum == enum.
  for (const char* name : {"aten::eq.bool", "aten::eq.device", "aten::eq.enum"})
    defN<2>(r, name, [](const IValue* a) { return IValue(a[0].equals(a[1])); });
  for (const char* name : {"aten::ne.bool", "aten::ne.device", "aten::ne.enum"})
    defN<2>(r, name, [](const IValue* a) { return IValue(!a[0].equals(a[1])); });

  // ---- unary math ----
  numericUnary(
      r, "aten::neg", [](double x) { return IValue(-x); }, [](int64_t x) { return IValue(-x); },
      [](Complex x) { return IValue(-x); });
  numericUnary(
      r, "prim::abs", [](double x) { return IValue(std::fabs(x)); },
      [](int64_t x) { return IValue(x < 0 ? -x : x); },
      [](Complex x) { return IValue(std::abs(x)); });
  numericUnary(r, "aten::fabs", fl([](double x) { return std::fabs(x); }));
  numericUnary(
      r, "aten::floor", [](double x) { return IValue(floatToInt(std::floor(x))); },
      [](int64_t x) { return IValue(x); });
  numericUnary(
      r, "aten::ceil", [](double x) { return IValue(floatToInt(std::ceil(x))); },
      [](int64_t x) { return IValue(x); });
  numericUnary(r, "aten::round", fl([](double x) { return std::nearbyint(x); }));
  numericUnary(r, "aten::sqrt", fl([](double x) { return std::sqrt(x); }), nullptr,
               [](Complex x) { return IValue(std::sqrt(x)); });
  numericUnary(r, "aten::exp", fl([](double x) { return std::exp(x); }), nullptr,
               [](Complex x) { return IValue(std::exp(x)); });
  numericUnary(r, "aten::log", fl([](double x) { return std::log(x); }), nullptr,
               [](Complex x) { return IValue(std::log(x)); });
  const std::pair<const char*, double (*)(double)> math[] = {
      {"aten::log10", std::log10},   {"aten::log1p", std::log1p}, {"aten::expm1", std::expm1},
      {"aten::sin", std::sin},       {"aten::cos", std::cos},     {"aten::tan", std::tan},
      {"aten::asin", std::asin},     {"aten::acos", std::acos},   {"aten::atan", std::atan},
      {"aten::sinh", std::sinh},     {"aten::cosh", std::cosh},   {"aten::tanh", std::tanh},
      {"aten::asinh", std::asinh},   {"aten::acosh", std::acosh}, {"aten::atanh", std::atanh},
      {"aten::erf", std::erf},       {"aten::erfc", std::erfc},   {"aten::gamma", std::tgamma},
      {"aten::lgamma", std::lgamma},
  };
  for (const auto& [name, f] : math) {
    auto fn = f;
    numericUnary(r, name, [fn](double x) { return IValue(fn(x)); });
  }
  numericUnary(r, "aten::degrees", fl([](double x) { return x * 180.0 / M_PI; }));
  numericUnary(r, "aten::radians", fl([](double x) { return x * M_PI / 180.0; }));
  numericUnary(r, "aten::isnan", [](double x) { return IValue(std::isnan(x)); });
  numericUnary(r, "aten::isinf", [](double x) { return IValue(std::isinf(x)); });
  numericUnary(r, "aten::isfinite", [](double x) { return IValue(std::isfinite(x)); });
  defN<1>(r, "aten::factorial.int", [](const IValue* a) {
    int64_t n = a[0].toInt();
    if (n < 0) throw ModelError("ValueError: factorial() not defined for negative values");
    int64_t f = 1;
    for (int64_t i = 2; i <= n; ++i) f *= i;
    return IValue(f);
  });
  defN<2>(r, "aten::divmod.int", [](const IValue* a) {
    const int64_t x = a[0].toInt(), y = a[1].toInt();
    return std::make_tuple(IValue(floordiv(x, y)), IValue(pymod(x, y)));
  });
  for (const char* name :
       {"aten::divmod.float", "aten::divmod.int_float", "aten::divmod.float_int"})
    defN<2>(r, name, [](const IValue* a) {
      const double x = asFloat(a[0]), y = asFloat(a[1]);
      if (y == 0) throw ModelError("ZeroDivisionError: float divmod()");
      return std::make_tuple(IValue(std::floor(x / y)), IValue(pymodf(x, y)));
    });

  // ---- bool and bitwise int ops ----
  defN<1>(r, "aten::__not__", [](const IValue* a) { return IValue(!a[0].toBool()); });
  defN<2>(r, "aten::__and__.bool",
          [](const IValue* a) { return IValue(a[0].toBool() && a[1].toBool()); });
  defN<2>(r, "aten::__or__.bool",
          [](const IValue* a) { return IValue(a[0].toBool() || a[1].toBool()); });
  defN<2>(r, "aten::__xor__.bool",
          [](const IValue* a) { return IValue(a[0].toBool() != a[1].toBool()); });
  defN<2>(r, "aten::__and__.int",
          [](const IValue* a) { return IValue(a[0].toInt() & a[1].toInt()); });
  defN<2>(r, "aten::__or__.int",
          [](const IValue* a) { return IValue(a[0].toInt() | a[1].toInt()); });
  defN<2>(r, "aten::__xor__.int",
          [](const IValue* a) { return IValue(a[0].toInt() ^ a[1].toInt()); });
  defN<2>(r, "aten::__lshift__.int", [](const IValue* a) {
    if (a[1].toInt() < 0) throw ModelError("ValueError: negative shift count");
    return IValue(static_cast<int64_t>(static_cast<uint64_t>(a[0].toInt()) << a[1].toInt()));
  });
  defN<2>(r, "aten::__rshift__.int", [](const IValue* a) {
    if (a[1].toInt() < 0) throw ModelError("ValueError: negative shift count");
    return IValue(a[0].toInt() >> std::min<int64_t>(a[1].toInt(), 63));
  });
  defN<2>(r, "aten::__is__", [](const IValue* a) { return IValue(a[0].isSameIdentity(a[1])); });
  defN<2>(r, "aten::__isnot__", [](const IValue* a) { return IValue(!a[0].isSameIdentity(a[1])); });

  // ---- casts ----
  defN<1>(r, "aten::Int.float",
          [](const IValue* a) { return IValue(floatToInt(a[0].toDouble())); });
  defN<1>(r, "aten::Int.bool", [](const IValue* a) { return IValue(asInt(a[0])); });
  defN<1>(r, "aten::Int.Scalar", [](const IValue* a) {
    return a[0].isDouble() ? IValue(floatToInt(a[0].toDouble())) : IValue(asInt(a[0]));
  });
  defN<1>(r, "aten::Int.str", [](const IValue* a) {
    const std::string& s = a[0].toStringRef();
    size_t pos = 0;
    int64_t v = 0;
    try {
      v = std::stoll(s, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos]))) ++pos;
    if (s.empty() || pos != s.size())
      throw ModelError(fmt::format("ValueError: invalid literal for int() with base 10: '{}'", s));
    return IValue(v);
  });
  for (const char* name : {"aten::Float.int", "aten::Float.bool", "aten::Float.Scalar"})
    defN<1>(r, name, [](const IValue* a) { return IValue(asFloat(a[0])); });
  defN<1>(r, "aten::Float.str", [](const IValue* a) {
    const std::string& s = a[0].toStringRef();
    size_t pos = 0;
    double v = 0;
    try {
      v = std::stod(s, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (s.empty() || pos != s.size())
      throw ModelError(fmt::format("ValueError: could not convert string to float: '{}'", s));
    return IValue(v);
  });
  defN<1>(r, "aten::Bool.int", [](const IValue* a) { return IValue(a[0].toInt() != 0); });
  defN<1>(r, "aten::Bool.float", [](const IValue* a) { return IValue(a[0].toDouble() != 0.0); });
  defN<1>(r, "aten::Complex.Scalar", [](const IValue* a) { return IValue(asComplex(a[0])); });
  for (const char* name :
       {"aten::Complex.int_int", "aten::Complex.float_float", "aten::Complex.int_float",
        "aten::Complex.float_int", "aten::Complex.bool_bool"})
    defN<2>(r, name, [](const IValue* a) { return IValue(Complex(asFloat(a[0]), asFloat(a[1]))); });

  // ---- range helpers ----
  defN<3>(r, "aten::__range_length", [](const IValue* a) {
    const int64_t lo = a[0].toInt(), hi = a[1].toInt(), step = a[2].toInt();
    if (step == 0) throw ModelError("RuntimeError: range() arg 3 must not be zero");
    int64_t n = 0;
    if (step > 0 && lo < hi)
      n = 1 + (hi - 1 - lo) / step;
    else if (step < 0 && lo > hi)
      n = 1 + (lo - 1 - hi) / (-step);
    return IValue(n);
  });
  defN<3>(r, "aten::__derive_index",
          [](const IValue* a) { return IValue(a[1].toInt() + a[0].toInt() * a[2].toInt()); });

  // aten::warn: printed to stderr once per call site, as Python's default warning filter does.
  defCreator(r, "aten::warn", [](const Node&) -> Operation {
    auto shown = std::make_shared<std::atomic<bool>>(false);
    return [shown](Stack& s) {
      const std::string msg = peek(s, 0, 2).toStringRef();
      drop(s, 2);
      if (!shown->exchange(true)) std::cerr << "UserWarning: " << msg << std::endl;
    };
  });
}

}  // namespace torchless
