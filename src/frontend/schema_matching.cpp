#include "frontend/schema_matching.h"

#include "ir/operator_matching.h"
#include "ir/operator_registry.h"

#include <map>
#include <sstream>
#include <unordered_set>

namespace torchless::frontend {

SourceLocationPtr toLocation(const SourceRange& range) {
  if (!range.valid()) return nullptr;
  auto loc = std::make_shared<SourceLocation>();
  loc->filename = range.source()->filename();
  loc->line = range.line();
  loc->col = range.col() - 1;
  return loc;
}

Node* insertNodeAt(Graph& graph, Node* n, const SourceRange& range) {
  graph.insertNode(n);
  if (!n->sourceRange()) n->setSourceRange(toLocation(range));
  return n;
}

Value* insertConstantAt(Graph& graph, const IValue& value, const SourceRange& range) {
  return graph.insertConstant(value, toLocation(range));
}

std::vector<NamedValue> toNamedValues(const SourceRange& loc, const std::vector<Value*>& values) {
  std::vector<NamedValue> out;
  out.reserve(values.size());
  for (Value* v : values) out.push_back(NamedValue{loc, "", v});
  return out;
}

namespace {

TypePtr unwrapOptional(const TypePtr& t) {
  if (const auto* o = t->cast<OptionalType>()) return o->getElementType();
  return t;
}

/// A homogeneous tuple whose elements fit the list's element type.
bool convertibleToList(const TypePtr& type, const TypePtr& listTypeOrOther) {
  const auto* list = listTypeOrOther->cast<ListType>();
  if (!list) return false;
  if (type->isSubtypeOf(*listTypeOrOther)) return true;
  if (const auto* tup = type->cast<TupleType>()) {
    for (const auto& e : tup->elements()) {
      if (!e->isSubtypeOf(*list->getElementType())) return false;
    }
    return true;
  }
  return false;
}

bool varargsCanBeUsedAsList(const FunctionSchema& schema, size_t index, const Argument& arg) {
  bool isLast = index + 1 == schema.arguments().size() || schema.arguments()[index + 1].kwargOnly();
  const auto* list = arg.type()->cast<ListType>();
  bool typevarList = list && list->getElementType()->cast<VarType>();
  return isLast && list && !arg.N() && !typevarList;
}

bool isIntOrFloatUsedAsList(const Value* value, const Argument& arg) {
  const auto* list = unwrapOptional(arg.type())->cast<ListType>();
  if (!list || !arg.N()) return false;
  const TypePtr& elem = list->getElementType();
  const TypePtr& vt = value->type();
  return (elem->kind() == TypeKind::IntType && vt->kind() == TypeKind::IntType) ||
         (elem->kind() == TypeKind::FloatType &&
          (vt->kind() == TypeKind::FloatType || vt->kind() == TypeKind::IntType));
}

/// Removes the nodes inserted since `mark` (the node before the insertion point at the start).
class InsertionRollback {
 public:
  explicit InsertionRollback(Graph& graph) : graph_(graph) {
    Node* ip = graph.insertPoint();
    before_ = ip->prev();
  }
  void rollback() {
    Node* ip = graph_.insertPoint();
    std::vector<Node*> created;
    for (Node* n = ip->prev(); n != before_; n = n->prev()) created.push_back(n);
    for (Node* n : created) {
      bool used = false;
      for (Value* o : n->outputs()) used |= o->hasUses();
      if (!used) n->destroy();
    }
  }

