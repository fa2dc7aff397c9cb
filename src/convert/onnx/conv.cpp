// ONNX converters: convolutions (src/ops/conv.cpp's family): _convolution, conv1d/2d/3d and
// conv_transpose1d/2d/3d -> Conv / ConvTranspose
// (https://onnx.ai/onnx/operators/onnx__Conv.html, onnx__ConvTranspose.html).
#include "convert/onnx/onnx_ctx.h"

#include <cstring>

namespace torchless::onnx_export {

namespace {

std::vector<int64_t> expand(std::vector<int64_t> v, size_t n) {
  if (v.size() == 1 && n > 1) v.assign(n, v[0]);
  return v;
}

struct ConvParams {
  std::vector<int64_t> stride, padding, dilation, outputPadding;
  bool transposed = false;
  int64_t groups = 1;
  std::string paddingMode;  // "same" / "valid" for the string-padding overloads
};

void emitConv(OnnxCtx& ctx, const Node& n, OnnxArgs& args, ConvParams p) {
  std::string x = args[0].unwrapToTensor();
  std::string w = args[1].unwrapToTensor();
  auto wSizes = ctx.expectSizes(n, args[1].value());
  const size_t spatial = wSizes.size() - 2;
  std::vector<int64_t> kernel(wSizes.begin() + 2, wSizes.end());
  p.stride = expand(p.stride, spatial);
  p.dilation = expand(p.dilation, spatial);
  std::vector<int64_t> pads;
  if (p.paddingMode == "same") {
    std::vector<int64_t> begin, end;
    for (size_t i = 0; i < spatial; ++i) {
      int64_t total = p.dilation[i] * (kernel[i] - 1);
      begin.push_back(total / 2);
      end.push_back(total - total / 2);
    }
    pads = begin;
    pads.insert(pads.end(), end.begin(), end.end());
  } else if (p.paddingMode == "valid") {
    pads.assign(2 * spatial, 0);
  } else {
    p.padding = expand(p.padding, spatial);
    pads = p.padding;
    pads.insert(pads.end(), p.padding.begin(), p.padding.end());
  }
  std::vector<OnnxAttr> attrs = {attrIs("kernel_shape", kernel), attrIs("strides", p.stride),
                                 attrIs("pads", pads), attrIs("dilations", p.dilation),
                                 attrI("group", p.groups)};
  // An unbatched input ([C, *spatial], as F.conv1d of a 2-d tensor takes) gets a batch of 1
  // for Conv / ConvTranspose, which need one, and loses it after.
  const bool unbatched = ctx.expectRank(n, args[0].value()) == static_cast<int64_t>(spatial) + 1;
  if (unbatched) x = unsqueeze(ctx, x, {0});
  std::vector<std::string> in = {x, w};
  if (auto b = args[2].unwrapToOptionalTensor()) in.push_back(*b);
  if (p.transposed) {
    auto op = expand(p.outputPadding.empty() ? std::vector<int64_t>{0} : p.outputPadding, spatial);
    bool any = false;
    for (int64_t v : op) any |= v != 0;
    if (any) attrs.push_back(attrIs("output_padding", op));
    std::string y = ctx.op("ConvTranspose", in, attrs);
    ctx.setOutput(n, 0, unbatched ? squeeze(ctx, y, {0}) : y);
  } else {
    std::string y = ctx.op("Conv", in, attrs);
    ctx.setOutput(n, 0, unbatched ? squeeze(ctx, y, {0}) : y);
  }
}

// _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
// groups, ...)
void convertConvolution(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ConvParams p;
  p.stride = args[3].unwrapToIntList();
  p.padding = args[4].unwrapToIntList();
  p.dilation = args[5].unwrapToIntList();
  p.transposed = args[6].unwrapToBool();
  p.outputPadding = args[7].unwrapToIntList();
  p.groups = args[8].unwrapToInt();
  emitConv(ctx, n, args, p);
}

// conv{1,2,3}d(input, weight, bias, stride, padding, dilation, groups); padding may be a str
// ("same" / "valid"), as in _convolution_mode (what a traced Conv1d(padding="same") records).
void convertConvNd(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ConvParams p;
  p.stride = args[3].unwrapToIntList();
  if (args[4].unwrapToIValue().isString())
    p.paddingMode = args[4].unwrapToString();
  else
    p.padding = args[4].unwrapToIntList();
  p.dilation = args[5].unwrapToIntList();
  p.groups = args[6].unwrapToInt();
  emitConv(ctx, n, args, p);
}

// conv_transpose{1,2,3}d with an output_padding known only at run time (a scripted
// ConvTranspose called with output_size= of a dynamic shape: _output_padding's list). ONNX's
// output_padding is an attribute, so: the full transposed convolution (no pads, no bias), its
// spatial dims padded at the end with zeros where output_padding may reach past it (it is
// below max(stride, dilation), ATen's rule), then sliced [padding, full - padding +
// output_padding) per dim, then the bias added: what ATen's cropping of the full result gives.
void emitConvTransposeRuntimePadding(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string x = args[0].unwrapToTensor();
  const auto wSizes = ctx.expectSizes(n, args[1].value());
  const size_t spatial = wSizes.size() - 2;
  const std::vector<int64_t> kernel(wSizes.begin() + 2, wSizes.end());
  const auto stride = expand(args[3].unwrapToIntList(), spatial);
  const auto padding = expand(args[4].unwrapToIntList(), spatial);
  const int64_t groups = args[6].unwrapToInt();
  const auto dilation = expand(args[7].unwrapToIntList(), spatial);
  const bool unbatched = ctx.expectRank(n, args[0].value()) == static_cast<int64_t>(spatial) + 1;
  if (unbatched) x = unsqueeze(ctx, x, {0});
  std::string y = ctx.op("ConvTranspose", {x, args[1].unwrapToTensor()},
                         {attrIs("kernel_shape", kernel), attrIs("strides", stride),
                          attrIs("pads", std::vector<int64_t>(2 * spatial, 0)),
                          attrIs("dilations", dilation), attrI("group", groups)});
  std::vector<int64_t> pads(2 * (spatial + 2), 0);
  bool padded = false;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t reach = std::max(stride[i], dilation[i]) - 1 - padding[i];
    if (reach > 0) {
      pads[spatial + 2 + 2 + i] = reach;
      padded = true;
    }
  }
  const std::string full = ctx.op("Slice", {ctx.op("Shape", {y}), ctx.constInt64s({2}),
                                            ctx.constInt64s({static_cast<int64_t>(spatial) + 2})});
  if (padded) y = ctx.op("Pad", {y, ctx.constInt64s(pads)}, {attrS("mode", "constant")});
  const std::string outputPadding =
      ctx.castTo(args[5].unwrapToTensor(), ctx.dtypeOf(args[5].value()), ScalarType::Long);
  const std::string ends =
      ctx.op("Add", {ctx.op("Sub", {full, ctx.constInt64s(padding)}), outputPadding});
  std::vector<int64_t> axes;
  for (size_t i = 0; i < spatial; ++i) axes.push_back(static_cast<int64_t>(i) + 2);
  y = ctx.op("Slice", {y, ctx.constInt64s(padding), ends, ctx.constInt64s(axes)});
  if (auto b = args[2].unwrapToOptionalTensor()) {
    std::vector<int64_t> shape(spatial + 1, 1);
    shape[0] = -1;
    y = ctx.op("Add", {y, ctx.op("Reshape", {*b, ctx.constInt64s(shape)})});
  }
  ctx.setOutput(n, 0, unbatched ? squeeze(ctx, y, {0}) : y);
}

// conv_transpose{1,2,3}d(input, weight, bias, stride, padding, output_padding, groups, dilation)
void convertConvTransposeNd(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  if (!args[5].isIValue()) return emitConvTransposeRuntimePadding(ctx, n, args);
  ConvParams p;
  p.transposed = true;
  p.stride = args[3].unwrapToIntList();
  p.padding = args[4].unwrapToIntList();
  p.outputPadding = args[5].unwrapToIntList();
  p.groups = args[6].unwrapToInt();
  p.dilation = args[7].unwrapToIntList();
  emitConv(ctx, n, args, p);
}

}  // namespace

