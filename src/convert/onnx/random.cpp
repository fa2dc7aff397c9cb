// ONNX converters: random sampling (src/ops' rand / randn / bernoulli kernels), as torch.onnx's
// symbolics: RandomUniform(Like) / RandomNormal(Like), Bernoulli as a uniform draw below p, and
// Multinomial. ONNX Runtime draws other numbers than PyTorch: only the distribution, shapes and
// dtypes follow it.
#include "convert/onnx/onnx_ctx.h"

namespace torchless::onnx_export {

namespace {

// The optional dtype argument at `i` (default Float).
ScalarType dtypeArg(const OnnxArgs& args, size_t i, ScalarType dflt = ScalarType::Float) {
  if (i >= args.size() || args[i].isNone()) return dflt;
  auto t = scalarTypeFromInt(args[i].unwrapToInt());
  if (!t || !isFloatingType(*t)) args[i].fail("a floating-point dtype", "another");
  return *t;
}

// rand / randn(size, dtype ...) -> RandomUniform / RandomNormal(shape, dtype).
OnnxConverter sized(std::string opType) {
  return [opType](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = dtypeArg(args, 1);
    ctx.setOutput(
        n, 0,
        ctx.op(opType, {},
               {attrIs("shape", args[0].unwrapToIntList()), attrI("dtype", onnxDataType(dt))}));
  };
}

// rand_like / randn_like(self, dtype ...) -> RandomUniformLike / RandomNormalLike.
OnnxConverter like(std::string opType) {
  return [opType](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = dtypeArg(args, 1, dtypeOr(ctx, args[0].value()));
    ctx.setOutput(n, 0,
                  ctx.op(opType, {args[0].unwrapToTensor()}, {attrI("dtype", onnxDataType(dt))}));
  };
}

// normal(mean, std): a standard normal draw of the broadcast shape, times std, plus mean;
// normal.float_float(mean, std, size) -> RandomNormal(mean, scale, shape).
void convertNormal(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const std::string overload = args.op() ? args.op()->schema.overloadName() : "";
  ScalarType dt = dtypeOr(ctx, n.output());
  if (overload == "float_float")
    return ctx.setOutput(
        n, 0,
        ctx.op("RandomNormal", {},
               {attrIs("shape", args[2].unwrapToIntList()), attrF("mean", args[0].unwrapToDouble()),
                attrF("scale", args[1].unwrapToDouble()),
                attrI("dtype", onnxDataType(dtypeArg(args, 4)))}));
  std::string mean = tensorOrScalar(ctx, args[0], dt), std = tensorOrScalar(ctx, args[1], dt);
  std::string shapeOf = overload == "Tensor_float"   ? mean
                        : overload == "float_Tensor" ? std
                                                     : ctx.op("Add", {mean, std});
  std::string z = ctx.op("RandomNormalLike", {shapeOf}, {attrI("dtype", onnxDataType(dt))});
  ctx.setOutput(n, 0, ctx.op("Add", {ctx.op("Mul", {z, std}), mean}));
}

// bernoulli(self) / .p(self, p) / .Tensor(self, p): 1 where a uniform draw shaped like self is
// below p (self's values for the plain form), in self's dtype.
void convertBernoulli(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ScalarType dt = dtypeOr(ctx, n.output());
  std::string x = args[0].unwrapToTensor();
  std::string p = args.size() > 1 && !args[1].isNone() && args[1].argument() &&
                          args[1].argument()->name() == "p"
                      ? tensorOrScalar(ctx, args[1], dt)
                      : x;
  std::string u = ctx.op("RandomUniformLike", {x}, {attrI("dtype", onnxDataType(dt))});
  ctx.setOutput(n, 0, ctx.castTo(ctx.op("Less", {u, p}), ScalarType::Bool, dt));
}

// multinomial(self [C] or [N, C], num_samples, replacement) -> Multinomial(Log(self)), int64
// (https://onnx.ai/onnx/operators/onnx__Multinomial.html). ONNX samples with replacement: more
// than one sample without it is refused.
void convertMultinomial(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const int64_t samples = args[1].unwrapToInt();
  if (!args[2].unwrapToBool(false) && samples > 1)
    args[2].fail("True, or one sample (ONNX's Multinomial draws with replacement)", "False");
  const bool oneRow = ctx.expectRank(n, args[0].value()) == 1;
  std::string x = ctx.op("Log", {args[0].unwrapToTensor()});
  if (oneRow) x = unsqueeze(ctx, x, {0});
  std::string y =
      ctx.op("Multinomial", {x},
             {attrI("sample_size", samples), attrI("dtype", onnxDataType(ScalarType::Long))});
  ctx.setOutput(n, 0, oneRow ? squeeze(ctx, y, {0}) : y);
}

}  // namespace

void registerRandomConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"aten::rand"}, sized("RandomUniform"));
  r.addOverloads({"aten::randn"}, sized("RandomNormal"));
  r.addOverloads({"aten::rand_like"}, like("RandomUniformLike"));
  r.addOverloads({"aten::randn_like"}, like("RandomNormalLike"));
  r.addOverloads({"aten::normal.Tensor_Tensor", "aten::normal.Tensor_float",
                  "aten::normal.float_Tensor", "aten::normal.float_float"},
                 convertNormal);
  r.addOverloads({"aten::bernoulli", "aten::bernoulli.p", "aten::bernoulli.Tensor"},
                 convertBernoulli);
  r.addOverloads({"aten::multinomial"}, convertMultinomial);
}

}  // namespace torchless::onnx_export