 private:
  Graph& graph_;
  Node* before_;
};

Value* insertBuiltin(Graph& graph, const SourceRange& loc, const char* qualName, Value* v) {
  return emitBuiltinCall(loc, graph, Symbol::fromQualString(qualName), {NamedValue{loc, "", v}},
                         {});
}

Value* tryCreateList(const TypePtr& elemType, Graph& graph, const SourceRange& loc,
                     const std::vector<NamedValue>& args, size_t from, std::ostream* failures,
                     const std::string& argName, const std::function<std::ostream&()>& err,
                     bool allowConversions, TypeEnv& env) {
  std::vector<Value*> values;
  for (size_t i = from; i < args.size(); ++i) {
    Value* v = args[i].value;
    if (elemType->hasFreeVariables() && !matchTypeVariables(elemType, v->type(), env)) {
      if (failures)
        err() << "Could not match type " << v->type()->reprStr() << " to " << elemType->reprStr()
              << " in argument '" << argName << "'.\n";
      return nullptr;
    }
    TypePtr concrete = substituteTypeVariables(elemType, env);
    v = tryConvertToType(loc, graph, concrete, v, allowConversions);
    if (!v->type()->isSubtypeOf(*concrete)) {
      if (failures)
        err() << "Expected a value of type '" << concrete->reprStr() << "' for argument '"
              << argName << "' but instead found type '" << v->type()->reprStr() << "'.\n";
      return nullptr;
    }
    values.push_back(v);
  }
  TypePtr concrete = substituteTypeVariables(elemType, env);
  return insertNodeAt(graph, graph.createList(concrete, values), loc)->output();
}

Value* tryMatchArgument(const Argument& arg, Graph& graph, const SourceRange& loc, Value* value,
                        std::ostream* failures, const std::function<std::ostream&()>& err,
                        bool allowConversions, TypeEnv& env) {
  if (isIntOrFloatUsedAsList(value, arg)) {
    std::vector<Value*> repeated(static_cast<size_t>(*arg.N()), value);
    value = insertNodeAt(graph, graph.createList(value->type(), repeated), loc)->output();
  }
  // Only type variables are matched here; plain types are checked by subtyping below.
  if (arg.type()->hasFreeVariables() && !matchTypeVariables(arg.type(), value->type(), env)) {
    if (failures)
      err() << "Could not match type " << value->type()->reprStr() << " to "
            << arg.type()->reprStr() << " in argument '" << arg.name() << "'.\n";
    return nullptr;
  }
  TypePtr concrete = substituteTypeVariables(arg.type(), env);
  if (concrete->hasFreeVariables()) {
    if (failures)
      err() << "Type variables in type " << arg.type()->reprStr()
            << " could not be inferred from actual type " << value->type()->reprStr();
    return nullptr;
  }
  value = tryConvertToType(loc, graph, concrete, value, allowConversions);
  if (!value->type()->isSubtypeOf(*concrete)) {
    if (failures) {
      err() << "Expected a value of type '" << concrete->reprStr() << "' for argument '"
            << arg.name() << "' but instead found type '" << value->type()->reprStr() << "'.\n";
      if (concrete->kind() == TypeKind::TensorType &&
          value->type()->isSubtypeOf(*NumberType::get()))
        err() << "Inferred '" << arg.name()
              << "' to be of type 'Tensor' because it was not annotated with an explicit type.\n";
    }
    return nullptr;
  }
  return value;
}

}  // namespace

std::vector<Value*> createTupleUnpack(Graph& graph, Value* tuple, const SourceRange& loc) {
  if (tuple->node()->kind() == prim::TupleConstruct) return tuple->node()->inputs();
  Node* n = insertNodeAt(graph, graph.createTupleUnpack(tuple), loc);
  return n->outputs();
}

Value* tryConvertToType(const SourceRange& loc, Graph& graph, const TypePtr& concreteType,
                        Value* value, bool allowConversions) {
  if (const auto* opt = concreteType->cast<OptionalType>()) {
    if (value->type()->kind() != TypeKind::OptionalType &&
        !value->type()->isSubtypeOf(*NoneType::get())) {
      return tryConvertToType(loc, graph, opt->getElementType(), value, allowConversions);
    }
  }
  if (const auto* valueTuple = value->type()->cast<TupleType>()) {
    TypePtr target = unwrapOptional(concreteType);
    if (target->kind() == TypeKind::ListType && convertibleToList(value->type(), target)) {
      auto unpacked = createTupleUnpack(graph, value, loc);
      TypePtr elem = target->cast<ListType>()->getElementType();
      value = insertNodeAt(graph, graph.createList(elem, unpacked), loc)->output();
    }
    if (const auto* concreteTuple = concreteType->cast<TupleType>()) {
      if (!valueTuple->isSubtypeOf(*concreteTuple) &&
          concreteTuple->elements().size() == valueTuple->elements().size()) {
        auto unpacked = createTupleUnpack(graph, value, loc);
        std::vector<Value*> converted;
        for (size_t i = 0; i < unpacked.size(); ++i)
          converted.push_back(tryConvertToType(loc, graph, concreteTuple->elements()[i],
                                               unpacked[i], allowConversions));
        value = insertNodeAt(graph, graph.createTuple(converted), loc)->output();
      }
    }
  }
  if (allowConversions) {
    const TypePtr& vt = value->type();
    bool isTensor = vt->isSubtypeOf(*TensorType::get());
    bool isNumber = vt->kind() == TypeKind::NumberType;
    auto k = concreteType->kind();
    bool toFloat = k == TypeKind::FloatType, toInt = k == TypeKind::IntType,
         toNumber = k == TypeKind::NumberType, toComplex = k == TypeKind::ComplexType;
    if (isTensor) {
      if (toFloat)
        value = insertBuiltin(graph, loc, "aten::FloatImplicit", value);
      else if (toComplex)
        value = insertBuiltin(graph, loc, "aten::ComplexImplicit", value);
      else if (toInt)
        value = insertBuiltin(graph, loc, "aten::IntImplicit", value);
      else if (toNumber)
        value = insertBuiltin(graph, loc, "aten::ScalarImplicit", value);
    } else if (isNumber) {
      if (toFloat)
        value = insertBuiltin(graph, loc, "aten::Float", value);
      else if (toInt)
        value = insertBuiltin(graph, loc, "aten::Int", value);
    } else if (vt->kind() == TypeKind::BoolType) {
      if (toFloat)
        value = insertBuiltin(graph, loc, "aten::Float", value);
      else if (toInt || toNumber)
        value = insertBuiltin(graph, loc, "aten::Int", value);
    }
    if (value->type()->isSubtypeOf(*StringType::get()) &&
        concreteType->isSubtypeOf(*DeviceObjType::get())) {
      return insertBuiltin(graph, loc, "aten::device", value);
    }
  }
  return value;
}

std::optional<MatchedSchema> tryMatchSchema(const FunctionSchema& schema, const SourceRange& loc,
                                            Graph& graph, const std::vector<NamedValue>& args,
                                            const std::vector<NamedValue>& kwargs,
                                            const std::optional<NamedValue>& selfIn,
                                            std::ostream* failures, bool allowConversions) {
  auto err = [&]() -> std::ostream& {
    *failures << "\n" << schema.str() << ":\n";
    return *failures;
  };
  InsertionRollback rollback(graph);
  auto fail = [&]() -> std::optional<MatchedSchema> {
    rollback.rollback();
    return std::nullopt;
  };
  std::optional<NamedValue> self = selfIn;
  TypeEnv env;
  std::vector<Value*> inputs;
  std::vector<bool> usedKwarg(kwargs.size(), false);
  size_t usedArgs = 0;
  const auto& formals = schema.arguments();
  for (size_t i = 0; i < formals.size(); ++i) {
    const Argument& arg = formals[i];
    Value* actual = nullptr;
    SourceRange actualLoc = loc;
    if (arg.name() == "self" && self) {
      actual = self->value;
      actualLoc = self->loc;
      self.reset();
    } else if (!arg.kwargOnly() && usedArgs < args.size()) {
      if (allowConversions && varargsCanBeUsedAsList(schema, i, arg)) {
        Value* first = args[usedArgs].value;
        TypePtr listType = unwrapOptional(arg.type());
        if (first->type()->kind() != TypeKind::ListType &&
            !convertibleToList(first->type(), listType)) {
          TypePtr elem = listType->cast<ListType>()->getElementType();
          Value* list = tryCreateList(elem, graph, loc, args, usedArgs, failures, arg.name(), err,
                                      allowConversions, env);
          if (!list) return fail();
          usedArgs = args.size();
          inputs.push_back(list);
          continue;
        }
      }
      actual = args[usedArgs].value;
      actualLoc = args[usedArgs].loc;
      ++usedArgs;
    } else {
      std::optional<size_t> kw;
      for (size_t k = 0; k < kwargs.size(); ++k) {
        if (kwargs[k].name == arg.name()) kw = k;
      }
      if (kw) {
        if (usedKwarg[*kw]) {
          if (failures) err() << "Argument " << arg.name() << " specified twice in schema.\n";
          return fail();
        }
        usedKwarg[*kw] = true;
        actual = kwargs[*kw].value;
        actualLoc = kwargs[*kw].loc;
      } else if (arg.defaultValue()) {
        actual = graph.insertConstant(*arg.defaultValue());
      } else {
        if (failures) err() << "Argument " << arg.name() << " not provided.\n";
        return fail();
      }
    }
    Value* matched =
        tryMatchArgument(arg, graph, actualLoc, actual, failures, err, allowConversions, env);
    if (!matched) return fail();
    inputs.push_back(matched);
  }
  if (self) {
    if (failures) err() << "Provided self argument not used in schema.\n";
    return fail();
  }
  if (schema.isVararg()) {
    for (; usedArgs < args.size(); ++usedArgs) inputs.push_back(args[usedArgs].value);
  }
  if (usedArgs < args.size()) {
    if (failures)
      err() << "Expected at most " << usedArgs << " arguments but found " << args.size()
            << " positional arguments.\n";
    return fail();
  }
  for (size_t k = 0; k < kwargs.size(); ++k) {
    if (!usedKwarg[k]) {
      if (failures) {
        if (!schema.argumentIndexWithName(kwargs[k].name))
          err() << "Keyword argument " << kwargs[k].name << " unknown.\n";
        else
          err() << "Keyword argument " << kwargs[k].name << " specified twice.\n";
      }
      return fail();
    }
  }
  MatchedSchema result;
  result.inputs = std::move(inputs);
  for (const Argument& r : schema.returns()) {
    TypePtr t = substituteTypeVariables(r.type(), env);
    if (t->hasFreeVariables()) {
      if (failures)
        err() << "Type variables in return type " << r.type()->reprStr()
              << " could not be inferred.\n";
      return fail();
    }
    result.returnTypes.push_back(t);
    result.returnNames.push_back(r.name());
  }
  return result;
}

namespace {
std::string prefixLines(const std::string& text, const std::string& prefix) {
  std::string out;
  bool atStart = true;
  for (char c : text) {
    if (atStart) out += prefix;
    out += c;
    atStart = c == '\n';
  }
  return out;
}
}  // namespace

std::pair<size_t, MatchedSchema> matchSchemas(const std::vector<const FunctionSchema*>& schemas,
                                              const SourceRange& loc, Graph& graph,
                                              const std::vector<NamedValue>& args,
                                              const std::vector<NamedValue>& kwargs,
                                              const std::optional<NamedValue>& self) {
  TL_INTERNAL_ASSERT(!schemas.empty());
  if (schemas.size() == 1) {
    std::stringstream failures;
    if (auto m = tryMatchSchema(*schemas[0], loc, graph, args, kwargs, self, &failures, true))
      return {0, *m};
    std::string msg = failures.str();
    // One candidate: PyTorch reports its failure directly (without the leading newline).
    if (!msg.empty() && msg[0] == '\n') msg.erase(0, 1);
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    throwErrorAt(loc, msg);
  }
  for (bool allowConversions : {false, true}) {
    for (size_t i = 0; i < schemas.size(); ++i) {
      if (auto m = tryMatchSchema(*schemas[i], loc, graph, args, kwargs, self, nullptr,
                                  allowConversions))
        return {i, *m};
    }
  }
  std::stringstream failures;
  for (const FunctionSchema* s : schemas)
    tryMatchSchema(*s, loc, graph, args, kwargs, self, &failures, true);
  std::string msg = "Arguments for call are not valid.\nThe following variants are available:\n" +
                    prefixLines(failures.str(), "  ") + "\nThe original call is";
  throwErrorAt(loc, msg);
}

namespace {
/// PyTorch's scalar_operators builtins (frontend/builtin_functions.cpp): a number on the left
/// of a tensor (`2.0 * x`, `1 - x`, `3 < x`) calls a TorchScript function that swaps the
/// operands (`x * 2.0`, `neg(x) + 1`, `x > 3`). PyTorch tries those functions with the
/// operators, without implicit conversions first, so they win over `mul(float, float)` with
/// the tensor converted to a float. Returns the last node emitted, or null when `name` with
/// these arguments is not such a case (or an operator matches them without conversions).
Node* emitReflectedScalarOp(const SourceRange& loc, Graph& graph, Symbol name,
                            const std::vector<NamedValue>& args,
                            const std::vector<NamedValue>& kwargs,
                            const std::optional<NamedValue>& self,
                            const std::vector<const OpInfo*>& variants) {
  if (args.size() != 2 || !kwargs.empty() || self) return nullptr;
  const TypePtr& a = args[0].value->type();
  const TypePtr& b = args[1].value->type();
  const bool number = a->kind() == TypeKind::IntType || a->kind() == TypeKind::FloatType ||
                      a->kind() == TypeKind::ComplexType;
  if (!number || !b->isSubtypeOf(*TensorType::get())) return nullptr;
  static const std::map<std::string, const char*> swapped = {
      {"aten::mul", "aten::mul"}, {"aten::add", "aten::add"}, {"aten::eq", "aten::eq"},
      {"aten::ne", "aten::ne"},   {"aten::lt", "aten::gt"},   {"aten::le", "aten::ge"},
      {"aten::gt", "aten::lt"},   {"aten::ge", "aten::le"},   {"aten::sub", nullptr},
      {"aten::div", nullptr}};
  auto it = swapped.find(name.toQualString());
  if (it == swapped.end()) return nullptr;
  const bool comparison = it->second && std::string(it->second) != "aten::mul" &&
                          std::string(it->second) != "aten::add";
  if (comparison && a->kind() == TypeKind::ComplexType) return nullptr;
  for (const OpInfo* op : variants)
    if (tryMatchSchema(op->schema, loc, graph, args, kwargs, self, nullptr, false)) return nullptr;
  NamedValue lhs = args[0], rhs = args[1];
  auto call = [&](const char* op, std::vector<NamedValue> in) {
    return emitBuiltinNode(loc, graph, Symbol::fromQualString(op), in, {}, std::nullopt);
  };
  if (it->second) return call(it->second, {rhs, lhs});
  if (name.toQualString() == "aten::sub") {  // neg(b) + a
    Node* neg = call("aten::neg", {rhs});
    return call("aten::add", {NamedValue{loc, "", neg->output()}, lhs});
  }
  Node* rec = call("aten::reciprocal", {rhs});  // reciprocal(b) * a
  return call("aten::mul", {NamedValue{loc, "", rec->output()}, lhs});
}
}  // namespace

Node* emitBuiltinNode(const SourceRange& loc, Graph& graph, Symbol name,
                      const std::vector<NamedValue>& args, const std::vector<NamedValue>& kwargs,
                      const std::optional<NamedValue>& self) {
  initOperatorRegistry();
  // Builtin functions PyTorch defines in TorchScript source rather than as operators
  // (torch/csrc/jit/frontend/builtin_functions.cpp); each is one call of an operator, which
  // we emit directly. `ops.prim.shape(x)` is `x.size()`.
  if (name.toQualString() == "prim::shape" && args.size() == 1 && kwargs.empty() && !self)
    return emitBuiltinNode(loc, graph, Symbol::aten("size"), args, kwargs, self);
  const auto& variants = OperatorRegistry::global().lookup(name.toQualString());
  if (Node* n = emitReflectedScalarOp(loc, graph, name, args, kwargs, self, variants)) return n;
  if (variants.empty()) {
    throwErrorAt(loc, "Unknown builtin op: " + name.toQualString() +
                          ".\nCould not find any similar ops to " + name.toQualString() +
                          ". This op may not exist or may not be currently supported in "
                          "TorchScript.");
  }
  // PyTorch registers the specific overloads of the Python number operators (aten::add.int,
  // aten::mul.float_int ...) before the generic `Scalar` ones; our table keeps the order of
  // the generated schema list, so generic Scalar overloads are tried last.
  std::vector<const FunctionSchema*> schemas;
  schemas.reserve(variants.size());
  for (const OpInfo* op : variants) schemas.push_back(&op->schema);
  auto scalarArgs = [](const FunctionSchema* s) {
    int n = 0;
    for (const Argument& a : s->arguments()) n += a.type()->kind() == TypeKind::NumberType;
    return n;
  };
  // Overloads taking `Any` (aten::dequantize.any, registered with the prim ops after the
  // native ones in PyTorch) come last too: torch.dequantize(x) is aten::dequantize.self.
  auto anyArgs = [](const FunctionSchema* s) {
    for (const Argument& a : s->arguments())
      if (a.type()->kind() == TypeKind::AnyType) return true;
    return false;
  };
  auto rank = [&](const FunctionSchema* s) {
    bool generic = s->arguments().size() >= 1 && scalarArgs(s) == int(s->arguments().size());
    return (generic ? 1 : 0) + (anyArgs(s) ? 2 : 0);
  };
  std::stable_sort(
      schemas.begin(), schemas.end(),
      [&](const FunctionSchema* a, const FunctionSchema* b) { return rank(a) < rank(b); });
  auto [index, matched] = matchSchemas(schemas, loc, graph, args, kwargs, self);
  (void)index;
  Node* n = graph.create(name, matched.inputs, 0);
  for (const TypePtr& t : matched.returnTypes) n->addOutput()->setType(t);
  return insertNodeAt(graph, n, loc);
}

Value* emitBuiltinCall(const SourceRange& loc, Graph& graph, Symbol name,
                       const std::vector<NamedValue>& args, const std::vector<NamedValue>& kwargs,
                       const std::optional<NamedValue>& self) {
  Node* n = emitBuiltinNode(loc, graph, name, args, kwargs, self);
  if (n->outputs().size() == 1) return n->output();
  return insertNodeAt(graph, graph.createTuple(n->outputs()), loc)->output();
}

}  // namespace torchless::frontend
