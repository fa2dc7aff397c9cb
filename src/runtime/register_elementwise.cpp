// Kernels of the elementwise family (ops/elementwise.h): unary math and activations, binary
// arithmetic, comparisons and logical ops with their Scalar overloads, ternary ops. Each
// functional schema brings its in-place (`add_`) and `out=` variants along (defFamily).

#include "ops/elementwise.h"
#include "ops/shape.h"
#include "runtime/register_utils.h"

#include <cmath>

namespace torchless {
namespace {

using namespace kreg;
using ops::Scalar;
using UnaryFn = Tensor (*)(const Tensor&);
using BinaryT = Tensor (*)(const Tensor&, const Tensor&);
using BinaryS = Tensor (*)(const Tensor&, const Scalar&);

void unary(KernelRegistry& r, const char* name, UnaryFn fn) {
  defFamily(r, name, [fn](const IValue* a) { return fn(a[0].toTensor()); });
}

// `name.Tensor` and `name.Scalar` (or `name` for the Tensor overload when tensorKey says so).
void binary(KernelRegistry& r, const std::string& tensorKey, const std::string& scalarKey,
            BinaryT ft, BinaryS fs) {
  defFamily(r, tensorKey, [ft](const IValue* a) { return ft(a[0].toTensor(), a[1].toTensor()); });
  if (!scalarKey.empty())
    defFamily(r, scalarKey, [fs](const IValue* a) { return fs(a[0].toTensor(), toScalar(a[1])); });
}

// add/sub/rsub: (self, other, alpha).
template <typename FT, typename FS>
void withAlpha(KernelRegistry& r, const std::string& name, FT ft, FS fs) {
  defFamily(r, name + ".Tensor",
            [ft](const IValue* a) { return ft(a[0].toTensor(), a[1].toTensor(), toScalar(a[2])); });
  defFamily(r, name + ".Scalar",
            [fs](const IValue* a) { return fs(a[0].toTensor(), toScalar(a[1]), toScalar(a[2])); });
}

std::optional<std::string> toOptStr(const IValue& v) {
  if (v.isNone()) return std::nullopt;
  return v.toStringRef();
}

}  // namespace

void registerElementwiseKernels(KernelRegistry& r) {
  // In-place activations and adds of convnets write into self without a temporary
  // (ops/elementwise.h "in place"). Registered first: defFamily below derives in-place
  // variants only for entries that have no kernel yet.
  auto inplace = [&r](const char* key, auto fn) {
    const OpInfo* op = OperatorRegistry::global().findOverload(key);
    if (!op) throw Error(fmt::format("kernel for unknown operator '{}'", key));
    const size_t n = op->schema.arguments().size();
    r.registerKernel(op->key, [fn, n](Stack& s) {
      IValue* args = s.data() + (s.size() - n);
      Tensor self = args[0].toTensor();
      fn(self, args);
      IValue out = args[0];
      drop(s, n);
      s.emplace_back(std::move(out));
    });
  };
  inplace("aten::relu_", [](Tensor& t, const IValue*) { ops::relu_(t); });
  inplace("aten::hardtanh_",
          [](Tensor& t, const IValue* a) { ops::hardtanh_(t, toScalar(a[1]), toScalar(a[2])); });
  inplace("aten::clamp_",
          [](Tensor& t, const IValue* a) { ops::clamp_(t, toOptScalar(a[1]), toOptScalar(a[2])); });
  inplace("aten::sigmoid_", [](Tensor& t, const IValue*) { ops::sigmoid_(t); });
  inplace("aten::silu_", [](Tensor& t, const IValue*) { ops::silu_(t); });
  inplace("aten::hardswish_", [](Tensor& t, const IValue*) { ops::hardswish_(t); });
  inplace("aten::add_.Tensor",
          [](Tensor& t, const IValue* a) { ops::add_(t, a[1].toTensor(), toScalar(a[2])); });
  inplace("aten::mul_.Tensor", [](Tensor& t, const IValue* a) { ops::mul_(t, a[1].toTensor()); });

  // ---- unary math ----
  const std::pair<const char*, UnaryFn> unaries[] = {
      {"aten::abs", ops::abs},
      {"aten::neg", ops::neg},
      {"aten::negative", ops::neg},
      {"aten::sqrt", ops::sqrt},
      {"aten::rsqrt", ops::rsqrt},
      {"aten::exp", ops::exp},
      {"aten::log", ops::log},
      {"aten::log1p", ops::log1p},
      {"aten::expm1", ops::expm1},
      {"aten::lgamma", ops::lgamma},
      {"aten::digamma", ops::digamma},
      {"aten::erfinv", ops::erfinv},
      {"aten::frac", ops::frac},
      {"aten::exp2", ops::exp2},
      {"aten::erfc", ops::erfc},
      {"aten::sinc", ops::sinc},
      {"aten::special_exp2", ops::exp2},
      {"aten::special_erfc", ops::erfc},
      {"aten::special_sinc", ops::sinc},
      {"aten::special_entr", ops::entr},
      {"aten::special_ndtr", ops::ndtr},
      {"aten::special_log_ndtr", ops::logNdtr},
      // torch.special's names for the same functions
      {"aten::special_expm1", ops::expm1},
      {"aten::special_gammaln", ops::lgamma},
      {"aten::special_digamma", ops::digamma},
      {"aten::special_psi", ops::digamma},
      {"aten::special_erfinv", ops::erfinv},
      {"aten::special_expit", ops::sigmoid},
      {"aten::sin", ops::sin},
      {"aten::cos", ops::cos},
      {"aten::tan", ops::tan},
      {"aten::asin", ops::asin},
      {"aten::acos", ops::acos},
      {"aten::atan", ops::atan},
      {"aten::sinh", ops::sinh},
      {"aten::cosh", ops::cosh},
      {"aten::asinh", ops::asinh},
      {"aten::acosh", ops::acosh},
      {"aten::atanh", ops::atanh},
      {"aten::tanh", ops::tanh},
      {"aten::sigmoid", ops::sigmoid},
      {"aten::erf", ops::erf},
      {"aten::reciprocal", ops::reciprocal},
      {"aten::floor", ops::floor},
      {"aten::ceil", ops::ceil},
      {"aten::trunc", ops::trunc},
      {"aten::fix", ops::trunc},
      {"aten::sign", ops::sign},
      {"aten::logical_not", ops::logicalNot},
      {"aten::bitwise_not", ops::bitwiseNot},
      {"aten::isnan", ops::isnan},
      {"aten::relu", ops::relu},
      {"aten::relu6", ops::relu6},
      {"aten::silu", ops::silu},
      {"aten::hardswish", ops::hardswish},
      {"aten::hardsigmoid", ops::hardsigmoid},
      {"aten::selu", ops::selu},
      {"aten::mish", ops::mish},
  };
  for (const auto& [name, fn] : unaries) unary(r, name, fn);
  defFamily(r, "aten::round", [](const IValue* a) { return ops::round(a[0].toTensor()); });
  defFamily(r, "aten::round.decimals",
            [](const IValue* a) { return ops::round(a[0].toTensor(), a[1].toInt()); });
  defFamily(r, "aten::square", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    return ops::mul(x, x);
  });
  defFamily(r, "aten::log2", [](const IValue* a) {
    return ops::div(ops::log(a[0].toTensor()), Scalar(std::log(2.0)));
  });
  // xlogy(x, y) = x log y, 0 where x is 0 (unless y is NaN); xlog1py with log1p(y).
  auto xlogy = [](const Tensor& x, const Tensor& y, bool plus1) {
    Tensor t = ops::mul(x, plus1 ? ops::log1p(y) : ops::log(y));
    return ops::where(ops::logicalAnd(ops::eq(x, Scalar(0)), ops::logicalNot(ops::isnan(y))),
                      Scalar(0.0), t);
  };
  for (bool plus1 : {false, true}) {
    const std::string base = plus1 ? "aten::special_xlog1py" : "aten::xlogy";
    std::vector<std::string> names = {base + (plus1 ? "" : ".Tensor")};
    if (!plus1) names.push_back("aten::special_xlogy");
    for (const std::string& name : names)
      defFamily(r, name, [xlogy, plus1](const IValue* a) {
        return xlogy(a[0].toTensor(), a[1].toTensor(), plus1);
      });
    for (const std::string& name :
         plus1 ? std::vector<std::string>{"aten::special_xlog1py.self_scalar"}
               : std::vector<std::string>{"aten::xlogy.Scalar_Self",
                                          "aten::special_xlogy.self_scalar"})
      defFamily(r, name, [xlogy, plus1](const IValue* a) {
        Tensor y = a[1].toTensor();
        return xlogy(ops::full({}, toScalar(a[0]), ops::resultType(y, toScalar(a[0]))), y, plus1);
      });
    for (const std::string& name :
         plus1 ? std::vector<std::string>{"aten::special_xlog1py.other_scalar"}
               : std::vector<std::string>{"aten::xlogy.Scalar_Other",
                                          "aten::special_xlogy.other_scalar"})
      defFamily(r, name, [xlogy, plus1](const IValue* a) {
        Tensor x = a[0].toTensor();
        return xlogy(x, ops::full({}, toScalar(a[1]), ops::resultType(x, toScalar(a[1]))), plus1);
      });
  }
  for (const char* name : {"aten::logit", "aten::special_logit"})
    defFamily(r, name,
              [](const IValue* a) { return ops::logit(a[0].toTensor(), toOptDouble(a[1])); });
  defFamily(r, "aten::log10", [](const IValue* a) { return ops::log10(a[0].toTensor()); });
  defFamily(r, "aten::isinf", [](const IValue* a) { return ops::isinf(a[0].toTensor()); });
  defFamily(r, "aten::isfinite", [](const IValue* a) { return ops::isfinite(a[0].toTensor()); });
  defFamily(r, "aten::log_sigmoid",
            [](const IValue* a) { return ops::log(ops::sigmoid(a[0].toTensor())); });

