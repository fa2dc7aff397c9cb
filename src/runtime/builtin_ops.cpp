// Kernels of TorchScript's builtin scalar, string, list and dict operators (aten::add.int,
// aten::len.t, aten::__getitem__.t, aten::format ...), following
// torch/csrc/jit/runtime/register_prim_ops.cpp.

#include "core/error.h"
#include "runtime/kernel.h"

#include <cmath>

namespace torchless {
namespace {

// Python's floor division and modulo on ints (ZeroDivisionError on 0).
int64_t floordiv(int64_t a, int64_t b) {
  if (b == 0) throw ModelError("ZeroDivisionError: integer division or modulo by zero");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t pymod(int64_t a, int64_t b) {
  if (b == 0) throw ModelError("ZeroDivisionError: integer division or modulo by zero");
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

int64_t asInt(const IValue& v) { return v.isBool() ? (v.toBool() ? 1 : 0) : v.toInt(); }
double asFloat(const IValue& v) { return v.toScalarDouble(); }

// Registers op for the int/int, float/float, int/float and float/int overloads of `name`.
template <typename IntFn, typename FloatFn>
void binaryNumeric(KernelRegistry& r, const std::string& name, const std::string& intRet,
                   IntFn intFn, FloatFn floatFn, const char* floatRet = "float") {
  r.registerKernel(fmt::format("aten::{}.int(int a, int b) -> {}", name, intRet), [intFn](Stack& s) {
    int64_t b = pop(s).toInt();
    int64_t a = pop(s).toInt();
    s.emplace_back(intFn(a, b));
  });
  auto ff = [floatFn](Stack& s) {
    double b = asFloat(pop(s));
    double a = asFloat(pop(s));
    s.emplace_back(floatFn(a, b));
  };
  r.registerKernel(fmt::format("aten::{}.float(float a, float b) -> {}", name, floatRet), ff);
  r.registerKernel(fmt::format("aten::{}.int_float(int a, float b) -> {}", name, floatRet), ff);
  r.registerKernel(fmt::format("aten::{}.float_int(float a, int b) -> {}", name, floatRet), ff);
}

template <typename Fn>
void comparison(KernelRegistry& r, const std::string& name, Fn fn) {
  binaryNumeric(
      r, name, "bool", [fn](int64_t a, int64_t b) { return fn(a, b); },
      [fn](double a, double b) { return fn(a, b); }, "bool");
}

int64_t normalizeIndex(int64_t i, size_t size, const char* what) {
  const auto n = static_cast<int64_t>(size);
  if (i < 0) i += n;
  if (i < 0 || i >= n) throw ModelError(fmt::format("IndexError: {} index out of range", what));
  return i;
}

}  // namespace

void registerBuiltinKernels(KernelRegistry& r) {
  binaryNumeric(r, "add", "int", [](int64_t a, int64_t b) { return a + b; },
                [](double a, double b) { return a + b; });
  binaryNumeric(r, "sub", "int", [](int64_t a, int64_t b) { return a - b; },
                [](double a, double b) { return a - b; });
  binaryNumeric(r, "mul", "int", [](int64_t a, int64_t b) { return a * b; },
                [](double a, double b) { return a * b; });
  binaryNumeric(r, "floordiv", "int", floordiv,
                [](double a, double b) { return std::floor(a / b); });
  binaryNumeric(r, "remainder", "int", pymod, pymodf);
  // aten::div.int returns float (true division).
  auto div = [](Stack& s) {
    double b = asFloat(pop(s));
    double a = asFloat(pop(s));
    if (b == 0) throw ModelError("ZeroDivisionError: float division by zero");
    s.emplace_back(a / b);
  };
  r.registerKernel("aten::div.int(int a, int b) -> float", div);
  r.registerKernel("aten::div.float(float a, float b) -> float", div);
  comparison(r, "eq", [](auto a, auto b) { return a == b; });
  comparison(r, "ne", [](auto a, auto b) { return a != b; });
  comparison(r, "lt", [](auto a, auto b) { return a < b; });
  comparison(r, "le", [](auto a, auto b) { return a <= b; });
  comparison(r, "gt", [](auto a, auto b) { return a > b; });
  comparison(r, "ge", [](auto a, auto b) { return a >= b; });
  r.registerKernel("aten::neg.int(int a) -> int", [](Stack& s) { s.emplace_back(-pop(s).toInt()); });
  r.registerKernel("aten::neg.float(float a) -> float", [](Stack& s) { s.emplace_back(-pop(s).toDouble()); });

  r.registerKernel("aten::__not__(bool self) -> bool", [](Stack& s) { s.emplace_back(!pop(s).toBool()); });
  r.registerKernel("aten::__and__.bool(bool a, bool b) -> bool", [](Stack& s) {
    bool b = pop(s).toBool();
    bool a = pop(s).toBool();
    s.emplace_back(a && b);
  });
  r.registerKernel("aten::__or__.bool(bool a, bool b) -> bool", [](Stack& s) {
    bool b = pop(s).toBool();
    bool a = pop(s).toBool();
    s.emplace_back(a || b);
  });
  r.registerKernel("aten::__is__(t1 self, t2 obj) -> bool", [](Stack& s) {
    IValue b = pop(s);
    IValue a = pop(s);
    s.emplace_back(a.isSameIdentity(b));
  });
  r.registerKernel("aten::__isnot__(t1 self, t2 obj) -> bool", [](Stack& s) {
    IValue b = pop(s);
    IValue a = pop(s);
    s.emplace_back(!a.isSameIdentity(b));
  });
  r.registerKernel("aten::eq.str(str a, str b) -> bool", [](Stack& s) {
    IValue b = pop(s);
    IValue a = pop(s);
    s.emplace_back(a.toStringRef() == b.toStringRef());
  });
  r.registerKernel("aten::add.str(str a, str b) -> str", [](Stack& s) {
    IValue b = pop(s);
    IValue a = pop(s);
    s.emplace_back(a.toStringRef() + b.toStringRef());
  });

  // Lists.
  r.registerKernel("aten::len.t(t[] a) -> int", [](Stack& s) {
    s.emplace_back(static_cast<int64_t>(pop(s).toList()->list.size()));
  });
  r.registerKernel("aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!)", [](Stack& s) {
    IValue el = pop(s);
    s.back().toList()->list.push_back(std::move(el));
  });
  r.registerKernel("aten::__getitem__.t(t[](a) list, int idx) -> t(*)", [](Stack& s) {
    int64_t i = pop(s).toInt();
    IValue l = pop(s);
    const auto& list = l.toList()->list;
    s.push_back(list[static_cast<size_t>(normalizeIndex(i, list.size(), "list"))]);
  });
  r.registerKernel("aten::_set_item.t(t[](a!) l, int idx, t(b -> *) el) -> t[](a!)", [](Stack& s) {
    IValue el = pop(s);
    int64_t i = pop(s).toInt();
    auto& list = s.back().toList()->list;
    list[static_cast<size_t>(normalizeIndex(i, list.size(), "list assignment"))] = std::move(el);
  });

  // Dicts with str keys (the common case in models).
  r.registerKernel("aten::__getitem__.Dict_str(Dict(str, t) self, str key) -> t(*)", [](Stack& s) {
    IValue key = pop(s);
    IValue d = pop(s);
    const IValue* v = d.toDict()->find(key);
    if (!v) throw ModelError(fmt::format("KeyError: {}", key.repr()));
    s.push_back(*v);
  });
  r.registerKernel("aten::len.Dict_str(Dict(str, t) self) -> int", [](Stack& s) {
    s.emplace_back(static_cast<int64_t>(pop(s).toDict()->size()));
  });

  // Casts.
  r.registerKernel("aten::Int.float(float a) -> int", [](Stack& s) {
    double d = pop(s).toDouble();
    if (!std::isfinite(d)) throw ModelError("ValueError: cannot convert float NaN or infinity to integer");
    s.emplace_back(static_cast<int64_t>(d));
  });
  r.registerKernel("aten::Int.bool(bool a) -> int", [](Stack& s) { s.emplace_back(asInt(pop(s))); });
  r.registerKernel("aten::Float.int(int a) -> float",
                   [](Stack& s) { s.emplace_back(static_cast<double>(pop(s).toInt())); });
  r.registerKernel("aten::Bool.int(int a) -> bool", [](Stack& s) { s.emplace_back(pop(s).toInt() != 0); });

  // range(k) with a derived start and step, as the printed code lowers range(a, b, s).
  r.registerKernel("aten::__range_length(int lo, int hi, int step) -> int", [](Stack& s) {
    int64_t step = pop(s).toInt();
    int64_t hi = pop(s).toInt();
    int64_t lo = pop(s).toInt();
    if (step == 0) throw ModelError("RuntimeError: range() arg 3 must not be zero");
    int64_t n = 0;
    if (step > 0 && lo < hi) n = 1 + (hi - 1 - lo) / step;
    else if (step < 0 && lo > hi) n = 1 + (lo - 1 - hi) / (-step);
    s.emplace_back(n);
  });
  r.registerKernel("aten::__derive_index(int index, int start, int step) -> int", [](Stack& s) {
    int64_t step = pop(s).toInt();
    int64_t start = pop(s).toInt();
    int64_t index = pop(s).toInt();
    s.emplace_back(start + index * step);
  });
}

}  // namespace torchless
