#include "frontend/sugared_value.h"

#include "frontend/emitter.h"
#include "frontend/literal.h"
#include "ir/operator_registry.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace torchless::frontend {

// ---- defaults -----------------------------------------------------------------------------

Value* SugaredValue::asValue(const SourceRange& loc, Emitter&) {
  throwErrorAt(loc, kind() + " cannot be used as a value");
}
SugaredValuePtr SugaredValue::attr(const SourceRange& loc, Emitter&, const std::string& name) {
  throwErrorAt(loc,
               "attribute lookup is not defined on " + kind() + " (looking up '" + name + "')");
}
SugaredValuePtr SugaredValue::call(const SourceRange& loc, Emitter&, const std::vector<NamedValue>&,
                                   const std::vector<NamedValue>&, size_t) {
  throwErrorAt(loc, "cannot call a value of type " + kind());
}
std::vector<SugaredValuePtr> SugaredValue::asTuple(const SourceRange& loc, Emitter&,
                                                   std::optional<size_t>) {
  throwErrorAt(loc, kind() + " cannot be used as a tuple");
}
SugaredValuePtr SugaredValue::iter(const SourceRange& loc, Emitter&) {
  throwErrorAt(loc, kind() + " cannot be used as an iterable");
}
Value* SugaredValue::len(const SourceRange& loc, Emitter&) {
  throwErrorAt(loc, "'" + kind() + "' object is not iterable");
}
SugaredValuePtr SugaredValue::getitem(const SourceRange& loc, Emitter&, Value*) {
  throwErrorAt(loc, "'" + kind() + "' object is not subscriptable");
}

