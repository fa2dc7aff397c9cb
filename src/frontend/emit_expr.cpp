// The IR emitter: expressions (operators, literals, calls, subscripts, comprehensions, the
// special forms that see their arguments unevaluated) and type annotations.
#include "frontend/emitter.h"

#include "core/stack_guard.h"
#include "frontend/literal.h"

#include <cmath>
#include <limits>

namespace torchless::frontend {

namespace {

const char* binaryOpName(TreeKind kind) {
  switch (kind) {
    case TreeKind::Add: return "aten::add";
    case TreeKind::Sub: return "aten::sub";
    case TreeKind::Mul: return "aten::mul";
    case TreeKind::Div: return "aten::div";
    case TreeKind::FloorDiv: return "aten::floordiv";
    case TreeKind::Mod: return "aten::remainder";
    case TreeKind::Pow: return "aten::pow";
    case TreeKind::MatMul: return "aten::matmul";
    case TreeKind::LShift: return "aten::__lshift__";
    case TreeKind::RShift: return "aten::__rshift__";
    case TreeKind::BitAnd: return "aten::__and__";
    case TreeKind::BitOr: return "aten::__or__";
    case TreeKind::BitXor: return "aten::__xor__";
    case TreeKind::Eq: return "aten::eq";
    case TreeKind::Ne: return "aten::ne";
    case TreeKind::Lt: return "aten::lt";
    case TreeKind::Le: return "aten::le";
    case TreeKind::Gt: return "aten::gt";
    case TreeKind::Ge: return "aten::ge";
    case TreeKind::Is: return "aten::__is__";
    case TreeKind::IsNot: return "aten::__isnot__";
    case TreeKind::In: return "aten::__contains__";
    default: return nullptr;
  }
}

/// What `isinstance(name, types)` tells about `name` of type `declared` in each branch, as
/// PyTorch's emitIsInstance: a Union or Optional narrows to its members that are (or are not)
/// instances of one of `types` (the builtins list and tuple match any list / tuple); another
/// type narrows to the one type asked for when the check is true.
RefinementSet isinstanceRefinements(const std::string& name, const TypePtr& declared,
                                    const std::vector<TypePtr>& types) {
  auto matches = [&](const TypePtr& member) {
    for (const auto& t : types) {
      if (t->kind() == TypeKind::AnyListType && member->kind() == TypeKind::ListType) return true;
      if (t->kind() == TypeKind::AnyTupleType && member->kind() == TypeKind::TupleType) return true;
      if (member->isSubtypeOf(*t)) return true;
    }
    return false;
  };
  std::vector<TypePtr> members;
  if (const auto* u = declared->cast<UnionType>())
    members = u->types();
  else if (const auto* o = declared->cast<OptionalType>())
    members = {o->getElementType(), NoneType::get()};
  RefinementSet out;
  if (members.empty()) {
    if (types.size() == 1 && types[0]->kind() != TypeKind::AnyListType &&
        types[0]->kind() != TypeKind::AnyTupleType)
      out.whenTrue.push_back({name, types[0]});
    return out;
  }
  std::vector<TypePtr> yes, no;
  for (const auto& m : members) (matches(m) ? yes : no).push_back(m);
  if (!yes.empty()) out.whenTrue.push_back({name, UnionType::create(yes)});
  if (!no.empty()) out.whenFalse.push_back({name, UnionType::create(no)});
  return out;
}

enum class NoneStatus { Always, Maybe, Never };
NoneStatus canBeNone(const Value* v) {
  if (v->type()->kind() == TypeKind::NoneType) return NoneStatus::Always;
  if (canHoldNone(*v->type())) return NoneStatus::Maybe;
  return NoneStatus::Never;
}

TypePtr unwrapOptionalType(const TypePtr& t) {
  if (const auto* o = t->cast<OptionalType>()) return o->getElementType();
  if (const auto* u = t->cast<UnionType>()) {
    std::vector<TypePtr> rest;
    for (const auto& e : u->types())
      if (e->kind() != TypeKind::NoneType) rest.push_back(e);
    return UnionType::create(rest);
  }
  return t;
}

std::string escapeBraces(const std::string& s) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '{' || c == '}') out += c;
  }
  return out;
}

}  // namespace

Value* Emitter::emitToBool(const SourceRange& loc, Value* v) {
  if (v->type()->kind() == TypeKind::BoolType) return v;
  if (v->type()->kind() == TypeKind::ClassType) {
    return MethodValue(v, "__bool__").call(loc, *this, {}, {}, 1)->asValue(loc, *this);
  }
  Value* out = builtin(loc, "aten::Bool", {v});
  if (out->type()->kind() != TypeKind::BoolType)
    throwErrorAt(loc, "Could not cast value of type " + v->type()->reprStr() + " to bool");
  return out;
}

std::vector<NamedValue> Emitter::emitArgs(const List<Expr>& inputs) {
  std::vector<NamedValue> out;
  for (Expr e : inputs) {
    if (e.kind() == TreeKind::Starred) {
      auto sv = emitSugaredExpr(Starred(e.tree()).expr(), 1);
      for (const auto& elem : sv->asTuple(e.range(), *this, std::nullopt))
        out.push_back(NamedValue{e.range(), "", elem->asValue(e.range(), *this)});
    } else {
      out.push_back(NamedValue{e.range(), "", emitExpr(e)});
    }
  }
  return out;
}

std::vector<NamedValue> Emitter::emitKwargs(const List<Attribute>& kwargs) {
  std::vector<NamedValue> out;
  for (Attribute a : kwargs)
    out.push_back(NamedValue{a.range(), a.name().name(), emitExpr(a.value())});
  return out;
}

Value* Emitter::emitExpr(const Expr& e, const TypePtr& typeHint) {
  return emitSugaredExpr(e, 1, typeHint)->asValue(e.range(), *this);
}

