// ONNX converters: elementwise arithmetic, comparisons, unary math and activations
// (src/ops/elementwise.cpp's family). Each names the ONNX operator it emits; the specs are at
// https://onnx.ai/onnx/operators/onnx__<Op>.html.
#include "convert/onnx/onnx_ctx.h"

#include <cmath>
#include <functional>
#include <limits>

namespace torchless::onnx_export {

namespace {

// The dtype an elementwise result has: observed, else the first tensor input's, else Float.
ScalarType resultDtype(const OnnxCtx& ctx, const Node& n) {
  if (auto d = ctx.dtypeOf(n.output())) return *d;
  for (const Value* v : n.inputs())
    if (v->type() && v->type()->kind() == TypeKind::TensorType)
      if (auto d = ctx.dtypeOf(v)) return *d;
  return ScalarType::Float;
}

// The dtype two operands of a comparison are compared in (PyTorch promotes; a Python scalar
// takes the tensor's type).
ScalarType compareDtype(const OnnxCtx& ctx, const OnnxArgs& args) {
  auto a = ctx.dtypeOf(args[0].value());
  bool bScalar = args[1].isIValue() && !args[1].unwrapToIValue().isTensor();
  if (bScalar) {
    IValue s = args[1].unwrapToScalar();
    if (a && isIntegralType(*a, true) && s.isDouble()) return ScalarType::Float;
    return a.value_or(ScalarType::Float);
  }
  auto b = ctx.dtypeOf(args[1].value());
  if (a && b) return promoteTypes(*a, *b);
  return a ? *a : b.value_or(ScalarType::Float);
}

// Unary ops mapping one to one: Neg, Sqrt, Tanh, Sigmoid, Exp, Log, Sin, ... (x -> Op(x)).
OnnxConverter unary(std::string opType) {
  return [opType](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    // Integer inputs of float functions compute in float (torch.sqrt(int) is float).
    ScalarType out = resultDtype(ctx, n);
    // Rounding an integer tensor is the tensor itself (torch.floor / ceil / round of int64);
    // ONNX's Floor, Ceil and Round take floats only.
    const bool rounding = opType == "Floor" || opType == "Ceil" || opType == "Round";
    if (rounding && !isFloatingType(out)) return ctx.setOutput(n, 0, x);
    x = ctx.castTo(x, ctx.dtypeOf(args[0].value()), out);
    ctx.setOutput(n, 0, ctx.op(opType, {x}));
  };
}

// add / sub (Tensor and Scalar overloads, alpha): Add / Sub, with Mul by alpha when alpha != 1.
// `reversed` is rsub (other - alpha * self).
OnnxConverter addSub(std::string opType, bool reversed = false) {
  return [opType, reversed](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = resultDtype(ctx, n);
    std::string a = tensorOrScalar(ctx, args[0], dt);
    std::string b = tensorOrScalar(ctx, args[1], dt);
    if (args.size() > 2) {
      IValue alpha = args[2].unwrapToScalar();
      if (alpha.toScalarDouble() != 1.0) {
        std::string& scaled = reversed ? a : b;
        scaled = ctx.op("Mul", {scaled, ctx.constScalar(alpha.toScalarDouble(), dt)});
      }
    }
    ctx.setOutput(n, 0, reversed ? ctx.op(opType, {b, a}) : ctx.op(opType, {a, b}));
  };
}

// mul / div / pow / max.other / min.other: Mul / Div / Pow / Max / Min in the result dtype.
OnnxConverter binary(std::string opType) {
  return [opType](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = resultDtype(ctx, n);
    ctx.setOutput(
        n, 0, ctx.op(opType, {tensorOrScalar(ctx, args[0], dt), tensorOrScalar(ctx, args[1], dt)}));
  };
}

// eq / ne / gt / lt / ge / le -> Equal / Not(Equal) / Greater / Less / GreaterOrEqual /
// LessOrEqual.
OnnxConverter compare(std::string opType, bool negate = false) {
  return [opType, negate](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = compareDtype(ctx, args);
    std::string y =
        ctx.op(opType, {tensorOrScalar(ctx, args[0], dt), tensorOrScalar(ctx, args[1], dt)});
    if (negate) y = ctx.op("Not", {y});
    ctx.setOutput(n, 0, y);
  };
}

// Clip(x, min, max) with optional bounds (clamp, clamp_min, clamp_max, relu6, hardtanh).
std::string clip(OnnxCtx& ctx, const Node& n, const std::string& x, ScalarType dt,
                 std::optional<double> lo, std::optional<double> hi) {
  return ctx.op("Clip", {x, lo ? ctx.constScalar(*lo, dt) : std::string(),
                         hi ? ctx.constScalar(*hi, dt) : std::string()});
}

void convertClamp(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ScalarType dt = resultDtype(ctx, n);
  std::string x = ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), dt);
  bool scalarBounds =
      (args[1].isNone() || (args[1].isIValue() && !args[1].unwrapToIValue().isTensor())) &&
      (args[2].isNone() || (args[2].isIValue() && !args[2].unwrapToIValue().isTensor()));
  if (scalarBounds) {
    std::optional<double> lo, hi;
    if (!args[1].isNone()) lo = args[1].unwrapToDouble();
    if (!args[2].isNone()) hi = args[2].unwrapToDouble();
    ctx.setOutput(n, 0, clip(ctx, n, x, dt, lo, hi));
    return;
  }
  // Tensor bounds: Max / Min (Clip takes only scalars).
  if (!args[1].isNone()) x = ctx.op("Max", {x, tensorOrScalar(ctx, args[1], dt)});
  if (!args[2].isNone()) x = ctx.op("Min", {x, tensorOrScalar(ctx, args[2], dt)});
  ctx.setOutput(n, 0, x);
}