namespace {
SugaredValuePtr simple(Value* v) { return std::make_shared<SimpleValue>(v); }

/// A value that is None when used (print's result): no constant unless asked for.
struct NoneValue : SugaredValue {
  std::string kind() const override { return "None"; }
  Value* asValue(const SourceRange& loc, Emitter& e) override { return e.constant(IValue(), loc); }
};

std::string className(const TypePtr& t) {
  if (const auto* c = t->cast<ClassType>()) return c->name();
  return t->str();
}

/// Methods of a class or interface: the schema of `name`, or null. A recursive call is an
/// error at `loc` (RecursiveCallError).
const FunctionSchema* methodSchema(Emitter& e, const TypePtr& type, const std::string& name,
                                   const SourceRange* loc = nullptr) {
  if (const auto* cls = type->cast<ClassType>()) {
    Function* fn = cls->findMethod(name);
    try {
      if (!fn && e.env().resolveMethod) fn = e.env().resolveMethod(*cls, name);
    } catch (const RecursiveCallError& r) {
      if (loc) throwErrorAt(*loc, r.message());
      throw;
    }
    if (auto* gf = dynamic_cast<GraphFunction*>(fn)) return &gf->schema();
    return nullptr;
  }
  if (const auto* iface = type->cast<InterfaceType>()) {
    for (const auto& [n, schema] : iface->methods)
      if (n == name) return schema.get();
  }
  return nullptr;
}

const std::map<std::string, std::string>& tensorProperties() {
  static const std::map<std::string, std::string> props = {
      {"dtype", "prim::dtype"},
      {"device", "prim::device"},
      {"grad", "prim::grad"},
      {"data", "prim::data"},
      {"shape", "aten::size"},
      {"is_cuda", "prim::is_cuda"},
      {"is_cpu", "prim::is_cpu"},
      {"is_xpu", "prim::is_xpu"},
      {"is_sparse", "prim::is_sparse"},
      {"is_sparse_csr", "prim::is_sparse_csr"},
      {"is_mkldnn", "prim::is_mkldnn"},
      {"is_mps", "prim::is_mps"},
      {"is_quantized", "prim::is_quantized"},
      {"is_vulkan", "prim::is_vulkan"},
      {"is_ipu", "prim::is_ipu"},
      {"is_meta", "prim::is_meta"},
      {"is_leaf", "aten::is_leaf"},
      {"is_nested", "prim::is_nested"},
      {"requires_grad", "prim::requires_grad"},
      {"layout", "prim::layout"},
      {"T", "aten::numpy_T"},
      {"mT", "aten::mT"},
      {"H", "aten::matrix_H"},
      {"mH", "aten::mH"},
      {"ndim", "aten::dim"},
      {"name", "prim::name"},
      {"real", "aten::real"},
      {"imag", "aten::imag"},
      {"retains_grad", "aten::retains_grad"},
      {"output_nr", "aten::output_nr"},
  };
  return props;
}

/// dtype, layout and memory-format names of the `torch` namespace, as their int codes.
std::optional<int64_t> torchEnumConstant(const std::string& name) {
  static const std::map<std::string, int64_t> table = {
      {"uint8", 0},
      {"int8", 1},
      {"int16", 2},
      {"short", 2},
      {"int32", 3},
      {"int", 3},
      {"int64", 4},
      {"long", 4},
      {"float16", 5},
      {"half", 5},
      {"float32", 6},
      {"float", 6},
      {"float64", 7},
      {"double", 7},
      {"complex32", 8},
      {"chalf", 8},
      {"complex64", 9},
      {"cfloat", 9},
      {"complex128", 10},
      {"cdouble", 10},
      {"bool", 11},
      {"qint8", 12},
      {"quint8", 13},
      {"qint32", 14},
      {"bfloat16", 15},
      {"quint4x2", 16},
      {"quint2x4", 17},
      {"strided", 0},
      {"sparse_coo", 1},
      {"_mkldnn", 2},
      {"contiguous_format", 0},
      {"preserve_format", 1},
      {"channels_last", 2},
      {"channels_last_3d", 3},
  };
  auto it = table.find(name);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

/// `t.float()`, `t.long()`, ...: PyTorch's TensorCastValue, emitted as
/// aten::to(t, dtype, False, False, None). Takes no arguments.
struct TensorCastValue : SugaredValue {
  TensorCastValue(int64_t dtype, Value* self) : dtype_(dtype), self_(self) {}
  std::string kind() const override { return "tensor cast"; }
  SugaredValuePtr call(const SourceRange& loc, Emitter& e, const std::vector<NamedValue>& args,
                       const std::vector<NamedValue>& kwargs, size_t) override {
    if (!args.empty() || !kwargs.empty())
      throwErrorAt(loc,
                   "a tensor cast method (float(), long(), ...) takes no arguments; use "
                   ".to(dtype, ...) to pass options");
    Value* no = e.constant(IValue(false), loc);
    return simple(
        e.builtin(loc, "aten::to",
                  {self_, e.constant(IValue(dtype_), loc), no, no, e.constant(IValue(), loc)}));
  }

 private:
  int64_t dtype_;
  Value* self_;
};

/// `torch.jit.is_tracing()`: always False in TorchScript (PyTorch compiles torch.jit's
/// is_tracing, whose scripted branch returns False).
struct NotTracingValue : SugaredValue {
  std::string kind() const override { return "torch.jit.is_tracing"; }
  SugaredValuePtr call(const SourceRange& loc, Emitter& e, const std::vector<NamedValue>& args,
                       const std::vector<NamedValue>& kwargs, size_t) override {
    if (!args.empty() || !kwargs.empty()) throwErrorAt(loc, "is_tracing() takes no arguments");
    return simple(e.constant(IValue(false), loc));
  }
};

/// `torch.unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None)`,
/// torch.functional.unique as TorchScript dispatches it: aten::_unique2 (dim None) or
/// aten::unique_dim, keeping the outputs the two flags ask for. The flags must be constants,
/// since they decide the result's type (PyTorch's boolean dispatch has the same rule).
struct UniqueValue : SugaredValue {
  std::string kind() const override { return "torch.unique"; }
  SugaredValuePtr call(const SourceRange& loc, Emitter& e, const std::vector<NamedValue>& args,
                       const std::vector<NamedValue>& kwargs, size_t) override {
    static const char* names[] = {"input", "sorted", "return_inverse", "return_counts", "dim"};
    std::vector<Value*> in(5, nullptr);
    if (args.size() > 5) throwErrorAt(loc, "torch.unique takes at most 5 arguments");
    for (size_t i = 0; i < args.size(); ++i) in[i] = args[i].value;
    for (const auto& k : kwargs) {
      size_t i = 0;
      while (i < 5 && k.name != names[i]) ++i;
      if (i == 5) throwErrorAt(k.loc, "torch.unique has no argument '" + k.name + "'");
      if (in[i]) throwErrorAt(k.loc, "torch.unique got argument '" + k.name + "' twice");
      in[i] = k.value;
    }
    if (!in[0]) throwErrorAt(loc, "torch.unique is missing its input");
    auto flag = [&](size_t i, bool dflt) {
      if (!in[i]) return dflt;
      auto c = toIValue(in[i]);
      if (!c || !c->isBool())
        throwErrorAt(loc, std::string("torch.unique's ") + names[i] +
                              " must be a constant bool in TorchScript");
      return c->toBool();
    };
    const bool inverse = flag(2, false), counts = flag(3, false);
    Value* sorted = in[1] ? in[1] : e.constant(IValue(true), loc);
    Value* inv = e.constant(IValue(inverse), loc);
    Value* cnt = e.constant(IValue(counts), loc);
    Value* result;
    if (!in[4] || in[4]->type()->kind() == TypeKind::NoneType)
      result = e.builtin(loc, "aten::_unique2", {in[0], sorted, inv, cnt});
    else
      result = e.builtin(loc, "aten::unique_dim", {in[0], in[4], sorted, inv, cnt});
    std::vector<Value*> parts = createTupleUnpack(e.graph(), result, loc);
    if (!inverse && !counts) return simple(parts[0]);
    std::vector<Value*> keep{parts[0]};
    if (inverse) keep.push_back(parts[1]);
    if (counts) keep.push_back(parts[2]);
    return simple(e.insert(e.graph().createTuple(keep), loc)->output());
  }
};

/// `torch._assert(condition, message)`: torch's scriptable _assert, which PyTorch inlines as
/// `if condition: pass` / `else: raise AssertionError(message)`.
struct TorchAssertValue : SugaredValue {
  std::string kind() const override { return "torch._assert"; }
  SugaredValuePtr call(const SourceRange& loc, Emitter& e, const std::vector<NamedValue>& args,
                       const std::vector<NamedValue>& kwargs, size_t) override {
    Value* cond = nullptr;
    Value* msg = nullptr;
    if (args.size() > 0) cond = args[0].value;
    if (args.size() > 1) msg = args[1].value;
    for (const auto& k : kwargs) {
      if (k.name == "condition" && !cond)
        cond = k.value;
      else if (k.name == "message" && !msg)
        msg = k.value;
      else
        throwErrorAt(k.loc, "torch._assert has no argument '" + k.name + "' (or got it twice)");
    }
    if (!cond || !msg || args.size() > 2)
      throwErrorAt(loc, "torch._assert takes a condition and a message");
    Graph& g = e.graph();
    cond = e.emitToBool(loc, cond);
    if (auto c = toIValue(cond); c && c->isBool() && c->toBool())
      return std::make_shared<NoneValue>();
    Node* n = e.insert(g.create(prim::If, {cond}, 0), loc);
    n->addBlock();
    Block* fb = n->addBlock();
    {
      WithInsertPoint guard(fb);
      Value* text;
      if (auto c = toIValue(msg); c && c->isString()) {
        text = e.constant(IValue("AssertionError: " + c->toStringRef()), loc);
      } else {
        text = e.builtin(loc, "aten::format",
                         {e.constant(IValue(std::string("AssertionError: {}")), loc), msg});
      }
      e.insert(g.create(prim::RaiseException, {text, e.constant(IValue(), loc)}, 0), loc);
    }
    e.exitBlocks_.insert(fb);
    return std::make_shared<NoneValue>();
  }
};

std::optional<int64_t> tensorCastDtype(const std::string& name) {
  static const std::map<std::string, int64_t> casts = {
      {"byte", 0}, {"char", 1},  {"short", 2},  {"int", 3},    {"long", 4},
      {"half", 5}, {"float", 6}, {"double", 7}, {"cfloat", 9}, {"cdouble", 10}};
  auto it = casts.find(name);
  if (it == casts.end()) return std::nullopt;
  return it->second;
}

}  // namespace

bool isModuleContainer(const TypePtr& type) {
  const auto* cls = type->cast<ClassType>();
  if (!cls || !cls->isModule()) return false;
  const std::string& n = cls->name();
  auto endsWith = [&](const std::string& suffix) {
    return n.size() >= suffix.size() &&
           n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return endsWith(".ModuleList") || endsWith(".Sequential") || endsWith(".ModuleDict");
}

SugaredValuePtr makeSugared(Value* v) {
  if (isModuleContainer(v->type())) return std::make_shared<ModuleContainerValue>(v);
  return simple(v);
}

// ---- SimpleValue --------------------------------------------------------------------------

std::string SimpleValue::kind() const {
  return "value of type '" + value_->type()->annotationStr() + "'";
}

SugaredValuePtr SimpleValue::attr(const SourceRange& loc, Emitter& e, const std::string& name) {
  Graph& g = e.graph();
  const TypePtr& t = value_->type();
  if (const auto* cls = t->cast<ClassType>()) {
    if (const ClassType::Attribute* a = cls->findAttribute(name)) {
      Value* out = e.insert(g.createGetAttr(value_, name, a->type), loc)->output();
      return makeSugared(out);
    }
    if (const IValue* c = cls->findConstant(name)) return simple(e.constant(*c, loc));
    if (methodSchema(e, t, name, &loc)) return std::make_shared<MethodValue>(value_, name);
    if (cls->isModule())
      throwErrorAt(loc, "Module '" + cls->name() + "' has no attribute '" + name + "' ");
    throwErrorAt(loc, "Tried to access nonexistent attribute or method '" + name + "' of type '" +
                          cls->name() + "'.");
  }
  if (t->kind() == TypeKind::InterfaceType) {
    if (methodSchema(e, t, name, &loc)) return std::make_shared<MethodValue>(value_, name);
    throwErrorAt(
        loc, "Tried to access nonexistent method '" + name + "' of interface '" + t->str() + "'");
  }
  if (const auto* tup = t->cast<TupleType>(); tup && tup->isNamed()) {
    const auto& fields = tup->fieldNames();
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i] == name) {
        Value* idx = e.constant(IValue(static_cast<int64_t>(i)), loc);
        return simple(e.insert(g.createTupleIndex(value_, idx, tup->elements()[i]), loc)->output());
      }
    }
  }
  if (t->isSubtypeOf(*TensorType::get())) {
    auto it = tensorProperties().find(name);
    if (it != tensorProperties().end()) return simple(e.builtin(loc, it->second, {value_}));
    if (auto dtype = tensorCastDtype(name))
      return std::make_shared<TensorCastValue>(*dtype, value_);
  }
  if (t->kind() == TypeKind::EnumType) {
    if (name == "name") return simple(e.builtin(loc, "prim::EnumName", {value_}));
    if (name == "value") {
      // Typed as the enum's values (prim::EnumValue has one overload per value type, each
      // taking any enum): a str enum's .value is a str (torchvision's InterpolationMode).
      Value* v = e.builtin(loc, "prim::EnumValue", {value_});
      v->setType(t->expect<EnumType>().valueType());
      return simple(v);
    }
  }
  if (t->kind() == TypeKind::DeviceObjType && (name == "type" || name == "index"))
    return simple(e.builtin(loc, "prim::" + name, {value_}));
  if (t->kind() == TypeKind::ComplexType && (name == "real" || name == "imag"))
    return simple(e.builtin(loc, "aten::" + name, {value_}));
  // Methods of tensors, lists, dicts, strings ...: operators taking the value as self.
  Symbol sym = Symbol::aten(name);
  initOperatorRegistry();
  if (OperatorRegistry::global().lookup(sym.toQualString()).empty())
    throwErrorAt(loc,
                 "'" + t->annotationStr() + "' object has no attribute or method '" + name + "'.");
  return std::make_shared<BuiltinFunction>(sym, NamedValue{loc, "self", value_});
}