Value* Emitter::emitBinaryOp(const SourceRange& loc, TreeKind kind, Value* lhs, Value* rhs) {
  if (kind == TreeKind::In) std::swap(lhs, rhs);  // `a in b` is b.__contains__(a)
  if (kind == TreeKind::In && lhs->type()->kind() == TypeKind::ClassType)
    return MethodValue(lhs, "__contains__")
        .call(loc, *this, {NamedValue{loc, "", rhs}}, {}, 1)
        ->asValue(loc, *this);
  // `"%d items" % n` is Python's %-formatting: PyTorch emits aten::percentFormat(str, args),
  // the right side whole (a tuple holds the arguments, anything else is the one argument).
  if (kind == TreeKind::Mod && lhs->type()->kind() == TypeKind::StringType)
    return emitBuiltinCall(loc, *graph_, Symbol::aten("percentFormat"),
                           {NamedValue{loc, "", lhs}, NamedValue{loc, "", rhs}}, {});
  const char* op = binaryOpName(kind);
  TL_INTERNAL_ASSERT(op, "no operator for {}", treeKindEnumName(kind));
  return emitBuiltinCall(loc, *graph_, Symbol::fromQualString(op),
                         {NamedValue{loc, "", lhs}, NamedValue{loc, "", rhs}}, {});
}

CondValue Emitter::emitCondExpr(const Expr& e) {
  switch (e.kind()) {
    case TreeKind::And:
    case TreeKind::Or: {
      BinOp b(e.tree());
      bool isOr = e.kind() == TreeKind::Or;
      CondValue lhs = emitCondExpr(b.lhs());
      std::optional<CondValue> rhs;
      Node* n = insert(graph_->create(prim::If, {lhs.value}, 0), e.range());
      Block* tb = n->addBlock();
      Block* fb = n->addBlock();
      auto emitIn = [&](Block* blk, const std::vector<Refinement>& refs, bool evalRhs) {
        pushFrame(blk);
        WithInsertPoint guard(blk);
        insertRefinements(e.range(), refs);
        Value* out;
        if (evalRhs) {
          rhs = emitCondExpr(b.rhs());
          out = rhs->value;
        } else {
          out = constant(IValue(isOr), e.range());
        }
        blk->registerOutput(out);
        popFrame();
      };
      emitIn(tb, lhs.refinements.whenTrue, !isOr);
      emitIn(fb, lhs.refinements.whenFalse, isOr);
      Value* result = n->addOutput()->setType(BoolType::get());
      CondValue out;
      out.value = result;
      if (isOr) {
        out.refinements = lhs.refinements.disjunction(rhs->refinements);
        if (lhs.staticIf && rhs->staticIf) out.staticIf = *lhs.staticIf || *rhs->staticIf;
      } else {
        out.refinements = lhs.refinements.conjunction(rhs->refinements);
        if ((lhs.staticIf && !*lhs.staticIf) || (rhs->staticIf && !*rhs->staticIf))
          out.staticIf = false;
        else if (lhs.staticIf && *lhs.staticIf && rhs->staticIf && *rhs->staticIf)
          out.staticIf = true;
      }
      return out;
    }
    case TreeKind::Not: {
      CondValue v = emitCondExpr(UnaryOp(e.tree()).operand());
      CondValue out;
      out.value = builtin(e.range(), "aten::__not__", {v.value});
      out.refinements = v.refinements.negated();
      if (v.staticIf) out.staticIf = !*v.staticIf;
      return out;
    }
    case TreeKind::Is:
    case TreeKind::IsNot: {
      BinOp b(e.tree());
      Value* lhs = emitExpr(b.lhs());
      Value* rhs = emitExpr(b.rhs());
      bool isIs = e.kind() == TreeKind::Is;
      NoneStatus ln = canBeNone(lhs), rn = canBeNone(rhs);
      CondValue out;
      if (ln == NoneStatus::Always && rn == NoneStatus::Always) {
        out.value = constant(IValue(isIs), e.range());
        out.staticIf = isIs;
        return out;
      }
      if ((ln == NoneStatus::Always && rn == NoneStatus::Never) ||
          (ln == NoneStatus::Never && rn == NoneStatus::Always)) {
        out.value = constant(IValue(!isIs), e.range());
        out.staticIf = !isIs;
        return out;
      }
      out.value = emitBinaryOp(e.range(), e.kind(), lhs, rhs);
      // `x is None` / `x is not None` refine a variable x of optional type.
      auto refine = [&](const Expr& varExpr, Value* v, NoneStatus other) {
        if (varExpr.kind() != TreeKind::Var || other != NoneStatus::Always) return;
        if (canBeNone(v) != NoneStatus::Maybe) return;
        Refinement r{Var(varExpr.tree()).name().name(), unwrapOptionalType(v->type())};
        if (isIs)
          out.refinements.whenFalse.push_back(r);
        else
          out.refinements.whenTrue.push_back(r);
      };
      refine(b.lhs(), lhs, rn);
      refine(b.rhs(), rhs, ln);
      return out;
    }
    case TreeKind::Apply: {
      Apply a(e.tree());
      if (a.callee().kind() == TreeKind::Var &&
          Var(a.callee().tree()).name().name() == "isinstance") {
        auto sv = emitSugaredExpr(e, 1);
        CondValue out;
        out.value = sv->asValue(e.range(), *this);
        if (auto c = toIValue(out.value)) out.staticIf = c->toBool();
        Expr target = a.inputs()[0];
        Node* check = out.value->node();
        if (!out.staticIf && target.kind() == TreeKind::Var && check->kind() == prim::isinstance)
          out.refinements = isinstanceRefinements(Var(target.tree()).name().name(),
                                                  check->input(0)->type(), check->tys(attr::types));
        return out;
      }
      break;
    }
    default: break;
  }
  CondValue out;
  out.value = emitToBool(e.range(), emitExpr(e));
  // As PyTorch's emitCondExpr: `torch.jit.is_scripting()` is statically true,
  // `torch._C._has_torch_function...` statically false, and a constant condition is known
  // (the untaken branch is not emitted). `self.training` stays a run-time attribute.
  Symbol kind = out.value->node()->kind();
  if (kind == Symbol::aten("is_scripting"))
    out.staticIf = true;
  else if (kind == Symbol::aten("has_torch_function"))
    out.staticIf = false;
  if (auto c = toIValue(out.value); c && c->isBool()) out.staticIf = c->toBool();
  return out;
}