  // ---- activations with parameters ----
  defFamily(r, "aten::gelu",
            [](const IValue* a) { return ops::gelu(a[0].toTensor(), a[1].toStringRef()); });
  defFamily(r, "aten::hardtanh", [](const IValue* a) {
    return ops::hardtanh(a[0].toTensor(), toScalar(a[1]), toScalar(a[2]));
  });
  defFamily(r, "aten::leaky_relu",
            [](const IValue* a) { return ops::leakyRelu(a[0].toTensor(), toScalar(a[1])); });
  // F.rrelu / nn.RReLU in eval: leaky_relu with the mean slope (lower + upper) / 2, as ATen's
  // rrelu_with_noise; training draws random slopes (refused, as training-mode dropout).
  defFamily(r, "aten::rrelu", [](const IValue* a) {
    if (a[3].toBool())
      throw Error(
          "rrelu with training=True is not supported (its slopes are random; torchless runs "
          "inference only: call eval() before saving)");
    return ops::leakyRelu(a[0].toTensor(),
                          Scalar((toScalar(a[1]).toDouble() + toScalar(a[2]).toDouble()) / 2));
  });
  defFamily(r, "aten::elu", [](const IValue* a) {
    return ops::elu(a[0].toTensor(), toScalar(a[1]), toScalar(a[2]), toScalar(a[3]));
  });
  defFamily(r, "aten::celu", [](const IValue* a) {
    Scalar alpha = toScalar(a[1]);
    return ops::elu(a[0].toTensor(), alpha, 1.0, 1.0 / alpha.toDouble());
  });
  defFamily(r, "aten::softplus", [](const IValue* a) {
    return ops::softplus(a[0].toTensor(), toScalar(a[1]), toScalar(a[2]));
  });