SugaredValuePtr SimpleValue::call(const SourceRange& loc, Emitter& e,
                                  const std::vector<NamedValue>& args,
                                  const std::vector<NamedValue>& kwargs, size_t nBinders) {
  const TypePtr& t = value_->type();
  if (const auto* cls = t->cast<ClassType>()) {
    std::string method = cls->isModule() ? "forward" : "__call__";
    return MethodValue(value_, method).call(loc, e, args, kwargs, nBinders);
  }
  if (const auto* ft = t->cast<FunctionType>()) {
    if (auto* gf = dynamic_cast<GraphFunction*>(ft->function()))
      return FunctionValue(gf).call(loc, e, args, kwargs, nBinders);
  }
  throwErrorAt(loc, "'" + t->annotationStr() + "' object is not callable");
}

std::vector<SugaredValuePtr> SimpleValue::asTuple(const SourceRange& loc, Emitter& e,
                                                  std::optional<size_t> sizeHint) {
  const TypePtr& t = value_->type();
  std::vector<SugaredValuePtr> out;
  if (t->kind() == TypeKind::TupleType) {
    for (Value* v : createTupleUnpack(e.graph(), value_, loc)) out.push_back(makeSugared(v));
    return out;
  }
  if (t->kind() == TypeKind::ListType) {
    if (!sizeHint)
      throwErrorAt(loc, "cannot statically infer the expected size of a list in this context");
    Node* n = e.insert(e.graph().createListUnpack(value_, *sizeHint), loc);
    for (Value* v : n->outputs()) out.push_back(simple(v));
    return out;
  }
  if (t->kind() == TypeKind::AnyTupleType)
    throwErrorAt(loc, "Provided tuple is not fully defined/refined including its element types");
  throwErrorAt(loc, t->annotationStr() + " cannot be used as a tuple");
}