Value* Emitter::emitAnnotate(const SourceRange& loc, const TypePtr& type, const Expr& value) {
  Value* v = emitExpr(value, type);
  v = tryConvertToType(loc, *graph_, type, v, true);
  if (!v->type()->isSubtypeOf(*type))
    throwErrorAt(loc, "Expected an expression of type " + type->reprStr() +
                          " but got an expression of type " + v->type()->reprStr());
  // As PyTorch does: None annotated as Optional[T] (or a Union holding None) is a None
  // constant typed Optional[T], so that T is remembered (a schema `t? -> t` binds t from it,
  // a variable assigned from it keeps the type).
  if (v->type()->kind() == TypeKind::NoneType &&
      (type->kind() == TypeKind::OptionalType || type->kind() == TypeKind::UnionType)) {
    if (!v->hasUses() && v->node()->kind() == prim::Constant) v->node()->destroy();
    Node* none = graph_->createNone();
    none->output()->setType(type);
    return insert(none, loc)->output();
  }
  return v;
}

SugaredValuePtr Emitter::emitSugaredExpr(const Expr& e, size_t nBinders, const TypePtr& typeHint) {
  const SourceRange& loc = e.range();
  if (stackNearlyExhausted())  // Note [Stack guard]: deep expressions, long call chains
    throwErrorAt(loc, "expression or call chain nested too deeply (the stack is nearly exhausted)");
  switch (e.kind()) {
    case TreeKind::Var: return getSugaredVar(loc, Var(e.tree()).name().name());
    case TreeKind::Select: {
      Select s(e.tree());
      return emitSugaredExpr(s.value(), 1)->attr(loc, *this, s.selector().name());
    }
    case TreeKind::Apply: return emitApply(Apply(e.tree()), nBinders, typeHint);
    default: break;
  }
  return emitPlainExpr(e, typeHint);
}

// A call: a special form (emitSpecialForm), `X.__new__(X)`, or a callee called with arguments.
SugaredValuePtr Emitter::emitApply(const Apply& a, size_t nBinders, const TypePtr& typeHint) {
  const SourceRange& loc = a.range();
  if (SugaredValuePtr special = emitSpecialForm(a)) return special;
  SugaredValuePtr callee;
  if (a.callee().kind() == TreeKind::Select) {
    Select s(a.callee().tree());
    SugaredValuePtr self = emitSugaredExpr(s.value(), 1);
    if (s.selector().name() == "tolist")
      if (auto simple = std::dynamic_pointer_cast<SimpleValue>(self);
          simple && simple->value()->type()->isSubtypeOf(*TensorType::get()))
        return std::make_shared<SimpleValue>(emitToList(a, simple->value(), typeHint));
    callee = self->attr(a.callee().range(), *this, s.selector().name());
  } else {
    callee = emitSugaredExpr(a.callee(), 1);
  }
  if (auto classNew = std::dynamic_pointer_cast<ClassNewValue>(callee)) {
    // `X.__new__(X)`: the argument is the class itself, not a value (PyTorch's emitApply
    // checks it the same way); the object's __init__ is called separately.
    auto inputs = a.inputs();
    if (inputs.size() != 1 || !a.attributes().empty())
      throwErrorAt(loc, "Only one argument to __new__ allowed");
    auto arg = emitSugaredExpr(inputs[0], 1);
    auto classArg = std::dynamic_pointer_cast<ClassValue>(arg);
    if (!classArg)
      throwErrorAt(inputs[0].range(),
                   "Expected class value as argument to __new__, got " + arg->kind() + " instead");
    if (!classArg->type_->isSubtypeOf(*classNew->type_) ||
        !classNew->type_->isSubtypeOf(*classArg->type_))
      throwErrorAt(inputs[0].range(),
                   "Argument to __new__() must match the class you are calling __new__() "
                   "on. Got: " +
                       classArg->type_->reprStr());
    return classNew->call(loc, *this, {}, {}, nBinders);
  }
  auto args = emitArgs(a.inputs());
  auto kwargs = emitKwargs(a.attributes());
  return callee->call(loc, *this, args, kwargs, nBinders);
}

// `x.tolist()` of a tensor, its result typed by the annotation it is written under
// (`annotate(List[List[float]], x.tolist())`, `a: List[int] = x.tolist()`): prim::tolist(x,
// dims, element type: 0 int, 1 float, 2 bool, 3 complex), as PyTorch's emitApplySpecialForm
// (torch/csrc/jit/frontend/ir_emitter.cpp). The kernel checks the tensor against both.
Value* Emitter::emitToList(const Apply& a, Value* self, const TypePtr& typeHint) {
  const SourceRange& loc = a.range();
  if (!a.inputs().empty() || !a.attributes().empty())
    throwErrorAt(loc, "tolist() takes no arguments");
  if (!typeHint) throwErrorAt(loc, "Expected type hint for result of tolist()");
  TypePtr elem = typeHint;
  int64_t dims = 0;
  while (const auto* l = elem->cast<ListType>()) {
    ++dims;
    elem = l->getElementType();
  }
  int64_t code;
  switch (elem->kind()) {
    case TypeKind::IntType: code = 0; break;
    case TypeKind::FloatType: code = 1; break;
    case TypeKind::BoolType: code = 2; break;
    case TypeKind::ComplexType: code = 3; break;
    default:
      throwErrorAt(loc, elem->str() +
                            " is not one of the supported element types for tolist: int, float, "
                            "complex, bool");
  }
  Node* n =
      insert(graph_->create(prim::tolist,
                            {self, constant(IValue(dims), loc), constant(IValue(code), loc)}, 1),
             loc);
  n->output()->setType(typeHint);
  return n->output();
}

