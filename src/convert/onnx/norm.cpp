// ONNX converters: normalization (src/ops/norm.cpp's family).
#include "convert/onnx/onnx_ctx.h"

namespace torchless::onnx_export {

namespace {

// A per-channel constant of `c` elements (ones / zeros) for an absent weight / bias.
std::string channelConst(OnnxCtx& ctx, int64_t c, double value, ScalarType dt) {
  Tensor t = Tensor::empty({c}, ScalarType::Float);
  for (int64_t i = 0; i < c; ++i) t.data<float>()[i] = static_cast<float>(value);
  return ctx.initializer(dt == ScalarType::Float ? t : t.to(dt));
}

// batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn)
// in inference form -> BatchNormalization
// (https://onnx.ai/onnx/operators/onnx__BatchNormalization.html).
void convertBatchNorm(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  if (args[5].unwrapToBool() && (args[3].isNone() || args[4].isNone()))
    args[5].fail("False (training-mode batch statistics cannot be exported)", "True");
  auto sizes = ctx.expectSizes(n, args[0].value());
  ScalarType dt = dtypeOr(ctx, args[0].value());
  int64_t c = sizes.size() > 1 ? sizes[1] : 1;
  std::string w = args[1].isNone() ? channelConst(ctx, c, 1.0, dt) : args[1].unwrapToTensor();
  std::string b = args[2].isNone() ? channelConst(ctx, c, 0.0, dt) : args[2].unwrapToTensor();
  ctx.setOutput(
      n, 0,
      ctx.op("BatchNormalization",
             {args[0].unwrapToTensor(), w, b, args[3].unwrapToTensor(), args[4].unwrapToTensor()},
             {attrF("epsilon", args[7].unwrapToDouble()),
              attrF("momentum", 1.0 - args[6].unwrapToDouble(0.1))}));
}

// Normalizes x over `axes` (mean 0, variance 1, biased): the decomposition used where ONNX has
// no operator of the opset (LayerNormalization before 17, group_norm).
std::string normalize(OnnxCtx& ctx, const std::string& x, const std::vector<int64_t>& axes,
                      double eps, ScalarType dt) {
  std::string mean = reduce(ctx, "Mean", x, axes, true);
  std::string d = ctx.op("Sub", {x, mean});
  std::string var = reduce(ctx, "Mean", ctx.op("Mul", {d, d}), axes, true);
  std::string den = ctx.op("Sqrt", {ctx.op("Add", {var, ctx.constScalar(eps, dt)})});
  return ctx.op("Div", {d, den});
}

// layer_norm(input, normalized_shape, weight, bias, eps) -> LayerNormalization(axis = -k)
// from opset 17 (https://onnx.ai/onnx/operators/onnx__LayerNormalization.html); a
// ReduceMean/Sub/Mul/Sqrt/Div decomposition before.
void convertLayerNorm(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string x = args[0].unwrapToTensor();
  auto shape = args[1].unwrapToIntList();
  int64_t k = static_cast<int64_t>(shape.size());
  double eps = args[4].unwrapToDouble();
  ScalarType dt = dtypeOr(ctx, args[0].value());
  auto w = args[2].unwrapToOptionalTensor();
  auto b = args[3].unwrapToOptionalTensor();
  if (ctx.opset() >= 17) {
    Tensor ones = Tensor::empty(shape, ScalarType::Float);
    if (!w) {
      for (int64_t i = 0; i < ones.numel(); ++i) ones.data<float>()[i] = 1.0f;
      w = ctx.initializer(dt == ScalarType::Float ? ones : ones.to(dt));
    }
    std::vector<std::string> in = {x, *w};
    if (b) in.push_back(*b);
    ctx.setOutput(n, 0,
                  ctx.op("LayerNormalization", in, {attrI("axis", -k), attrF("epsilon", eps)}));
    return;
  }
  std::vector<int64_t> axes;
  for (int64_t i = -k; i < 0; ++i) axes.push_back(i);
  std::string y = normalize(ctx, x, axes, eps, dt);
  if (w) y = ctx.op("Mul", {y, *w});
  if (b) y = ctx.op("Add", {y, *b});
  ctx.setOutput(n, 0, y);
}

// group_norm(input, num_groups, weight, bias, eps): Reshape to (N, G, -1), normalize over the
// last axis, Reshape back, then the per-channel affine. Not GroupNormalization-18: its scale
// and bias are per group (the spec changed to per channel in opset 21), torch's per channel.
void convertGroupNorm(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string x = args[0].unwrapToTensor();
  auto sizes = ctx.expectSizes(n, args[0].value());
  int64_t groups = args[1].unwrapToInt();
  ScalarType dt = dtypeOr(ctx, args[0].value());
  std::string grouped = ctx.op("Reshape", {x, ctx.constInt64s({0, groups, -1})});
  std::string y = normalize(ctx, grouped, {2}, args[4].unwrapToDouble(), dt);
  y = ctx.op("Reshape", {y, ctx.op("Shape", {x})});
  std::vector<int64_t> axes;
  for (size_t i = 2; i < sizes.size(); ++i) axes.push_back(static_cast<int64_t>(i - 1));
  if (auto w = args[2].unwrapToOptionalTensor())
    y = ctx.op("Mul", {y, axes.empty() ? *w : unsqueeze(ctx, *w, axes)});
  if (auto b = args[3].unwrapToOptionalTensor())
    y = ctx.op("Add", {y, axes.empty() ? *b : unsqueeze(ctx, *b, axes)});
  ctx.setOutput(n, 0, y);
}

// instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
// cudnn): with the input's statistics (InstanceNorm's default), each (N, C) plane normalized
// as group_norm with one group per channel. Running statistics (track_running_stats in eval)
// are a batch norm's.
void convertInstanceNorm(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  if (!args[5].unwrapToBool())
    args[5].fail("True (running statistics in eval are not exported yet)", "False");
  std::string x = args[0].unwrapToTensor();
  auto sizes = ctx.expectSizes(n, args[0].value());
  ScalarType dt = dtypeOr(ctx, args[0].value());
  std::string grouped = ctx.op("Reshape", {x, ctx.constInt64s({0, 0, -1})});
  std::string y = normalize(ctx, grouped, {2}, args[7].unwrapToDouble(), dt);
  y = ctx.op("Reshape", {y, ctx.op("Shape", {x})});
  std::vector<int64_t> axes;
  for (size_t i = 2; i < sizes.size(); ++i) axes.push_back(static_cast<int64_t>(i - 1));
  if (auto w = args[1].unwrapToOptionalTensor())
    y = ctx.op("Mul", {y, axes.empty() ? *w : unsqueeze(ctx, *w, axes)});
  if (auto b = args[2].unwrapToOptionalTensor())
    y = ctx.op("Add", {y, axes.empty() ? *b : unsqueeze(ctx, *b, axes)});
  ctx.setOutput(n, 0, y);
}

// native_layer_norm(input, normalized_shape, weight, bias, eps) -> (out, mean, rstd), mean and
// rstd shaped like the input with the normalized dims 1: LayerNormalization's three outputs
// (Mean, InvStdDev) from opset 17, the decomposition before.
void convertNativeLayerNorm(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string x = args[0].unwrapToTensor();
  auto shape = args[1].unwrapToIntList();
  const auto k = static_cast<int64_t>(shape.size());
  const double eps = args[4].unwrapToDouble();
  ScalarType dt = dtypeOr(ctx, args[0].value());
  auto w = args[2].unwrapToOptionalTensor();
  auto b = args[3].unwrapToOptionalTensor();
  if (ctx.opset() >= 17) {
    if (!w) {
      Tensor ones = Tensor::empty(shape, ScalarType::Float);
      for (int64_t i = 0; i < ones.numel(); ++i) ones.data<float>()[i] = 1.0f;
      w = ctx.initializer(dt == ScalarType::Float ? ones : ones.to(dt));
    }
    std::vector<std::string> in = {x, *w};
    if (b) in.push_back(*b);
    auto outs = ctx.opN("LayerNormalization", in, 3, {attrI("axis", -k), attrF("epsilon", eps)});
    for (size_t i = 0; i < 3; ++i) ctx.setOutput(n, i, outs[i]);
    return;
  }
  std::vector<int64_t> axes;
  for (int64_t i = -k; i < 0; ++i) axes.push_back(i);
  std::string mean = reduce(ctx, "Mean", x, axes, true);
  std::string d = ctx.op("Sub", {x, mean});
  std::string var = reduce(ctx, "Mean", ctx.op("Mul", {d, d}), axes, true);
  std::string rstd =
      ctx.op("Reciprocal", {ctx.op("Sqrt", {ctx.op("Add", {var, ctx.constScalar(eps, dt)})})});
  std::string y = ctx.op("Mul", {d, rstd});
  if (w) y = ctx.op("Mul", {y, *w});
  if (b) y = ctx.op("Add", {y, *b});
  ctx.setOutput(n, 0, y);
  ctx.setOutput(n, 1, mean);
  ctx.setOutput(n, 2, rstd);
}

}  // namespace

void registerNormConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"aten::instance_norm"}, convertInstanceNorm);
  r.addOverloads({"aten::batch_norm"}, convertBatchNorm);
  r.addOverloads({"aten::layer_norm"}, convertLayerNorm);
  r.addOverloads({"aten::native_layer_norm"}, convertNativeLayerNorm);
  r.addOverloads({"aten::group_norm"}, convertGroupNorm);
}

}  // namespace torchless::onnx_export
