// ONNX converters for quantized archives (issue 15, part 5): QDQ form, QuantizeLinear /
// DequantizeLinear around float operators, except where PyTorch's integers need PyTorch's own
// steps: quantized convs and linears (ConvInteger / MatMulInteger and PyTorch's
// requantization), quantized adds, global average pools and channels-last means. Each of those
// used to be one quantum off in ONNX Runtime at a few values, which compounded over deep
// networks; now ONNX Runtime gives PyTorch's integers for torchvision's quantized networks.
// Specs: https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html, onnx__DequantizeLinear.html,
// onnx__ConvInteger.html, onnx__MatMulInteger.html.
//
// Note [QDQ representation]
// A quantized tensor of the IR (quint8 / qint8, per tensor) is exported as the float tensor of
// its dequantized values: every op that fixes quantization parameters ends in
//     y = DequantizeLinear(QuantizeLinear(y_float, scale, zero_point), scale, zero_point)
// so that y holds exactly (q - zp) * scale. Ops that keep the input's parameters and only pick
// values (relu, max_pool, flatten, reshape ...) need nothing: their float converters keep the
// values on the grid. The parameters themselves are not an ONNX value; qparamsOf() finds them
// from the IR, walking back to the op that fixed them (quantize_per_tensor, the scale and
// zero_point arguments of quantized:: ops). int_repr is a QuantizeLinear with them; dequantize
// is the identity.
//
// quantized::conv / linear are exported in exact form instead: ConvInteger / MatMulInteger of
// the integers (uint8 input; weight initializers), then PyTorch's requantization in float
// steps (requantize()), uint8, and its DequantizeLinear. PyTorch accumulates in int32 and
// requantizes once with a float bias; QDQ around a float Conv, which ONNX Runtime fuses into
// QLinearConv (int32 bias, its own rounding), is one quantum off at some values of each layer.
// quantized::add likewise (qadd). Average pools and means on quantized inputs are exported by
// their float converters; their results are put back on the grid before the next quantized op
// (onGrid) as PyTorch rounds them: global adaptive pools with PyTorch's integer formula, means
// with its float sums, clamps with quantize_val's product (quantizeLinear's asPyTorch).
// With ExportOptions::qlinearOps (`export --qlinear`) convs and linears are ONNX Runtime's
// fused QLinearConv instead (qlinearProduct): smaller and faster there, one quantum apart per
// layer.
#include "ops/quantized.h"
#include "convert/onnx/rnn.h"
#include "ops/shape.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace torchless::onnx_export {