// The calls whose arguments are types or unevaluated: annotate, unchecked_cast, uninitialized,
// isinstance, getattr / hasattr (and fork, refused). Null for any other call.
SugaredValuePtr Emitter::emitSpecialForm(const Apply& a) {
  const SourceRange& loc = a.range();
  if (a.callee().kind() != TreeKind::Var) return nullptr;
  const std::string& fname = Var(a.callee().tree()).name().name();
  auto inputs = a.inputs();
  auto needArgs = [&](size_t n) {
    if (inputs.size() != n || !a.attributes().empty())
      throwErrorAt(loc, fname + " expects " + std::to_string(n) + " positional arguments");
  };
  if (fname == "annotate") {
    needArgs(2);
    TypePtr t = parseType(inputs[0]);
    return std::make_shared<SimpleValue>(emitAnnotate(loc, t, inputs[1]));
  }
  if (fname == "unchecked_cast") {
    needArgs(2);
    TypePtr t = parseType(inputs[0]);
    Value* v = emitExpr(inputs[1]);
    return std::make_shared<SimpleValue>(insert(graph_->createUncheckedCast(v, t), loc)->output());
  }
  if (fname == "uninitialized") {
    needArgs(1);
    TypePtr t = parseType(inputs[0]);
    return std::make_shared<SimpleValue>(insert(graph_->createUninitialized(t), loc)->output());
  }
  if (fname == "isinstance") {
    needArgs(2);
    Value* v = emitExpr(inputs[0]);
    std::vector<TypePtr> types;
    Expr texpr = inputs[1];
    // The builtins `list` and `tuple` name any list / tuple (PyTorch's AnyListType,
    // AnyTupleType), as in torchvision's `isinstance(boxes, (list, tuple))`.
    auto isinstanceType = [this](const Expr& t) -> TypePtr {
      if (t.kind() == TreeKind::Var) {
        const std::string& name = Var(t.tree()).name().name();
        if (name == "list") return AnyListType::get();
        if (name == "tuple") return AnyTupleType::get();
      }
      return parseType(t);
    };
    if (texpr.kind() == TreeKind::TupleLiteral) {
      for (Expr t : SequenceLiteral(texpr.tree()).inputs()) types.push_back(isinstanceType(t));
    } else {
      types.push_back(isinstanceType(texpr));
    }
    bool always = false, never = true;
    for (const auto& t : types) {
      if (v->type()->isSubtypeOf(*t)) always = true;
      if (t->isSubtypeOf(*v->type()) || v->type()->kind() == TypeKind::AnyType ||
          canHoldNone(*v->type()) || v->type()->kind() == TypeKind::UnionType)
        never = false;
    }
    if (always || never) return std::make_shared<SimpleValue>(constant(IValue(always), loc));
    Node* n = insert(graph_->create(prim::isinstance, {v}, 1), loc);
    n->tys_(attr::types, types);
    n->output()->setType(BoolType::get());
    return std::make_shared<SimpleValue>(n->output());
  }
  if (fname == "getattr" || fname == "hasattr") {
    if (inputs.size() < 2 || inputs[1].kind() != TreeKind::StringLiteral)
      throwErrorAt(loc, fname + " expects an object and a string literal name");
    auto obj = emitSugaredExpr(inputs[0], 1);
    std::string field = StringLiteral(inputs[1].tree()).text();
    if (fname == "getattr") return obj->attr(loc, *this, field);
    bool has = false;
    if (auto sv = std::dynamic_pointer_cast<SimpleValue>(obj)) {
      if (const auto* cls = sv->value()->type()->cast<ClassType>())
        has = cls->findAttribute(field) || cls->findMethod(field) || cls->findConstant(field);
    }
    return std::make_shared<SimpleValue>(constant(IValue(has), loc));
  }
  if (fname == "fork")
    throwErrorAt(loc, "fork is not supported by torchless: it needs a nested function");
  return nullptr;
}

