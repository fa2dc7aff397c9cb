// Native engine converters: convolutions, matrix products, batch_norm, activations and the
// residual add, the layers fuse.cpp combines into oneDNN primitives with post-ops. Each falls
// back to a plugin layer (the node's kernel) for forms it does not take: a weight computed at
// run time, string padding, an alpha other than 1.
#include "convert/engine/engine_ctx.h"

#include "core/error.h"

#include <cmath>
#include <limits>

namespace torchless::engine {

namespace {

bool isFloatWeight(const EngineArgs& args, size_t i) {
  const auto& a = args[i];
  return a.isIValue() && a.unwrapToIValue().isTensor() &&
         a.unwrapToIValue().toTensor().dtype() == ScalarType::Float;
}

bool optionalFloatWeight(const EngineArgs& args, size_t i) {
  return args[i].isNone() || isFloatWeight(args, i);
}

bool runtimeTensor(const EngineArgs& args, size_t i) {
  return !args[i].isIValue() && args[i].isTensor() &&
         args[i].value()->type()->kind() == TypeKind::TensorType;
}

// The module a weight belongs to, from the frozen constant's name
// (%self.layer1.0.conv1.weight_fused_bn -> "layer1.0.conv1"); "" when it has none.
std::string moduleOf(const Value* weight) {
  std::string n = weight->debugNameBase();
  if (n.rfind("self.", 0) != 0) return "";
  n = n.substr(5);
  const size_t dot = n.rfind('.');
  return dot == std::string::npos ? "" : n.substr(0, dot);
}

// Names a layer after its module when its weight tells it.
void nameAfterWeight(Layer& l, const EngineArgs& args, size_t weightArg) {
  std::string m = moduleOf(args[weightArg].value());
  if (!m.empty()) l.name = m;
}

struct ConvForm {
  size_t stride = 3, padding = 4, dilation = 5, outputPadding = 0, groups = 6;
  int transposedArg = -1;  // index of `transposed`, or -1
  bool transposed = false;
};

void addConvolution(EngineCtx& ctx, const Node& n, EngineArgs& args, const ConvForm& f) {
  bool transposed = f.transposed;
  if (f.transposedArg >= 0) {
    if (!args[static_cast<size_t>(f.transposedArg)].isIValue()) return ctx.addPlugin(n, args);
    transposed = args[static_cast<size_t>(f.transposedArg)].unwrapToBool();
  }
  if (!runtimeTensor(args, 0) || !isFloatWeight(args, 1) || !optionalFloatWeight(args, 2))
    return ctx.addPlugin(n, args);
  for (size_t i : {f.stride, f.padding, f.dilation, f.groups})
    if (!args[i].isIValue()) return ctx.addPlugin(n, args);
  if (transposed && (f.outputPadding == 0 || !args[f.outputPadding].isIValue()))
    return ctx.addPlugin(n, args);
  Layer l = ctx.layer(n, LayerKind::Convolution);
  nameAfterWeight(l, args, 1);
  l.inputs = {args[0].unwrapToTensor()};
  l.weight = args[1].unwrapToWeights().tensor;
  if (!args[2].isNone()) l.bias = args[2].unwrapToWeights().tensor;
  l.stride = args[f.stride].unwrapToIntList();
  l.padding = args[f.padding].unwrapToIntList();
  l.dilation = args[f.dilation].unwrapToIntList();
  l.groups = args[f.groups].unwrapToInt();
  l.transposed = transposed;
  l.batchedOnly = f.transposedArg >= 0;
  if (transposed) l.outputPadding = args[f.outputPadding].unwrapToIntList();
  ctx.addLayer(std::move(l), n);
}

// x @ weight^T (+ bias): weight [N, K] constant.
void addLinear(EngineCtx& ctx, const Node& n, ValueId x, Tensor weightNK,
               std::optional<Tensor> bias, const Value* weight) {
  Layer l = ctx.layer(n, LayerKind::MatMul);
  if (std::string m = moduleOf(weight); !m.empty()) l.name = m;
  l.inputs = {x};
  l.weight = std::move(weightNK);
  l.bias = std::move(bias);
  ctx.addLayer(std::move(l), n);
}

// A constant [K, N] matrix as the [N, K] weight of a linear layer.
Tensor transposedWeight(const Tensor& kn) {
  const int64_t K = kn.sizes()[0], N = kn.sizes()[1];
  Tensor c = kn.contiguous();
  Tensor out = Tensor::empty({N, K}, ScalarType::Float);
  const float* src = c.data<float>();
  float* dst = out.data<float>();
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) dst[j * K + k] = src[k * N + j];
  return out;
}

void convertLinear(EngineCtx& ctx, const Node& n, EngineArgs& args) {
  if (!runtimeTensor(args, 0) || !isFloatWeight(args, 1) || !optionalFloatWeight(args, 2) ||
      args[1].unwrapToIValue().toTensor().dim() != 2)
    return ctx.addPlugin(n, args);
  std::optional<Tensor> bias;
  if (!args[2].isNone()) {
    bias = args[2].unwrapToWeights().tensor;
    if (bias->dim() != 1) return ctx.addPlugin(n, args);
  }
  addLinear(ctx, n, args[0].unwrapToTensor(), args[1].unwrapToWeights().tensor, bias,
            args[1].value());
}

// aten::matmul / aten::mm with a constant 2-d right operand: a linear layer.
void convertMatmul(EngineCtx& ctx, const Node& n, EngineArgs& args) {
  if (!runtimeTensor(args, 0) || !isFloatWeight(args, 1) ||
      args[1].unwrapToIValue().toTensor().dim() != 2)
    return ctx.addPlugin(n, args);
  addLinear(ctx, n, args[0].unwrapToTensor(), transposedWeight(args[1].unwrapToIValue().toTensor()),
            std::nullopt, args[1].value());
}

// aten::addmm(bias, x, W^T) as traced nn.Linear writes it; beta = alpha = 1.
void convertAddmm(EngineCtx& ctx, const Node& n, EngineArgs& args) {
  auto isOne = [&](size_t i) {
    if (!args[i].isIValue()) return false;
    IValue s = args[i].unwrapToScalar();
    return (s.isInt() && s.toInt() == 1) || (s.isDouble() && s.toDouble() == 1.0);
  };
  if (!runtimeTensor(args, 1) || !isFloatWeight(args, 2) || !isFloatWeight(args, 0) || !isOne(3) ||
      !isOne(4))
    return ctx.addPlugin(n, args);
  const Tensor& w = args[2].unwrapToIValue().toTensor();
  Tensor b = args[0].unwrapToIValue().toTensor();
  if (w.dim() != 2 || b.dim() > 2 || b.numel() != w.sizes()[1]) return ctx.addPlugin(n, args);
  addLinear(ctx, n, args[1].unwrapToTensor(), transposedWeight(w),
            b.contiguous().asStrided({b.numel()}, {1}, 0), args[0].value());
}

// aten::batch_norm in eval mode with constant statistics: a BatchNorm layer, folded into the
// convolution before it when there is one (fuse.cpp).
void convertBatchNorm(EngineCtx& ctx, const Node& n, EngineArgs& args) {
  if (!runtimeTensor(args, 0) || !args[5].isIValue() || args[5].unwrapToBool() ||
      !optionalFloatWeight(args, 1) || !optionalFloatWeight(args, 2) || !isFloatWeight(args, 3) ||
      !isFloatWeight(args, 4) || !args[7].isIValue())
    return ctx.addPlugin(n, args);
  ctx.addPlugin(n, args);
  Layer& l = ctx.network().layers().back();
  l.kind = LayerKind::BatchNorm;
  if (!args[3].isNone()) nameAfterWeight(l, args, 3);
  if (!args[1].isNone()) l.gamma = args[1].unwrapToWeights().tensor;
  if (!args[2].isNone()) l.beta = args[2].unwrapToWeights().tensor;
  l.mean = args[3].unwrapToWeights().tensor;
  l.var = args[4].unwrapToWeights().tensor;
  l.eps = args[7].unwrapToDouble();
}

// An activation: a plugin layer that fuse.cpp may turn into a post-op.
void addEltwise(EngineCtx& ctx, const Node& n, EngineArgs& args, ActivationSpec spec) {
  ctx.addPlugin(n, args);
  Layer& l = ctx.network().layers().back();
  if (l.kind != LayerKind::Plugin || l.inputs.size() != 1) return;
  l.kind = LayerKind::Eltwise;
  l.activation = spec;
}

std::optional<double> staticNumber(const EngineArgs& args, size_t i) {
  if (!args[i].isIValue()) return std::nullopt;
  if (args[i].isNone()) return std::nullopt;
  IValue s = args[i].unwrapToScalar();
  if (s.isInt()) return static_cast<double>(s.toInt());
  if (s.isDouble()) return s.toDouble();
  return std::nullopt;
}

EngineConverter simpleActivation(Activation a) {
  return [a](EngineCtx& ctx, const Node& n, EngineArgs& args) {
    addEltwise(ctx, n, args, {a, 0.f, 0.f});
  };
}

void convertClampLike(EngineCtx& ctx, const Node& n, EngineArgs& args, double dlo, double dhi,
                      bool optional) {
  const float inf = std::numeric_limits<float>::infinity();
  auto bound = [&](size_t i, double dflt, float none) -> std::optional<float> {
    if (args.size() <= i) return static_cast<float>(dflt);
    if (args[i].isNone()) return optional ? std::optional<float>(none) : std::nullopt;
    auto v = staticNumber(args, i);
    if (!v) return std::nullopt;
    return static_cast<float>(*v);
  };
  auto lo = bound(1, dlo, -inf), hi = bound(2, dhi, inf);
  if (!lo || !hi || args[0].value()->type()->kind() != TypeKind::TensorType)
    return ctx.addPlugin(n, args);
  addEltwise(ctx, n, args, {Activation::Clamp, *lo, *hi});
}

}  // namespace