SugaredValuePtr SimpleValue::iter(const SourceRange& loc, Emitter& e) {
  const TypePtr& t = value_->type();
  switch (t->kind()) {
    case TypeKind::ListType:
    case TypeKind::StringType:
    case TypeKind::TensorType: return shared_from_this();
    case TypeKind::TupleType:
      return std::make_shared<SugaredTupleValue>(asTuple(loc, e, std::nullopt));
    case TypeKind::DictType: return simple(e.builtin(loc, "aten::keys", {value_}));
    default: throwErrorAt(loc, "'" + t->annotationStr() + "' object is not iterable");
  }
}

Value* SimpleValue::len(const SourceRange& loc, Emitter& e) {
  return e.builtin(loc, "aten::len", {value_});
}

SugaredValuePtr SimpleValue::getitem(const SourceRange& loc, Emitter& e, Value* idx) {
  if (value_->type()->isSubtypeOf(*TensorType::get()))
    return simple(
        e.builtin(loc, "aten::select", {value_, e.constant(IValue(int64_t(0)), loc), idx}));
  return simple(e.builtin(loc, "aten::__getitem__", {value_, idx}));
}

bool SimpleValue::shouldUnroll() const { return value_->type()->kind() == TypeKind::TupleType; }

std::optional<int64_t> SimpleValue::staticLen() const {
  if (const auto* t = value_->type()->cast<TupleType>()) return int64_t(t->elements().size());
  return std::nullopt;
}

// ---- builtins ------------------------------------------------------------------------------

SugaredValuePtr BuiltinFunction::call(const SourceRange& loc, Emitter& e,
                                      const std::vector<NamedValue>& args,
                                      const std::vector<NamedValue>& kwargs, size_t) {
  return simple(emitBuiltinCall(loc, e.graph(), symbol_, args, kwargs, self_));
}

SugaredValuePtr BuiltinModule::attr(const SourceRange& loc, Emitter& e, const std::string& name) {
  if (name_ == "torch") {
    if (auto c = torchEnumConstant(name)) return simple(e.constant(IValue(*c), loc));
    if (name == "pi") return simple(e.constant(IValue(M_PI), loc));
    if (name == "e") return simple(e.constant(IValue(M_E), loc));
    if (name == "inf")
      return simple(e.constant(IValue(std::numeric_limits<double>::infinity()), loc));
    if (name == "nan")
      return simple(e.constant(IValue(std::numeric_limits<double>::quiet_NaN()), loc));
    if (name == "_assert") return std::make_shared<TorchAssertValue>();
    if (name == "ops") return std::make_shared<OpsValue>();
    if (name == "jit" || name == "nn" || name == "functional" || name == "_C")
      return std::make_shared<BuiltinModule>(ns_, "torch");
  }
  if (name_ == "math") {
    if (name == "pi") return simple(e.constant(IValue(M_PI), loc));
    if (name == "e") return simple(e.constant(IValue(M_E), loc));
    if (name == "inf")
      return simple(e.constant(IValue(std::numeric_limits<double>::infinity()), loc));
    if (name == "nan")
      return simple(e.constant(IValue(std::numeric_limits<double>::quiet_NaN()), loc));
  }
  if (name_ == "torch" && name == "is_tracing") return std::make_shared<NotTracingValue>();
  if (name_ == "torch" && name == "unique") return std::make_shared<UniqueValue>();
  if (name_ == "torch" && name == "_unwrap_optional")
    return std::make_shared<BuiltinFunction>(Symbol::aten("_unwrap_optional"), std::nullopt);
  return std::make_shared<BuiltinFunction>(Symbol::fromDomainAndUnqualString(ns_, name),
                                           std::nullopt);
}