  // hardshrink / softshrink (PyTorch's CPU kernels): values within [-lambd, lambd] become 0
  // (hardshrink keeps NaN, softshrink gives 0 for it); softshrink moves the rest toward 0 by
  // lambd, which must be >= 0. Float, double and bfloat16 only (as PyTorch's CPU kernels).
  defFamily(r, "aten::hardshrink", [](const IValue* a) {
    const Tensor& x = a[0].toTensor();
    if (!isFloatingType(x.dtype()) || x.dtype() == ScalarType::Half)
      throw Error(fmt::format("\"hardshrink_cpu\" not implemented for '{}'", toString(x.dtype())));
    const double l = toScalar(a[1]).toDouble();
    return ops::where(ops::logicalAnd(ops::ge(x, Scalar(-l)), ops::le(x, Scalar(l))), Scalar(0.0),
                      x);
  });
  defFamily(r, "aten::softshrink", [](const IValue* a) {
    const Tensor& x = a[0].toTensor();
    if (!isFloatingType(x.dtype()) || x.dtype() == ScalarType::Half)
      throw Error(fmt::format("\"softshrink_cpu\" not implemented for '{}'", toString(x.dtype())));
    const double l = toScalar(a[1]).toDouble();
    if (l < 0)
      throw Error(fmt::format("lambda must be greater or equal to 0, but found to be {}.", l));
    return ops::where(ops::gt(x, Scalar(l)), ops::sub(x, Scalar(l)),
                      ops::where(ops::lt(x, Scalar(-l)), ops::add(x, Scalar(l)), Scalar(0.0)));
  });
  // nan_to_num(x, nan=0, posinf=max, neginf=lowest of x's dtype); integer and bool tensors are
  // copied.
  defFamily(r, "aten::nan_to_num", [](const IValue* a) {
    const Tensor& x = a[0].toTensor();
    if (!isFloatingType(x.dtype())) return ops::clone(x);
    double top = std::numeric_limits<double>::max();
    if (x.dtype() == ScalarType::Float) top = std::numeric_limits<float>::max();
    if (x.dtype() == ScalarType::Half) top = 65504.0;
    if (x.dtype() == ScalarType::BFloat16) top = 3.3895313892515355e38;
    const double nan = a[1].isNone() ? 0.0 : a[1].toDouble();
    const double pos = a[2].isNone() ? top : a[2].toDouble();
    const double neg = a[3].isNone() ? -top : a[3].toDouble();
    const double inf = std::numeric_limits<double>::infinity();
    return ops::where(ops::isnan(x), Scalar(nan),
                      ops::where(ops::eq(x, Scalar(inf)), Scalar(pos),
                                 ops::where(ops::eq(x, Scalar(-inf)), Scalar(neg), x)));
  });