// An expression whose value is a plain IR value: literals, operators, subscripts,
// comprehensions.
SugaredValuePtr Emitter::emitPlainExpr(const Expr& e, const TypePtr& typeHint) {
  const SourceRange& loc = e.range();
  switch (e.kind()) {
    case TreeKind::Const: {
      Const c(e.tree());
      if (c.isComplex())
        return std::make_shared<SimpleValue>(
            constant(IValue(std::complex<double>(0, c.asFloatingPoint())), loc));
      if (c.isFloatingPoint())
        return std::make_shared<SimpleValue>(constant(IValue(c.asFloatingPoint()), loc));
      return std::make_shared<SimpleValue>(constant(IValue(c.asIntegral()), loc));
    }
    case TreeKind::StringLiteral:
      return std::make_shared<SimpleValue>(constant(IValue(StringLiteral(e.tree()).text()), loc));
    case TreeKind::True: return std::make_shared<SimpleValue>(constant(IValue(true), loc));
    case TreeKind::False: return std::make_shared<SimpleValue>(constant(IValue(false), loc));
    case TreeKind::None: return std::make_shared<SimpleValue>(constant(IValue(), loc));
    case TreeKind::FString: {
      std::string fmt;
      std::vector<Value*> values;
      for (Expr part : FString(e.tree()).parts()) {
        if (part.kind() == TreeKind::StringLiteral) {
          fmt += escapeBraces(StringLiteral(part.tree()).text());
        } else {
          FormattedValue fv(part.tree());
          if (fv.formatSpec().present())
            throwErrorAt(part.range(), "format specifications in f-strings are not supported");
          fmt += fv.conversion().present() ? "{!" + fv.conversion().get().name() + "}" : "{}";
          values.push_back(emitExpr(fv.value()));
        }
      }
      std::vector<Value*> args{constant(IValue(fmt), loc)};
      args.insert(args.end(), values.begin(), values.end());
      return std::make_shared<SimpleValue>(builtin(loc, "aten::format", args));
    }
    case TreeKind::TernaryIf: {
      TernaryIf t(e.tree());
      CondValue cond = emitCondExpr(t.cond());
      if (cond.staticIf) {
        if (*cond.staticIf) {
          insertRefinements(loc, cond.refinements.whenTrue);
          return std::make_shared<SimpleValue>(emitExpr(t.trueExpr(), typeHint));
        }
        return std::make_shared<SimpleValue>(emitExpr(t.falseExpr(), typeHint));
      }
      Node* n = insert(graph_->create(prim::If, {cond.value}, 0), loc);
      Block* tb = n->addBlock();
      Block* fb = n->addBlock();
      auto emitIn = [&](Block* b, const std::vector<Refinement>& refs, const Expr& x) {
        pushFrame(b);
        WithInsertPoint guard(b);
        insertRefinements(loc, refs);
        b->registerOutput(emitExpr(x, typeHint));
        popFrame();
      };
      emitIn(tb, cond.refinements.whenTrue, t.trueExpr());
      emitIn(fb, cond.refinements.whenFalse, t.falseExpr());
      TypePtr tt = tb->outputs()[0]->type(), ft = fb->outputs()[0]->type();
      auto unified = unifyTypes(tt, ft);
      if (!unified)
        throwErrorAt(loc, "if-expression's true branch has type " + tt->reprStr() +
                              " but false branch has type " + ft->reprStr());
      return std::make_shared<SimpleValue>(n->addOutput()->setType(*unified));
    }
    case TreeKind::And:
    case TreeKind::Or:
    case TreeKind::Not:
    case TreeKind::Is:
    case TreeKind::IsNot: return std::make_shared<SimpleValue>(emitCondExpr(e).value);
    case TreeKind::Neg:
    case TreeKind::BitNot: {
      // As PyTorch's emitUnaryOp: minus on a constant number is folded at compile time
      // (`-inf`, `-(2)`); anything else is the builtin call (bitwise_not takes tensors only).
      Value* v = emitExpr(UnaryOp(e.tree()).operand());
      bool neg = e.kind() == TreeKind::Neg;
      if (auto c = toIValue(v)) {
        std::optional<IValue> folded;
        if (neg && c->isDouble())
          folded = IValue(-c->toDouble());
        else if (neg && c->isInt())
          folded = IValue(-c->toInt());
        if (folded) return std::make_shared<SimpleValue>(constant(*folded, loc));
      }
      return std::make_shared<SimpleValue>(
          builtin(loc, neg ? "aten::neg" : "aten::bitwise_not", {v}));
    }
    case TreeKind::Pos: return std::make_shared<SimpleValue>(emitExpr(UnaryOp(e.tree()).operand()));
    case TreeKind::NotIn: {
      BinOp b(e.tree());
      Value* lhs = emitExpr(b.lhs());
      Value* rhs = emitExpr(b.rhs());
      Value* in = emitBinaryOp(loc, TreeKind::In, lhs, rhs);
      return std::make_shared<SimpleValue>(builtin(loc, "aten::__not__", {in}));
    }
    case TreeKind::CompareChain: {
      // a < b <= c  ==>  (a < b) and (b <= c), as PyTorch's frontend desugars it.
      CompareChain cc(e.tree());
      auto operands = cc.operands();
      auto ops = cc.ops();
      std::optional<Expr> acc;
      for (size_t i = 0; i < ops.size(); ++i) {
        SourceRange r = operands[i].range().to(operands[i + 1].range());
        Expr cmp = ops[i] == TreeKind::NotIn
                       ? Expr(UnaryOp::create(
                             TreeKind::Not, r,
                             BinOp::create(TreeKind::In, r, operands[i], operands[i + 1])))
                       : Expr(BinOp::create(ops[i], r, operands[i], operands[i + 1]));
        acc = acc ? Expr(BinOp::create(TreeKind::And, acc->range().to(r), *acc, cmp)) : cmp;
      }
      return std::make_shared<SimpleValue>(emitExpr(*acc));
    }
    case TreeKind::Subscript:
      return std::make_shared<SimpleValue>(emitSubscript(Subscript(e.tree()), typeHint));
    case TreeKind::ListLiteral:
    case TreeKind::TupleLiteral:
    case TreeKind::DictLiteral: return emitContainerLiteral(e, typeHint);
    case TreeKind::ListComp:
      return std::make_shared<SimpleValue>(emitListComprehension(ListComp(e.tree()), typeHint));
    case TreeKind::DictComp:
      return std::make_shared<SimpleValue>(emitDictComprehension(DictComp(e.tree()), typeHint));
    case TreeKind::SetLiteral: throwErrorAt(loc, "set literals are not supported in TorchScript");
    case TreeKind::Dots: throwErrorAt(loc, "'...' can only be used in subscripts");
    case TreeKind::SliceExpr: throwErrorAt(loc, "slices can only be used in subscripts");
    case TreeKind::Starred:
      throwErrorAt(loc, "Starred expressions are only allowed in calls and assignments");
    default: break;
  }
  if (isBinaryOpKind(e.kind())) {
    BinOp b(e.tree());
    Value* lhs = emitExpr(b.lhs());
    Value* rhs = emitExpr(b.rhs());
    return std::make_shared<SimpleValue>(emitBinaryOp(loc, e.kind(), lhs, rhs));
  }
  throwErrorAt(loc, std::string("unsupported expression ") + treeKindEnumName(e.kind()));
}