SugaredValuePtr OpsValue::attr(const SourceRange&, Emitter&, const std::string& name) {
  return std::make_shared<BuiltinModule>(name, "ops." + name);
}

SugaredValuePtr QualifiedNamespace::attr(const SourceRange& loc, Emitter& e,
                                         const std::string& name) {
  std::string q = prefix_ + "." + name;
  if (e.env().resolveType) {
    if (TypePtr t = e.env().resolveType(q)) return std::make_shared<ClassValue>(t);
  }
  if (e.env().resolveFunction) {
    try {
      if (GraphFunction* fn = e.env().resolveFunction(q))
        return std::make_shared<FunctionValue>(fn);
    } catch (const RecursiveCallError& r) {
      throwErrorAt(loc, r.message());
    }
  }
  return std::make_shared<QualifiedNamespace>(q);
}

SugaredValuePtr FunctionValue::call(const SourceRange& loc, Emitter& e,
                                    const std::vector<NamedValue>& args,
                                    const std::vector<NamedValue>& kwargs, size_t) {
  Graph& g = e.graph();
  auto [index, matched] = matchSchemas({&fn_->schema()}, loc, g, args, kwargs);
  (void)index;
  Node* c = g.create(prim::Constant, 1);
  c->s_(attr::name, fn_->name());
  c->output()->setType(FunctionType::create(fn_));
  g.insertNode(c);
  std::vector<Value*> inputs{c->output()};
  inputs.insert(inputs.end(), matched.inputs.begin(), matched.inputs.end());
  Node* call = e.insert(g.create(prim::CallFunction, inputs, 1), loc);
  call->output()->setType(matched.returnTypes.empty() ? NoneType::get() : matched.returnTypes[0]);
  return simple(call->output());
}

SugaredValuePtr MethodValue::call(const SourceRange& loc, Emitter& e,
                                  const std::vector<NamedValue>& args,
                                  const std::vector<NamedValue>& kwargs, size_t) {
  const FunctionSchema* schema = methodSchema(e, self_->type(), name_, &loc);
  if (!schema)
    throwErrorAt(loc, "Tried to access nonexistent attribute or method '" + name_ + "' of type '" +
                          className(self_->type()) + "'.");
  Graph& g = e.graph();
  // The receiver is a method's first parameter whatever its name (`def forward(s, x)` is valid
  // Python and TorchScript): match against a copy whose first parameter is called self.
  std::optional<FunctionSchema> renamed;
  if (!schema->arguments().empty() && schema->arguments()[0].name() != "self") {
    std::vector<Argument> formals = schema->arguments();
    const Argument& a = formals[0];
    formals[0] =
        Argument("self", a.realType(), a.N(), a.defaultValue(), a.kwargOnly(), a.aliasInfo());
    renamed.emplace(schema->name(), schema->overloadName(), std::move(formals), schema->returns(),
                    schema->isVararg(), schema->isVarret());
    schema = &*renamed;
  }
  auto [index, matched] =
      matchSchemas({schema}, loc, g, args, kwargs, NamedValue{loc, "self", self_});
  (void)index;
  Node* call = e.insert(g.create(prim::CallMethod, matched.inputs, 1), loc);
  call->s_(attr::name, name_);
  call->output()->setType(matched.returnTypes.empty() ? NoneType::get() : matched.returnTypes[0]);
  return simple(call->output());
}

// ---- classes -------------------------------------------------------------------------------

SugaredValuePtr ClassValue::attr(const SourceRange& loc, Emitter& e, const std::string& name) {
  if (name == "__new__" && type_->kind() == TypeKind::ClassType)
    return std::make_shared<ClassNewValue>(type_);
  if (const auto* en = type_->cast<EnumType>()) {
    if (auto m = enumMember(type_, name)) return simple(e.constant(*m, loc));
    throwErrorAt(loc, "'" + en->name() + "' has no enum member '" + name + "'");
  }
  if (const auto* cls = type_->cast<ClassType>()) {
    if (const IValue* c = cls->findConstant(name)) return simple(e.constant(*c, loc));
  }
  throwErrorAt(loc, "'" + type_->annotationStr() + "' has no attribute '" + name + "'");
}

SugaredValuePtr ClassValue::call(const SourceRange& loc, Emitter& e,
                                 const std::vector<NamedValue>& args,
                                 const std::vector<NamedValue>& kwargs, size_t nBinders) {
  Graph& g = e.graph();
  if (const auto* tup = type_->cast<TupleType>()) {
    // NamedTuple construction: match the fields as a schema with their defaults.
    std::vector<Argument> fields;
    for (size_t i = 0; i < tup->elements().size(); ++i) {
      std::optional<IValue> dflt;
      if (i < tup->defaults().size() && tup->defaults()[i]) dflt = *tup->defaults()[i];
      fields.emplace_back(tup->fieldNames()[i], tup->elements()[i], std::nullopt, dflt);
    }
    FunctionSchema schema(tup->name(), "", fields, {Argument("", type_)});
    auto [index, matched] = matchSchemas({&schema}, loc, g, args, kwargs);
    (void)index;
    return simple(e.insert(g.createTuple(matched.inputs, type_), loc)->output());
  }
  if (type_->kind() == TypeKind::ClassType) {
    Value* obj = ClassNewValue(type_).call(loc, e, {}, {}, 1)->asValue(loc, e);
    // A module class without its own __init__ gets nn.Module's, which takes no arguments.
    if (type_->cast<ClassType>()->isModule() && !methodSchema(e, type_, "__init__")) {
      if (!args.empty() || !kwargs.empty())
        throwErrorAt(loc, "'" + className(type_) +
                              "' has no __init__ of its own: nn.Module's takes no arguments");
      return simple(obj);
    }
    MethodValue(obj, "__init__").call(loc, e, args, kwargs, nBinders);
    return simple(obj);
  }
  throwErrorAt(loc, "cannot call type '" + type_->annotationStr() + "'");
}