OnnxConverter clampOneSide(bool isMin) {
  return [isMin](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = resultDtype(ctx, n);
    std::string x = ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), dt);
    ctx.setOutput(n, 0, ctx.op(isMin ? "Max" : "Min", {x, tensorOrScalar(ctx, args[1], dt)}));
  };
}

// div(self, other, rounding_mode): Div in the result dtype, then "floor" -> Floor and
// "trunc" -> Sign * Floor(Abs); integer operands divide in double and cast back (as PyTorch's
// floor / trunc division of ints).
void convertDivMode(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ScalarType dt = resultDtype(ctx, n);
  std::optional<std::string> mode;
  if (!args[2].isNone()) mode = args[2].unwrapToString();
  if (mode && *mode != "floor" && *mode != "trunc") args[2].fail("None, 'floor' or 'trunc'", *mode);
  const bool integral = isIntegralType(dt, true);
  ScalarType compute = integral && mode ? ScalarType::Double : dt;
  std::string q =
      ctx.op("Div", {tensorOrScalar(ctx, args[0], compute), tensorOrScalar(ctx, args[1], compute)});
  if (mode && *mode == "floor") q = ctx.op("Floor", {q});
  if (mode && *mode == "trunc")
    q = ctx.op("Mul", {ctx.op("Sign", {q}), ctx.op("Floor", {ctx.op("Abs", {q})})});
  ctx.setOutput(n, 0, compute == dt ? q : ctx.castTo(q, compute, dt));
}

// A float op of one input, decomposed: x (cast to the result dtype) -> fn(x).
OnnxConverter unaryExpr(std::function<std::string(OnnxCtx&, const std::string&, ScalarType)> fn) {
  return [fn](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = resultDtype(ctx, n);
    std::string x = ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), dt);
    ctx.setOutput(n, 0, fn(ctx, x, dt));
  };
}

// softplus(x, beta, threshold) = x where beta * x > threshold, else Softplus(beta * x) / beta.
std::string softplus(OnnxCtx& ctx, const std::string& x, ScalarType dt, double beta,
                     double threshold) {
  std::string bx = beta == 1.0 ? x : ctx.op("Mul", {x, ctx.constScalar(beta, dt)});
  std::string sp = ctx.op("Softplus", {bx});
  if (beta != 1.0) sp = ctx.op("Div", {sp, ctx.constScalar(beta, dt)});
  return ctx.op("Where", {ctx.op("Greater", {bx, ctx.constScalar(threshold, dt)}), x, sp});
}

// logical_and / or / xor -> And / Or / Xor of the operands as bool.
OnnxConverter logical(std::string opType) {
  return [opType](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string a =
        ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), ScalarType::Bool);
    std::string b =
        ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), ScalarType::Bool);
    std::string y = ctx.op(opType, {a, b});
    // The in-place forms keep self's dtype.
    if (auto d = ctx.dtypeOf(n.output()); d && *d != ScalarType::Bool)
      y = ctx.castTo(y, ScalarType::Bool, *d);
    ctx.setOutput(n, 0, y);
  };
}

// fmod -> Mod(fmod=1) (the sign of the dividend, as C's fmod); remainder (the sign of the
// divisor, Python's %) -> Mod(fmod=0) for integers, a - floor(a / b) * b for floats (ONNX's
// Mod with fmod=0 takes integers only), as torch.onnx's symbolic_opset10.
OnnxConverter modulo(bool fmod) {
  return [fmod](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = resultDtype(ctx, n);
    std::string a = tensorOrScalar(ctx, args[0], dt), b = tensorOrScalar(ctx, args[1], dt);
    if (fmod) return ctx.setOutput(n, 0, ctx.op("Mod", {a, b}, {attrI("fmod", 1)}));
    if (isIntegralType(dt, true))
      return ctx.setOutput(n, 0, ctx.op("Mod", {a, b}, {attrI("fmod", 0)}));
    std::string q = ctx.op("Floor", {ctx.op("Div", {a, b})});
    ctx.setOutput(n, 0, ctx.op("Sub", {a, ctx.op("Mul", {q, b})}));
  };
}

// floor_divide: Floor(a / b) (PyTorch 1.13 rounds toward -inf); integers divide in double.
void convertFloorDivide(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ScalarType dt = resultDtype(ctx, n);
  ScalarType compute = isIntegralType(dt, true) ? ScalarType::Double : dt;
  std::string q = ctx.op("Floor", {ctx.op("Div", {tensorOrScalar(ctx, args[0], compute),
                                                  tensorOrScalar(ctx, args[1], compute)})});
  ctx.setOutput(n, 0, ctx.castTo(q, compute, dt));
}

}  // namespace