// A list, tuple or dict literal, its element types from `typeHint` when it names them.
SugaredValuePtr Emitter::emitContainerLiteral(const Expr& e, const TypePtr& typeHint) {
  const SourceRange& loc = e.range();
  switch (e.kind()) {
    case TreeKind::ListLiteral: {
      auto values = emitArgs(SequenceLiteral(e.tree()).inputs());
      TypePtr elem = TensorType::get();
      if (typeHint && typeHint->kind() == TypeKind::ListType) {
        elem = typeHint->cast<ListType>()->getElementType();
      } else if (typeHint && typeHint->kind() == TypeKind::OptionalType &&
                 unwrapOptionalType(typeHint)->kind() == TypeKind::ListType) {
        elem = unwrapOptionalType(typeHint)->cast<ListType>()->getElementType();
      } else if (!values.empty()) {
        TypePtr acc = values[0].value->type();
        for (size_t i = 1; i < values.size(); ++i) {
          auto u = unifyTypes(acc, values[i].value->type(), true);
          if (!u) throwErrorAt(loc, "Lists must contain only a single type");
          acc = *u;
        }
        elem = acc;
      }
      std::vector<Value*> vs;
      for (auto& nv : values) {
        Value* v = tryConvertToType(nv.loc, *graph_, elem, nv.value, true);
        if (!v->type()->isSubtypeOf(*elem))
          throwErrorAt(loc, "Lists must contain only a single type, expected: " + elem->reprStr() +
                                " but found " + v->type()->reprStr() + " instead.");
        vs.push_back(v);
      }
      return std::make_shared<SimpleValue>(insert(graph_->createList(elem, vs), loc)->output());
    }
    case TreeKind::TupleLiteral: {
      auto values = emitArgs(SequenceLiteral(e.tree()).inputs());
      std::vector<Value*> vs;
      const auto* hintTuple = typeHint ? typeHint->cast<TupleType>() : nullptr;
      for (size_t i = 0; i < values.size(); ++i) {
        Value* v = values[i].value;
        if (hintTuple && i < hintTuple->elements().size())
          v = tryConvertToType(values[i].loc, *graph_, hintTuple->elements()[i], v, true);
        vs.push_back(v);
      }
      return std::make_shared<SimpleValue>(insert(graph_->createTuple(vs), loc)->output());
    }
    case TreeKind::DictLiteral: {
      DictLiteral d(e.tree());
      std::vector<Value*> keys, values;
      for (Expr k : d.keyInputs()) keys.push_back(emitExpr(k));
      for (Expr v : d.valueInputs()) values.push_back(emitExpr(v));
      TypePtr kt = StringType::get(), vt = TensorType::get();
      if (typeHint && typeHint->kind() == TypeKind::DictType) {
        kt = typeHint->cast<DictType>()->getKeyType();
        vt = typeHint->cast<DictType>()->getValueType();
      } else if (!keys.empty()) {
        kt = keys[0]->type();
        vt = values[0]->type();
        for (size_t i = 1; i < keys.size(); ++i) {
          auto uk = unifyTypes(kt, keys[i]->type(), true);
          auto uv = unifyTypes(vt, values[i]->type(), true);
          if (!uk) throwErrorAt(loc, "Dict keys must contain only a single type");
          if (!uv) throwErrorAt(loc, "Dict values must contain only a single type");
          kt = *uk;
          vt = *uv;
        }
      }
      for (size_t i = 0; i < keys.size(); ++i) {
        values[i] = tryConvertToType(loc, *graph_, vt, values[i], true);
        if (!keys[i]->type()->isSubtypeOf(*kt) || !values[i]->type()->isSubtypeOf(*vt))
          throwErrorAt(loc, "Dict entries must match the dict's type Dict[" + kt->annotationStr() +
                                ", " + vt->annotationStr() + "]");
      }
      return std::make_shared<SimpleValue>(
          insert(graph_->createDict(kt, vt, keys, values), loc)->output());
    }
    default: break;
  }
  throwErrorAt(loc, "not a list, tuple or dict literal");
}

// ---- comprehensions -----------------------------------------------------------------------

namespace {
Symbol comprehensionScope() { return Symbol::prim("ComprehensionScope"); }
}  // namespace

namespace {
/// PyTorch's Python frontend (torch/jit/frontend.py, build_ListComp / build_DictComp) takes
/// one generator without conditions; archives never hold others.
void checkComprehension(const SourceRange& loc, const List<Comprehension>& gens) {
  if (gens.size() != 1) throwErrorAt(loc, "Only a single generator is currently supported");
  if (gens[0].ifs().size() != 0) throwErrorAt(loc, "Comprehension ifs are not supported yet");
}
}  // namespace

Value* Emitter::emitListComprehension(const ListComp& lc, const TypePtr& typeHint) {
  const SourceRange& loc = lc.range();
  checkComprehension(loc, lc.generators());
  Node* listNode = insert(graph_->create(prim::ListConstruct, 1), loc);
  Value* list = listNode->output()->setType(ListType::ofTensors());
  bool typeSet = false;
  if (typeHint && typeHint->kind() == TypeKind::ListType) {
    list->setType(typeHint);
    typeSet = true;
  }
  Node* scope = insert(graph_->create(comprehensionScope(), 0), loc);
  Block* b = scope->addBlock();
  pushFrame(b);
  WithInsertPoint guard(b);
  auto gens = lc.generators();
  std::function<void(size_t)> emitGen = [&](size_t i) {
    if (i == gens.size()) {
      Value* out = emitExpr(lc.elt());
      if (!typeSet) {
        list->setType(ListType::create(out->type()));
        typeSet = true;
      }
      emitBuiltinCall(loc, *graph_, aten::append, {NamedValue{loc, "", out}}, {},
                      NamedValue{loc, "self", list});
      return;
    }
    Comprehension g = gens[i];
    auto iterable = emitSugaredExpr(g.iter(), 1)->iter(g.iter().range(), *this);
    emitLoop(loc, iterable, g.target(), [&] {
      std::function<void(size_t)> emitIfs = [&](size_t k) {
        if (k == g.ifs().size()) {
          emitGen(i + 1);
          return;
        }
        CondValue c = emitCondExpr(g.ifs()[k]);
        Node* n = insert(graph_->create(prim::If, {c.value}, 0), g.ifs()[k].range());
        Block* tb = n->addBlock();
        n->addBlock();
        pushFrame(tb);
        WithInsertPoint g2(tb);
        insertRefinements(loc, c.refinements.whenTrue);
        emitIfs(k + 1);
        popFrame();
      };
      emitIfs(0);
    });
  };
  emitGen(0);
  popFrame();
  return list;
}

Value* Emitter::emitDictComprehension(const DictComp& dc, const TypePtr& typeHint) {
  const SourceRange& loc = dc.range();
  checkComprehension(loc, dc.generators());
  Node* dictNode = insert(graph_->create(prim::DictConstruct, 1), loc);
  Value* dict = dictNode->output()->setType(DictType::create(StringType::get(), TensorType::get()));
  bool typeSet = false;
  if (typeHint && typeHint->kind() == TypeKind::DictType) {
    dict->setType(typeHint);
    typeSet = true;
  }
  Node* scope = insert(graph_->create(comprehensionScope(), 0), loc);
  Block* b = scope->addBlock();
  pushFrame(b);
  WithInsertPoint guard(b);
  auto gens = dc.generators();
  std::function<void(size_t)> emitGen = [&](size_t i) {
    if (i == gens.size()) {
      Value* k = emitExpr(dc.key());
      Value* v = emitExpr(dc.value());
      if (!typeSet) {
        dict->setType(DictType::create(k->type(), v->type()));
        typeSet = true;
      }
      builtin(loc, "aten::_set_item", {dict, k, v});
      return;
    }
    Comprehension g = gens[i];
    auto iterable = emitSugaredExpr(g.iter(), 1)->iter(g.iter().range(), *this);
    emitLoop(loc, iterable, g.target(), [&] { emitGen(i + 1); });
  };
  emitGen(0);
  popFrame();
  return dict;
}