SugaredValuePtr ClassNewValue::call(const SourceRange& loc, Emitter& e,
                                    const std::vector<NamedValue>&, const std::vector<NamedValue>&,
                                    size_t) {
  Node* n = e.insert(e.graph().create(prim::CreateObject, 1), loc);
  n->output()->setType(type_);
  return simple(n->output());
}

// ---- special forms -------------------------------------------------------------------------

namespace {
const std::map<std::string, std::string>& builtinFunctionOps() {
  static const std::map<std::string, std::string> ops = {
      {"len", "aten::len"},         {"min", "prim::min"},     {"max", "prim::max"},
      {"abs", "prim::abs"},         {"round", "aten::round"}, {"sum", "aten::sum"},
      {"divmod", "aten::divmod"},   {"ord", "aten::ord"},     {"chr", "aten::chr"},
      {"hex", "aten::hex"},         {"oct", "aten::oct"},     {"bin", "aten::bin"},
      {"hash", "aten::hash"},       {"any", "aten::any"},     {"all", "aten::all"},
      {"sorted", "aten::sorted"},   {"list", "aten::list"},   {"dict", "aten::dict"},
      {"complex", "aten::Complex"},
  };
  return ops;
}
}  // namespace

SugaredValuePtr SpecialFormValue::call(const SourceRange& loc, Emitter& e,
                                       const std::vector<NamedValue>& args,
                                       const std::vector<NamedValue>& kwargs, size_t) {
  Graph& g = e.graph();
  if (name_ == "print") {
    std::vector<Value*> values;
    for (const auto& a : args) values.push_back(a.value);
    for (const auto& k : kwargs)
      throwErrorAt(k.loc, "print does not take keyword arguments (got '" + k.name + "')");
    e.insert(g.create(prim::Print, values, 0), loc);
    return std::make_shared<NoneValue>();
  }
  if (name_ == "range") {
    if (!kwargs.empty()) throwErrorAt(loc, "range does not take keyword arguments");
    std::vector<Value*> in;
    for (const auto& a : args) in.push_back(a.value);
    return std::make_shared<RangeValue>(loc, e, in);
  }
  if (name_ == "enumerate" || name_ == "zip") {
    auto tree = std::make_shared<IterableTree>();
    size_t first = 0;
    if (name_ == "enumerate") {
      if (args.empty()) throwErrorAt(loc, "enumerate expected at least 1 argument");
      Value* start = args.size() > 1 ? args[1].value : nullptr;
      for (const auto& k : kwargs)
        if (k.name == "start") start = k.value;
      // The counter has no length of its own: the loop runs len(x) times.
      auto counter = std::make_shared<RangeValue>(
          loc, e, std::vector<Value*>{start ? start : e.constant(IValue(int64_t(0)), loc)});
      counter->start_ = counter->end_;
      counter->end_ = nullptr;
      counter->hasOnlyEnd_ = !start;
      tree->children_.push_back(counter);
      tree->children_.push_back(makeSugared(args[0].value)->iter(loc, e));
      return tree;
    }
    for (size_t i = first; i < args.size(); ++i)
      tree->children_.push_back(makeSugared(args[i].value)->iter(loc, e));
    return tree;
  }
  if (name_ == "int" || name_ == "float" || name_ == "bool" || name_ == "str") {
    static const std::map<std::string, std::pair<TypePtr, std::string>> casts = {
        {"int", {IntType::get(), "aten::Int"}},
        {"float", {FloatType::get(), "aten::Float"}},
        {"bool", {BoolType::get(), "aten::Bool"}},
        {"str", {StringType::get(), "aten::str"}}};
    const auto& [type, op] = casts.at(name_);
    if (args.empty() && kwargs.empty()) {
      if (name_ == "int") return simple(e.constant(IValue(int64_t(0)), loc));
      if (name_ == "float") return simple(e.constant(IValue(0.0), loc));
      if (name_ == "bool") return simple(e.constant(IValue(false), loc));
      return simple(e.constant(IValue(std::string()), loc));
    }
    if (args.size() == 1 && kwargs.empty() && *args[0].value->type() == *type)
      return simple(args[0].value);
    return simple(emitBuiltinCall(loc, g, Symbol::fromQualString(op), args, kwargs));
  }
  if (name_ == "tuple") {
    if (args.size() == 1 && args[0].value->type()->kind() == TypeKind::TupleType)
      return simple(args[0].value);
    throwErrorAt(loc, "tuple() is only supported on tuples");
  }
  if (name_ == "len" && args.size() == 1 && args[0].value->type()->kind() == TypeKind::ClassType) {
    return MethodValue(args[0].value, "__len__").call(loc, e, {}, {}, 1);
  }
  if (name_ == "len" && args.size() == 1 && isModuleContainer(args[0].value->type())) {
    ModuleContainerValue mc(args[0].value);
    return simple(e.constant(IValue(*mc.staticLen()), loc));
  }
  auto it = builtinFunctionOps().find(name_);
  if (it != builtinFunctionOps().end())
    return simple(emitBuiltinCall(loc, g, Symbol::fromQualString(it->second), args, kwargs));
  throwErrorAt(loc, "'" + name_ + "' is not supported here");
}