  // ---- binary arithmetic ----
  withAlpha(
      r, "aten::add",
      [](const Tensor& x, const Tensor& y, const Scalar& al) { return ops::add(x, y, al); },
      [](const Tensor& x, const Scalar& y, const Scalar& al) { return ops::add(x, y, al); });
  withAlpha(
      r, "aten::sub",
      [](const Tensor& x, const Tensor& y, const Scalar& al) { return ops::sub(x, y, al); },
      [](const Tensor& x, const Scalar& y, const Scalar& al) { return ops::sub(x, y, al); });
  withAlpha(
      r, "aten::subtract",
      [](const Tensor& x, const Tensor& y, const Scalar& al) { return ops::sub(x, y, al); },
      [](const Tensor& x, const Scalar& y, const Scalar& al) { return ops::sub(x, y, al); });
  withAlpha(
      r, "aten::rsub",
      [](const Tensor& x, const Tensor& y, const Scalar& al) { return ops::rsub(x, y, al); },
      [](const Tensor& x, const Scalar& y, const Scalar& al) { return ops::rsub(x, y, al); });

  const BinaryT mulT = ops::mul;
  const BinaryS mulS = ops::mul;
  binary(r, "aten::mul.Tensor", "aten::mul.Scalar", mulT, mulS);
  binary(r, "aten::multiply.Tensor", "aten::multiply.Scalar", mulT, mulS);
  for (const char* name : {"aten::div", "aten::divide", "aten::true_divide"}) {
    defFamily(r, std::string(name) + ".Tensor",
              [](const IValue* a) { return ops::div(a[0].toTensor(), a[1].toTensor()); });
    defFamily(r, std::string(name) + ".Scalar",
              [](const IValue* a) { return ops::div(a[0].toTensor(), toScalar(a[1])); });
  }
  for (const char* name : {"aten::div", "aten::divide"}) {
    defFamily(r, std::string(name) + ".Tensor_mode", [](const IValue* a) {
      return ops::div(a[0].toTensor(), a[1].toTensor(), toOptStr(a[2]));
    });
    defFamily(r, std::string(name) + ".Scalar_mode", [](const IValue* a) {
      return ops::div(a[0].toTensor(), toScalar(a[1]), toOptStr(a[2]));
    });
  }
  binary(r, "aten::floor_divide", "aten::floor_divide.Scalar", ops::floorDivide, ops::floorDivide);
  binary(r, "aten::remainder.Tensor", "aten::remainder.Scalar", ops::remainder, ops::remainder);
  defFamily(r, "aten::remainder.Scalar_Tensor", [](const IValue* a) {
    Tensor other = a[1].toTensor();
    return ops::remainder(ops::full({}, toScalar(a[0]), ops::resultType(other, toScalar(a[0]))),
                          other);
  });
  binary(r, "aten::fmod.Tensor", "aten::fmod.Scalar", ops::fmod, ops::fmod);
  const BinaryT powT = ops::pow;
  const BinaryS powS = ops::pow;
  binary(r, "aten::pow.Tensor_Tensor", "aten::pow.Tensor_Scalar", powT, powS);
  defFamily(r, "aten::pow.Scalar",
            [](const IValue* a) { return ops::pow(toScalar(a[0]), a[1].toTensor()); });
  binary(r, "aten::atan2", "", ops::atan2, nullptr);
  binary(r, "aten::hypot", "", ops::hypot, nullptr);
  binary(r, "aten::maximum", "", ops::maximum, nullptr);
  binary(r, "aten::minimum", "", ops::minimum, nullptr);
  binary(r, "aten::max.other", "", ops::maximum, nullptr);
  binary(r, "aten::min.other", "", ops::minimum, nullptr);