// ---- subscripts ---------------------------------------------------------------------------

std::pair<Value*, std::vector<Value*>> Emitter::emitTensorIndexing(const SourceRange& loc,
                                                                   Value* self,
                                                                   const List<Expr>& subs) {
  size_t n = subs.size();
  std::vector<int64_t> dims(n, 0);
  std::vector<Value*> exprs(n, nullptr);
  auto handle = [&](const Expr& s, size_t i, int64_t dim, bool reverse) -> int64_t {
    dims[i] = dim;
    if (s.kind() == TreeKind::SliceExpr) return reverse ? dim - 1 : dim + 1;
    Value* index = emitExpr(s, s.kind() == TreeKind::None ? NoneType::get() : nullptr);
    if (index->type()->kind() == TypeKind::ListType) {
      index = builtin(
          s.range(), "aten::tensor", {index},
          {NamedValue{s.range(), "dtype", constant(IValue(int64_t(ScalarType::Long)), s.range())}});
    }
    exprs[i] = index;
    if (index->type()->isSubtypeOf(*NoneType::get())) return reverse ? dim : dim + 1;
    if (index->type()->kind() == TypeKind::IntType) return dim;
    if (index->type()->isSubtypeOf(*OptionalType::ofTensor())) {
      if (reverse)
        throwErrorAt(loc, "Ellipses followed by tensor indexing is currently not supported");
      return dim + 1;
    }
    throwErrorAt(loc, "Unsupported operation: indexing tensor with unsupported index type '" +
                          index->type()->reprStr() +
                          "'. Only ints, slices, lists and tensors are supported");
  };
  size_t idx = 0;
  int64_t dim = 0;
  for (; idx < n; ++idx) {
    if (subs[idx].kind() == TreeKind::Dots) break;
    dim = handle(subs[idx], idx, dim, false);
  }
  int64_t rdim = -1;
  for (size_t r = n - 1; n > 0 && r > idx; --r) {
    if (subs[r].kind() == TreeKind::Dots)
      throwErrorAt(loc, "An index can only have a single ellipsis ('...')");
    rdim = handle(subs[r], r, rdim, true);
  }
  Value* sliceable = self;
  std::vector<Value*> tensorIndices;
  for (size_t i = 0; i < n; ++i) {
    if (!exprs[i]) {
      if (subs[i].kind() == TreeKind::SliceExpr) {
        SliceExpr s(subs[i].tree());
        Value* d = constant(IValue(dims[i]), loc);
        Value* start = s.start().present() ? emitExpr(s.start().get()) : constant(IValue(), loc);
        Value* end = s.end().present() ? emitExpr(s.end().get()) : constant(IValue(), loc);
        Value* step =
            s.step().present() ? emitExpr(s.step().get()) : constant(IValue(int64_t(1)), loc);
        sliceable = builtin(loc, "aten::slice", {sliceable, d, start, end, step});
      }
      continue;
    }
    Value* ex = exprs[i];
    if (ex->type()->isSubtypeOf(*NoneType::get())) {
      sliceable = builtin(loc, "aten::unsqueeze", {sliceable, constant(IValue(dims[i]), loc)});
    } else if (ex->type()->kind() == TypeKind::IntType) {
      sliceable = builtin(loc, "aten::select", {sliceable, constant(IValue(dims[i]), loc), ex});
    } else {
      if (tensorIndices.size() < static_cast<size_t>(dims[i] + 1))
        tensorIndices.resize(static_cast<size_t>(dims[i] + 1), nullptr);
      tensorIndices[static_cast<size_t>(dims[i])] = ex;
    }
  }
  for (auto& t : tensorIndices) {
    if (!t) t = insert(graph_->createNone(), loc)->output();
  }
  return {sliceable, tensorIndices};
}

Value* Emitter::emitSubscript(const Subscript& sub, const TypePtr& typeHint) {
  (void)typeHint;
  const SourceRange& loc = sub.range();
  SugaredValuePtr base = emitSugaredExpr(sub.value(), 1);
  auto subs = sub.subscriptExprs();
  if (auto container = std::dynamic_pointer_cast<ModuleContainerValue>(base)) {
    if (subs.size() == 1) {
      Value* i = emitExpr(subs[0]);
      if (auto c = toIValue(i); c && c->isInt()) {
        auto elems = container->asTuple(loc, *this, std::nullopt);
        int64_t k = c->toInt();
        if (k < 0) k += static_cast<int64_t>(elems.size());
        if (k < 0 || k >= static_cast<int64_t>(elems.size()))
          throwErrorAt(loc, "index out of range for module container");
        return elems[static_cast<size_t>(k)]->asValue(loc, *this);
      }
    }
    throwErrorAt(loc, "module containers can only be indexed with integer constants");
  }
  Value* v = base->asValue(loc, *this);
  const TypePtr& t = v->type();
  if (t->isSubtypeOf(*TensorType::get())) {
    auto [view, indices] = emitTensorIndexing(loc, v, subs);
    if (indices.empty()) return view;
    Value* list = insert(graph_->createList(OptionalType::ofTensor(), indices), loc)->output();
    return builtin(loc, "aten::index", {view, list});
  }
  if (subs.size() != 1)
    throwErrorAt(loc, "Subscripts with more than one index are only supported on tensors");
  Expr s = subs[0];
  if (const auto* tup = t->cast<TupleType>()) {
    auto elems = createTupleUnpack(*graph_, v, loc);
    int64_t size = static_cast<int64_t>(tup->elements().size());
    auto constIndex = [&](const Expr& x, int64_t dflt) -> int64_t {
      Value* iv = emitExpr(x);
      auto c = toIValue(iv);
      if (!c || !c->isInt()) throwErrorAt(x.range(), "tuple indices must be integer constants");
      int64_t k = c->toInt();
      return k < 0 ? k + size : k;
      (void)dflt;
    };
    if (s.kind() == TreeKind::SliceExpr) {
      SliceExpr se(s.tree());
      int64_t b =
          se.start().present() ? std::clamp<int64_t>(constIndex(se.start().get(), 0), 0, size) : 0;
      int64_t en = se.end().present()
                       ? std::clamp<int64_t>(constIndex(se.end().get(), size), 0, size)
                       : size;
      int64_t step = se.step().present() ? toIValue(emitExpr(se.step().get()))->toInt() : 1;
      std::vector<Value*> picked;
      for (int64_t k = b; step > 0 ? k < en : k > en; k += step)
        picked.push_back(elems[static_cast<size_t>(k)]);
      return insert(graph_->createTuple(picked), loc)->output();
    }
    Value* iv = emitExpr(s);
    if (auto c = toIValue(iv); c && c->isInt()) {
      int64_t k = c->toInt();
      if (k < 0) k += size;
      if (k < 0 || k >= size)
        throwErrorAt(loc, "Tuple index out of range. Tuple is length " + std::to_string(size) +
                              " and index is " + std::to_string(c->toInt()));
      Value* idx = constant(IValue(k), loc);
      return insert(graph_->createTupleIndex(v, idx, tup->elements()[static_cast<size_t>(k)]), loc)
          ->output();
    }
    TypePtr elem = tup->elements().empty() ? nullptr : tup->elements()[0];
    for (const auto& et : tup->elements()) {
      if (auto u = unifyTypes(elem, et))
        elem = *u;
      else
        throwErrorAt(
            loc, "All tuple elements must have the same type to be indexed with a non-constant");
    }
    return insert(graph_->createTupleIndex(v, iv, elem), loc)->output();
  }
  if (t->kind() == TypeKind::ClassType) {
    Value* idx = emitExpr(s);
    return MethodValue(v, "__getitem__")
        .call(loc, *this, {NamedValue{loc, "", idx}}, {}, 1)
        ->asValue(loc, *this);
  }
  if (s.kind() == TreeKind::SliceExpr) {
    SliceExpr se(s.tree());
    Value* start = se.start().present() ? emitExpr(se.start().get()) : constant(IValue(), loc);
    Value* end = se.end().present() ? emitExpr(se.end().get()) : constant(IValue(), loc);
    Value* step =
        se.step().present() ? emitExpr(se.step().get()) : constant(IValue(int64_t(1)), loc);
    return builtin(loc, "aten::slice", {v, start, end, step});
  }
  Value* idx = emitExpr(s);
  return builtin(loc, "aten::__getitem__", {v, idx});
}

