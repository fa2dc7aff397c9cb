// EngineCtx, the segment-to-network driver (with its evaluator for static values), and the
// plugin/shape converters.
#include "convert/engine/engine_ctx.h"

#include "core/error.h"
#include "ir/operator_matching.h"
#include "runtime/kernel.h"

#include <fmt/format.h>

#include <mutex>
#include <unordered_set>

namespace torchless::engine {

// ---- EngineCtx ------------------------------------------------------------------------------

Layer EngineCtx::layer(const Node& n, LayerKind kind) {
  Layer l;
  l.kind = kind;
  l.name = convert::nodeNameHint(n);
  if (l.name.empty()) l.name = fmt::format("{}_{}", n.kind().toUnqualString(), unnamed_++);
  l.place = convert::nodePlace(n);
  return l;
}

ValueId EngineCtx::newValue(const Value* v, ValueKind kind) {
  ValueId id = net_.addValue(v->debugName(), kind);
  setTensor(v, id);
  return id;
}

Layer& EngineCtx::addLayer(Layer l, const Node& n, ValueKind outKind) {
  if (l.outputs.empty())
    for (const Value* o : n.outputs()) l.outputs.push_back(newValue(o, outKind));
  return net_.addLayer(std::move(l));
}

ValueId EngineCtx::materialize(const Value* v, const IValue& value) {
  if (!value.isTensor())
    throw Error(fmt::format("the engine needs %{} as a tensor, but it is the constant {}",
                            v->debugName(), convert::detail::describeIValue(value)));
  Layer l;
  l.kind = LayerKind::Constant;
  l.name = weightName(v).empty() ? "constant_" + v->debugName() : weightName(v);
  l.constant = value;
  ValueId id = net_.addValue(v->debugName(), ValueKind::Tensor);
  l.outputs = {id};
  net_.addLayer(std::move(l));
  return id;
}

namespace {

// Ops that read only the sizes of their tensor inputs: their results are shape values.
bool readsOnlySizes(const Node& n) {
  static const std::unordered_set<Symbol> kinds = {
      Symbol::fromQualString("aten::size"),      Symbol::fromQualString("aten::dim"),
      Symbol::fromQualString("aten::numel"),     Symbol::fromQualString("aten::sym_size"),
      Symbol::fromQualString("aten::sym_numel"), Symbol::fromQualString("prim::dtype"),
      Symbol::fromQualString("prim::device"),    Symbol::fromQualString("prim::shape")};
  return kinds.count(n.kind()) > 0;
}

bool containsTensor(const TypePtr& t) {
  if (t->kind() == TypeKind::TensorType) return true;
  for (const TypePtr& c : t->containedTypes())
    if (containsTensor(c)) return true;
  return false;
}

}  // namespace

void EngineCtx::addPlugin(const Node& n, EngineArgs& args) {
  (void)args;
  Layer l = layer(n, LayerKind::Plugin);
  l.node = &n;
  bool shapeOnly = true;
  for (const Value* v : n.inputs()) {
    if (isStatic(v)) {
      l.args.emplace_back(staticValue(v));
      continue;
    }
    if (!hasTensor(v))
      throw Error(
          fmt::format("input %{} of {} was not converted", v->debugName(), n.kind().toQualString()),
          convert::nodePlace(n));
    const ValueId id = toTensor(v);
    l.args.emplace_back(std::nullopt);
    l.inputs.push_back(id);
    const bool sizeRead = readsOnlySizes(n) && v->type()->kind() == TypeKind::TensorType;
    if (!isShapeValue(id) && !sizeRead) shapeOnly = false;
  }
  for (const Value* o : n.outputs())
    if (containsTensor(o->type())) shapeOnly = false;
  if (shapeOnly) l.kind = LayerKind::Shape;
  addLayer(std::move(l), n, shapeOnly ? ValueKind::Shape : ValueKind::Tensor);
}

// ---- the driver ---------------------------------------------------------------------------

namespace {

bool isPure(const Node& n, const OpInfo* op) {
  if (!n.blocks().empty() || n.hasSideEffects()) return false;
  return !(op && (op->nondeterministic || op->hasSideEffects || op->mutates));
}

// Note [Static values that are written later]
// A value computed now is copied into every layer that reads it, so a later in-place write
// (mvit's `pos_embedding = repeat_interleave(temporal_pos, ...); pos_embedding.add_(...)`,
// then `cat([class_pos, pos_embedding])`) would land in one layer's copy while the others
// read the value as built. A tensor that a mutating op writes, directly or through views,
// tuples and lists, is therefore never evaluated statically: it is computed at run time in
// the engine's own buffer, where the write and the reads see one tensor.
bool isWrittenLater(const Value* v, int depth) {
  if (depth > 64) return true;
  for (const Use& u : v->uses()) {
    const Node* user = u.user;
    const Symbol k = user->kind();
    if (k == prim::ListConstruct || k == prim::TupleConstruct || k == prim::ListUnpack ||
        k == prim::TupleUnpack || k == prim::TupleIndex) {
      for (const Value* o : user->outputs())
        if (isWrittenLater(o, depth + 1)) return true;
      continue;
    }
    if (!user->blocks().empty()) return true;  // a loop or branch may write it
    const OpInfo* op = matchOperator(user, OperatorRegistry::global());
    if (!op) {
      if (user->mayWrite()) return true;
      continue;
    }
    const auto& args = op->schema.arguments();
    if (op->mutates) {
      // the argument is written, or the schema does not say which one is
      if (!op->schema.isMutable() || (u.offset < args.size() && args[u.offset].aliasInfo() &&
                                      args[u.offset].aliasInfo()->isWrite()))
        return true;
    }
    if (op->returnsAlias && op->schema.argumentMayAliasReturn(u.offset))
      for (const Value* o : user->outputs())
        if (isWrittenLater(o, depth + 1)) return true;
  }
  return false;
}

// All inputs static: compute the outputs now with the runtime's kernel (the evaluators of
// Torch-TensorRT, for constants, int/list arithmetic and everything else known here).
bool tryEvaluate(EngineCtx& ctx, const Node& n, const OpInfo* op) {
  auto outs = evaluateStatically(
      n, op, [&](const Value* v) { return ctx.isStatic(v) ? &ctx.staticValue(v) : nullptr; });
  if (!outs) return false;
  for (size_t i = 0; i < n.outputs().size(); ++i) ctx.setStatic(n.output(i), (*outs)[i]);
  return true;
}

// A shape check: a Shape layer (op "assert") over its condition; a static condition is
// decided now (a check that always raises keeps the segment in the interpreter).
void convertShapeCheck(EngineCtx& ctx, const Node& n) {
  const Value* cond = n.input(0);
  const bool raiseWhenTrue = n.blocks()[1]->nodes().begin() == n.blocks()[1]->nodes().end();
  if (ctx.isStatic(cond)) {
    if (ctx.staticValue(cond).toBool() == raiseWhenTrue)
      throw UnsupportedError("a shape check that always raises", convert::nodePlace(n));
    return;
  }
  const ValueId c = ctx.toTensor(cond);
  if (!ctx.isShapeValue(c))
    throw UnsupportedError("a check whose condition depends on tensor values",
                           convert::nodePlace(n));
  Layer l = ctx.layer(n, LayerKind::Shape);
  l.op = raiseWhenTrue ? "assert_false" : "assert";
  l.node = &n;
  l.inputs = {c};
  l.args = {std::nullopt};
  ctx.network().addLayer(std::move(l));
}

}  // namespace

std::optional<std::vector<IValue>> evaluateStatically(
    const Node& n, const OpInfo* op, const std::function<const IValue*(const Value*)>& staticOf) {
  if (!isPure(n, op)) return std::nullopt;
  for (const Value* o : n.outputs())  // Note [Static values that are written later]
    if (containsTensor(o->type()) && isWrittenLater(o, 0)) return std::nullopt;
  Stack stack;
  for (const Value* v : n.inputs()) {
    const IValue* s = staticOf(v);
    if (!s) return std::nullopt;
    stack.push_back(*s);
  }
  const KernelRegistry& kernels = KernelRegistry::global();
  if (!kernels.hasKernel(n, op)) return std::nullopt;
  kernels.operationFor(n, op)(stack);
  TL_INTERNAL_ASSERT(stack.size() >= n.outputs().size(), "kernel left too few outputs");
  return std::vector<IValue>(stack.end() - static_cast<std::ptrdiff_t>(n.outputs().size()),
                             stack.end());
}

NetworkDefinition convertToNetwork(std::shared_ptr<Graph> graph) {
  NetworkDefinition net;
  net.sourceGraph = graph;
  EngineCtx ctx(net);
  for (const Value* v : graph->inputs()) {
    const bool tensor = v->type()->kind() == TypeKind::TensorType;
    net.markInput(ctx.newValue(v, tensor ? ValueKind::Tensor : ValueKind::Shape));
  }
  const EngineConverterRegistry& registry = engineConverters();
  for (const Node* n : graph->block()->nodes()) {
    if (n->kind() == prim::Constant) {
      auto v = toIValue(n->output());
      if (!v)  // IR text without the value (as export.cpp says)
        throw Error(fmt::format("constant %{} of type {} has no value", n->output()->debugName(),
                                n->output()->type()->str()),
                    convert::nodePlace(*n));
      ctx.setStatic(n->output(), *v);
      continue;
    }
    try {
      if (isShapeCheck(*n)) {
        convertShapeCheck(ctx, *n);
        continue;
      }
      const OpInfo* op = matchOperator(n, OperatorRegistry::global());
      const EngineConverter* fn = registry.findFor(*n, op);
      if (tryEvaluate(ctx, *n, op)) continue;
      if (!fn)
        throw UnsupportedError(
            fmt::format("{} has no engine converter", op ? op->key : n->kind().toQualString()));
      EngineArgs args(ctx, *n, op);
      (*fn)(ctx, *n, args);
      for (size_t i = 0; i < n->outputs().size(); ++i)
        if (!ctx.isConverted(n->output(i)))
          throw Error(fmt::format("the engine converter of {} left output {} unmapped",
                                  op ? op->key : n->kind().toQualString(), i));
    } catch (Error& e) {
      e.withPlace(convert::nodePlace(*n));
      throw;
    }
  }
  for (const Value* v : graph->outputs()) {
    if (ctx.isStatic(v) && !ctx.staticValue(v).isTensor()) {
      Layer l;
      l.kind = LayerKind::Constant;
      l.name = "constant_" + v->debugName();
      l.constant = ctx.staticValue(v);
      ValueId id = net.addValue(v->debugName(), ValueKind::Shape);
      l.outputs = {id};
      net.addLayer(std::move(l));
      net.markOutput(id);
      continue;
    }
    net.markOutput(ctx.toTensor(v));
  }
  return net;
}

bool isShapeCheck(const Node& node) {
  if (node.kind() != prim::If || !node.outputs().empty() || node.blocks().size() != 2) return false;
  auto empty = [](const Block* b) { return b->nodes().begin() == b->nodes().end(); };
  auto raises = [](const Block* b) {
    bool sawRaise = false;
    for (const Node* n : b->nodes()) {
      if (!n->blocks().empty()) return false;
      if (n->kind() == Symbol::fromQualString("prim::RaiseException")) sawRaise = true;
    }
    return sawRaise;
  };
  const Block* t = node.blocks()[0];
  const Block* f = node.blocks()[1];
  return (empty(t) && raises(f)) || (empty(f) && raises(t));
}

bool isConvertible(const Node& node, const OpInfo* op) {
  if (node.kind() == prim::Constant) return true;
  if (isShapeCheck(node)) return true;
  if (!node.blocks().empty()) return false;
  return engineConverters().findFor(node, op) != nullptr;
}

// ---- registration -------------------------------------------------------------------------

const EngineConverterRegistry& engineConverters() {
  static EngineConverterRegistry* registry = [] {
    initKernels();
    auto* r = new EngineConverterRegistry("engine");
    registerEngineConverters(*r);
    return r;
  }();
  return *registry;
}

void registerEngineConverters(EngineConverterRegistry& r) {
  registerEngineNativeConverters(r);
  registerEngineQuantizedConverters(r);
  registerEnginePlugins(r);
}

namespace {

void convertPlugin(EngineCtx& ctx, const Node& n, EngineArgs& args) { ctx.addPlugin(n, args); }

// Ops whose output sizes depend on the values of their inputs, not only on their sizes: a plan
// made for one input signature would not fit the next call.
bool dataDependentShape(const OpInfo& op) {
  static const std::unordered_set<std::string> names = {"aten::nonzero",
                                                        "aten::nonzero_numpy",
                                                        "aten::argwhere",
                                                        "aten::masked_select",
                                                        "aten::unique",
                                                        "aten::_unique",
                                                        "aten::_unique2",
                                                        "aten::unique_dim",
                                                        "aten::unique_consecutive",
                                                        "aten::unique_dim_consecutive",
                                                        "aten::repeat_interleave",
                                                        "aten::bincount",
                                                        "aten::index",
                                                        "aten::where",
                                                        "torchvision::nms",
                                                        "aten::tensor_split",
                                                        "aten::_nested_tensor_from_mask",
                                                        "aten::to_padded_tensor"};
  const std::string name = op.schema.name();
  if (names.count(name) == 0) return false;
  // where(cond, a, b) is elementwise; only the one-argument form is nonzero().
  if (name == "aten::where") return op.schema.arguments().size() == 1;
  if (name == "aten::repeat_interleave" || name == "aten::tensor_split")
    for (const auto& a : op.schema.arguments())
      if (a.name() == "repeats" || a.name() == "tensor_indices_or_sections")
        return a.type()->kind() == TypeKind::TensorType;
  return true;
}

// A written argument that is not a tensor (list.append, dict setitem): containers shared
// with the interpreter must not be mutated from inside an engine.
bool mutatesContainer(const OpInfo& op) {
  for (const auto& a : op.schema.arguments())
    if (a.aliasInfo() && a.aliasInfo()->isWrite() && a.type()->kind() != TypeKind::TensorType)
      return true;
  return false;
}

// Objects, futures, generators ...: values an engine cannot key a plan on or hold.
bool opaqueType(const TypePtr& t) {
  switch (t->kind()) {
    case TypeKind::AnyType:
    case TypeKind::StorageType:
    case TypeKind::FutureType:
    case TypeKind::AwaitType:
    case TypeKind::RRefType:
    case TypeKind::GeneratorType:
    case TypeKind::StreamObjType:
    case TypeKind::FunctionType:
    case TypeKind::ClassType:
    case TypeKind::PyObjectType:
    case TypeKind::CapsuleType:
    case TypeKind::InterfaceType:
    case TypeKind::AnyClassType:
    case TypeKind::QuantizerType: return true;
    default: break;
  }
  for (const TypePtr& c : t->containedTypes())
    if (opaqueType(c)) return true;
  return false;
}

bool opaqueTypes(const OpInfo& op) {
  for (const auto& a : op.schema.arguments())
    if (opaqueType(a.type())) return true;
  for (const auto& a : op.schema.returns())
    if (opaqueType(a.type())) return true;
  return false;
}

}  // namespace

bool readsValuesIntoNumbers(const OpInfo& op) {
  bool tensorArgument = false;
  for (const auto& a : op.schema.arguments()) tensorArgument |= containsTensor(a.type());
  if (!tensorArgument) return false;
  for (const auto& r : op.schema.returns())
    if (containsTensor(r.type())) return false;
  static const std::unordered_set<std::string> metadata = {"aten::size",
                                                           "aten::sym_size",
                                                           "aten::dim",
                                                           "aten::numel",
                                                           "aten::sym_numel",
                                                           "aten::stride",
                                                           "aten::sym_stride",
                                                           "aten::len",
                                                           "aten::is_contiguous",
                                                           "aten::is_same_size",
                                                           "aten::is_floating_point",
                                                           "aten::is_complex",
                                                           "aten::is_signed",
                                                           "aten::is_pinned",
                                                           "aten::get_device",
                                                           "prim::dtype",
                                                           "prim::device",
                                                           "prim::layout",
                                                           "prim::shape",
                                                           "prim::requires_grad",
                                                           "aten::__is__",
                                                           "aten::__isnot__"};
  const std::string& name = op.schema.name();
  if (metadata.count(name)) return false;
  if (name.rfind("prim::is_", 0) == 0 && name != "prim::is_nested") return false;
  return true;
}

void registerEnginePlugins(EngineConverterRegistry& r) {
  static const std::unordered_set<std::string> kExcluded = {
      "prim::Print",         "prim::RaiseException",  "aten::warn",
      "prim::Uninitialized", "prim::Enter",           "prim::Exit",
      "prim::AutogradZero",  "prim::TypeCheck",       "prim::BailOut",
      "prim::rpc_async",     "torchless::conv_fused", "aten::manual_seed",
      "aten::seed",          "aten::initial_seed"};
  for (const OpInfo* op : KernelRegistry::global().opsWithKernels()) {
    if (!op->kernel || r.find(std::string_view(op->key))) continue;
    if (op->hasSideEffects || op->nondeterministic || mutatesContainer(*op) ||
        dataDependentShape(*op))
      continue;
    if (kExcluded.count(op->schema.name()) || opaqueTypes(*op)) continue;
    if (op->schema.name().rfind("quantized::", 0) == 0 ||
        op->schema.name().rfind("prepacked::", 0) == 0)
      continue;
    r.add(std::string_view(op->key), convertPlugin);
  }
  for (Symbol k :
       {prim::ListConstruct, prim::ListUnpack, prim::TupleConstruct, prim::TupleUnpack,
        Symbol::fromQualString("prim::TupleIndex"), Symbol::fromQualString("prim::ConstantChunk"),
        Symbol::fromQualString("prim::NumToTensor"),
        Symbol::fromQualString("prim::unchecked_cast")})
    if (!r.findNode(k)) r.addNode(k, convertPlugin);
}

}  // namespace torchless::engine