  // ---- comparisons ----
  struct Cmp {
    const char* name;
    BinaryT t;
    BinaryS s;
  };
  const Cmp cmps[] = {
      {"eq", ops::eq, ops::eq},
      {"ne", ops::ne, ops::ne},
      {"lt", ops::lt, ops::lt},
      {"le", ops::le, ops::le},
      {"gt", ops::gt, ops::gt},
      {"ge", ops::ge, ops::ge},
      {"not_equal", ops::ne, ops::ne},
      {"greater", ops::gt, ops::gt},
      {"greater_equal", ops::ge, ops::ge},
      {"less", ops::lt, ops::lt},
      {"less_equal", ops::le, ops::le},
  };
  for (const auto& c : cmps) {
    std::string base = std::string("aten::") + c.name;
    binary(r, base + ".Tensor", base + ".Scalar", c.t, c.s);
  }

  // ---- logical and bitwise ----
  binary(r, "aten::logical_and", "", ops::logicalAnd, nullptr);
  binary(r, "aten::logical_or", "", ops::logicalOr, nullptr);
  binary(r, "aten::logical_xor", "", ops::logicalXor, nullptr);
  const BinaryT andT = ops::bitwiseAnd, orT = ops::bitwiseOr, xorT = ops::bitwiseXor;
  const BinaryS andS = ops::bitwiseAnd, orS = ops::bitwiseOr, xorS = ops::bitwiseXor;
  binary(r, "aten::bitwise_and.Tensor", "aten::bitwise_and.Scalar", andT, andS);
  binary(r, "aten::bitwise_or.Tensor", "aten::bitwise_or.Scalar", orT, orS);
  binary(r, "aten::bitwise_xor.Tensor", "aten::bitwise_xor.Scalar", xorT, xorS);
  binary(r, "aten::__and__.Tensor", "aten::__and__.Scalar", andT, andS);
  binary(r, "aten::__or__.Tensor", "aten::__or__.Scalar", orT, orS);
  binary(r, "aten::__xor__.Tensor", "aten::__xor__.Scalar", xorT, xorS);
  const BinaryT lshiftT = ops::lshift, rshiftT = ops::rshift;
  const BinaryS lshiftS = ops::lshift, rshiftS = ops::rshift;
  binary(r, "aten::__lshift__.Tensor", "aten::__lshift__.Scalar", lshiftT, lshiftS);
  binary(r, "aten::__rshift__.Tensor", "aten::__rshift__.Scalar", rshiftT, rshiftS);
  // __iand__ & co. are the in-place forms TorchScript emits for `x &= y`.
  defN<2>(r, "aten::__iand__.Tensor", [](const IValue* a) {
    return assignInPlace(a[0], ops::bitwiseAnd(a[0].toTensor(), a[1].toTensor()));
  });
  defN<2>(r, "aten::__ior__.Tensor", [](const IValue* a) {
    return assignInPlace(a[0], ops::bitwiseOr(a[0].toTensor(), a[1].toTensor()));
  });