// The xnnpack context of a prepacked:: op (torch.utils.mobile_optimizer's archives): the
// slots runtime/torchbind.h lists, read from the constant object.
const Object& prepackedContext(const convert::ArgValue<std::string>& a) {
  const IValue& v = a.unwrapToIValue();
  if (!v.isObject()) a.fail("an xnnpack context object", convert::detail::describeIValue(v));
  return *v.toObject();
}

// Clip(y, output_min, output_max) of a context's slots i, i + 1 (None: unbounded).
std::string clampOutput(OnnxCtx& ctx, const std::string& y, const Object& c, size_t i,
                        ScalarType dt) {
  const IValue& lo = c.slots.at(i);
  const IValue& hi = c.slots.at(i + 1);
  if (lo.isNone() && hi.isNone()) return y;
  return ctx.op("Clip", {y, lo.isNone() ? std::string() : ctx.constScalar(lo.toDouble(), dt),
                         hi.isNone() ? std::string() : ctx.constScalar(hi.toDouble(), dt)});
}

// prepacked::conv2d_clamp_run(x, context) -> Conv (+ Clip); the context holds weight, bias,
// stride, padding, dilation, groups, output_min, output_max.
void convertConv2dClampRun(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const Object& c = prepackedContext(args[1]);
  Tensor w = c.slots.at(0).toTensor();
  std::vector<int64_t> kernel(w.sizes().begin() + 2, w.sizes().end());
  std::vector<int64_t> pads = c.slots.at(3).toIntVector();
  pads.insert(pads.end(), pads.begin(), pads.end());
  std::vector<std::string> in = {args[0].unwrapToTensor(), ctx.initializer(w)};
  if (!c.slots.at(1).isNone()) in.push_back(ctx.initializer(c.slots.at(1).toTensor()));
  std::string y =
      ctx.op("Conv", in,
             {attrIs("kernel_shape", kernel), attrIs("strides", c.slots.at(2).toIntVector()),
              attrIs("pads", pads), attrIs("dilations", c.slots.at(4).toIntVector()),
              attrI("group", c.slots.at(5).toInt())});
  ctx.setOutput(n, 0, clampOutput(ctx, y, c, 6, w.dtype()));
}