SugaredValuePtr ExceptionValue::call(const SourceRange& loc, Emitter& e,
                                     const std::vector<NamedValue>& args,
                                     const std::vector<NamedValue>&, size_t) {
  Value* msg;
  if (args.empty()) {
    msg = e.constant(IValue(std::string()), loc);
  } else if (args.size() == 1) {
    msg = args[0].value;
    if (!msg->type()->isSubtypeOf(*StringType::get())) msg = e.builtin(loc, "aten::str", {msg});
  } else {
    std::vector<Value*> vals;
    for (const auto& a : args) vals.push_back(a.value);
    Value* tup = e.insert(e.graph().createTuple(vals), loc)->output();
    msg = e.builtin(loc, "aten::str", {tup});
  }
  Value* cls = e.constant(IValue("builtins." + name_), loc);
  return std::make_shared<ExceptionMessageValue>(msg, cls);
}

// ---- iterables -----------------------------------------------------------------------------

RangeValue::RangeValue(const SourceRange& loc, Emitter& e, std::vector<Value*> inputs) {
  if (inputs.empty() || inputs.size() > 3)
    throwErrorAt(loc, "range expected at least 1 argument and at most 3 arguments, got " +
                          std::to_string(inputs.size()));
  for (Value* v : inputs) {
    if (v->type()->kind() != TypeKind::IntType)
      throwErrorAt(loc, "all inputs of range must be ints, found " + v->type()->reprStr() +
                            " in argument " + std::to_string(&v - inputs.data()));
  }
  if (inputs.size() == 1) {
    end_ = inputs[0];
    start_ = e.constant(IValue(int64_t(0)), loc);
    step_ = e.constant(IValue(int64_t(1)), loc);
    hasOnlyEnd_ = true;
  } else {
    start_ = inputs[0];
    end_ = inputs[1];
    step_ = inputs.size() == 3 ? inputs[2] : e.constant(IValue(int64_t(1)), loc);
  }
}

Value* RangeValue::len(const SourceRange& loc, Emitter& e) {
  if (!end_) return nullptr;  // enumerate's unbounded counter
  if (hasOnlyEnd_) return end_;
  return e.builtin(loc, "aten::__range_length", {start_, end_, step_});
}

SugaredValuePtr RangeValue::getitem(const SourceRange& loc, Emitter& e, Value* idx) {
  if (hasOnlyEnd_) return simple(idx);
  return simple(e.builtin(loc, "aten::__derive_index", {idx, start_, step_}));
}

Value* IterableTree::len(const SourceRange& loc, Emitter& e) {
  std::vector<Value*> lens;
  for (const auto& c : children_)
    if (Value* l = c->len(loc, e)) lens.push_back(l);
  Value* list = e.insert(e.graph().createList(IntType::get(), lens), loc)->output();
  return e.builtin(loc, "prim::min", {list});
}

SugaredValuePtr IterableTree::getitem(const SourceRange& loc, Emitter& e, Value* idx) {
  std::vector<Value*> elems;
  for (const auto& c : children_) elems.push_back(c->getitem(loc, e, idx)->asValue(loc, e));
  return simple(e.insert(e.graph().createTuple(elems), loc)->output());
}

bool IterableTree::shouldUnroll() const {
  for (const auto& c : children_)
    if (c->shouldUnroll()) return true;
  return false;
}

std::vector<SugaredValuePtr> IterableTree::asTuple(const SourceRange& loc, Emitter& e,
                                                   std::optional<size_t>) {
  // Unrolled zip/enumerate over tuples: element i of each child, up to the shortest.
  std::optional<int64_t> n;
  for (const auto& c : children_) {
    if (auto l = c->staticLen()) n = n ? std::min(*n, *l) : *l;
  }
  if (!n) throwErrorAt(loc, "cannot unroll a zip/enumerate without a tuple of known length");
  std::vector<std::vector<SugaredValuePtr>> perChild;
  for (const auto& c : children_) {
    if (c->shouldUnroll())
      perChild.push_back(c->asTuple(loc, e, std::nullopt));
    else
      perChild.emplace_back();
  }
  std::vector<SugaredValuePtr> out;
  for (int64_t i = 0; i < *n; ++i) {
    std::vector<SugaredValuePtr> items;
    for (size_t k = 0; k < children_.size(); ++k) {
      if (!perChild[k].empty())
        items.push_back(perChild[k][static_cast<size_t>(i)]);
      else
        items.push_back(children_[k]->getitem(loc, e, e.constant(IValue(i), loc)));
    }
    out.push_back(std::make_shared<SugaredTupleValue>(items));
  }
  return out;
}

// ---- module containers ---------------------------------------------------------------------