  // ---- ternary ----
  defFamily(r, "aten::where.self", [](const IValue* a) {
    return ops::where(a[0].toTensor(), a[1].toTensor(), a[2].toTensor());
  });
  defFamily(r, "aten::where.ScalarSelf", [](const IValue* a) {
    return ops::where(a[0].toTensor(), toScalar(a[1]), a[2].toTensor());
  });
  defFamily(r, "aten::where.ScalarOther", [](const IValue* a) {
    return ops::where(a[0].toTensor(), a[1].toTensor(), toScalar(a[2]));
  });
  defFamily(r, "aten::where.Scalar", [](const IValue* a) {
    return ops::where(a[0].toTensor(), toScalar(a[1]), toScalar(a[2]));
  });
  for (const char* name : {"aten::clamp", "aten::clip"}) {
    defFamily(r, name, [](const IValue* a) {
      return ops::clamp(a[0].toTensor(), toOptScalar(a[1]), toOptScalar(a[2]));
    });
    defFamily(r, std::string(name) + ".Tensor", [](const IValue* a) {
      return ops::clamp(a[0].toTensor(), toOptTensor(a[1]), toOptTensor(a[2]));
    });
  }
  defFamily(r, "aten::clamp_min",
            [](const IValue* a) { return ops::clampMin(a[0].toTensor(), toScalar(a[1])); });
  defFamily(r, "aten::clamp_min.Tensor",
            [](const IValue* a) { return ops::clampMin(a[0].toTensor(), a[1].toTensor()); });
  defFamily(r, "aten::clamp_max",
            [](const IValue* a) { return ops::clampMax(a[0].toTensor(), toScalar(a[1])); });
  defFamily(r, "aten::clamp_max.Tensor",
            [](const IValue* a) { return ops::clampMax(a[0].toTensor(), a[1].toTensor()); });
  defFamily(r, "aten::masked_fill.Scalar", [](const IValue* a) {
    return ops::maskedFill(a[0].toTensor(), a[1].toTensor(), toScalar(a[2]));
  });
  defFamily(r, "aten::masked_fill.Tensor", [](const IValue* a) {
    return ops::maskedFill(a[0].toTensor(), a[1].toTensor(), a[2].toTensor());
  });
  defFamily(r, "aten::lerp.Scalar", [](const IValue* a) {
    return ops::lerp(a[0].toTensor(), a[1].toTensor(), toScalar(a[2]));
  });
  defFamily(r, "aten::lerp.Tensor", [](const IValue* a) {
    return ops::lerp(a[0].toTensor(), a[1].toTensor(), a[2].toTensor());
  });
  defFamily(r, "aten::addcmul", [](const IValue* a) {
    return ops::addcmul(a[0].toTensor(), a[1].toTensor(), a[2].toTensor(), toScalar(a[3]));
  });
  defFamily(r, "aten::addcdiv", [](const IValue* a) {
    return ops::addcdiv(a[0].toTensor(), a[1].toTensor(), a[2].toTensor(), toScalar(a[3]));
  });
}

}  // namespace torchless