namespace {

struct QParams {
  double scale = 1.0;
  int64_t zeroPoint = 0;
  ScalarType qdtype = ScalarType::QUInt8;
};

double staticDouble(const OnnxCtx& ctx, const Value* v, const Node& n) {
  if (!ctx.isStatic(v))
    throw Error(fmt::format(
        "the quantization scale of {} is computed at run time; QDQ export needs a constant",
        n.kind().toQualString()));
  const IValue& iv = ctx.staticValue(v);
  if (iv.isTensor()) {  // quantize_per_tensor.tensor_qparams (FX): a one-element tensor
    const Tensor& t = iv.toTensor();
    if (t.numel() != 1)
      throw Error(fmt::format("{}: the scale must have one element", n.kind().toQualString()));
    return t.to(ScalarType::Double).contiguous().data<double>()[0];
  }
  return iv.isInt() ? static_cast<double>(iv.toInt()) : iv.toDouble();
}
int64_t staticInt(const OnnxCtx& ctx, const Value* v, const Node& n) {
  if (!ctx.isStatic(v))
    throw Error(
        fmt::format("the zero point of {} is computed at run time; QDQ export needs a constant",
                    n.kind().toQualString()));
  const IValue& iv = ctx.staticValue(v);
  if (iv.isTensor()) {
    const Tensor& t = iv.toTensor();
    if (t.numel() != 1)
      throw Error(fmt::format("{}: the zero point must have one element", n.kind().toQualString()));
    return t.to(ScalarType::Long).contiguous().data<int64_t>()[0];
  }
  return iv.toInt();
}

/// The quantization parameters of a quantized IR value (Note [QDQ representation]). Throws
/// when they cannot be told at export time.
QParams qparamsOf(const OnnxCtx& ctx, const Value* v) {
  const Node& n = *v->node();
  const std::string k = n.kind().toQualString();
  auto at = [&](size_t si, size_t zi) {
    QParams p = n.inputs().empty() ? QParams{} : qparamsOf(ctx, n.input(0));
    p.scale = staticDouble(ctx, n.input(si), n);
    p.zeroPoint = staticInt(ctx, n.input(zi), n);
    return p;
  };
  if (k == "aten::quantize_per_tensor") {
    QParams p;
    p.scale = staticDouble(ctx, n.input(1), n);
    p.zeroPoint = staticInt(ctx, n.input(2), n);
    p.qdtype = static_cast<ScalarType>(staticInt(ctx, n.input(3), n));
    return p;
  }
  if (k.rfind("quantized::conv", 0) == 0 || k.rfind("quantized::linear", 0) == 0 ||
      k.rfind("quantized::add", 0) == 0 || k.rfind("quantized::mul", 0) == 0) {
    if (k.find("dynamic") != std::string::npos || n.inputs().size() < 4)
      throw Error(fmt::format("{}: no fixed output quantization parameters", k));
    // linear's first input is quantized too; quantized::conv2d (pre-1.6 form) has them last
    const size_t nin = n.inputs().size();
    return nin == 4 ? at(2, 3) : at(nin - 2, nin - 1);
  }
  if (k == "quantized::cat" || k == "quantized::cat_relu") {
    const Node& list = *n.input(0)->node();
    if (list.kind().toQualString() != std::string("prim::ListConstruct") || list.inputs().empty())
      throw Error(fmt::format("{}: the list of inputs is built at run time", k));
    QParams p = qparamsOf(ctx, list.input(0));
    if (ctx.isStatic(n.input(2)) && !ctx.staticValue(n.input(2)).isNone()) {
      p.scale = staticDouble(ctx, n.input(2), n);
      p.zeroPoint = staticInt(ctx, n.input(3), n);
    }
    return p;
  }
  if (k == "quantized::hardswish" || k == "quantized::sigmoid") return at(1, 2);
  if (k == "quantized::leaky_relu") return at(3, 4);
  if (k.rfind("quantized::batch_norm", 0) == 0) return at(6, 7);
  if (k == "quantized::layer_norm" || k == "quantized::group_norm") return at(5, 6);
  if (k == "quantized::instance_norm") return at(4, 5);
  if (k == "aten::sigmoid" || k == "aten::hardsigmoid" || k == "aten::hardsigmoid_") {
    QParams p = qparamsOf(ctx, n.input(0));
    p.scale = 1.0 / 256.0;
    p.zeroPoint = p.qdtype == ScalarType::QUInt8 ? 0 : -128;
    return p;
  }
  if (k == "prim::ListUnpack") {  // the pieces of a chunk / split / unbind keep the parameters
    const Node& src = *n.input(0)->node();
    const std::string sk = src.kind().toQualString();
    if (sk == "aten::chunk" || sk == "aten::unsafe_chunk" || sk == "aten::split" ||
        sk == "aten::unbind" || sk == "aten::split_with_sizes" || sk == "aten::unsafe_split")
      return qparamsOf(ctx, src.input(0));
  }
  static const char* const kSame[] = {"aten::relu",
                                      "aten::relu_",
                                      "aten::max_pool1d",
                                      "aten::max_pool2d",
                                      "aten::max_pool3d",
                                      "aten::avg_pool1d",
                                      "aten::avg_pool2d",
                                      "aten::avg_pool3d",
                                      "aten::adaptive_avg_pool1d",
                                      "aten::adaptive_avg_pool2d",
                                      "aten::adaptive_avg_pool3d",
                                      "aten::flatten",
                                      "aten::reshape",
                                      "aten::view",
                                      "aten::contiguous",
                                      "aten::clone",
                                      "aten::dropout",
                                      "aten::squeeze",
                                      "aten::unsqueeze",
                                      "aten::permute",
                                      "aten::transpose",
                                      "aten::upsample_nearest1d",
                                      "aten::upsample_nearest2d",
                                      "aten::upsample_nearest3d",
                                      "aten::upsample_bilinear2d",
                                      "aten::hardtanh",
                                      "aten::hardtanh_",
                                      "aten::clamp",
                                      "aten::clamp_",
                                      "aten::mean",
                                      "aten::cat",
                                      "quantized::relu6",
                                      "quantized::clamp",
                                      "quantized::max_pool2d",
                                      "quantized::max_pool1d"};
  for (const char* s : kSame)
    if (k == s) {
      const Value* in = n.input(0);
      if (k == "aten::cat") {
        const Node& list = *in->node();
        if (list.inputs().empty()) break;
        in = list.input(0);
      }
      return qparamsOf(ctx, in);
    }
  throw Error(
      fmt::format("cannot tell the quantization parameters of %{} (made by {}) at export time",
                  v->debugName(), k));
}

std::string zeroPointConst(OnnxCtx& ctx, const QParams& p) {
  if (p.qdtype == ScalarType::QUInt8)
    return ctx.initializer(Tensor::scalar(p.zeroPoint, ScalarType::Byte));
  if (p.qdtype == ScalarType::QInt8)
    return ctx.initializer(Tensor::scalar(p.zeroPoint, ScalarType::Char));
  throw Error(
      fmt::format("QDQ export supports quint8 and qint8 activations, not {}", dtypeName(p.qdtype)));
}

/// QuantizeLinear(x, scale, zp): the integers (uint8 / int8). With `asPyTorch`, x quantized as
/// PyTorch's quantize_val does, zp + nearbyint(x * (1.0f / float(scale))) saturated:
/// QuantizeLinear(Mul(x, 1 / scale), 1, zp). QuantizeLinear alone divides, which rounds the
/// other way where PyTorch's product lands just off a tie. It is kept elsewhere: ONNX Runtime
/// fuses it with the op before into its integer kernels (QLinearMul, QLinearSigmoid ...), which
/// give PyTorch's integers on the api.quantized cases.
std::string quantizeLinear(OnnxCtx& ctx, const std::string& x, const QParams& p,
                           bool asPyTorch = false) {
  if (!asPyTorch)
    return ctx.op("QuantizeLinear",
                  {x, ctx.constScalar(static_cast<float>(p.scale), ScalarType::Float),
                   zeroPointConst(ctx, p)});
  const float inv = 1.0f / static_cast<float>(p.scale);
  return ctx.op("QuantizeLinear",
                {ctx.op("Mul", {x, ctx.constScalar(inv, ScalarType::Float)}),
                 ctx.constScalar(1.0, ScalarType::Float), zeroPointConst(ctx, p)});
}
/// DequantizeLinear(QuantizeLinear(x)): x rounded to the grid of p, as float.
std::string qdq(OnnxCtx& ctx, const std::string& x, const QParams& p, bool asPyTorch = false) {
  return ctx.op(
      "DequantizeLinear",
      {quantizeLinear(ctx, x, p, asPyTorch),
       ctx.constScalar(static_cast<float>(p.scale), ScalarType::Float), zeroPointConst(ctx, p)});
}

const Object& packedObject(const OnnxArgs& args, size_t i) {
  const IValue& v = args[i].unwrapToIValue();
  if (!v.isObject()) args[i].fail("a packed-params object", convert::detail::describeIValue(v));
  return *v.toObject();
}

// aten::quantize_per_tensor(x, scale, zero_point, dtype) -> DQ(Q(x)), x quantized as
// PyTorch's quantize_val does (quantizeLinear's asPyTorch): QuantizeLinear's division rounds
// the other way where x / scale lands next to a tie. (d2go_detector's quant stubs: 3 of the
// 409k integers of its normalized image were one apart, which moved boxes and scores.)
void convertQuantizePerTensor(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ctx.setOutput(n, 0,
                qdq(ctx, args[0].unwrapToTensor(), qparamsOf(ctx, n.output()), /*asPyTorch=*/true));
}

/// The integers that DequantizeLinear `x` was made from by qdq() (a QuantizeLinear), by
/// requantize() (a Cast to uint8) or by qlinearProduct() (QLinearConv, Clip for relu), or "".
std::string integersBehind(OnnxCtx& ctx, const std::string& x) {
  const ::onnx::GraphProto& g = *ctx.currentGraph();
  for (int i = g.node_size() - 1; i >= 0; --i) {
    const ::onnx::NodeProto& dq = g.node(i);
    if (dq.output_size() != 1 || dq.output(0) != x) continue;
    if (dq.op_type() != "DequantizeLinear") return "";
    for (int j = i - 1; j >= 0; --j)
      if (g.node(j).output_size() == 1 && g.node(j).output(0) == dq.input(0))
        return g.node(j).op_type() == "QuantizeLinear" || g.node(j).op_type() == "Cast" ||
                       g.node(j).op_type() == "QLinearConv" || g.node(j).op_type() == "Clip"
                   ? dq.input(0)
                   : "";
    return "";
  }
  return "";
}

/// PyTorch's aten::mean of a quantized tensor that is not contiguous (channels-last after a
/// quantized conv, as in shufflenet_v2's pooling; ops::qmean): the dequantized values summed
/// one after another in float, divided by the count, quantized with quantize_val's product.
/// In ONNX: the reduced axes moved first and flattened, ReduceSum over that first axis (ONNX
/// Runtime adds its rows in order), Div, and quantizeLinear(asPyTorch). ReduceMean over the
/// last axes adds in another order and the division of QuantizeLinear finds ties where
/// PyTorch's product does not: a mean of four integers is one half of the time. Returns ""
/// when `mean` is not such a mean with known dims and sizes.
std::string quantizedMean(OnnxCtx& ctx, const Node& mean) {
  if (mean.inputs().size() < 3 || !ctx.isStatic(mean.input(1)) || !ctx.isStatic(mean.input(2)))
    return "";
  const IValue& dimsV = ctx.staticValue(mean.input(1));
  if (!dimsV.isList()) return "";
  const auto in = ctx.sizesOf(mean.input(0));
  const auto out = ctx.sizesOf(mean.output());
  if (!in || !out) return "";
  const auto rank = static_cast<int64_t>(in->size());
  std::vector<int64_t> reduced;
  for (int64_t d : dimsV.toIntVector()) reduced.push_back(wrapDim(d, rank));
  std::sort(reduced.begin(), reduced.end());
  if (reduced.empty()) return "";
  std::vector<int64_t> perm = reduced;
  int64_t count = 1;
  for (int64_t d : reduced) count *= (*in)[static_cast<size_t>(d)];
  for (int64_t d = 0; d < rank; ++d)
    if (!std::binary_search(reduced.begin(), reduced.end(), d)) perm.push_back(d);
  std::string x = ctx.op("Transpose", {ctx.toTensor(mean.input(0))}, {attrIs("perm", perm)});
  x = ctx.op("Reshape", {x, ctx.constInt64s({count, -1})});
  x = ctx.op("ReduceSum", {x, ctx.constInt64s({0})}, {attrI("keepdims", 0)});
  x = ctx.op("Div", {x, ctx.constScalar(static_cast<double>(count), ScalarType::Float)});
  x = ctx.op("Reshape", {x, ctx.constInt64s(*out)});
  return qdq(ctx, x, qparamsOf(ctx, mean.output()), /*asPyTorch=*/true);
}

std::string integersOf(OnnxCtx& ctx, const Value* v, const std::string& x);

/// PyTorch's global adaptive average pool of a quantized tensor (channels-last after a
/// quantized conv; ops::qadaptiveAvgPool): acc = (sum of the integers) - zp * size,
/// nearbyint(float(acc) * float(1 / size)) + zp, saturated, the input's qparams; reshaped to
/// `v`'s sizes (v is the pool's output or a view of it). ONNX Runtime's fused
/// QLinearGlobalAveragePool gives the same integers, but only where its optimizer fuses.
/// Returns "" when `pool` is not such a pool or sizes are unknown.
std::string quantizedGlobalAvgPool(OnnxCtx& ctx, const Node& pool, const Value* v) {
  if (pool.inputs().size() < 2 || !ctx.isStatic(pool.input(1))) return "";
  const IValue& outV = ctx.staticValue(pool.input(1));
  if (!outV.isList()) return "";
  for (int64_t o : outV.toIntVector())
    if (o != 1) return "";
  const auto in = ctx.sizesOf(pool.input(0));
  const auto out = ctx.sizesOf(v);
  const auto spatial = static_cast<int64_t>(outV.toIntVector().size());
  if (!in || !out || static_cast<int64_t>(in->size()) <= spatial) return "";
  const auto rank = static_cast<int64_t>(in->size());
  std::vector<int64_t> axes;
  int64_t size = 1;
  for (int64_t d = rank - spatial; d < rank; ++d) {
    axes.push_back(d);
    size *= (*in)[static_cast<size_t>(d)];
  }
  const QParams q = qparamsOf(ctx, pool.input(0));
  const bool u8 = q.qdtype == ScalarType::QUInt8;
  std::string f = ctx.op("Cast", {integersOf(ctx, pool.input(0), ctx.toTensor(pool.input(0)))},
                         {attrI("to", onnxDataType(ScalarType::Float))});
  f = ctx.op("ReduceSum", {f, ctx.constInt64s(axes)}, {attrI("keepdims", 1)});
  f = ctx.op("Sub",
             {f, ctx.constScalar(static_cast<double>(q.zeroPoint * size), ScalarType::Float)});
  f = ctx.op("Round",
             {ctx.op("Mul", {f, ctx.constScalar(static_cast<float>(1.0 / static_cast<double>(size)),
                                                ScalarType::Float)})});
  f = ctx.op("Add", {f, ctx.constScalar(static_cast<double>(q.zeroPoint), ScalarType::Float)});
  f = ctx.op("Clip", {f, ctx.constScalar(u8 ? 0.0 : -128.0, ScalarType::Float),
                      ctx.constScalar(u8 ? 255.0 : 127.0, ScalarType::Float)});
  f = ctx.op("Cast", {f}, {attrI("to", onnxDataType(u8 ? ScalarType::Byte : ScalarType::Char))});
  f = ctx.op("Reshape", {f, ctx.constInt64s(*out)});
  return ctx.op(
      "DequantizeLinear",
      {f, ctx.constScalar(static_cast<float>(q.scale), ScalarType::Float), zeroPointConst(ctx, q)});
}

/// The ONNX value of quantized IR input `v`, on its grid: as is when qdq() made it, else
/// snapped with qdq() and its parameters (a no-op for values that float converters only picked,
/// relu / max_pool / flatten; the rounding PyTorch's quantized average pools do), or for a
/// quantized aten::mean, PyTorch's mean (quantizedMean).
std::string onGrid(OnnxCtx& ctx, const Value* v, const std::string& x) {
  if (!integersBehind(ctx, x).empty()) return x;
  const std::string k = v->node()->kind().toQualString();
  if (k == "aten::mean" && ctx.opset() >= 13) {
    const std::string m = quantizedMean(ctx, *v->node());
    if (!m.empty()) return m;
  }
  if (ctx.opset() >= 13) {  // a global adaptive average pool, maybe flattened
    const Node* p = v->node();
    while (p->kind().toQualString() == std::string("aten::flatten") ||
           p->kind().toQualString() == std::string("aten::reshape") ||
           p->kind().toQualString() == std::string("aten::view"))
      p = p->input(0)->node();
    const std::string pk = p->kind().toQualString();
    if (pk == "aten::adaptive_avg_pool1d" || pk == "aten::adaptive_avg_pool2d" ||
        pk == "aten::adaptive_avg_pool3d") {
      const std::string m = quantizedGlobalAvgPool(ctx, *p, v);
      if (!m.empty()) return m;
    }
  }
  // A clamp's bounds: PyTorch clamps the integers to quantize_val(min) and quantize_val(max).
  const bool clamp =
      k == "aten::hardtanh" || k == "aten::hardtanh_" || k == "aten::clamp" || k == "aten::clamp_";
  return qdq(ctx, x, qparamsOf(ctx, v), /*asPyTorch=*/clamp);
}

// aten::dequantize.self -> the float values themselves: as they are, except after the float
// converters that average quantized values (avg / adaptive avg pools, maybe flattened, means,
// bilinear upsampling), whose results PyTorch rounds to the output's grid before it
// dequantizes them (onGrid). (d2go_detector's box head ends in a quantized AdaptiveAvgPool2d
// and a DeQuantStub: its features were off the grid, by up to half a quantum.)
void convertDequantize(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const std::string x = args[0].unwrapToTensor();
  const Node* p = n.input(0)->node();
  auto kindOf = [](const Node* m) { return std::string(m->kind().toQualString()); };
  while (kindOf(p) == "aten::flatten" || kindOf(p) == "aten::reshape" || kindOf(p) == "aten::view")
    p = p->input(0)->node();
  static const char* const kAveraging[] = {"aten::avg_pool1d",
                                           "aten::avg_pool2d",
                                           "aten::avg_pool3d",
                                           "aten::adaptive_avg_pool1d",
                                           "aten::adaptive_avg_pool2d",
                                           "aten::adaptive_avg_pool3d",
                                           "aten::mean",
                                           "aten::upsample_bilinear2d"};
  const bool averaged = std::any_of(std::begin(kAveraging), std::end(kAveraging),
                                    [&](const char* k) { return kindOf(p) == k; });
  ctx.setOutput(n, 0,
                averaged && integersBehind(ctx, x).empty() ? onGrid(ctx, n.input(0), x)
                                                           : ctx.op("Identity", {x}));
}

// aten::int_repr -> the integers of the QuantizeLinear that made the value when there is one
// (DequantizeLinear(QuantizeLinear(..)) of qdq()), else QuantizeLinear with the value's
// parameters. Reusing the integers also keeps ONNX Runtime 1.20's optimizer from fusing a
// Q -> DQ -> Q chain into a graph that refers to a removed QuantizeLinear.
void convertIntRepr(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const std::string x = args[0].unwrapToTensor();
  const std::string ints = integersBehind(ctx, x);
  ctx.setOutput(n, 0,
                !ints.empty()
                    ? ints
                    : quantizeLinear(ctx, onGrid(ctx, n.input(0), x), qparamsOf(ctx, n.input(0))));
}

/// The integers (uint8 / int8) of quantized IR input `v`, whose ONNX value is `x`: those
/// behind its DequantizeLinear, else QuantizeLinear of it on its grid.
std::string integersOf(OnnxCtx& ctx, const Value* v, const std::string& x) {
  const std::string ints = integersBehind(ctx, x);
  return !ints.empty() ? ints : quantizeLinear(ctx, onGrid(ctx, v, x), qparamsOf(ctx, v));
}

/// PyTorch's requantization of the int32 sums `acc` of a quantized conv / linear whose output
/// channels run along the dim that `channelShape` gives them ([OC, 1, ..] for a conv, [OC] for
/// a linear): float(acc) + bias * acc_scale, times float(1 / y_scale) / acc_scale (acc_scale =
/// float(1 / x_scale) * float(1 / w_scale) per channel: ops::qconvScales), plus y's zero point,
/// rounded half to even (Round), clamped to [0, 255] ([zp, 255] with relu), as uint8; then its
/// DequantizeLinear (Note [QDQ representation]). The float steps are those of Requant in
/// ops/quantized.cpp, one rounding each, so ONNX Runtime gives PyTorch's integers.
std::string requantize(OnnxCtx& ctx, const std::string& acc, const ops::QConvScales& s,
                       const QParams& y, bool relu, const IntList& channelShape) {
  if (y.qdtype != ScalarType::QUInt8)
    throw Error(
        fmt::format("ONNX export of a quantized conv / linear: a {} output is not supported",
                    dtypeName(y.qdtype)));
  auto perChannel = [&](const std::vector<float>& v) {
    return ctx.initializer(Tensor::fromVector(v, channelShape));
  };
  std::string f = ctx.op("Cast", {acc}, {attrI("to", onnxDataType(ScalarType::Float))});
  if (s.hasBias) f = ctx.op("Add", {f, perChannel(s.bias)});
  f = ctx.op("Mul", {f, perChannel(s.mult)});
  f = ctx.op("Add", {f, ctx.constScalar(static_cast<double>(y.zeroPoint), ScalarType::Float)});
  f = ctx.op("Round", {f});
  f = ctx.op("Clip",
             {f, ctx.constScalar(relu ? static_cast<double>(y.zeroPoint) : 0.0, ScalarType::Float),
              ctx.constScalar(255.0, ScalarType::Float)});
  const std::string u8 = ctx.op("Cast", {f}, {attrI("to", onnxDataType(ScalarType::Byte))});
  return ctx.op("DequantizeLinear",
                {u8, ctx.constScalar(static_cast<float>(y.scale), ScalarType::Float),
                 zeroPointConst(ctx, y)});
}

/// ExportOptions::qlinearOps: a quantized conv / linear as ONNX Runtime's fused int8 operator
/// QLinearConv (a linear as a 1x1 one: QLinearMatMul takes no bias) over the
/// input's uint8 integers `x` and the int8 weight initializer `w` ([OC, C/g, k..]), then
/// Clip(y, zp) for relu and the output's DequantizeLinear. Only the product x_scale * w_scale /
/// y_scale of the operator's scales reaches its integers, so it gets x_scale = y_scale = 1 and
/// w_scale = PyTorch's multiplier per channel (ops::qconvScales): ONNX Runtime then multiplies
/// by PyTorch's float multiplier. What is left apart: the bias is an int32 (PyTorch adds it in
/// float, in accumulator units: rounded here, half to even) and the zero point is added after
/// rounding (PyTorch adds it before: ties), so the integers are within one quantum of
/// PyTorch's per layer; over deep networks the differences compound (Note at the top).
std::string qlinearProduct(OnnxCtx& ctx, const std::string& x, const std::string& w,
                           const ops::QConvScales& s, const QParams& xq, const QParams& yq,
                           bool relu, const std::vector<OnnxAttr>& attrs) {
  if (yq.qdtype != ScalarType::QUInt8)
    throw Error(
        fmt::format("ONNX export of a quantized conv / linear: a {} output is not supported",
                    dtypeName(yq.qdtype)));
  if (!s.symmetric)
    throw Error(
        "ONNX export of a quantized conv / linear: weight zero points other than 0 are not "
        "supported");
  const auto oc = static_cast<int64_t>(s.mult.size());
  const std::string one = ctx.constScalar(1.0, ScalarType::Float);
  std::vector<std::string> in = {x,
                                 one,
                                 zeroPointConst(ctx, xq),
                                 w,
                                 ctx.initializer(Tensor::fromVector(s.mult, {oc})),
                                 ctx.initializer(Tensor::scalar(int64_t{0}, ScalarType::Char)),
                                 one,
                                 zeroPointConst(ctx, yq)};
  if (s.hasBias) {
    Tensor b = Tensor::empty({oc}, ScalarType::Int);
    for (int64_t c = 0; c < oc; ++c)
      b.data<int32_t>()[c] = static_cast<int32_t>(std::nearbyint(s.bias[static_cast<size_t>(c)]));
    in.push_back(ctx.initializer(b));
  }
  std::string y = ctx.op("QLinearConv", in, attrs);
  if (relu) y = ctx.op("Clip", {y, zeroPointConst(ctx, yq)});  // ONNX Runtime has no uint8 Max
  return ctx.op("DequantizeLinear",
                {y, ctx.constScalar(static_cast<float>(yq.scale), ScalarType::Float),
                 zeroPointConst(ctx, yq)});
}

/// The integers of a quantized conv / linear weight (zero points 0: PyTorch's qint8 weights are
/// symmetric), with `transpose2d` as [K, N] for MatMulInteger; `asUint8` shifted by 128 into
/// uint8, to be used with a weight zero point of 128 (ONNX Runtime's ConvInteger takes uint8
/// weights only). Sets `zeroPoint` to the weight zero point to pass.
std::string weightInts(OnnxCtx& ctx, const Tensor& w, const ops::QConvScales& s, bool transpose2d,
                       bool asUint8, std::string& zeroPoint) {
  if (!s.symmetric)
    throw Error(
        "ONNX export of a quantized conv / linear: weight zero points other than 0 are not "
        "supported");
  Tensor ints = ops::intRepr(w).contiguous();
  if (transpose2d) {
    const int64_t rows = ints.sizes()[0], cols = ints.sizes()[1];
    Tensor t = Tensor::empty({cols, rows}, ScalarType::Char);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        t.data<int8_t>()[c * rows + r] = ints.data<int8_t>()[r * cols + c];
    ints = t;
  }
  if (!asUint8) {
    zeroPoint = ctx.initializer(Tensor::scalar(int64_t{0}, ScalarType::Char));
    return ctx.initializer(ints);
  }
  Tensor u = Tensor::empty(ints.sizes(), ScalarType::Byte);
  for (int64_t i = 0; i < u.numel(); ++i)
    u.data<uint8_t>()[i] = static_cast<uint8_t>(static_cast<int32_t>(ints.data<int8_t>()[i]) + 128);
  zeroPoint = ctx.initializer(Tensor::scalar(int64_t{128}, ScalarType::Byte));
  return ctx.initializer(u);
}

std::optional<Tensor> packedBias(const Object& o) {
  return o.slots.at(1).isNone() ? std::nullopt : std::optional<Tensor>(o.slots.at(1).toTensor());
}

// quantized::conv{1,2,3}d(_relu) (and the .new forms): ConvInteger of the input's uint8
// integers (its zero point pads, as in PyTorch) and the weight (uint8 with zero point 128, the
// int8 values shifted: the sums are the same), then PyTorch's
// requantization (requantize()). Not QDQ around a float Conv: ONNX Runtime fuses that into
// QLinearConv, whose int32 bias and rounding before the zero point are one quantum off here
// and there, and those differences compound over a deep network (6 to 28 quanta of
// torchvision's networks' logits; none this way).
// The packed object's slots: weight, bias, stride, padding, output_padding, dilation, groups,
// transpose; conv1d's are 2-d over [N, C, 1, L] (runtime/torchbind.h).
OnnxConverter qconv(size_t spatial, bool relu) {
  return [spatial, relu](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const Object& o = packedObject(args, 1);
    if (o.slots.at(7).toBool())
      throw Error("QDQ export: transposed quantized convolutions are not supported yet");
    const QParams xq = qparamsOf(ctx, n.input(0)), yq = qparamsOf(ctx, n.output());
    if (xq.qdtype != ScalarType::QUInt8)
      throw Error("ONNX export of a quantized conv: the input must be quint8");
    std::string x = integersOf(ctx, n.input(0), args[0].unwrapToTensor());
    if (spatial == 1) x = unsqueeze(ctx, x, {2});
    const Tensor w = o.slots.at(0).toTensor();
    const ops::QConvScales s = ops::qconvScales(xq.scale, w, packedBias(o), yq.scale);
    std::vector<int64_t> kernel(w.sizes().begin() + 2, w.sizes().end());
    std::vector<int64_t> pads = o.slots.at(3).toIntVector();
    pads.insert(pads.end(), pads.begin(), pads.end());
    const std::vector<OnnxAttr> attrs = {
        attrIs("kernel_shape", kernel), attrIs("strides", o.slots.at(2).toIntVector()),
        attrIs("pads", pads), attrIs("dilations", o.slots.at(5).toIntVector()),
        attrI("group", o.slots.at(6).toInt())};
    std::string wZp;
    const std::string wi = weightInts(ctx, w, s, false, /*asUint8=*/!ctx.qlinearOps(), wZp);
    std::string y;
    if (ctx.qlinearOps()) {
      y = qlinearProduct(ctx, x, wi, s, xq, yq, relu, attrs);
    } else {
      IntList channelShape(kernel.size() + 1, 1);
      channelShape[0] = w.sizes()[0];
      y = requantize(ctx, ctx.op("ConvInteger", {x, wi, zeroPointConst(ctx, xq), wZp}, attrs), s,
                     yq, relu, channelShape);
    }
    if (spatial == 1) y = squeeze(ctx, y, {2});
    ctx.setOutput(n, 0, y);
  };
}

// quantized::linear(_relu)(X, W_prepack, scale, zp): MatMulInteger of the input's uint8
// integers and the int8 weight as [K, N], then PyTorch's requantization (as qconv, for the
// same reason).
OnnxConverter qlinear(bool relu) {
  return [relu](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const Object& o = packedObject(args, 1);
    const QParams xq = qparamsOf(ctx, n.input(0)), yq = qparamsOf(ctx, n.output());
    if (xq.qdtype != ScalarType::QUInt8)
      throw Error("ONNX export of a quantized linear: the input must be quint8");
    const Tensor w = o.slots.at(0).toTensor();
    if (w.dim() != 2) throw Error("ONNX export of a quantized linear: expected a 2-d weight");
    const ops::QConvScales s = ops::qconvScales(xq.scale, w, packedBias(o), yq.scale);
    const std::string x = integersOf(ctx, n.input(0), args[0].unwrapToTensor());
    if (ctx.qlinearOps()) {
      // as a 1x1 QLinearConv over [M, K, 1, 1]: QLinearMatMul has no bias
      const int64_t K = w.sizes()[1], N = w.sizes()[0];
      const Tensor ints = ops::intRepr(w).contiguous();
      const std::string w4 = ctx.initializer(Tensor::fromStorage(
          ints.storage(), ints.storageOffset(), {N, K, 1, 1}, {K, 1, 1, 1}, ScalarType::Char));
      std::string y = ctx.op("Reshape", {x, ctx.constInt64s({-1, K, 1, 1})});
      y = qlinearProduct(ctx, y, w4, s, xq, yq, relu, {});
      ctx.setOutput(n, 0, ctx.op("Reshape", {y, ctx.constInt64s(ctx.expectSizes(n, n.output()))}));
      return;
    }
    std::string wZp;
    const std::string wi = weightInts(ctx, w, s, true, /*asUint8=*/false, wZp);
    std::string acc = ctx.op("MatMulInteger", {x, wi, zeroPointConst(ctx, xq), wZp});
    ctx.setOutput(n, 0, requantize(ctx, acc, s, yq, relu, {w.sizes()[0]}));
  };
}

/// The float values PyTorch's vector kernels dequantize quantized IR value `v` (ONNX value `x`)
/// to: fma(scale, q, -(scale * zp)) (fbgemm's dequantize, one rounding; DequantizeLinear's
/// (q - zp) * scale can differ in the last bit), as Gather from a table of the 256 integers'
/// values (uint8 integers index it directly, int8 ones wrap around as Gather's negative indices).
std::string dequantizeFma(OnnxCtx& ctx, const Value* v, const std::string& x) {
  const QParams p = qparamsOf(ctx, v);
  const bool u8 = p.qdtype == ScalarType::QUInt8;
  if (!u8 && p.qdtype != ScalarType::QInt8)
    throw Error(fmt::format("ONNX export: {} values are not supported", dtypeName(p.qdtype)));
  const float s = static_cast<float>(p.scale), premul = -(s * static_cast<float>(p.zeroPoint));
  std::vector<float> table(256);
  for (int i = 0; i < 256; ++i)
    table[static_cast<size_t>(i)] =
        std::fma(s, static_cast<float>(u8 || i < 128 ? i : i - 256), premul);
  const std::string idx =
      ctx.op("Cast", {integersOf(ctx, v, x)}, {attrI("to", onnxDataType(ScalarType::Int))});
  return ctx.op("Gather", {ctx.initializer(Tensor::fromVector(table, {256})), idx});
}

// quantized::add / add_relu (a, b, scale, zp): PyTorch's kernel step by step, so that ONNX
// Runtime gives its integers: each input dequantized as its vector path does (dequantizeFma),
// Add, Relu, times float(1 / scale), rounded half to even, plus zp, saturated; its
// DequantizeLinear. (QDQ around a float Add, fused by ONNX Runtime into QLinearAdd, is one
// quantum off at a few values of an add: FX mobilenet_v2's logits were 5 quanta off.)
OnnxConverter qadd(bool relu) {
  return [relu](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const QParams y = qparamsOf(ctx, n.output());
    std::string c = ctx.op("Add", {dequantizeFma(ctx, n.input(0), args[0].unwrapToTensor()),
                                   dequantizeFma(ctx, n.input(1), args[1].unwrapToTensor())});
    if (relu) c = ctx.op("Relu", {c});
    c = ctx.op("Round", {ctx.op("Mul", {c, ctx.constScalar(1.0f / static_cast<float>(y.scale),
                                                           ScalarType::Float)})});
    c = ctx.op("Add", {c, ctx.constScalar(static_cast<double>(y.zeroPoint), ScalarType::Float)});
    const bool u8 = y.qdtype == ScalarType::QUInt8;
    c = ctx.op("Clip", {c, ctx.constScalar(u8 ? 0.0 : -128.0, ScalarType::Float),
                        ctx.constScalar(u8 ? 255.0 : 127.0, ScalarType::Float)});
    c = ctx.op("Cast", {c}, {attrI("to", onnxDataType(u8 ? ScalarType::Byte : ScalarType::Char))});
    ctx.setOutput(n, 0,
                  ctx.op("DequantizeLinear",
                         {c, ctx.constScalar(static_cast<float>(y.scale), ScalarType::Float),
                          zeroPointConst(ctx, y)}));
  };
}

// quantized::mul (_relu)(a, b, scale, zp): Mul (+ Relu), QDQ out (ONNX Runtime fuses it into
// QLinearMul).
OnnxConverter qbinary(std::string opType, bool relu) {
  return [opType, relu](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string y = ctx.op(opType, {onGrid(ctx, n.input(0), args[0].unwrapToTensor()),
                                    onGrid(ctx, n.input(1), args[1].unwrapToTensor())});
    if (relu) y = ctx.op("Relu", {y});
    ctx.setOutput(n, 0, qdq(ctx, y, qparamsOf(ctx, n.output())));
  };
}

// quantized::cat(_relu)(xs, dim, scale?, zp?): Concat (+ Relu), QDQ out.
OnnxConverter qcat(bool relu) {
  return [relu](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    if (!ctx.hasTensorList(n.input(0)))
      throw Error("quantized::cat: the list of inputs is built at run time");
    const std::vector<std::string>& xs = ctx.tensorList(n.input(0));
    const int64_t rank = ctx.expectRank(n, n.output());
    std::string y = ctx.op("Concat", xs, {attrI("axis", wrapDim(args[1].unwrapToInt(), rank))});
    if (relu) y = ctx.op("Relu", {y});
    ctx.setOutput(n, 0, qdq(ctx, y, qparamsOf(ctx, n.output())));
  };
}

// quantized::hardswish / sigmoid (x, scale, zp), leaky_relu(x, slope, inplace, scale, zp).
OnnxConverter qunary(std::string opType) {
  return [opType](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::vector<OnnxAttr> attrs;
    if (opType == "LeakyRelu") attrs.push_back(attrF("alpha", args[1].unwrapToDouble()));
    ctx.setOutput(
        n, 0,
        qdq(ctx, ctx.op(opType, {args[0].unwrapToTensor()}, attrs), qparamsOf(ctx, n.output())));
  };
}

// quantized::batch_norm{,1d,2d,3d}(_relu)(qx, weight?, bias?, mean, var, eps, scale, zp):
// BatchNormalization (+ Relu), QDQ out. A missing weight / bias is ones / zeros.
OnnxConverter qbatchNorm(bool relu) {
  return [relu](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const Tensor mean = args[3].unwrapToWeights().tensor;
    auto filled = [&](float v) {
      Tensor t = Tensor::empty(mean.sizes(), ScalarType::Float);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
      return ctx.initializer(t);
    };
    std::string w = args[1].isNone() ? filled(1.0f) : args[1].unwrapToTensor();
    std::string b = args[2].isNone() ? filled(0.0f) : args[2].unwrapToTensor();
    std::string y =
        ctx.op("BatchNormalization",
               {args[0].unwrapToTensor(), w, b, args[3].unwrapToTensor(), args[4].unwrapToTensor()},
               {attrF("epsilon", args[5].unwrapToDouble())});
    if (relu) y = ctx.op("Relu", {y});
    ctx.setOutput(n, 0, qdq(ctx, y, qparamsOf(ctx, n.output())));
  };
}

/// A float initializer of `n` copies of v.
std::string filledConst(OnnxCtx& ctx, const IntList& sizes, float v) {
  Tensor t = Tensor::empty(sizes, ScalarType::Float);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
  return ctx.initializer(t);
}

// quantized::layer_norm(x, normalized_shape, weight?, bias?, eps, scale, zp):
// LayerNormalization over the trailing dims (opset 17), QDQ out.
void convertQLayerNorm(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const IntList shape = args[1].unwrapToIntList();
  const int64_t k = static_cast<int64_t>(shape.size());
  std::string x = onGrid(ctx, n.input(0), args[0].unwrapToTensor());
  std::string w = args[2].isNone() ? filledConst(ctx, shape, 1.0f) : args[2].unwrapToTensor();
  std::string b = args[3].isNone() ? filledConst(ctx, shape, 0.0f) : args[3].unwrapToTensor();
  std::string y = ctx.op("LayerNormalization", {x, w, b},
                         {attrI("axis", -k), attrF("epsilon", args[4].unwrapToDouble())});
  ctx.setOutput(n, 0, qdq(ctx, y, qparamsOf(ctx, n.output())));
}

// quantized::group_norm(x, G, weight?, bias?, eps, scale, zp) / instance_norm(x, weight?, bias?,
// eps, scale, zp): x [N, C, *] as [N, G, -1] through InstanceNormalization (no affine), back to
// x's shape, then weight and bias per channel; QDQ out.
OnnxConverter qgroupNorm(bool instance) {
  return [instance](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const std::vector<int64_t> sizes = ctx.expectSizes(n, n.input(0));
    if (sizes.size() < 2)
      throw Error(fmt::format("{}: expected an input [N, C, *]", n.kind().toQualString()));
    const int64_t C = sizes[1];
    const size_t w = instance ? 1 : 2;
    const int64_t G = instance ? C : args[1].unwrapToInt();
    std::string x = onGrid(ctx, n.input(0), args[0].unwrapToTensor());
    std::string g = ctx.op(
        "Reshape", {x, ctx.initializer(Tensor::fromVector(std::vector<int64_t>{0, G, -1}, {3}))});
    g = ctx.op("InstanceNormalization",
               {g, filledConst(ctx, {G}, 1.0f), filledConst(ctx, {G}, 0.0f)},
               {attrF("epsilon", args[w + 2].unwrapToDouble())});
    std::string y = ctx.op("Reshape", {g, ctx.op("Shape", {x})});
    IntList perChannel(sizes.size() - 1, 1);
    perChannel[0] = C;
    const std::string shape =
        ctx.initializer(Tensor::fromVector(perChannel, {static_cast<int64_t>(perChannel.size())}));
    if (!args[w].isNone())
      y = ctx.op("Mul", {y, ctx.op("Reshape", {args[w].unwrapToTensor(), shape})});
    if (!args[w + 1].isNone())
      y = ctx.op("Add", {y, ctx.op("Reshape", {args[w + 1].unwrapToTensor(), shape})});
    ctx.setOutput(n, 0, qdq(ctx, y, qparamsOf(ctx, n.output())));
  };
}

/// PyTorch's dynamic quantization of float `x` spelled out in ONNX (ops/quantized.cpp's
/// chooseQParams, fbgemm::ChooseQuantizationParams; DynamicQuantizeLinear has no reduce_range
/// and no fallbacks): min / max of x with 0; scale = (max - min) / (qmax - qmin) in double
/// (qmax 127 with reduce_range, else 255), 0.1 when it is 0 as a float or its float
/// reciprocal is infinite (an input of all zeros: a GRU's first hidden state), and 6.1e-5
/// with min / max stretched when smaller; the zero point from the side with the smaller error,
/// clamped, rounded half to even; x quantized as round(fma(x, float(1 / scale), zp)) over
/// [0, 255]. Returns the uint8 integers, the float scale and the uint8 zero
/// point (0-d).
struct DynamicQuantized {
  std::string ints, scale, zeroPoint;
};
DynamicQuantized dynamicQuantize(OnnxCtx& ctx, const std::string& x, bool reduceRange) {
  const double qmin = 0, qmax = reduceRange ? 127 : 255;
  constexpr float kSmallScale = 6.1e-5f;
  auto dconst = [&](double v) { return ctx.constScalar(v, ScalarType::Double); };
  auto fconst = [&](float v) { return ctx.constScalar(v, ScalarType::Float); };
  auto cast = [&](const std::string& v, ScalarType to) {
    return ctx.op("Cast", {v}, {attrI("to", onnxDataType(to))});
  };
  std::string mn = ctx.op("Min", {reduce(ctx, "Min", x, {}, false), fconst(0)});
  std::string mx = ctx.op("Max", {reduce(ctx, "Max", x, {}, false), fconst(0)});
  std::string scaleD =
      ctx.op("Div", {ctx.op("Sub", {cast(mx, ScalarType::Double), cast(mn, ScalarType::Double)}),
                     dconst(qmax - qmin)});
  const std::string scaleF0 = cast(scaleD, ScalarType::Float);
  const std::string bad = ctx.op("Or", {ctx.op("Equal", {scaleF0, fconst(0)}),
                                        ctx.op("IsInf", {ctx.op("Div", {fconst(1), scaleF0})})});
  scaleD = ctx.op("Where", {bad, dconst(0.1), scaleD});
  // A scale under 6.1e-5 becomes 6.1e-5; min / max grow with it (in float, as PyTorch's).
  const std::string small = ctx.op("Less", {scaleD, dconst(static_cast<double>(kSmallScale))});
  const float span = kSmallScale * static_cast<float>(qmax - qmin);
  const std::string amp = ctx.op("Div", {fconst(kSmallScale), cast(scaleD, ScalarType::Float)});
  const std::string mnZero = ctx.op("Equal", {mn, fconst(0)}),
                    mxZero = ctx.op("Equal", {mx, fconst(0)});
  const std::string mnSmall = ctx.op(
      "Where", {mnZero, mn, ctx.op("Where", {mxZero, fconst(-span), ctx.op("Mul", {mn, amp})})});
  const std::string mxSmall = ctx.op(
      "Where", {mnZero, fconst(span), ctx.op("Where", {mxZero, mx, ctx.op("Mul", {mx, amp})})});
  mn = cast(ctx.op("Where", {small, mnSmall, mn}), ScalarType::Double);
  mx = cast(ctx.op("Where", {small, mxSmall, mx}), ScalarType::Double);
  scaleD = ctx.op("Where", {small, dconst(static_cast<double>(kSmallScale)), scaleD});
  const std::string scaleF = cast(scaleD, ScalarType::Float);
  // zero point: qmin - min / scale or qmax - max / scale, whichever has the smaller error
  std::string mnS = ctx.op("Div", {mn, scaleD}), mxS = ctx.op("Div", {mx, scaleD});
  std::string zMin = ctx.op("Sub", {dconst(qmin), mnS}), zMax = ctx.op("Sub", {dconst(qmax), mxS});
  std::string eMin = ctx.op("Add", {dconst(std::abs(qmin)), ctx.op("Abs", {mnS})});
  std::string eMax = ctx.op("Add", {dconst(std::abs(qmax)), ctx.op("Abs", {mxS})});
  std::string z0 = ctx.op("Where", {ctx.op("Less", {eMin, eMax}), zMin, zMax});
  std::string zD = ctx.op("Round", {ctx.op("Clip", {z0, dconst(qmin), dconst(qmax)})});
  // x quantized over [0, 255] with the float reciprocal of the scale as PyTorch does
  // (qutil::quantizeOneLegacy): fma(x, inv, zp) rounded once to float, then half to even. x * inv
  // is exact in double (two 24-bit significands), so the double sum rounded to float is the fma's
  // result (but where the sum needs over 53 bits and lands within 2^-45 of a float midpoint).
  std::string inv = ctx.op("Div", {fconst(1), scaleF});
  std::string xq = cast(
      ctx.op("Add",
             {ctx.op("Mul", {cast(x, ScalarType::Double), cast(inv, ScalarType::Double)}), zD}),
      ScalarType::Float);
  xq = ctx.op("Clip", {ctx.op("Round", {xq}), fconst(0), fconst(255)});
  return {cast(xq, ScalarType::Byte), scaleF, cast(zD, ScalarType::Byte)};
}

/// PyTorch's dynamic linear (quantized::linear_dynamic, and the projections of quantized_lstm /
/// quantized_gru cells) of float x [*, K] with a LinearPackedParamsBase object `packed`
/// (weight [N, K], bias [N] or None): with a qint8 weight, x dynamically quantized
/// (dynamicQuantize), MatMulInteger with the int8 weight [K, N] and its zero points, then
/// acc * (x_scale * w_scale) + bias, per channel when the weight is; with an fp16 packed
/// weight (a float tensor), MatMul and bias in float as the interpreter computes it. Throws
/// for another weight.
std::string dynamicLinear(OnnxCtx& ctx, const std::string& x, const Object& packed,
                          bool reduceRange) {
  const Tensor w = packed.slots.at(0).toTensor();
  const IValue& bias = packed.slots.at(1);
  if (w.dim() != 2) throw Error("ONNX export of a dynamic linear: expected a 2-d weight");
  const int64_t N = w.sizes()[0];
  if (w.dtype() == ScalarType::Float) {  // fp16 packed params
    std::string y = ctx.op("MatMul", {x, ctx.initializer(ops::transpose(w, 0, 1).contiguous())});
    return bias.isNone() ? y : ctx.op("Add", {y, ctx.initializer(bias.toTensor())});
  }
  if (w.dtype() != ScalarType::QInt8)
    throw Error(fmt::format("ONNX export of a dynamic linear: expected a qint8 weight, got {}",
                            dtypeName(w.dtype())));
  const DynamicQuantized xq = dynamicQuantize(ctx, x, reduceRange);
  // the weight as int8 [K, N] with its zero points, and the output multipliers
  Tensor ints = ops::intRepr(w);
  const int64_t K = ints.sizes()[1];
  Tensor wt = Tensor::empty({K, N}, ScalarType::Char);
  for (int64_t r = 0; r < N; ++r)
    for (int64_t c = 0; c < K; ++c) wt.data<int8_t>()[c * N + r] = ints.data<int8_t>()[r * K + c];
  const QuantizerInfo& q = *w.quantizer();
  const bool perChannel = q.scheme != QuantizerInfo::Scheme::PerTensorAffine &&
                          q.scheme != QuantizerInfo::Scheme::PerTensorSymmetric;
  Tensor wScale = Tensor::empty({N}, ScalarType::Float), wZp = Tensor::empty({N}, ScalarType::Char);
  Tensor sc = perChannel ? ops::qPerChannelScales(w).to(ScalarType::Float) : Tensor();
  Tensor zp = perChannel ? ops::qPerChannelZeroPoints(w).to(ScalarType::Char) : Tensor();
  for (int64_t i = 0; i < N; ++i) {
    wScale.data<float>()[i] = perChannel ? sc.data<float>()[i] : static_cast<float>(q.scale);
    wZp.data<int8_t>()[i] = perChannel ? zp.data<int8_t>()[i] : static_cast<int8_t>(q.zeroPoint);
  }
  std::string acc =
      ctx.op("MatMulInteger", {xq.ints, ctx.initializer(wt), xq.zeroPoint, ctx.initializer(wZp)});
  acc = ctx.op("Cast", {acc}, {attrI("to", onnxDataType(ScalarType::Float))});
  std::string y = ctx.op("Mul", {acc, ctx.op("Mul", {xq.scale, ctx.initializer(wScale)})});
  return bias.isNone() ? y : ctx.op("Add", {y, ctx.initializer(bias.toTensor())});
}

// quantized::linear_dynamic / linear_relu_dynamic(X, W_prepack, reduce_range): PyTorch's
// dynamic quantization spelled out in ONNX (dynamicLinear), so that ONNX Runtime picks the
// same input qparams and integers; + Relu.
OnnxConverter qlinearDynamic(bool relu) {
  return [relu](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const Object& o = packedObject(args, 1);
    const bool reduceRange = args.size() > 2 && args[2].unwrapToBool(false);
    if (o.slots.at(0).toTensor().dtype() != ScalarType::QInt8)
      throw Error("QDQ export of quantized::linear_dynamic: expected a 2-d qint8 weight");
    std::string y = dynamicLinear(ctx, args[0].unwrapToTensor(), o, reduceRange);
    if (relu) y = ctx.op("Relu", {y});
    ctx.setOutput(n, 0, y);
  };
}

// Note [Dynamic-quantized recurrent layers]
// aten::quantized_gru / quantized_lstm over rnn.CellParamsBase objects (quantize_dynamic's
// GRU / LSTM) are exported as PyTorch computes them (aten/src/ATen/native/RNN.cpp, and
// runtime/register_quantized.cpp), not as ONNX GRU / LSTM on dequantized weights: each
// projection is a dynamic linear (dynamicLinear) whose input is quantized per call, so
// ONNX's float cells would differ by the activations' quantization error (7 bits with
// reduce_range). Per layer and direction: the input projection of the whole sequence at once
// (one set of input qparams, as PyTorch's FullLayer), then an ONNX Loop over the steps (its
// count read from the input's shape, so that the sequence length may change at run time),
// carrying h (and c) and scanning out h: gh = linear_hh(h) per step, then PyTorch's cell
// (GRU: r = sigmoid(gh_r + gi_r), z = sigmoid(gh_z + gi_z), n = tanh(gi_n + gh_n * r),
// h' = (h - n) * z + n; LSTM: gates = gh + gi, c' = f * c + i * g, h' = o * tanh(c')).
// The reverse direction walks the steps backwards and its scanned outputs are reversed.
// Packed sequences (the .data overloads; Note [Packed sequences] in rnn.cpp): PyTorch's
// PackedLayer projects the packed data (the valid steps of every sequence) at once, and each
// step's hidden projection takes the rows still running. Here the steps past each length are
// zeroed before the input projection and, at each step, the finished rows of h before the
// hidden one: zeros do not change the min / max with 0 that pick the qparams, so the running
// rows get PyTorch's integers. Finished rows keep their h / c, and their outputs are 0.

/// One direction's rnn.CellParamsBase (quantize_dynamic's): its input and hidden projections'
/// LinearPackedParamsBase objects and whether their inputs are quantized with reduce_range.
struct QCellParams {
  const Object* ih = nullptr;
  const Object* hh = nullptr;
  bool reduceRange = false;
};

/// The QCellParams of a CellParamsBase object; throws for other types of cell params.
QCellParams qcellParams(const IValue& v) {
  if (!v.isObject() || v.toObject()->type->name() != "__torch__.torch.classes.rnn.CellParamsBase")
    throw Error(fmt::format("expected rnn.CellParamsBase objects, got {}",
                            convert::detail::describeIValue(v)));
  const Object& o = *v.toObject();
  const std::string& type = o.slots.at(0).toStringRef();
  const auto& packed = o.slots.at(4).toList()->list;
  if ((type != "quantized_dynamic" && type != "quantized_dynamic_fp16") || packed.size() != 2 ||
      !packed[0].isObject() || !packed[1].isObject())
    throw Error(
        fmt::format("ONNX export of a quantized recurrent layer: cell params of type '{}' are "
                    "not supported (dynamic int8 and fp16 are)",
                    type));
  QCellParams p{packed[0].toObject().get(), packed[1].toObject().get(), false};
  const auto& longs = o.slots.at(3).toList()->list;
  if (type == "quantized_dynamic" && !longs.empty()) p.reduceRange = longs[0].toInt() != 0;
  return p;
}

/// Split of x's last axis into `parts` equal pieces, in the opset's form.
std::vector<std::string> splitEqual(OnnxCtx& ctx, const std::string& x, int64_t parts) {
  std::vector<OnnxAttr> attrs = {attrI("axis", -1)};
  if (ctx.opset() >= 18) attrs.push_back(attrI("num_outputs", parts));  // required from 18
  return ctx.opN("Split", {x}, static_cast<size_t>(parts), attrs);
}

/// One direction of a dynamic-quantized layer (Note [Dynamic-quantized recurrent layers]):
/// x [T, B, in], h0 / c0 [B, H]; returns y [T, B, H], h_n, c_n [B, H] (c_n "" for a GRU).
RecurrentLayerOut qrecurrentDirection(OnnxCtx& ctx, const RecurrentArgs& ra, const QCellParams& p,
                                      const std::string& x, const std::string& h0,
                                      const std::string& c0, bool reverse) {
  const bool lstm = ra.lstm;
  const std::string steps =
      ctx.op("Gather", {ctx.op("Shape", {x}), ctx.constScalar(0, ScalarType::Long)});
  std::string xin = x;
  if (ra.packed) {  // steps past each length zeroed: mask [T, B, 1]
    const std::string t = ctx.op("Range", {ctx.constScalar(0, ScalarType::Long), steps,
                                           ctx.constScalar(1, ScalarType::Long)});
    const std::string valid =
        ctx.op("Less", {unsqueeze(ctx, t, {1}), unsqueeze(ctx, ra.lengths, {0})});
    xin = ctx.op("Where", {unsqueeze(ctx, valid, {2}), x, ctx.constScalar(0, ScalarType::Float)});
  }
  const std::string gi = dynamicLinear(ctx, xin, *p.ih, p.reduceRange);
  ::onnx::GraphProto body;
  body.set_name(ctx.freshName("qrnn_body"));
  const std::string iter = ctx.freshName("step"), condIn = ctx.freshName("cond_in"),
                    hIn = ctx.freshName("h"), cIn = lstm ? ctx.freshName("c") : "";
  ctx.withGraph(&body, [&] {
    for (const auto& [name, dt] :
         std::vector<std::pair<std::string, ScalarType>>{{iter, ScalarType::Long},
                                                         {condIn, ScalarType::Bool},
                                                         {hIn, ScalarType::Float},
                                                         {cIn, ScalarType::Float}}) {
      if (name.empty()) continue;
      auto* vi = body.add_input();
      vi->set_name(name);
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(onnxDataType(dt));
      if (dt != ScalarType::Float) tt->mutable_shape();  // the step and the condition: 0-d
    }
    const std::string t =
        reverse
            ? ctx.op("Sub", {ctx.op("Sub", {steps, ctx.constScalar(1, ScalarType::Long)}), iter})
            : iter;
    std::string mask, h = hIn;
    const std::string g = ctx.op("Gather", {gi, t});
    if (ra.packed) {  // rows still inside their sequence at step t: [B, 1]
      mask = unsqueeze(ctx, ctx.op("Less", {t, ra.lengths}), {1});
      h = ctx.op("Where", {mask, hIn, ctx.constScalar(0, ScalarType::Float)});
    }
    const std::string gh = dynamicLinear(ctx, h, *p.hh, p.reduceRange);
    std::string hNew, cNew;
    if (lstm) {
      auto parts = splitEqual(ctx, ctx.op("Add", {gh, g}), 4);
      const std::string i = ctx.op("Sigmoid", {parts[0]}), f = ctx.op("Sigmoid", {parts[1]});
      const std::string gg = ctx.op("Tanh", {parts[2]}), o = ctx.op("Sigmoid", {parts[3]});
      cNew = ctx.op("Add", {ctx.op("Mul", {f, cIn}), ctx.op("Mul", {i, gg})});
      hNew = ctx.op("Mul", {o, ctx.op("Tanh", {cNew})});
    } else {
      auto a = splitEqual(ctx, g, 3);
      auto b = splitEqual(ctx, gh, 3);
      const std::string r = ctx.op("Sigmoid", {ctx.op("Add", {b[0], a[0]})});
      const std::string z = ctx.op("Sigmoid", {ctx.op("Add", {b[1], a[1]})});
      const std::string nn = ctx.op("Tanh", {ctx.op("Add", {a[2], ctx.op("Mul", {b[2], r})})});
      hNew = ctx.op("Add", {ctx.op("Mul", {ctx.op("Sub", {hIn, nn}), z}), nn});
    }
    std::string y = hNew;
    if (ra.packed) {
      y = ctx.op("Where", {mask, hNew, ctx.constScalar(0, ScalarType::Float)});
      hNew = ctx.op("Where", {mask, hNew, hIn});
      if (lstm) cNew = ctx.op("Where", {mask, cNew, cIn});
    }
    body.add_output()->set_name(ctx.op("Identity", {condIn}));
    body.add_output()->set_name(hNew);
    if (lstm) body.add_output()->set_name(cNew);
    body.add_output()->set_name(ctx.op("Identity", {y}));
  });
  std::vector<std::string> loopIn = {steps, ctx.constScalar(1, ScalarType::Bool), h0};
  if (lstm) loopIn.push_back(c0);
  auto outs = ctx.opN("Loop", loopIn, lstm ? 3 : 2, {attrG("body", body)});
  std::string y = outs.back();
  if (reverse)
    y = ctx.op("Slice",
               {y, ctx.constInt64s({-1}), ctx.constInt64s({std::numeric_limits<int64_t>::min()}),
                ctx.constInt64s({0}), ctx.constInt64s({-1})});
  return {y, outs[0], lstm ? outs[1] : ""};
}

// aten::quantized_gru / quantized_lstm, .input and .data (Note [Dynamic-quantized recurrent
// layers]); the arguments as the float ones' (rnn.h), params a CellParamsBase[].
OnnxConverter qrecurrent(bool lstm, bool packed) {
  return [lstm, packed](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    convertRecurrent(ctx, n, args, lstm, packed, [&](const RecurrentArgs& ra) -> RecurrentLayerFn {
      const IValue& list = args[ra.paramsArg].unwrapToIValue();
      if (!list.isList())
        args[ra.paramsArg].fail("a constant CellParamsBase[] (the module's packed weights)",
                                convert::detail::describeIValue(list));
      std::vector<QCellParams> cells;
      for (const IValue& c : list.toList()->list) cells.push_back(qcellParams(c));
      if (static_cast<int64_t>(cells.size()) != ra.layers * ra.dirs())
        args[ra.paramsArg].fail(fmt::format("{} cell params ({} layers, {} directions)",
                                            ra.layers * ra.dirs(), ra.layers, ra.dirs()),
                                fmt::format("{}", cells.size()));
      return [&ctx, ra, cells](int64_t l, const std::string& x, const std::string& h0,
                               const std::string& c0) -> RecurrentLayerOut {
        std::vector<RecurrentLayerOut> dirs;
        for (int64_t d = 0; d < ra.dirs(); ++d) {
          auto pick = [&](const std::string& s) {
            if (s.empty()) return s;
            return ctx.op("Gather", {s, ctx.constScalar(static_cast<double>(d), ScalarType::Long)});
          };
          dirs.push_back(qrecurrentDirection(ctx, ra, cells[static_cast<size_t>(l * ra.dirs() + d)],
                                             x, pick(h0), pick(c0), d == 1));
        }
        auto joined = [&](auto field, int64_t axis, bool stack) {
          std::vector<std::string> xs;
          for (const auto& o : dirs) xs.push_back(stack ? unsqueeze(ctx, o.*field, {0}) : o.*field);
          return xs.size() == 1 ? xs[0] : ctx.op("Concat", xs, {attrI("axis", axis)});
        };
        RecurrentLayerOut out;
        out.y = joined(&RecurrentLayerOut::y, 2, false);
        out.hn = joined(&RecurrentLayerOut::hn, 0, true);
        if (ra.lstm) out.cn = joined(&RecurrentLayerOut::cn, 0, true);
        return out;
      };
    });
  };
}

}  // namespace

void registerQuantizedConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"aten::quantize_per_tensor", "aten::quantize_per_tensor.tensor_qparams"},
                 convertQuantizePerTensor);
  r.addOverloads({"aten::dequantize.self"}, convertDequantize);
  r.addOverloads({"aten::int_repr"}, convertIntRepr);
  r.addOverloads({"quantized::conv1d"}, qconv(1, false));
  r.addOverloads({"quantized::conv1d_relu"}, qconv(1, true));
  r.addOverloads({"quantized::conv2d.new"}, qconv(2, false));
  r.addOverloads({"quantized::conv2d_relu.new"}, qconv(2, true));
  r.addOverloads({"quantized::conv3d.new"}, qconv(3, false));
  r.addOverloads({"quantized::conv3d_relu.new"}, qconv(3, true));
  r.addOverloads({"quantized::linear"}, qlinear(false));
  r.addOverloads({"quantized::linear_relu"}, qlinear(true));
  r.addOverloads({"quantized::linear_dynamic"}, qlinearDynamic(false));
  r.addOverloads({"quantized::linear_relu_dynamic"}, qlinearDynamic(true));
  r.addOverloads({"aten::quantized_gru.input"}, qrecurrent(false, false));
  r.addOverloads({"aten::quantized_gru.data"}, qrecurrent(false, true));
  r.addOverloads({"aten::quantized_lstm.input"}, qrecurrent(true, false));
  r.addOverloads({"aten::quantized_lstm.data"}, qrecurrent(true, true));
  r.addOverloads({"quantized::add"}, qadd(false));
  r.addOverloads({"quantized::add_relu"}, qadd(true));
  r.addOverloads({"quantized::mul"}, qbinary("Mul", false));
  r.addOverloads({"quantized::mul_relu"}, qbinary("Mul", true));
  r.addOverloads({"quantized::cat"}, qcat(false));
  r.addOverloads({"quantized::cat_relu"}, qcat(true));
  r.addOverloads({"quantized::hardswish"}, qunary("HardSwish"));
  r.addOverloads({"quantized::sigmoid"}, qunary("Sigmoid"));
  r.addOverloads({"quantized::leaky_relu"}, qunary("LeakyRelu"));
  r.addOverloads({"quantized::layer_norm"}, convertQLayerNorm);
  r.addOverloads({"quantized::group_norm"}, qgroupNorm(false));
  r.addOverloads({"quantized::instance_norm"}, qgroupNorm(true));
  for (const char* bn : {"quantized::batch_norm", "quantized::batch_norm1d",
                         "quantized::batch_norm2d", "quantized::batch_norm3d"}) {
    r.addOverloads({bn}, qbatchNorm(false));
    r.addOverloads({std::string(bn) + "_relu"}, qbatchNorm(true));
  }
}

}  // namespace torchless::onnx_export