void registerEngineNativeConverters(EngineConverterRegistry& r) {
  // Convolutions (src/ops/conv.h's family).
  r.addOverloads({"aten::_convolution", "aten::_convolution.deprecated", "aten::convolution"},
                 [](EngineCtx& ctx, const Node& n, EngineArgs& args) {
                   ConvForm f;
                   f.outputPadding = 7;
                   f.groups = 8;
                   f.transposedArg = 6;
                   addConvolution(ctx, n, args, f);
                 });
  r.addOverloads({"aten::conv1d", "aten::conv2d", "aten::conv3d"},
                 [](EngineCtx& ctx, const Node& n, EngineArgs& args) {
                   addConvolution(ctx, n, args, ConvForm{});
                 });
  r.addOverloads(
      {"aten::conv_transpose1d", "aten::conv_transpose2d.input", "aten::conv_transpose3d.input"},
      [](EngineCtx& ctx, const Node& n, EngineArgs& args) {
        ConvForm f;
        f.padding = 4;
        f.outputPadding = 5;
        f.groups = 6;
        f.dilation = 7;
        f.transposed = true;
        addConvolution(ctx, n, args, f);
      });
  // Matrix products (src/ops/linalg.h).
  r.addOverloads({"aten::linear"}, convertLinear);
  r.addOverloads({"aten::matmul", "aten::mm"}, convertMatmul);
  r.addOverloads({"aten::addmm"}, convertAddmm);
  // Normalization.
  r.addOverloads({"aten::batch_norm"}, convertBatchNorm);
  // Activations (oneDNN eltwise post-ops when fused).
  r.addOverloads({"aten::relu", "aten::relu_"}, simpleActivation(Activation::Relu));
  r.addOverloads({"aten::sigmoid", "aten::sigmoid_"}, simpleActivation(Activation::Sigmoid));
  r.addOverloads({"aten::silu", "aten::silu_"}, simpleActivation(Activation::Silu));
  r.addOverloads({"aten::hardswish", "aten::hardswish_"}, simpleActivation(Activation::Hardswish));
  r.addOverloads({"aten::tanh", "aten::tanh_"}, simpleActivation(Activation::Tanh));
  r.addOverloads({"aten::relu6", "aten::relu6_"},
                 [](EngineCtx& ctx, const Node& n, EngineArgs& args) {
                   addEltwise(ctx, n, args, {Activation::Clamp, 0.f, 6.f});
                 });
  r.addOverloads({"aten::hardtanh", "aten::hardtanh_"},
                 [](EngineCtx& ctx, const Node& n, EngineArgs& args) {
                   convertClampLike(ctx, n, args, -1.0, 1.0, false);
                 });
  r.addOverloads({"aten::clamp", "aten::clamp_"},
                 [](EngineCtx& ctx, const Node& n, EngineArgs& args) {
                   convertClampLike(ctx, n, args, 0, 0, true);
                 });
  r.addOverloads(
      {"aten::gelu", "aten::gelu_"}, [](EngineCtx& ctx, const Node& n, EngineArgs& args) {
        if (!args[1].isIValue()) return ctx.addPlugin(n, args);
        const std::string approx = args[1].unwrapToString();
        if (approx != "none" && approx != "tanh") return ctx.addPlugin(n, args);
        addEltwise(ctx, n, args,
                   {approx == "tanh" ? Activation::GeluTanh : Activation::GeluErf, 0.f, 0.f});
      });
  r.addOverloads({"aten::leaky_relu", "aten::leaky_relu_"}, [](EngineCtx& ctx, const Node& n,
                                                               EngineArgs& args) {
    auto slope = staticNumber(args, 1);
    if (!slope) return ctx.addPlugin(n, args);
    addEltwise(ctx, n, args, {Activation::LeakyRelu, static_cast<float>(*slope), 0.f});
  });
  // The residual add (a sum post-op when fused).
  r.addOverloads({"aten::add.Tensor", "aten::add_.Tensor"}, [](EngineCtx& ctx, const Node& n,
                                                               EngineArgs& args) {
    auto alpha = staticNumber(args, 2);
    ctx.addPlugin(n, args);
    Layer& l = ctx.network().layers().back();
    if (!alpha || *alpha != 1.0 || l.kind != LayerKind::Plugin || l.inputs.size() != 2) return;
    l.kind = LayerKind::Binary;
    l.op = n.kind().toUnqualString();  // "add" or "add_"
  });
}

}  // namespace torchless::engine
