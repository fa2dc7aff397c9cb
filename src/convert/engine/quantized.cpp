// Engine converters of quantized operators (issue 15 part 6). quantized::conv{1,2,3}d(_relu)
// and quantized::linear(_relu) become int8 Convolution / MatMul layers: oneDNN u8 x s8
// primitives with PyTorch's requantization (layer_exec.cpp, Note [oneDNN int8 accumulators] in
// ops/quantized.cpp), activations channels-last between them. Every other quantized:: op with
// a kernel runs as a plugin layer (its kernel, as the interpreter runs it), and so do the forms
// the int8 layers do not take: transposed convs, fp16 or asymmetric weights. Packed params
// (TorchBind objects) must be constants, as freezing makes them.
#include "convert/engine/engine_ctx.h"

#include "core/error.h"
#include "ops/quantized.h"
#include "runtime/kernel.h"

#include <fmt/format.h>

namespace torchless::engine {

namespace {

constexpr const char* kConv2dPacked = "__torch__.torch.classes.quantized.Conv2dPackedParamsBase";
constexpr const char* kConv3dPacked = "__torch__.torch.classes.quantized.Conv3dPackedParamsBase";
constexpr const char* kLinearPacked = "__torch__.torch.classes.quantized.LinearPackedParamsBase";

bool isTorchBind(const TypePtr& t) {
  return t->kind() == TypeKind::ClassType &&
         t->cast<ClassType>()->name().rfind("__torch__.torch.classes.", 0) == 0;
}

// A TorchBind argument computed at run time cannot be an engine value.
void requireStaticObjects(EngineCtx& ctx, const Node& n) {
  for (const Value* v : n.inputs())
    if (isTorchBind(v->type()) && !ctx.isStatic(v))
      throw UnsupportedError(
          fmt::format("{}: its packed params %{} are computed at run time; the engine takes "
                      "them as constants (a frozen module's)",
                      n.kind().toQualString(), v->debugName()));
}

void convertQuantizedPlugin(EngineCtx& ctx, const Node& n, EngineArgs& args) {
  requireStaticObjects(ctx, n);
  ctx.addPlugin(n, args);
}

// "self.layer1.0.conv1._packed_params" -> "layer1.0.conv1" (linear's are nested twice).
std::string moduleOfPacked(const Value* packed) {
  std::string s = packed->debugNameBase();
  if (s.rfind("self.", 0) != 0) return "";
  s = s.substr(5);
  const std::string suffix = "._packed_params";
  while (s.size() > suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0)
    s.resize(s.size() - suffix.size());
  return s;
}

bool runtimeTensorArg(const EngineArgs& args, size_t i) {
  return !args[i].isIValue() && args[i].isTensor() &&
         args[i].value()->type()->kind() == TypeKind::TensorType;
}

bool int8Weight(const Tensor& w) {
  return w.defined() && w.isQuantized() && w.dtype() == ScalarType::QInt8 && w.dim() >= 2;
}

// quantized::conv*/linear*: a plugin layer, made an int8 Convolution / MatMul when the packed
// params are a constant the int8 layer takes (non-transposed, qint8 weights with zero points 0,
// per tensor or along axis 0) and the output qparams are constants.
void convertQProduct(EngineCtx& ctx, const Node& n, EngineArgs& args, bool linear, bool relu,
                     size_t scaleArg, size_t zpArg) {
  convertQuantizedPlugin(ctx, n, args);
  Layer& l = ctx.network().layers().back();
  if (l.kind != LayerKind::Plugin || l.inputs.size() != 1 || !runtimeTensorArg(args, 0)) return;
  if (!args[1].isIValue() || !args[scaleArg].isIValue() || !args[zpArg].isIValue()) return;
  const IValue& packed = args[1].unwrapToIValue();
  if (!packed.isObject()) return;
  const Object& o = *packed.toObject();
  Tensor w;
  std::optional<Tensor> bias;
  if (linear) {
    if (o.type->name() != kLinearPacked || o.slots.size() < 2) return;
    w = o.slots[0].toTensor();
    if (!int8Weight(w) || w.dim() != 2) return;
  } else {
    if ((o.type->name() != kConv2dPacked && o.type->name() != kConv3dPacked) || o.slots.size() < 8)
      return;
    if (o.slots[7].toBool()) return;  // transposed: the plugin
    w = o.slots[0].toTensor();
    if (!int8Weight(w)) return;
    l.stride = o.slots[2].toIntVector();
    l.padding = o.slots[3].toIntVector();
    l.dilation = o.slots[5].toIntVector();
    l.groups = o.slots[6].toInt();
  }
  if (!o.slots[1].isNone()) {
    if (!o.slots[1].isTensor() || o.slots[1].toTensor().dtype() != ScalarType::Float) return;
    bias = o.slots[1].toTensor();
  }
  const double outScale = args[scaleArg].unwrapToDouble();
  const int64_t outZp = args[zpArg].unwrapToInt();
  if (!(outScale > 0) || outZp < 0 || outZp > 255) return;  // the kernel reports it
  try {
    if (!ops::qconvScales(1.0, w, bias, outScale).symmetric) return;
  } catch (const Error&) {
    return;  // the kernel reports it
  }
  l.kind = linear ? LayerKind::MatMul : LayerKind::Convolution;
  l.quantized = true;
  l.weight = w;
  l.bias = bias;
  l.outScale = outScale;
  l.outZeroPoint = outZp;
  if (relu) l.activation = {Activation::Relu, 0.f, 0.f};
  if (std::string m = moduleOfPacked(args[1].value()); !m.empty()) l.name = m;
}

}  // namespace

void registerEngineQuantizedConverters(EngineConverterRegistry& r) {
  struct Form {
    const char* overload;
    bool linear, relu;
    size_t scale, zp;
  };
  const Form forms[] = {{"quantized::conv1d", false, false, 2, 3},
                        {"quantized::conv1d_relu", false, true, 2, 3},
                        {"quantized::conv2d.new", false, false, 2, 3},
                        {"quantized::conv2d_relu.new", false, true, 2, 3},
                        {"quantized::conv3d.new", false, false, 2, 3},
                        {"quantized::conv3d_relu.new", false, true, 2, 3},
                        {"quantized::conv2d", false, false, 6, 7},
                        {"quantized::conv2d_relu", false, true, 6, 7},
                        {"quantized::conv3d", false, false, 6, 7},
                        {"quantized::conv3d_relu", false, true, 6, 7},
                        {"quantized::linear", true, false, 2, 3},
                        {"quantized::linear_relu", true, true, 2, 3}};
  for (const Form& f : forms)
    r.addOverloads({f.overload}, [f](EngineCtx& ctx, const Node& n, EngineArgs& args) {
      convertQProduct(ctx, n, args, f.linear, f.relu, f.scale, f.zp);
    });
  // The other quantized:: ops with kernels: plugin layers. Their only opaque arguments may be
  // packed params; ops that return objects (the prepack ops) stay out, as do impure ones.
  // The kernel registry's list, not OperatorRegistry::all(): that would parse every lazy
  // schema (Note [Lazy schemas]), ~15 ms of every process that partitions a graph.
  for (const OpInfo* op : KernelRegistry::global().opsWithKernels()) {
    if (op->schema.name().rfind("quantized::", 0) != 0 || !op->kernel ||
        r.find(std::string_view(op->key)))
      continue;
    if (op->hasSideEffects || op->nondeterministic || op->mutates) continue;
    bool ok = true;
    for (const auto& a : op->schema.arguments()) {
      const TypePtr& t = a.type();
      if (t->kind() == TypeKind::ClassType)
        ok = ok && isTorchBind(t);
      else if (!t->containedTypes().empty())
        for (const TypePtr& c : t->containedTypes()) ok = ok && c->kind() != TypeKind::ClassType;
    }
    for (const auto& a : op->schema.returns())
      if (a.type()->kind() != TypeKind::TensorType) ok = false;
    if (ok) r.add(std::string_view(op->key), convertQuantizedPlugin);
  }
}

}  // namespace torchless::engine