// prepacked::linear_clamp_run(x, context) -> MatMul(x, W^T) + b (+ Clip); the context holds
// weight, bias, output_min, output_max.
void convertLinearClampRun(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const Object& c = prepackedContext(args[1]);
  Tensor w = c.slots.at(0).toTensor().contiguous();
  const int64_t rows = w.sizes()[0], cols = w.sizes()[1];
  Tensor wt = Tensor::empty({cols, rows}, w.dtype());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k)
      std::memcpy(static_cast<char*>(wt.rawData()) + (k * rows + r) * w.itemsize(),
                  static_cast<const char*>(w.rawData()) + (r * cols + k) * w.itemsize(),
                  w.itemsize());
  std::string y = ctx.op("MatMul", {args[0].unwrapToTensor(), ctx.initializer(wt)});
  if (!c.slots.at(1).isNone()) y = ctx.op("Add", {y, ctx.initializer(c.slots.at(1).toTensor())});
  ctx.setOutput(n, 0, clampOutput(ctx, y, c, 2, w.dtype()));
}

void registerConvConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"prepacked::conv2d_clamp_run"}, convertConv2dClampRun);
  r.addOverloads({"prepacked::linear_clamp_run"}, convertLinearClampRun);
  r.addOverloads({"aten::_convolution", "aten::_convolution.deprecated", "aten::convolution"},
                 convertConvolution);
  r.addOverloads({"aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv1d.padding",
                  "aten::conv2d.padding", "aten::conv3d.padding", "aten::_convolution_mode"},
                 convertConvNd);
  r.addOverloads(
      {"aten::conv_transpose1d", "aten::conv_transpose2d.input", "aten::conv_transpose3d.input"},
      convertConvTransposeNd);
}

}  // namespace torchless::onnx_export