void Emitter::emitSubscriptAssign(const SourceRange& loc, const Subscript& lhs, Value* rhs) {
  Value* obj = emitExpr(lhs.value());
  if (obj->type()->isSubtypeOf(*TensorType::get())) {
    auto [sliced, indices] = emitTensorIndexing(lhs.range(), obj, lhs.subscriptExprs());
    if (!rhs->type()->isSubtypeOf(*TensorType::get())) {
      Value* dtype = builtin(loc, "prim::dtype", {sliced});
      Value* device = builtin(loc, "prim::device", {sliced});
      rhs = builtin(loc, "aten::tensor", {rhs},
                    {NamedValue{loc, "dtype", dtype}, NamedValue{loc, "device", device}});
    }
    if (indices.empty()) {
      builtin(loc, "aten::copy_", {sliced, rhs});
    } else {
      Value* list = insert(graph_->createList(OptionalType::ofTensor(), indices), loc)->output();
      builtin(loc, "aten::index_put_", {sliced, list, rhs});
    }
    return;
  }
  auto subs = lhs.subscriptExprs();
  if (subs.size() != 1 || subs[0].kind() == TreeKind::SliceExpr)
    throwErrorAt(loc,
                 "Sliced expression not yet supported for subscripted assignment. File a "
                 "bug if you want this");
  if (obj->type()->kind() == TypeKind::TupleType)
    throwErrorAt(loc, "Tuples do not support assignment");
  Value* idx = emitExpr(subs[0]);
  if (obj->type()->kind() == TypeKind::ClassType) {
    MethodValue(obj, "__setitem__")
        .call(loc, *this, {NamedValue{loc, "", idx}, NamedValue{loc, "", rhs}}, {}, 0);
    return;
  }
  builtin(loc, "aten::_set_item", {obj, idx, rhs});
}

// ---- annotations ----------------------------------------------------------------------------

TypePtr Emitter::parseType(const Expr& e) {
  std::string text(e.range().text());
  if (e.kind() == TreeKind::StringLiteral) text = StringLiteral(e.tree()).text();
  if (e.kind() == TreeKind::None) return NoneType::get();
  // Python-level spellings of TorchScript types.
  auto replaceAll = [&](const std::string& from, const std::string& to) {
    size_t pos = 0;
    while ((pos = text.find(from, pos)) != std::string::npos) {
      bool wordStart = pos == 0 || !(isalnum(static_cast<unsigned char>(text[pos - 1])) ||
                                     text[pos - 1] == '_' || text[pos - 1] == '.');
      size_t endPos = pos + from.size();
      bool wordEnd = endPos >= text.size() ||
                     !(isalnum(static_cast<unsigned char>(text[endPos])) || text[endPos] == '_');
      if (wordStart && wordEnd) {
        text.replace(pos, from.size(), to);
        pos += to.size();
      } else {
        pos = endPos;
      }
    }
  };
  replaceAll("torch.Tensor", "Tensor");
  replaceAll("torch.device", "Device");
  replaceAll("torch.dtype", "int");
  replaceAll("typing.List", "List");
  replaceAll("typing.Dict", "Dict");
  replaceAll("typing.Tuple", "Tuple");
  replaceAll("typing.Optional", "Optional");
  replaceAll("typing.Any", "Any");
  replaceAll("typing.Union", "Union");
  replaceAll("list", "List");
  replaceAll("dict", "Dict");
  replaceAll("tuple", "Tuple");
  try {
    return parseTypeAnnotation(text, [this](const std::string& q) -> TypePtr {
      return env_.resolveType ? env_.resolveType(q) : nullptr;
    });
  } catch (const Error& err) {
    throwErrorAt(e.range(), "Unknown type annotation: '" + text + "': " + err.message());
  }
}

IValue Emitter::evalDefault(const Expr& e, const TypePtr& type) {
  return evalLiteral(e, type, env_.constants, "default arguments must be constant literals");
}

}  // namespace torchless::frontend