// atan2(y, x): Atan(y / x), moved by pi into the second and third quadrants (x < 0: + pi when
// y >= 0, - pi when y < 0; torch.onnx's symbolic, with y = 0 on the positive side as PyTorch
// puts +0), and 0 where both are 0 (y / x is NaN there; PyTorch gives 0).
void convertAtan2(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const ScalarType dt = resultDtype(ctx, n);
  std::string y = tensorOrScalar(ctx, args[0], dt), x = tensorOrScalar(ctx, args[1], dt);
  const std::string zero = ctx.constScalar(0, dt), pi = ctx.constScalar(M_PI, dt);
  std::string atan = ctx.op("Atan", {ctx.op("Div", {y, x})});
  std::string shifted = ctx.op(
      "Where", {ctx.op("Less", {y, zero}), ctx.op("Sub", {atan, pi}), ctx.op("Add", {atan, pi})});
  std::string r = ctx.op("Where", {ctx.op("Less", {x, zero}), shifted, atan});
  std::string origin = ctx.op("And", {ctx.op("Equal", {x, zero}), ctx.op("Equal", {y, zero})});
  ctx.setOutput(n, 0, ctx.op("Where", {origin, zero, r}));
}

void registerElementwiseConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"aten::atan2", "aten::atan2_"}, convertAtan2);
  // Binary arithmetic: Add, Sub, Mul, Div, Pow.
  r.addOverloads({"aten::add.Tensor", "aten::add.Scalar", "aten::add_.Tensor", "aten::add_.Scalar"},
                 addSub("Add"));
  r.addOverloads({"aten::sub.Tensor", "aten::sub.Scalar", "aten::sub_.Tensor", "aten::sub_.Scalar"},
                 addSub("Sub"));
  r.addOverloads({"aten::rsub.Tensor", "aten::rsub.Scalar"}, addSub("Sub", /*reversed=*/true));
  r.addOverloads({"aten::mul.Tensor", "aten::mul.Scalar", "aten::mul_.Tensor", "aten::mul_.Scalar"},
                 binary("Mul"));
  // div: true division; integer inputs divide in float (the observed result dtype).
  r.addOverloads({"aten::div.Tensor", "aten::div.Scalar", "aten::div_.Tensor", "aten::div_.Scalar"},
                 binary("Div"));
  r.addOverloads({"aten::div.Tensor_mode", "aten::div.Scalar_mode"}, convertDivMode);
  r.addOverloads({"aten::pow.Tensor_Tensor", "aten::pow.Tensor_Scalar", "aten::pow.Scalar",
                  "aten::pow_.Tensor", "aten::pow_.Scalar"},
                 binary("Pow"));
  r.addOverloads({"aten::max.other", "aten::maximum"}, binary("Max"));
  r.addOverloads({"aten::min.other", "aten::minimum"}, binary("Min"));

  // Comparisons -> bool tensors.
  r.addOverloads({"aten::eq.Tensor", "aten::eq.Scalar"}, compare("Equal"));
  r.addOverloads({"aten::ne.Tensor", "aten::ne.Scalar"}, compare("Equal", /*negate=*/true));
  r.addOverloads({"aten::gt.Tensor", "aten::gt.Scalar"}, compare("Greater"));
  r.addOverloads({"aten::lt.Tensor", "aten::lt.Scalar"}, compare("Less"));
  r.addOverloads({"aten::ge.Tensor", "aten::ge.Scalar"}, compare("GreaterOrEqual"));
  r.addOverloads({"aten::le.Tensor", "aten::le.Scalar"}, compare("LessOrEqual"));

  // Unary math, one ONNX op each.
  const std::pair<const char*, const char*> unaryOps[] = {
      {"neg", "Neg"},         {"sqrt", "Sqrt"},   {"tanh", "Tanh"}, {"sigmoid", "Sigmoid"},
      {"exp", "Exp"},         {"log", "Log"},     {"sin", "Sin"},   {"cos", "Cos"},
      {"tan", "Tan"},         {"asin", "Asin"},   {"acos", "Acos"}, {"atan", "Atan"},
      {"abs", "Abs"},         {"floor", "Floor"}, {"ceil", "Ceil"}, {"reciprocal", "Reciprocal"},
      {"erf", "Erf"},         {"sign", "Sign"},   {"relu", "Relu"}, {"round", "Round"},
      {"logical_not", "Not"}, {"sinh", "Sinh"},   {"cosh", "Cosh"}, {"asinh", "Asinh"},
      {"acosh", "Acosh"},     {"atanh", "Atanh"},
  };
  for (const auto& [name, op] : unaryOps) {
    std::string a = std::string("aten::") + name, b = a + "_";
    r.addOverloads({a, b}, unary(op));
  }
  // hardswish -> HardSwish from opset 14; x * HardSigmoid(x, 1/6, 1/2) before.
  r.addOverloads({"aten::hardswish", "aten::hardswish_"}, [](OnnxCtx& ctx, const Node& n,
                                                             OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    if (ctx.opset() >= 14) return ctx.setOutput(n, 0, ctx.op("HardSwish", {x}));
    std::string hs = ctx.op("HardSigmoid", {x}, {attrF("alpha", 1.0 / 6.0), attrF("beta", 0.5)});
    ctx.setOutput(n, 0, ctx.op("Mul", {x, hs}));
  });
  // rsqrt -> Reciprocal(Sqrt(x)).
  r.addOverloads({"aten::rsqrt", "aten::rsqrt_"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(n, 0, ctx.op("Reciprocal", {ctx.op("Sqrt", {args[0].unwrapToTensor()})}));
  });

  // Clamps -> Clip (scalar bounds) or Max/Min (tensor bounds).
  r.addOverloads({"aten::clamp", "aten::clamp_", "aten::clamp.Tensor", "aten::clamp_.Tensor"},
                 convertClamp);
  r.addOverloads(
      {"aten::clamp_min", "aten::clamp_min_", "aten::clamp_min.Tensor", "aten::clamp_min_.Tensor"},
      clampOneSide(true));
  r.addOverloads(
      {"aten::clamp_max", "aten::clamp_max_", "aten::clamp_max.Tensor", "aten::clamp_max_.Tensor"},
      clampOneSide(false));

  // Activations.
  r.addOverloads({"aten::relu6", "aten::relu6_"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(n, 0, clip(ctx, n, args[0].unwrapToTensor(), resultDtype(ctx, n), 0.0, 6.0));
  });
  r.addOverloads({"aten::hardtanh", "aten::hardtanh_"},
                 [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
                   ctx.setOutput(n, 0,
                                 clip(ctx, n, args[0].unwrapToTensor(), resultDtype(ctx, n),
                                      args[1].unwrapToDouble(-1.0), args[2].unwrapToDouble(1.0)));
                 });
  // hardsigmoid: relu6(x + 3) / 6 = HardSigmoid(alpha=1/6, beta=0.5).
  r.addOverloads({"aten::hardsigmoid", "aten::hardsigmoid_"},
                 [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
                   ctx.setOutput(n, 0,
                                 ctx.op("HardSigmoid", {args[0].unwrapToTensor()},
                                        {attrF("alpha", 1.0 / 6.0), attrF("beta", 0.5)}));
                 });
  // silu: x * Sigmoid(x).
  r.addOverloads({"aten::silu", "aten::silu_"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    ctx.setOutput(n, 0, ctx.op("Mul", {x, ctx.op("Sigmoid", {x})}));
  });
  // gelu: exact 0.5 x (1 + Erf(x / sqrt 2)); "tanh": 0.5 x (1 + Tanh(sqrt(2/pi) (x + 0.044715
  // x^3))).
  r.addOverloads({"aten::gelu"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    ScalarType dt = resultDtype(ctx, n);
    std::string approximate = args[1].unwrapToString();
    std::string inner;
    if (approximate == "tanh") {
      std::string x3 = ctx.op("Mul", {ctx.op("Mul", {x, x}), x});
      std::string s = ctx.op("Add", {x, ctx.op("Mul", {x3, ctx.constScalar(0.044715, dt)})});
      inner = ctx.op("Tanh", {ctx.op("Mul", {s, ctx.constScalar(std::sqrt(2.0 / M_PI), dt)})});
    } else {
      if (approximate != "none") args[1].fail("'none' or 'tanh'", "'" + approximate + "'");
      inner = ctx.op("Erf", {ctx.op("Div", {x, ctx.constScalar(std::sqrt(2.0), dt)})});
    }
    std::string y = ctx.op("Mul", {ctx.op("Mul", {x, ctx.constScalar(0.5, dt)}),
                                   ctx.op("Add", {inner, ctx.constScalar(1.0, dt)})});
    ctx.setOutput(n, 0, y);
  });
  // elu -> Elu(alpha); scale and input_scale other than 1 are selu-like: scaled around Elu.
  r.addOverloads({"aten::elu", "aten::elu_"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = resultDtype(ctx, n);
    std::string x = args[0].unwrapToTensor();
    double alpha = args[1].unwrapToDouble(), scale = args[2].unwrapToDouble(),
           inScale = args[3].unwrapToDouble();
    if (inScale != 1.0) x = ctx.op("Mul", {x, ctx.constScalar(inScale, dt)});
    std::string y = ctx.op("Elu", {x}, {attrF("alpha", alpha)});
    if (scale != 1.0) y = ctx.op("Mul", {y, ctx.constScalar(scale, dt)});
    ctx.setOutput(n, 0, y);
  });
  r.addOverloads({"aten::leaky_relu", "aten::leaky_relu_"},
                 [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
                   ctx.setOutput(n, 0,
                                 ctx.op("LeakyRelu", {args[0].unwrapToTensor()},
                                        {attrF("alpha", args[1].unwrapToDouble(0.01))}));
                 });
  // prelu -> PRelu; the per-channel slope [C] is reshaped to [C, 1, ...] to broadcast on NC...
  r.addOverloads({"aten::prelu"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    std::string w = args[1].unwrapToTensor();
    auto rank = ctx.rankOf(args[0].value());
    auto wSizes = ctx.sizesOf(args[1].value());
    if (rank && *rank > 2 && wSizes && wSizes->size() == 1 && (*wSizes)[0] > 1) {
      std::vector<int64_t> axes;
      for (int64_t i = 1; i < *rank - 1; ++i) axes.push_back(i);
      w = unsqueeze(ctx, w, axes);
    }
    ctx.setOutput(n, 0, ctx.op("PRelu", {x, w}));
  });
  // threshold: Where(x > threshold, x, value).
  r.addOverloads({"aten::threshold", "aten::threshold_"}, [](OnnxCtx& ctx, const Node& n,
                                                             OnnxArgs& args) {
    ScalarType dt = resultDtype(ctx, n);
    std::string x = args[0].unwrapToTensor();
    std::string gt = ctx.op("Greater", {x, ctx.constScalar(args[1].unwrapToDouble(), dt)});
    ctx.setOutput(n, 0, ctx.op("Where", {gt, x, ctx.constScalar(args[2].unwrapToDouble(), dt)}));
  });
  // glu: a, b = Split(x, 2, dim); a * Sigmoid(b).
  r.addOverloads({"aten::glu"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    auto sizes = ctx.expectSizes(n, args[0].value());
    int64_t dim = wrapDim(args[1].unwrapToInt(), static_cast<int64_t>(sizes.size()));
    int64_t half = sizes[dim] / 2;
    auto parts = ctx.opN("Split", {x, ctx.constInt64s({half, half})}, 2, {attrI("axis", dim)});
    ctx.setOutput(n, 0, ctx.op("Mul", {parts[0], ctx.op("Sigmoid", {parts[1]})}));
  });
  // where(cond, a, b) -> Where; masked_fill(x, mask, v) -> Where(mask, v, x).
  r.addOverloads({"aten::where.self", "aten::where.ScalarSelf", "aten::where.ScalarOther",
                  "aten::where.Scalar"},
                 [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
                   ScalarType dt = resultDtype(ctx, n);
                   std::string c = ctx.castTo(args[0].unwrapToTensor(),
                                              ctx.dtypeOf(args[0].value()), ScalarType::Bool);
                   ctx.setOutput(n, 0,
                                 ctx.op("Where", {c, tensorOrScalar(ctx, args[1], dt),
                                                  tensorOrScalar(ctx, args[2], dt)}));
                 });
  // The long tail of unary math and activations (torch.onnx's symbolic_opset9 forms).
  r.addOverloads(
      {"aten::trunc", "aten::trunc_"},
      unaryExpr([](OnnxCtx& ctx, const std::string& x, ScalarType dt) {
        if (!isFloatingType(dt)) return x;  // trunc of an integer tensor is itself
        return ctx.op("Mul", {ctx.op("Sign", {x}), ctx.op("Floor", {ctx.op("Abs", {x})})});
      }));
  r.addOverloads({"aten::log1p", "aten::log1p_"},
                 unaryExpr([](OnnxCtx& ctx, const std::string& x, ScalarType dt) {
                   return ctx.op("Log", {ctx.op("Add", {x, ctx.constScalar(1.0, dt)})});
                 }));
  r.addOverloads({"aten::expm1", "aten::expm1_", "aten::special_expm1"},
                 unaryExpr([](OnnxCtx& ctx, const std::string& x, ScalarType dt) {
                   return ctx.op("Sub", {ctx.op("Exp", {x}), ctx.constScalar(1.0, dt)});
                 }));
  r.addOverloads({"aten::frac", "aten::frac_"},
                 unaryExpr([](OnnxCtx& ctx, const std::string& x, ScalarType) {
                   std::string trunc =
                       ctx.op("Mul", {ctx.op("Sign", {x}), ctx.op("Floor", {ctx.op("Abs", {x})})});
                   return ctx.op("Sub", {x, trunc});
                 }));
  r.addOverloads({"aten::exp2", "aten::exp2_", "aten::special_exp2"},
                 unaryExpr([](OnnxCtx& ctx, const std::string& x, ScalarType dt) {
                   return ctx.op("Pow", {ctx.constScalar(2.0, dt), x});
                 }));
  r.addOverloads({"aten::erfc", "aten::erfc_", "aten::special_erfc"},
                 unaryExpr([](OnnxCtx& ctx, const std::string& x, ScalarType dt) {
                   return ctx.op("Sub", {ctx.constScalar(1.0, dt), ctx.op("Erf", {x})});
                 }));
  // sinc(x) = sin(pi x) / (pi x), 1 at 0.
  r.addOverloads({"aten::sinc", "aten::sinc_", "aten::special_sinc"},
                 unaryExpr([](OnnxCtx& ctx, const std::string& x, ScalarType dt) {
                   std::string px = ctx.op("Mul", {x, ctx.constScalar(M_PI, dt)});
                   return ctx.op("Where", {ctx.op("Equal", {x, ctx.constScalar(0.0, dt)}),
                                           ctx.constScalar(1.0, dt),
                                           ctx.op("Div", {ctx.op("Sin", {px}), px})});
                 }));
  // xlogy(x, y) = x log y, 0 where x is 0 and y is not NaN.
  r.addOverloads(
      {"aten::xlogy.Tensor", "aten::xlogy.Scalar_Self", "aten::xlogy.Scalar_Other",
       "aten::special_xlogy", "aten::special_xlogy.self_scalar",
       "aten::special_xlogy.other_scalar"},
      [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
        const ScalarType dt = resultDtype(ctx, n);
        std::string x = tensorOrScalar(ctx, args[0], dt), y = tensorOrScalar(ctx, args[1], dt);
        std::string zero = ctx.constScalar(0.0, dt);
        std::string keep0 =
            ctx.op("And", {ctx.op("Equal", {x, zero}), ctx.op("Not", {ctx.op("IsNaN", {y})})});
        ctx.setOutput(n, 0, ctx.op("Where", {keep0, zero, ctx.op("Mul", {x, ctx.op("Log", {y})})}));
      });
  r.addOverloads({"aten::special_expit"},
                 unaryExpr([](OnnxCtx& ctx, const std::string& x, ScalarType) {
                   return ctx.op("Sigmoid", {x});
                 }));
  // logit(self, eps): Log(x / (1 - x)), x clamped to [eps, 1 - eps] first when eps is given.
  r.addOverloads(
      {"aten::logit", "aten::logit_", "aten::special_logit"},
      [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
        ScalarType dt = resultDtype(ctx, n);
        std::string x = ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), dt);
        if (!args[1].isNone()) {
          const double eps = args[1].unwrapToDouble();
          x = ctx.op("Clip", {x, ctx.constScalar(eps, dt), ctx.constScalar(1.0 - eps, dt)});
        }
        std::string odds = ctx.op("Div", {x, ctx.op("Sub", {ctx.constScalar(1.0, dt), x})});
        ctx.setOutput(n, 0, ctx.op("Log", {odds}));
      });
  // hypot(a, b): Sqrt(a^2 + b^2).
  r.addOverloads({"aten::hypot", "aten::hypot_"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const ScalarType dt = resultDtype(ctx, n);
    std::string a = tensorOrScalar(ctx, args[0], dt), b = tensorOrScalar(ctx, args[1], dt);
    ctx.setOutput(n, 0,
                  ctx.op("Sqrt", {ctx.op("Add", {ctx.op("Mul", {a, a}), ctx.op("Mul", {b, b})})}));
  });
  r.addOverloads({"aten::log2", "aten::log2_"},
                 unaryExpr([](OnnxCtx& ctx, const std::string& x, ScalarType dt) {
                   return ctx.op("Div", {ctx.op("Log", {x}), ctx.constScalar(std::log(2.0), dt)});
                 }));
  r.addOverloads({"aten::square", "aten::square_"},
                 unaryExpr([](OnnxCtx& ctx, const std::string& x, ScalarType) {
                   return ctx.op("Mul", {x, x});
                 }));
  r.addOverloads({"aten::selu", "aten::selu_"},
                 unaryExpr([](OnnxCtx& ctx, const std::string& x, ScalarType) {
                   return ctx.op("Selu", {x});
                 }));
  r.addOverloads({"aten::mish", "aten::mish_"},
                 unaryExpr([](OnnxCtx& ctx, const std::string& x, ScalarType dt) {
                   return ctx.op("Mul", {x, ctx.op("Tanh", {softplus(ctx, x, dt, 1.0, 20.0)})});
                 }));
  // log_sigmoid(x) = -softplus(-x), stable for large |x|.
  r.addOverloads({"aten::log_sigmoid"},
                 unaryExpr([](OnnxCtx& ctx, const std::string& x, ScalarType dt) {
                   return ctx.op("Neg", {softplus(ctx, ctx.op("Neg", {x}), dt, 1.0, 20.0)});
                 }));
  r.addOverloads({"aten::softplus"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = resultDtype(ctx, n);
    ctx.setOutput(n, 0,
                  softplus(ctx, args[0].unwrapToTensor(), dt, args[1].unwrapToDouble(1.0),
                           args[2].unwrapToDouble(20.0)));
  });
  r.addOverloads({"aten::celu", "aten::celu_"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(
        n, 0,
        ctx.op("Celu", {args[0].unwrapToTensor()}, {attrF("alpha", args[1].unwrapToDouble(1.0))}));
  });
  // hardshrink: x where |x| > lambda else 0; softshrink: x -+ lambda beyond +-lambda, else 0.
  r.addOverloads({"aten::hardshrink"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = resultDtype(ctx, n);
    std::string x = args[0].unwrapToTensor();
    std::string keep =
        ctx.op("Greater", {ctx.op("Abs", {x}), ctx.constScalar(args[1].unwrapToDouble(0.5), dt)});
    ctx.setOutput(n, 0, ctx.op("Where", {keep, x, ctx.constScalar(0.0, dt)}));
  });
  r.addOverloads({"aten::softshrink"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = resultDtype(ctx, n);
    std::string x = args[0].unwrapToTensor();
    std::string l = ctx.constScalar(args[1].unwrapToDouble(0.5), dt);
    std::string zero = ctx.constScalar(0.0, dt);
    std::string neg = ctx.op("Neg", {l});
    std::string y = ctx.op("Where", {ctx.op("Greater", {x, l}), ctx.op("Sub", {x, l}), zero});
    ctx.setOutput(n, 0, ctx.op("Where", {ctx.op("Less", {x, neg}), ctx.op("Add", {x, l}), y}));
  });
  // isinf -> IsInf; isfinite -> Not(IsInf or IsNaN). Integer tensors are finite and not inf.
  r.addOverloads({"aten::isinf", "aten::isfinite"}, [](OnnxCtx& ctx, const Node& n,
                                                       OnnxArgs& args) {
    const bool finite = n.kind() == Symbol::aten("isfinite");
    std::string x = args[0].unwrapToTensor();
    auto dt = ctx.dtypeOf(args[0].value());
    if (dt && !isFloatingType(*dt)) {
      std::string t = ctx.op("Equal", {x, x});
      return ctx.setOutput(n, 0, finite ? t : ctx.op("Not", {t}));
    }
    std::string inf = ctx.op("IsInf", {x});
    ctx.setOutput(n, 0, finite ? ctx.op("Not", {ctx.op("Or", {inf, ctx.op("IsNaN", {x})})}) : inf);
  });
  // log10(x) = Log(x) / ln(10) (integers compute in float).
  r.addOverloads({"aten::log10", "aten::log10_"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType out = resultDtype(ctx, n);
    std::string x = ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), out);
    ctx.setOutput(n, 0, ctx.op("Div", {ctx.op("Log", {x}), ctx.constScalar(std::log(10.0), out)}));
  });
  r.addOverloads({"aten::isnan"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(n, 0, ctx.op("IsNaN", {args[0].unwrapToTensor()}));
  });
  r.addOverloads({"aten::logical_and", "aten::logical_and_"}, logical("And"));
  r.addOverloads({"aten::logical_or", "aten::logical_or_"}, logical("Or"));
  r.addOverloads({"aten::logical_xor", "aten::logical_xor_"}, logical("Xor"));
  // bitwise_not of bools -> Not (ONNX has BitwiseNot for integers from opset 18 only).
  r.addOverloads(
      {"aten::bitwise_not", "aten::bitwise_not_"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
        auto dt = ctx.dtypeOf(args[0].value());
        if (dt && *dt != ScalarType::Bool) {
          if (ctx.opset() < 18)
            args[0].fail("a bool tensor (BitwiseNot of integers needs opset 18)", toString(*dt));
          return ctx.setOutput(n, 0, ctx.op("BitwiseNot", {args[0].unwrapToTensor()}));
        }
        ctx.setOutput(n, 0, ctx.op("Not", {args[0].unwrapToTensor()}));
      });
  r.addOverloads(
      {"aten::fmod.Tensor", "aten::fmod.Scalar", "aten::fmod_.Tensor", "aten::fmod_.Scalar"},
      modulo(true));
  r.addOverloads({"aten::remainder.Tensor", "aten::remainder.Scalar", "aten::remainder_.Tensor",
                  "aten::remainder_.Scalar"},
                 modulo(false));
  r.addOverloads({"aten::floor_divide", "aten::floor_divide.Scalar", "aten::floor_divide_.Scalar"},
                 convertFloorDivide);
  r.addOverloads({"aten::true_divide.Tensor", "aten::true_divide.Scalar",
                  "aten::true_divide_.Tensor", "aten::true_divide_.Scalar"},
                 binary("Div"));
  // addcmul(self, t1, t2, value) = self + value * t1 * t2.
  r.addOverloads(
      {"aten::addcmul", "aten::addcmul_"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
        ScalarType dt = resultDtype(ctx, n);
        std::string prod =
            ctx.op("Mul", {tensorOrScalar(ctx, args[1], dt), tensorOrScalar(ctx, args[2], dt)});
        double value = args[3].unwrapToDouble(1.0);
        if (value != 1.0) prod = ctx.op("Mul", {prod, ctx.constScalar(value, dt)});
        ctx.setOutput(n, 0, ctx.op("Add", {tensorOrScalar(ctx, args[0], dt), prod}));
      });
  // lerp(self, end, weight) = self + weight * (end - self).
  r.addOverloads(
      {"aten::lerp.Scalar", "aten::lerp.Tensor", "aten::lerp_.Scalar", "aten::lerp_.Tensor"},
      [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
        ScalarType dt = resultDtype(ctx, n);
        std::string a = tensorOrScalar(ctx, args[0], dt);
        std::string d = ctx.op("Sub", {tensorOrScalar(ctx, args[1], dt), a});
        ctx.setOutput(n, 0,
                      ctx.op("Add", {a, ctx.op("Mul", {tensorOrScalar(ctx, args[2], dt), d})}));
      });
  r.addOverloads(
      {"aten::masked_fill.Scalar", "aten::masked_fill.Tensor", "aten::masked_fill_.Scalar",
       "aten::masked_fill_.Tensor"},
      [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
        ScalarType dt = resultDtype(ctx, n);
        std::string m =
            ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), ScalarType::Bool);
        ctx.setOutput(
            n, 0, ctx.op("Where", {m, tensorOrScalar(ctx, args[2], dt), args[0].unwrapToTensor()}));
      });
  // nan_to_num(self, nan, posinf, neginf): Where(IsNaN) / Where(IsInf) with PyTorch's defaults
  // (0, the dtype's largest and lowest finite values); integer tensors pass through.
  r.addOverloads({"aten::nan_to_num", "aten::nan_to_num_"}, [](OnnxCtx& ctx, const Node& n,
                                                               OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    ScalarType dt = dtypeOr(ctx, args[0].value());
    if (!isFloatingType(dt)) return ctx.setOutput(n, 0, x);
    const double big = dt == ScalarType::Double ? std::numeric_limits<double>::max()
                       : dt == ScalarType::Half ? 65504.0
                       : dt == ScalarType::BFloat16
                           ? 3.3895313892515355e38
                           : static_cast<double>(std::numeric_limits<float>::max());
    auto value = [&](size_t i, double dflt) {
      return ctx.constScalar(args[i].unwrapToDouble(dflt), dt);
    };
    std::string y = ctx.op("Where", {ctx.op("IsNaN", {x}), value(1, 0.0), x});
    y = ctx.op("Where", {ctx.op("IsInf", {x}, {attrI("detect_negative", 0)}), value(2, big), y});
    y = ctx.op("Where", {ctx.op("IsInf", {x}, {attrI("detect_positive", 0)}), value(3, -big), y});
    ctx.setOutput(n, 0, y);
  });
  // rrelu(self, lower, upper, training) in eval: LeakyRelu with the mean slope (lower + upper) / 2.
  r.addOverloads({"aten::rrelu", "aten::rrelu_"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    if (args[3].unwrapToBool(false))
      args[3].fail("False (random slopes in training are not exported)", "True");
    const double slope =
        (args[1].unwrapToScalar().toScalarDouble() + args[2].unwrapToScalar().toScalarDouble()) / 2;
    ctx.setOutput(n, 0, ctx.op("LeakyRelu", {args[0].unwrapToTensor()}, {attrF("alpha", slope)}));
  });
  // Conjugation and lifting are identities on real tensors (ONNX has no complex types).
  r.addOverloads({"aten::resolve_conj", "aten::resolve_neg", "aten::_conj", "aten::conj_physical",
                  "aten::lift"},
                 [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
                   if (auto dt = ctx.dtypeOf(args[0].value()); dt && isComplexType(*dt))
                     args[0].fail("a real tensor (ONNX has no complex types)", "a complex one");
                   ctx.setOutput(n, 0, args[0].unwrapToTensor());
                 });
  // scalar_tensor(s, dtype) -> a 0-d tensor of s (default float), computed when s is.
  r.addOverloads({"aten::scalar_tensor"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = ScalarType::Float;
    if (!args[1].isNone())
      if (auto t = scalarTypeFromInt(args[1].unwrapToInt())) dt = *t;
    ctx.setOutput(n, 0, tensorOrScalar(ctx, args[0], dt));
  });
  // fake_quantize_per_tensor_affine / _per_channel_affine -> QuantizeLinear + DequantizeLinear
  // (https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html), as torch.onnx's symbolics: the
  // range must be uint8's [0, 255] or int8's [-128, 127] (ONNX rounds half to even, as PyTorch).
  r.addOverloads(
      {"aten::fake_quantize_per_tensor_affine",
       "aten::fake_quantize_per_tensor_affine.tensor_qparams",
       "aten::fake_quantize_per_channel_affine"},
      [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
        const bool perChannel = n.kind() == Symbol::aten("fake_quantize_per_channel_affine");
        const size_t lo = perChannel ? 4 : 3;
        const int64_t qmin = args[lo].unwrapToInt(), qmax = args[lo + 1].unwrapToInt();
        ScalarType qt;
        if (qmin == 0 && qmax == 255)
          qt = ScalarType::Byte;
        else if (qmin == -128 && qmax == 127)
          qt = ScalarType::Char;
        else
          return args[lo].fail(
              "quant_min, quant_max of [0, 255] or [-128, 127] (ONNX's uint8 / int8)",
              fmt::format("[{}, {}]", qmin, qmax));
        std::string scale = args[1].isIValue() && !args[1].unwrapToIValue().isTensor()
                                ? ctx.constScalar(args[1].unwrapToDouble(), ScalarType::Float)
                                : ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()),
                                             ScalarType::Float);
        std::string zp =
            args[2].isIValue() && !args[2].unwrapToIValue().isTensor()
                ? ctx.constScalar(static_cast<double>(args[2].unwrapToInt()), qt)
                : ctx.op("Cast", {args[2].unwrapToTensor()}, {attrI("to", onnxDataType(qt))});
        if (!perChannel && args[1].isIValue() && args[1].unwrapToIValue().isTensor()) {
          scale = ctx.op("Reshape", {scale, ctx.constInt64s({})});
          zp = ctx.op("Reshape", {zp, ctx.constInt64s({})});
        }
        std::vector<OnnxAttr> axis;
        if (perChannel)
          axis.push_back(
              attrI("axis", wrapDim(args[3].unwrapToInt(), ctx.expectRank(n, args[0].value()))));
        std::string x =
            ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), ScalarType::Float);
        std::string q = ctx.op("QuantizeLinear", {x, scale, zp}, axis);
        ctx.setOutput(n, 0, ctx.op("DequantizeLinear", {q, scale, zp}, axis));
      });
}

}  // namespace torchless::onnx_export