std::optional<int64_t> ModuleContainerValue::staticLen() const {
  return int64_t(self_->type()->cast<ClassType>()->attributes().size()) -
         int64_t(self_->type()->cast<ClassType>()->findAttribute("training") ? 1 : 0);
}

SugaredValuePtr ModuleContainerValue::attr(const SourceRange& loc, Emitter& e,
                                           const std::string& name) {
  return SimpleValue(self_).attr(loc, e, name);
}

SugaredValuePtr ModuleContainerValue::call(const SourceRange& loc, Emitter& e,
                                           const std::vector<NamedValue>& args,
                                           const std::vector<NamedValue>& kwargs, size_t nBinders) {
  return SimpleValue(self_).call(loc, e, args, kwargs, nBinders);
}

std::vector<SugaredValuePtr> ModuleContainerValue::asTuple(const SourceRange& loc, Emitter& e,
                                                           std::optional<size_t>) {
  std::vector<SugaredValuePtr> out;
  const auto* cls = self_->type()->cast<ClassType>();
  for (const auto& a : cls->attributes()) {
    if (a.type->kind() != TypeKind::ClassType && a.type->kind() != TypeKind::InterfaceType)
      continue;
    out.push_back(SimpleValue(self_).attr(loc, e, a.name));
  }
  return out;
}

SugaredValuePtr ConstantTableValue::attr(const SourceRange& loc, Emitter& e,
                                         const std::string& name) {
  Value* v = e.constant(constantsTableEntry(e.env().constants, name, loc), loc);
  // As PyTorch's importer: "specialized tensor information does not need to be propagated on
  // the constant" (a list of CONSTANTS.cN is then Tensor[], as the schemas expect).
  if (v->type()->kind() == TypeKind::TensorType) v->setType(TensorType::get());
  return simple(v);
}

// ---- name lookup -------------------------------------------------------------------------

SugaredValuePtr Emitter::getSugaredVar(const SourceRange& loc, const std::string& name,
                                       bool required) {
  for (size_t i = frames_.size(); i-- > 0;) {
    auto& f = frames_[i];
    if (auto it = f.types.find(name); it != f.types.end()) {
      Node* load = graph_->create(prim::Load, 1);
      load->s_(attr::name, name);
      load->output()->setType(it->second);
      insert(load, loc);
      if (meaningfulName(name)) load->output()->setDebugName(name);
      return makeSugared(load->output());
    }
    if (auto it = f.sugared.find(name); it != f.sugared.end()) return it->second;
  }
  static const std::set<std::string> specialForms = {
      "print", "len", "range", "min",   "max",       "abs", "int",     "float", "bool", "str",
      "round", "sum", "list",  "tuple", "enumerate", "zip", "divmod",  "any",   "all",  "sorted",
      "ord",   "chr", "hash",  "hex",   "oct",       "bin", "complex", "dict"};
  static const std::set<std::string> exceptions = {
      "Exception",     "RuntimeError",      "ValueError",     "TypeError",
      "KeyError",      "IndexError",        "AssertionError", "NotImplementedError",
      "StopIteration", "ZeroDivisionError", "AttributeError", "ArithmeticError",
      "ImportError",   "OverflowError",     "LookupError"};
  if (env_.resolveImport) {
    // `import torch.nn.functional as F`, `from math import sqrt`: walk the dotted path from
    // its root module. typing's names are types, handled where annotations are parsed.
    auto dotted = env_.resolveImport(name);
    if (dotted && dotted->rfind("typing", 0) != 0 && dotted->substr(0, dotted->find('.')) != name) {
      size_t dot = dotted->find('.');
      SugaredValuePtr v = getSugaredVar(loc, dotted->substr(0, dot), true);
      while (dot != std::string::npos) {
        size_t next = dotted->find('.', dot + 1);
        v = v->attr(loc, *this,
                    dotted->substr(dot + 1,
                                   next == std::string::npos ? std::string::npos : next - dot - 1));
        dot = next;
      }
      return v;
    }
  }
  if (name == "torch") return std::make_shared<BuiltinModule>("aten", "torch");
  if (name == "math") return std::make_shared<BuiltinModule>("aten", "math");
  if (name == "ops") return std::make_shared<OpsValue>();
  if (name == "CONSTANTS") return std::make_shared<ConstantTableValue>();
  if (name == "__torch__") return std::make_shared<QualifiedNamespace>("__torch__");
  if (name == "inf") return simple(constant(IValue(std::numeric_limits<double>::infinity()), loc));
  if (name == "nan") return simple(constant(IValue(std::numeric_limits<double>::quiet_NaN()), loc));
  if (specialForms.count(name)) return std::make_shared<SpecialFormValue>(name);
  if (exceptions.count(name)) return std::make_shared<ExceptionValue>(name);
  if (env_.resolveType) {
    if (TypePtr t = env_.resolveType(name)) return std::make_shared<ClassValue>(t);
  }
  if (env_.resolveFunction) {
    try {
      if (GraphFunction* fn = env_.resolveFunction(name))
        return std::make_shared<FunctionValue>(fn);
    } catch (const RecursiveCallError& r) {
      throwErrorAt(loc, r.message());
    }
  }
  for (size_t i = frames_.size(); i-- > 0;) {
    auto it = frames_[i].errors.find(name);
    if (it != frames_[i].errors.end()) throwErrorAt(loc, it->second);
  }
  if (!required) return nullptr;
  throwErrorAt(loc, "undefined value " + name);
}

}  // namespace torchless::frontend
