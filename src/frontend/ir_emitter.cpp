// The IR emitter: functions, statements, scopes and control flow. Expressions are in
// emit_expr.cpp, the SSA conversion in convert_to_ssa.cpp. See Note [Variables as loads and
// stores] and Note [Early exits] in emitter.h.
#include "frontend/emitter.h"

#include "core/stack_guard.h"
#include "ir/operator_registry.h"

#include <cctype>
#include <limits>

namespace torchless::frontend {

namespace {
/// `torch.no_grad()`, `torch.enable_grad()`, `torch.inference_mode()` (and their
/// torch.autograd spellings) used as a `with` item without `as`.
bool isGradModeContext(const WithItem& item) {
  if (item.var().present() || item.target().kind() != TreeKind::Apply) return false;
  Apply a(item.target().tree());
  if (!a.inputs().empty() || !a.attributes().empty()) return false;
  std::string_view callee = a.callee().range().text();
  for (std::string_view prefix : {"torch.", "torch.autograd.", "torch.autograd.grad_mode."}) {
    if (callee.substr(0, prefix.size()) != prefix) continue;
    std::string_view rest = callee.substr(prefix.size());
    if (rest == "no_grad" || rest == "enable_grad" || rest == "inference_mode") return true;
  }
  return false;
}
}  // namespace

bool meaningfulName(const std::string& name) {
  if (name.empty() || name[0] == '$') return false;
  if (name[0] != '_') return true;
  for (size_t i = 1; i < name.size(); ++i) {
    if (!isdigit(static_cast<unsigned char>(name[i]))) return true;
  }
  return false;
}

RefinementSet RefinementSet::conjunction(const RefinementSet& rhs) const {
  RefinementSet out;
  out.whenTrue = whenTrue;
  for (const auto& r : rhs.whenTrue) out.whenTrue.push_back(r);
  for (const auto& a : whenFalse)
    for (const auto& b : rhs.whenFalse)
      if (a.name == b.name && *a.type == *b.type) out.whenFalse.push_back(a);
  return out;
}

RefinementSet RefinementSet::disjunction(const RefinementSet& rhs) const {
  return negated().conjunction(rhs.negated()).negated();
}

std::vector<Stmt> toVector(const List<Stmt>& stmts) {
  std::vector<Stmt> out;
  for (Stmt s : stmts) out.push_back(s);
  return out;
}

namespace {
/// Every path ends in return / break / continue.
bool alwaysJumps(const std::vector<Stmt>& stmts) {
  if (stmts.empty()) return false;
  const Stmt& last = stmts.back();
  switch (last.kind()) {
    case TreeKind::Return:
    case TreeKind::Break:
    case TreeKind::Continue: return true;
    case TreeKind::If: {
      If i(last.tree());
      return alwaysJumps(toVector(i.trueBranch())) && alwaysJumps(toVector(i.falseBranch()));
    }
    default: return false;
  }
}
}  // namespace

bool alwaysReturns(const std::vector<Stmt>& stmts) { return alwaysJumps(stmts); }

bool containsExit(const std::vector<Stmt>& stmts, TreeKind kind) {
  for (const Stmt& s : stmts) {
    if (s.kind() == kind) return true;
    if (s.kind() == TreeKind::If) {
      If i(s.tree());
      if (containsExit(toVector(i.trueBranch()), kind) ||
          containsExit(toVector(i.falseBranch()), kind))
        return true;
    } else if (s.kind() == TreeKind::With) {
      if (containsExit(toVector(With(s.tree()).body()), kind)) return true;
    } else if (kind == TreeKind::Return &&
               (s.kind() == TreeKind::For || s.kind() == TreeKind::While)) {
      List<Stmt> body = s.kind() == TreeKind::For ? For(s.tree()).body() : While(s.tree()).body();
      if (containsExit(toVector(body), kind)) return true;
    }
  }
  return false;
}

Emitter::Emitter(const CompileEnv& env, TypePtr selfType, std::shared_ptr<Graph> graph)
    : env_(env), selfType_(std::move(selfType)), graph_(std::move(graph)) {
  pushFrame(graph_->block());
}

void Emitter::pushFrame(Block* b) { frames_.push_back(Frame{b, {}, {}, {}}); }

Emitter::Frame Emitter::popFrame() {
  Frame f = std::move(frames_.back());
  frames_.pop_back();
  return f;
}

TypePtr Emitter::findVarType(const std::string& name, size_t fromFrame) const {
  size_t top = std::min(fromFrame, frames_.size());
  for (size_t i = top; i-- > 0;) {
    auto it = frames_[i].types.find(name);
    if (it != frames_[i].types.end()) return it->second;
    if (frames_[i].sugared.count(name)) return nullptr;
  }
  return nullptr;
}

void Emitter::setValue(const SourceRange& loc, const std::string& name, Value* v,
                       const TypePtr& annotated) {
  // Reassigning a variable of an enclosing block must keep its type.
  if (frames_.size() > 1 && !frame().types.count(name) && name != kReturnVar) {
    if (TypePtr parent = findVarType(name, frames_.size() - 1)) {
      if (annotated)
        throwErrorAt(loc, "Attempting to declare and annotate the type of variable '" + name +
                              "' but it is already defined in an outer block");
      TypePtr parentType = unshapedType(parent);
      v = tryConvertToType(loc, *graph_, parentType, v, true);
      if (!v->type()->isSubtypeOf(*parentType))
        throwErrorAt(loc, "Variable '" + name + "' previously had type " + parent->reprStr() +
                              " but is now being assigned to a value of type " +
                              v->type()->reprStr());
    }
  }
  if (!v->hasDebugName() && meaningfulName(name) &&
      v->node()->owningBlock() == graph_->insertPointBlock())
    v->setDebugName(name);
  Node* store = graph_->create(prim::Store, {v}, 0);
  store->s_(attr::name, name);
  // The declared type, which SSA conversion merges branches by (PyTorch's type_table):
  // `x: Union[List[int], int] = a_list` in one branch and an int in the other is a Union.
  if (annotated) store->ty_(declaredTypeAttr(), annotated);
  insert(store, loc);
  frame().types[name] = annotated ? annotated : v->type();
  frame().sugared.erase(name);
  frame().errors.erase(name);
}

void Emitter::setVar(const SourceRange& loc, const std::string& name, const SugaredValuePtr& value,
                     const TypePtr& annotated) {
  if (auto simple = std::dynamic_pointer_cast<SimpleValue>(value)) {
    setValue(loc, name, simple->value(), annotated);
    return;
  }
  if (frames_.size() > 1 && findVarType(name, frames_.size() - 1))
    throwErrorAt(loc, "Cannot re-assign '" + name + "' to a value of type " + value->kind() +
                          " because " + name +
                          " is not a first-class value.  Only reassignments to first-class "
                          "values are allowed");
  frame().sugared[name] = value;
  frame().types.erase(name);
}

void Emitter::removeVar(const SourceRange& loc, const std::string& name) {
  bool found = false;
  for (auto& f : frames_) {
    found |= f.types.erase(name) > 0;
    found |= f.sugared.erase(name) > 0;
  }
  if (!found) throwErrorAt(loc, "undefined value " + name);
}

Value* Emitter::getVar(const SourceRange& loc, const std::string& name) {
  return getSugaredVar(loc, name)->asValue(loc, *this);
}

Value* Emitter::builtin(const SourceRange& loc, const std::string& qualName,
                        const std::vector<Value*>& args, const std::vector<NamedValue>& kwargs) {
  return emitBuiltinCall(loc, *graph_, Symbol::fromQualString(qualName), toNamedValues(loc, args),
                         kwargs);
}

// ---- statements ----------------------------------------------------------------------------

void Emitter::emitStatements(const List<Stmt>& stmts) { emitStatements(toVector(stmts), 0); }

void Emitter::insertRefinements(const SourceRange& loc, const std::vector<Refinement>& refs) {
  for (const Refinement& r : refs) {
    TypePtr current = findVarType(r.name);
    if (!current) continue;
    Value* v = getVar(loc, r.name);
    if (*v->type() != *r.type) {
      Value* cast = insert(graph_->createUncheckedCast(v, r.type), loc)->output();
      setValue(loc, r.name, cast);
    }
  }
}

void Emitter::emitIfElseBlocks(const SourceRange& loc, const CondValue& cond,
                               const std::vector<Stmt>& trueBranch,
                               const std::vector<Stmt>& falseBranch) {
  if (cond.staticIf) {
    if (*cond.staticIf) {
      insertRefinements(loc, cond.refinements.whenTrue);
      emitStatements(trueBranch, 0);
    } else {
      emitStatements(falseBranch, 0);
    }
    return;
  }
  Block* outer = graph_->insertPointBlock();
  Node* n = insert(graph_->create(prim::If, {cond.value}, 0), loc);
  Block* tb = n->addBlock();
  Block* fb = n->addBlock();
  auto emitBranch = [&](Block* b, const std::vector<Stmt>& stmts,
                        const std::vector<Refinement>& refs) {
    pushFrame(b);
    WithInsertPoint guard(b);
    insertRefinements(loc, refs);
    emitStatements(stmts, 0);
    return popFrame();
  };
  Frame tf = emitBranch(tb, trueBranch, cond.refinements.whenTrue);
  Frame ff = emitBranch(fb, falseBranch, cond.refinements.whenFalse);

  bool tRaise = exitBlocks_.count(tb) > 0, fRaise = exitBlocks_.count(fb) > 0;
  bool tRet = returnBlocks_.count(tb) > 0, fRet = returnBlocks_.count(fb) > 0;
  bool tExit = tRaise || tRet, fExit = fRaise || fRet;
  if (tExit && fExit) {
    if (tRet || fRet)
      returnBlocks_.insert(outer);
    else
      exitBlocks_.insert(outer);
  }

  std::set<std::string> mutated;
  for (const auto& [v, t] : tf.types) {
    bool otherExits = v == "$return" ? fRaise : fExit;
    if (ff.types.count(v) || findVarType(v) || otherExits)
      mutated.insert(v);
    else
      frame().errors[v] = v + " is not defined in the false branch";
  }
  for (const auto& [v, t] : ff.types) {
    bool otherExits = v == "$return" ? tRaise : tExit;
    if (tf.types.count(v) || findVarType(v) || otherExits)
      mutated.insert(v);
    else
      frame().errors[v] = v + " is not defined in the true branch";
  }
  for (const std::string& x : mutated) {
    bool te = x == "$return" ? tRaise : tExit;
    bool fe = x == "$return" ? fRaise : fExit;
    TypePtr tt, ft;
    if (!te) tt = tf.types.count(x) ? tf.types.at(x) : findVarType(x);
    if (!fe) ft = ff.types.count(x) ? ff.types.at(x) : findVarType(x);
    if (te && fe) continue;
    auto fill = [&](Block* b, const TypePtr& type) {
      WithInsertPoint guard(b);
      Value* u = insert(graph_->createUninitialized(type), loc)->output();
      Node* store = graph_->create(prim::Store, {u}, 0);
      store->s_(attr::name, x);
      insert(store, loc);
    };
    if (te) {
      fill(tb, ft);
      tt = ft;
    } else if (fe) {
      fill(fb, tt);
      ft = tt;
    }
    if (!tt || !ft) continue;
    TypePtr full = findVarType(x);
    bool defaultToUnion =
        full && (full->kind() == TypeKind::UnionType || full->kind() == TypeKind::OptionalType ||
                 full->kind() == TypeKind::NumberType);
    auto unified = unifyTypes(tt, ft, defaultToUnion);
    if (!unified) {
      std::string msg = "Type mismatch: " + x + " is set to type " + tt->reprStr() +
                        " in the true branch and type " + ft->reprStr() + " in the false branch";
      if (findVarType(x)) throwErrorAt(loc, msg);
      frame().errors[x] = msg;
      continue;
    }
    frame().types[x] = *unified;
    frame().errors.erase(x);
  }
}

void Emitter::emitStatements(const std::vector<Stmt>& stmts, size_t begin) {
  Block* block = graph_->insertPointBlock();
  if (stackNearlyExhausted() && begin < stmts.size())  // Note [Stack guard]
    throwErrorAt(stmts[begin].range(),
                 "blocks or call chain nested too deeply (the stack is "
                 "nearly exhausted)");
  // The statements after the i-th (Note [Early exits] moves them into a branch).
  auto tail = [&](size_t i) {
    return std::vector<Stmt>(stmts.begin() + static_cast<long>(i) + 1, stmts.end());
  };
  for (size_t i = begin; i < stmts.size(); ++i) {
    if (exitBlocks_.count(block) || returnBlocks_.count(block)) return;  // dead code
    const Stmt& stmt = stmts[i];
    switch (stmt.kind()) {
      case TreeKind::If:
        if (emitIf(If(stmt.tree()), tail(i))) return;  // the rest went into a branch
        break;
      case TreeKind::While:
      case TreeKind::For:
        if (emitLoopStatement(stmt, tail(i))) return;  // the rest went into a branch
        break;
      case TreeKind::Assign:
        if (env_.declareAttributes && emitInitializerStatement(stmt)) break;
        emitAssignment(Assign(stmt.tree()));
        break;
      case TreeKind::AugAssign: emitAugAssign(AugAssign(stmt.tree())); break;
      case TreeKind::ExprStmt: {
        if (env_.declareAttributes && emitInitializerStatement(stmt)) break;
        ExprStmt s(stmt.tree());
        emitSugaredExpr(s.expr(), 0);
        break;
      }
      case TreeKind::Pass: break;
      case TreeKind::Return: emitReturn(Return(stmt.tree()), block); return;
      case TreeKind::Raise: emitRaise(Raise(stmt.tree()), block); return;
      case TreeKind::Assert: emitAssert(Assert(stmt.tree())); break;
      case TreeKind::Break:
      case TreeKind::Continue: {
        if (loopDepth_ == 0 || loopHasBreak_.empty())
          throwErrorAt(stmt.range(),
                       std::string(stmt.kind() == TreeKind::Break ? "break" : "continue") +
                           " outside of a loop");
        if (stmt.kind() == TreeKind::Break)
          setValue(stmt.range(), continueFlag(loopDepth_ - 1),
                   constant(IValue(false), stmt.range()));
        return;  // Note [Early exits]: the rest of the body was moved into the other branch
      }
      case TreeKind::Delete: emitDelete(Delete(stmt.tree())); break;
      case TreeKind::With: emitWith(With(stmt.tree())); break;
      case TreeKind::Def:
        throwErrorAt(stmt.range(),
                     "nested function definitions are only supported for fork, "
                     "which torchless does not compile");
      case TreeKind::ClassDef:
        throwErrorAt(stmt.range(), "class definitions are not supported inside functions");
      case TreeKind::Import:
      case TreeKind::ImportFrom:
        throwErrorAt(stmt.range(), "import statements are not supported inside functions");
      default:
        throwErrorAt(stmt.range(),
                     std::string("unsupported statement ") + treeKindEnumName(stmt.kind()));
    }
  }
}

// `if`; true when a branch that always exits made the other take `rest`, the statements
// after it (Note [Early exits]).
bool Emitter::emitIf(const If& s, std::vector<Stmt> rest) {
  std::vector<Stmt> tb = toVector(s.trueBranch()), fb = toVector(s.falseBranch());
  bool tj = alwaysJumps(tb), fj = alwaysJumps(fb);
  bool takesRest = tj != fj && !rest.empty();
  if (takesRest) {
    // Note [Early exits]: the rest of this block runs only on the branch that goes on.
    std::vector<Stmt>& goesOn = tj ? fb : tb;
    goesOn.insert(goesOn.end(), rest.begin(), rest.end());
  }
  CondValue cond = emitCondExpr(s.cond());
  emitIfElseBlocks(s.range(), cond, tb, fb);
  // A branch that raises or returns refines what holds afterwards (`if x is None: raise`).
  if (!cond.staticIf && !takesRest) {
    Node* ifNode = graph_->insertPoint()->prev();
    if (ifNode->kind() == prim::If) {
      bool tExit = exitBlocks_.count(ifNode->blocks()[0]) > 0;
      bool fExit = exitBlocks_.count(ifNode->blocks()[1]) > 0;
      if (tExit && !fExit)
        insertRefinements(s.range(), cond.refinements.whenFalse);
      else if (fExit && !tExit)
        insertRefinements(s.range(), cond.refinements.whenTrue);
    }
  }
  return takesRest;
}

// `while` / `for`; true when a return inside moved `rest` into the branch that did not
// return (Note [Early exits]).
bool Emitter::emitLoopStatement(const Stmt& stmt, const std::vector<Stmt>& rest) {
  std::vector<Stmt> body;
  if (stmt.kind() == TreeKind::While) {
    While s(stmt.tree());
    body = toVector(s.body());
    emitLoopCommon(s.range(), nullptr, std::nullopt, body, s.cond());
  } else {
    body = toVector(For(stmt.tree()).body());
    emitFor(For(stmt.tree()));
  }
  if (!containsExit(body, TreeKind::Return)) return false;
  // Note [Early exits]: `if $did_return: return $return`, the rest of this block in
  // the other branch.
  SourceRange loc = stmt.range();
  Stmt ret(Return::create(loc, Maybe<Expr>::create(
                                   loc, Var::create(loc, Ident::create(loc, kReturnVar)).tree()))
               .tree());
  CondValue cond;
  cond.value = getVar(loc, kDidReturnVar);
  emitIfElseBlocks(loc, cond, {ret}, rest);
  return true;
}

// `return`; `block` is the block of the statement (Note [Early exits]).
void Emitter::emitReturn(const Return& r, Block* block) {
  bool synthetic = r.value().present() && r.value().get().kind() == TreeKind::Var &&
                   Var(r.value().get().tree()).name().name() == kReturnVar;
  Value* v;
  if (r.value().present()) {
    v = emitExpr(r.value().get(), declaredReturn_);
  } else {
    v = graph_->insertConstant(IValue());
  }
  if (declaredReturn_) {
    if (!(v->type()->isSubtypeOf(*TensorType::get()) && v->type()->isSubtypeOf(*NoneType::get())))
      v = tryConvertToType(r.range(), *graph_, declaredReturn_, v, true);
    if (!v->type()->isSubtypeOf(*declaredReturn_))
      throwErrorAt(r.range(), "Return value was annotated as having type " +
                                  declaredReturn_->reprStr() + " but is actually of type " +
                                  v->type()->reprStr());
  } else if (!synthetic) {
    TypePtr merged = mergedReturn_ ? mergedReturn_ : v->type();
    auto u = unifyTypes(merged, v->type());
    if (!u)
      throwErrorAt(r.range(), "Previous return statement returned a value of type " +
                                  merged->reprStr() +
                                  " but this return statement returns a value of type " +
                                  v->type()->reprStr());
    mergedReturn_ = *u;
  }
  setValue(r.range(), kReturnVar, v);
  if (loopDepth_ > 0) {
    // Note [Early exits]: a return inside a loop leaves it as a break does; the
    // statement after the loop returns the value.
    setValue(r.range(), kDidReturnVar, constant(IValue(true), r.range()));
    setValue(r.range(), continueFlag(loopDepth_ - 1), constant(IValue(false), r.range()));
    return;
  }
  returnBlocks_.insert(block);
}

// `raise`; `block` is the block of the statement, which then always exits.
void Emitter::emitRaise(const Raise& r, Block* block) {
  Value* msg;
  Value* cls;
  if (!r.exception().present()) throwErrorAt(r.range(), "bare raise is not supported");
  auto sv = emitSugaredExpr(r.exception().get(), 1);
  if (auto em = std::dynamic_pointer_cast<ExceptionMessageValue>(sv)) {
    msg = em->message_;
    cls = em->qualifiedClassName_;
  } else if (auto ev = std::dynamic_pointer_cast<ExceptionValue>(sv)) {
    msg = constant(IValue(std::string()), r.range());
    cls = constant(IValue("builtins." + ev->name_), r.range());
  } else {
    throwErrorAt(r.range(), "exceptions must derive from BaseException");
  }
  if (!msg->type()->isSubtypeOf(*StringType::get())) msg = builtin(r.range(), "aten::str", {msg});
  insert(graph_->create(prim::RaiseException, {msg, cls}, 0), r.range());
  exitBlocks_.insert(block);
}

// `assert c, msg`: if c: pass, else: raise AssertionError(msg).
void Emitter::emitAssert(const Assert& a) {
  CondValue cond = emitCondExpr(a.test());
  // if cond: pass  else: raise AssertionError(msg)
  if (cond.staticIf && *cond.staticIf) return;
  Node* n = insert(graph_->create(prim::If, {cond.value}, 0), a.range());
  n->addBlock();
  Block* fb = n->addBlock();
  {
    pushFrame(fb);
    WithInsertPoint guard(fb);
    Value* msg;
    if (!a.msg().present()) {
      msg = constant(IValue(std::string("AssertionError: ")), a.range());
    } else if (a.msg().get().kind() == TreeKind::StringLiteral) {
      msg = constant(IValue("AssertionError: " + StringLiteral(a.msg().get().tree()).text()),
                     a.msg().get().range());
    } else {
      Value* m = emitExpr(a.msg().get());
      msg = builtin(a.range(), "aten::format",
                    {constant(IValue(std::string("AssertionError: {}")), a.range()), m});
    }
    Value* none = graph_->insertConstant(IValue());
    insert(graph_->create(prim::RaiseException, {msg, none}, 0), a.range());
    exitBlocks_.insert(fb);
    popFrame();
  }
  insertRefinements(a.range(), cond.refinements.whenTrue);
}

void Emitter::emitDelete(const Delete& d) {
  for (Expr target : d.targets()) {
    if (target.kind() == TreeKind::Var) {
      removeVar(target.range(), Var(target.tree()).name().name());
    } else if (target.kind() == TreeKind::Subscript) {
      Subscript sub(target.tree());
      if (sub.subscriptExprs().size() != 1)
        throwErrorAt(target.range(), "del with more than one index is not supported");
      Value* obj = emitExpr(sub.value());
      Value* idx = emitExpr(sub.subscriptExprs()[0]);
      if (obj->type()->kind() == TypeKind::ClassType) {
        MethodValue(obj, "__delitem__")
            .call(target.range(), *this, {NamedValue{target.range(), "", idx}}, {}, 0);
      } else {
        builtin(target.range(), "aten::Delete", {obj, idx});
      }
    } else {
      throwErrorAt(target.range(),
                   "del statements are only supported for deleting list "
                   "and dict items and variables");
    }
  }
}

void Emitter::emitWith(const With& w) {
  std::vector<Value*> entered;
  for (WithItem item : w.items()) {
    // Autograd modes change nothing torchless computes (it keeps no graph for
    // gradients): `with torch.no_grad():` runs its body as is.
    if (isGradModeContext(item)) continue;
    Value* obj = emitExpr(item.target());
    const auto* cls = obj->type()->cast<ClassType>();
    if (!cls) throwErrorAt(item.range(), "With item expression must return an object");
    TypePtr enterType = NoneType::get();
    if (auto* fn = dynamic_cast<GraphFunction*>(cls->findMethod("__enter__"))) {
      if (!fn->schema().returns().empty()) enterType = fn->schema().returns()[0].type();
    }
    Node* enter = insert(graph_->create(prim::Enter, {obj}, 1), item.range());
    enter->output()->setType(enterType);
    if (item.var().present())
      emitExprsAssign(item.var().get(), std::make_shared<SimpleValue>(enter->output()),
                      item.range());
    entered.push_back(obj);
  }
  emitStatements(w.body());
  for (auto it = entered.rbegin(); it != entered.rend(); ++it) {
    Node* exit = insert(graph_->create(prim::Exit, {*it}, 1), w.range());
    exit->output()->setType(AnyType::get());
  }
}

void Emitter::emitLoopCommon(const SourceRange& loc, const SugaredValuePtr& iterable,
                             const std::optional<Expr>& target, const std::vector<Stmt>& body,
                             const std::optional<Expr>& cond) {
  bool hasReturn = containsExit(body, TreeKind::Return);
  bool hasBreak = containsExit(body, TreeKind::Break) || hasReturn;
  if (hasReturn) {
    // The loop carries the return value and whether it returned (Note [Early exits]).
    if (!findVarType(kReturnVar)) {
      TypePtr t = declaredReturn_ ? declaredReturn_ : inferredReturn_;
      if (!t) t = AnyType::get();  // the probe compile (compileFunction) finds the type
      Value* u = insert(graph_->createUninitialized(t), loc)->output();
      setValue(loc, kReturnVar, u);
    }
    setValue(loc, kDidReturnVar, constant(IValue(false), loc));
  }
  emitLoop(
      loc, iterable, target, [&] { emitStatements(body, 0); }, cond, hasBreak);
}

std::string Emitter::continueFlag(int depth) { return "$continue" + std::to_string(depth); }

void Emitter::emitLoop(const SourceRange& loc, const SugaredValuePtr& iterable,
                       const std::optional<Expr>& target, const std::function<void()>& body,
                       const std::optional<Expr>& cond, bool hasBreak) {
  if (hasBreak) setValue(loc, continueFlag(loopDepth_), constant(IValue(true), loc));
  Value* maxTrip;
  if (iterable) {
    maxTrip = iterable->len(loc, *this);
  } else {
    maxTrip = constant(IValue(std::numeric_limits<int64_t>::max()), loc);
  }
  Node* n = insert(graph_->create(prim::Loop, 0), loc);
  Block* bodyBlock = n->addBlock();
  {
    Block* condBlock = n->addBlock();
    pushFrame(condBlock);
    Value* out;
    if (cond || hasBreak) {
      WithInsertPoint guard(condBlock);
      if (hasBreak && cond) {
        Value* flag = getVar(loc, continueFlag(loopDepth_));
        Node* ifn = insert(graph_->create(prim::If, {flag}, 0), loc);
        flagIfs_.insert(ifn);
        Block* t = ifn->addBlock();
        Block* f = ifn->addBlock();
        {
          WithInsertPoint g2(t);
          t->registerOutput(emitToBool(cond->range(), emitExpr(*cond)));
        }
        {
          WithInsertPoint g2(f);
          f->registerOutput(constant(IValue(false), loc));
        }
        out = ifn->addOutput()->setType(BoolType::get());
      } else if (hasBreak) {
        out = getVar(loc, continueFlag(loopDepth_));
      } else {
        out = emitToBool(cond->range(), emitExpr(*cond));
      }
    } else {
      WithInsertPoint guard(n);
      out = constant(IValue(true), loc);
    }
    condBlock->registerOutput(out);
    popFrame();
  }
  n->addInput(maxTrip);
  Value* tripCount = bodyBlock->addInput()->setType(IntType::get());
  ++loopDepth_;
  loopHasBreak_.push_back(hasBreak);
  {
    pushFrame(bodyBlock);
    WithInsertPoint guard(bodyBlock);
    if (hasBreak) {
      // The body runs only while the flag holds: not carried from the last iteration.
      setValue(loc, continueFlag(loopDepth_ - 1), constant(IValue(true), loc));
    }
    if (iterable && target) {
      SugaredValuePtr elem = iterable->getitem(loc, *this, tripCount);
      emitExprsAssign(*target, elem, target->range());
    }
    body();
    popFrame();
  }
  loopHasBreak_.pop_back();
  --loopDepth_;
  returnBlocks_.erase(bodyBlock);
}

void Emitter::emitFor(const For& stmt) {
  SugaredValuePtr sv = emitSugaredExpr(stmt.iter(), 1);
  SugaredValuePtr iterable = sv->iter(stmt.iter().range(), *this);
  std::vector<Stmt> body = toVector(stmt.body());
  if (iterable->shouldUnroll()) {
    if (containsExit(body, TreeKind::Break) || containsExit(body, TreeKind::Continue))
      throwErrorAt(stmt.range(),
                   "break and continue are not supported in unrolled loops "
                   "(over tuples and module lists)");
    if (containsExit(body, TreeKind::Return))
      throwErrorAt(stmt.range(),
                   "return statements are not supported yet in unrolled loops "
                   "(over tuples and module lists)");
    auto elems = iterable->asTuple(stmt.iter().range(), *this, std::nullopt);
    for (const auto& elem : elems) {
      emitExprsAssign(stmt.target(), elem, stmt.target().range());
      emitStatements(body, 0);
    }
    return;
  }
  emitLoopCommon(stmt.range(), iterable, stmt.target(), body, std::nullopt);
}

// ---- attributes declared by __init__ -------------------------------------------------------

void Emitter::declareAttribute(const SourceRange& loc, const std::string& name, const TypePtr& type,
                               bool isParameter, bool isBuffer) {
  auto* cls = const_cast<ClassType*>(selfType_->cast<ClassType>());
  TL_INTERNAL_ASSERT(cls, "declaring an attribute outside a class");
  if (const ClassType::Attribute* a = cls->findAttribute(name)) {
    if (!type->isSubtypeOf(*a->type))
      throwErrorAt(loc, "Wrong type for attribute assignment. Expected " + a->type->reprStr() +
                            " but got " + type->reprStr());
    return;
  }
  try {
    cls->addAttribute(name, type, isParameter, isBuffer);
  } catch (const Error& e) {
    throwErrorAt(loc, e.message());
  }
}

namespace {
/// `self.name` for the Var `self`: the name, else "".
std::string selfAttributeName(const Expr& e, const std::string& self) {
  if (e.kind() != TreeKind::Select) return "";
  Select s(e.tree());
  if (s.value().kind() != TreeKind::Var || Var(s.value().tree()).name().name() != self) return "";
  return s.selector().name();
}
}  // namespace

bool Emitter::emitInitializerStatement(const Stmt& stmt) {
  const std::string& self = selfName_;
  if (stmt.kind() == TreeKind::ExprStmt) {
    Expr e = ExprStmt(stmt.tree()).expr();
    if (e.kind() != TreeKind::Apply) return false;
    Apply call(e.tree());
    std::string_view callee = call.callee().range().text();
    // super().__init__() / super(M, self).__init__(): nn.Module's own initializer.
    if (callee.rfind("super(", 0) == 0 && callee.size() > 9 &&
        callee.substr(callee.size() - 9) == ".__init__")
      return true;
    // self.register_buffer("name", tensor)
    if (callee == self + ".register_buffer") {
      auto args = call.inputs();
      if (args.size() != 2 || args[0].kind() != TreeKind::StringLiteral ||
          call.attributes().size() != 0)
        throwErrorAt(e.range(), "register_buffer takes a string literal name and a tensor");
      std::string name = StringLiteral(args[0].tree()).text();
      Value* v = emitExpr(args[1]);
      if (!v->type()->isSubtypeOf(*TensorType::get()) && v->type()->kind() != TypeKind::NoneType)
        throwErrorAt(args[1].range(), "a buffer must be a Tensor, not " + v->type()->reprStr());
      declareAttribute(e.range(), name,
                       v->type()->kind() == TypeKind::NoneType
                           ? OptionalType::create(TensorType::get())
                           : TypePtr(TensorType::get()),
                       false, true);
      insert(graph_->createSetAttr(graph_->inputs()[0], name, v), e.range());
      return true;
    }
    return false;
  }
  // self.name = torch.nn.Parameter(tensor[, requires_grad])
  Assign a(stmt.tree());
  if (a.lhsList().size() != 1 || !a.rhs().present()) return false;
  std::string name = selfAttributeName(a.lhs(), self);
  if (name.empty()) return false;
  Expr rhs = a.rhs().get();
  if (rhs.kind() == TreeKind::Apply) {
    Apply call(rhs.tree());
    std::string_view callee = call.callee().range().text();
    if (callee == "torch.nn.Parameter" || callee == "nn.Parameter" || callee == "Parameter" ||
        callee == "torch.nn.parameter.Parameter") {
      // self.name = torch.nn.Parameter(tensor[, requires_grad])
      if (call.inputs().empty()) throwErrorAt(call.range(), "torch.nn.Parameter needs a tensor");
      Value* v = emitExpr(call.inputs()[0]);
      if (!v->type()->isSubtypeOf(*TensorType::get()))
        throwErrorAt(call.inputs()[0].range(),
                     "a parameter must be a Tensor, not " + v->type()->reprStr());
      declareAttribute(a.lhs().range(), name, TensorType::get(), true, false);
      insert(graph_->createSetAttr(graph_->inputs()[0], name, v), stmt.range());
      return true;
    }
    size_t dot = callee.rfind('.');
    bool nnClass = (callee.rfind("torch.nn.", 0) == 0 || callee.rfind("nn.", 0) == 0) &&
                   dot != std::string_view::npos && dot + 1 < callee.size() &&
                   std::isupper(static_cast<unsigned char>(callee[dot + 1]));
    if (nnClass)
      throwErrorAt(call.range(), "a submodule (" + std::string(callee) +
                                     ") cannot be built in a script file's __init__: its "
                                     "constructor is Python code; script the model in PyTorch "
                                     "and load the archive instead");
  }
  const auto* cls = selfType_->cast<ClassType>();
  if (const ClassType::Attribute* existing = cls->findAttribute(name)) {
    // Declared in the class body (or earlier): the value takes the attribute's type.
    Value* v = emitExpr(rhs, existing->type);
    emitExprsAssign(a.lhs(), std::make_shared<SimpleValue>(v), rhs.range());
    return true;
  }
  if (!cls->isModule()) return false;  // a script class honours `self.x : T = v`
  // A module's attribute types come from the values, as PyTorch's infer_type does for the
  // Python object: an annotation in __init__ is ignored (PyTorch warns), and an empty list or
  // dict gives no type, hence no attribute (a later use is an error, as in PyTorch).
  bool empty =
      (rhs.kind() == TreeKind::ListLiteral && ListLiteral(rhs.tree()).inputs().size() == 0) ||
      (rhs.kind() == TreeKind::DictLiteral && DictLiteral(rhs.tree()).keyInputs().size() == 0);
  if (empty) return true;
  if (!a.type().present()) return false;
  Value* v = emitExpr(rhs);
  emitExprsAssign(a.lhs(), std::make_shared<SimpleValue>(v), rhs.range());
  return true;
}

// ---- assignment ----------------------------------------------------------------------------

void Emitter::emitExprsAssign(const Expr& lhs, const SugaredValuePtr& rhs, const SourceRange& loc,
                              const TypePtr& annotated) {
  switch (lhs.kind()) {
    case TreeKind::Var: setVar(lhs.range(), Var(lhs.tree()).name().name(), rhs, annotated); return;
    case TreeKind::TupleLiteral:
    case TreeKind::ListLiteral: {
      auto targets = SequenceLiteral(lhs.tree()).inputs();
      size_t n = targets.size();
      std::optional<size_t> starAt;
      for (size_t i = 0; i < n; ++i) {
        if (targets[i].kind() == TreeKind::Starred) {
          if (starAt)
            throwErrorAt(targets[i].range(), "Only one starred expression is allowed on the lhs");
          starAt = i;
        }
      }
      auto elems = rhs->asTuple(loc, *this, starAt ? std::nullopt : std::optional<size_t>(n));
      if (!starAt && elems.size() != n)
        throwErrorAt(loc, (elems.size() < n
                               ? "need " + std::to_string(n) + " values to unpack but found only " +
                                     std::to_string(elems.size())
                               : "too many values to unpack: need " + std::to_string(n) +
                                     " but found " + std::to_string(elems.size())));
      if (starAt && elems.size() < n - 1)
        throwErrorAt(loc, "need at least " + std::to_string(n - 1) +
                              " values to unpack but found only " + std::to_string(elems.size()));
      size_t e = 0;
      for (size_t i = 0; i < n; ++i) {
        if (starAt && i == *starAt) {
          size_t count = elems.size() - (n - 1);
          std::vector<Value*> vals;
          for (size_t k = 0; k < count; ++k) vals.push_back(elems[e++]->asValue(loc, *this));
          Value* tup = insert(graph_->createTuple(vals), loc)->output();
          emitExprsAssign(Starred(targets[i].tree()).expr(), std::make_shared<SimpleValue>(tup),
                          loc);
        } else {
          emitExprsAssign(targets[i], elems[e++], loc);
        }
      }
      return;
    }
    case TreeKind::Select: {
      Select s(lhs.tree());
      Value* obj = emitExpr(s.value());
      const std::string& field = s.selector().name();
      const auto* cls = obj->type()->cast<ClassType>();
      if (!cls)
        throwErrorAt(lhs.range(), "Tried to set an attribute on a non-object value of type " +
                                      obj->type()->reprStr());
      const ClassType::Attribute* a = cls->findAttribute(field);
      if (!a && env_.declareAttributes && selfType_ && *obj->type() == *selfType_) {
        Value* v = rhs->asValue(loc, *this);
        declareAttribute(lhs.range(), field, annotated ? annotated : unshapedType(v->type()), false,
                         false);
        a = cls->findAttribute(field);
      }
      if (!a)
        throwErrorAt(lhs.range(), "Tried to set nonexistent attribute: " + field +
                                      ". Did you forget to initialize it in __init__()?");
      Value* v = rhs->asValue(loc, *this);
      v = tryConvertToType(loc, *graph_, a->type, v, true);
      if (!v->type()->isSubtypeOf(*a->type))
        throwErrorAt(loc, "Wrong type for attribute assignment. Expected " + a->type->reprStr() +
                              " but got " + v->type()->reprStr());
      insert(graph_->createSetAttr(obj, field, v), loc);
      return;
    }
    case TreeKind::Subscript:
      emitSubscriptAssign(loc, Subscript(lhs.tree()), rhs->asValue(loc, *this));
      return;
    case TreeKind::Starred:
      throwErrorAt(lhs.range(), "Starred unpacking is only allowed inside a tuple or list");
    default:
      throwErrorAt(lhs.range(),
                   std::string("unexpected expression on left-hand side of assignment: ") +
                       treeKindEnumName(lhs.kind()));
  }
}

void Emitter::emitAssignment(const Assign& stmt) {
  TypePtr annotated;
  if (stmt.type().present()) annotated = parseType(stmt.type().get());
  if (!stmt.rhs().present()) {
    if (!annotated || stmt.lhs().kind() != TreeKind::Var)
      throwErrorAt(stmt.range(), "a declaration needs a variable name and a type");
    return;  // a bare declaration `x : T` declares nothing at run time
  }
  auto lhsList = stmt.lhsList();
  if (lhsList.size() == 1 && lhsList[0].kind() != TreeKind::TupleLiteral &&
      lhsList[0].kind() != TreeKind::ListLiteral) {
    SugaredValuePtr rhs;
    if (annotated) {
      Value* v = emitExpr(stmt.rhs().get(), annotated);
      v = tryConvertToType(stmt.rhs().get().range(), *graph_, annotated, v, true);
      if (!v->type()->isSubtypeOf(*annotated))
        throwErrorAt(stmt.rhs().get().range(),
                     "Variable '" + std::string(lhsList[0].range().text()) +
                         "' is annotated with type " + annotated->reprStr() +
                         " but is being assigned to a value of type " + v->type()->reprStr());
      rhs = std::make_shared<SimpleValue>(v);
    } else {
      rhs = emitSugaredExpr(stmt.rhs().get(), 1);
    }
    emitExprsAssign(lhsList[0], rhs, stmt.rhs().get().range(), annotated);
    return;
  }
  // Tuple targets or chained assignment: evaluate once, assign to each target.
  size_t binders = 1;
  if (lhsList[0].kind() == TreeKind::TupleLiteral || lhsList[0].kind() == TreeKind::ListLiteral)
    binders = SequenceLiteral(lhsList[0].tree()).inputs().size();
  SugaredValuePtr rhs = emitSugaredExpr(stmt.rhs().get(), binders);
  for (Expr lhs : lhsList) emitExprsAssign(lhs, rhs, stmt.rhs().get().range(), annotated);
}

namespace {
const char* augOpName(TreeKind op, bool inplace) {
  switch (op) {
    case TreeKind::Add: return inplace ? "aten::add_" : "aten::add";
    case TreeKind::Sub: return inplace ? "aten::sub_" : "aten::sub";
    case TreeKind::Div: return inplace ? "aten::div_" : "aten::div";
    case TreeKind::Mul: return inplace ? "aten::mul_" : "aten::mul";
    case TreeKind::Mod: return inplace ? "aten::fmod_" : "aten::fmod";
    case TreeKind::BitOr: return inplace ? "aten::bitwise_or" : "aten::__or__";
    case TreeKind::BitAnd: return inplace ? "aten::bitwise_and" : "aten::__and__";
    case TreeKind::BitXor: return inplace ? "aten::bitwise_xor" : "aten::__xor__";
    case TreeKind::LShift: return inplace ? "aten::__ilshift__" : "aten::__lshift__";
    case TreeKind::RShift: return inplace ? "aten::__irshift__" : "aten::__rshift__";
    case TreeKind::Pow: return "aten::pow";
    case TreeKind::FloorDiv: return "aten::floordiv";
    case TreeKind::MatMul: return "aten::matmul";
    default: return nullptr;
  }
}
}  // namespace

void Emitter::emitAugAssign(const AugAssign& stmt) {
  auto compute = [&](Value* lhsValue) -> Value* {
    if (lhsValue->type()->kind() == TypeKind::ClassType) {
      static const std::map<TreeKind, std::string> magic = {{TreeKind::Add, "__iadd__"},
                                                            {TreeKind::Sub, "__isub__"},
                                                            {TreeKind::Mul, "__imul__"},
                                                            {TreeKind::Div, "__itruediv__"}};
      auto it = magic.find(stmt.augOp());
      if (it == magic.end())
        throwErrorAt(stmt.range(), "unsupported augmented assignment on an object");
      Value* rhs = emitExpr(stmt.rhs());
      return MethodValue(lhsValue, it->second)
          .call(stmt.range(), *this, {NamedValue{stmt.rhs().range(), "", rhs}}, {}, 1)
          ->asValue(stmt.range(), *this);
    }
    bool inplace = lhsValue->type()->isSubtypeOf(*TensorType::get()) ||
                   lhsValue->type()->kind() == TypeKind::ListType;
    const char* op = augOpName(stmt.augOp(), inplace);
    if (!op) throwErrorAt(stmt.range(), "unsupported augmented assignment operator");
    Value* rhs = emitExpr(stmt.rhs());
    return emitBuiltinCall(
        stmt.range(), *graph_, Symbol::fromQualString(op),
        {NamedValue{stmt.lhs().range(), "", lhsValue}, NamedValue{stmt.rhs().range(), "", rhs}},
        {});
  };
  Expr lhs = stmt.lhs();
  switch (lhs.kind()) {
    case TreeKind::Var: {
      Value* result = compute(emitExpr(lhs));
      setValue(lhs.range(), Var(lhs.tree()).name().name(), result);
      return;
    }
    case TreeKind::Select: {
      Select s(lhs.tree());
      Value* obj = emitExpr(s.value());
      Value* cur = makeSugared(obj)
                       ->attr(lhs.range(), *this, s.selector().name())
                       ->asValue(lhs.range(), *this);
      Value* result = compute(cur);
      insert(graph_->createSetAttr(obj, s.selector().name(), result), stmt.range());
      return;
    }
    case TreeKind::Subscript: {
      Subscript sub(lhs.tree());
      Value* obj = emitExpr(sub.value());
      if (obj->type()->isSubtypeOf(*TensorType::get())) {
        auto [view, tensorIndices] = emitTensorIndexing(lhs.range(), obj, sub.subscriptExprs());
        if (!tensorIndices.empty())
          throwErrorAt(lhs.range(), "augmented assignment with tensor indices is not supported");
        compute(view);
        return;
      }
      if (sub.subscriptExprs().size() != 1)
        throwErrorAt(lhs.range(), "augmented assignment with more than one index is not supported");
      Value* idx = emitExpr(sub.subscriptExprs()[0]);
      Value* cur = builtin(lhs.range(), "aten::__getitem__", {obj, idx});
      Value* result = compute(cur);
      builtin(stmt.range(), "aten::_set_item", {obj, idx, result});
      return;
    }
    default:
      throwErrorAt(lhs.range(), "unexpected expression on left-hand side of augmented assignment");
  }
}

// ---- functions -----------------------------------------------------------------------------

TypePtr Emitter::emitBody(const Def& def, const TypePtr& declaredReturn) {
  declaredReturn_ = declaredReturn;
  emitStatements(def.statements());
  Block* top = graph_->block();
  Value* result;
  if (returnBlocks_.count(top)) {
    result = getVar(def.range(), "$return");
  } else if (exitBlocks_.count(top)) {
    TypePtr t = declaredReturn ? declaredReturn : NoneType::get();
    result = graph_->insertNode(graph_->createUninitialized(t))->output();
  } else {
    if (containsExit(toVector(def.statements()), TreeKind::Return) && mergedReturn_ &&
        mergedReturn_->kind() != TypeKind::NoneType && !canHoldNone(*mergedReturn_))
      throwErrorAt(def.range(),
                   "Function was not annotated as having a return type but some "
                   "paths do not return a value");
    result = graph_->insertConstant(IValue());
    if (declaredReturn && !result->type()->isSubtypeOf(*declaredReturn))
      throwErrorAt(def.range(), "Function was annotated as having type " +
                                    declaredReturn->reprStr() +
                                    " but some paths do not return a value");
  }
  graph_->registerOutput(result);
  if (declaredReturn) return declaredReturn;
  return result->type();
}

namespace {

/// True when a loop of `stmts` (outside nested defs) holds a return.
bool returnsInsideLoop(const std::vector<Stmt>& stmts) {
  for (const Stmt& s : stmts) {
    switch (s.kind()) {
      case TreeKind::For:
        if (containsExit(toVector(For(s.tree()).body()), TreeKind::Return)) return true;
        break;
      case TreeKind::While:
        if (containsExit(toVector(While(s.tree()).body()), TreeKind::Return)) return true;
        break;
      case TreeKind::If: {
        If i(s.tree());
        if (returnsInsideLoop(toVector(i.trueBranch())) ||
            returnsInsideLoop(toVector(i.falseBranch())))
          return true;
        break;
      }
      case TreeKind::With:
        if (returnsInsideLoop(toVector(With(s.tree()).body()))) return true;
        break;
      default: break;
    }
  }
  return false;
}

/// Binds the parameters of `def` as graph inputs of `e`; returns the schema's arguments.
std::vector<Argument> bindParameters(Emitter& e, const Def& def, const TypePtr& selfType) {
  std::vector<Argument> args;
  size_t i = 0;
  for (Param p : def.decl().params()) {
    const std::string& name = p.ident().name();
    TypePtr type;
    if (i == 0 && selfType) {
      type = selfType;
      e.selfName_ = name;
    } else {
      type = p.type().present() ? e.parseType(p.type().get()) : TensorType::get();
    }
    std::optional<IValue> defaultValue;
    if (p.defaultValue().present()) defaultValue = e.evalDefault(p.defaultValue().get(), type);
    Value* input = e.graph().addInput()->setType(type);
    if (meaningfulName(name)) input->setDebugName(name);
    args.emplace_back(name, type, std::nullopt, defaultValue, p.kwargOnly());
    e.setValue(p.range(), name, input);
    ++i;
  }
  return args;
}

}  // namespace

std::unique_ptr<GraphFunction> compileFunction(const Def& def, const std::string& qualname,
                                               const TypePtr& selfType, const CompileEnv& env) {
  initOperatorRegistry();
  auto graph = std::make_shared<Graph>();
  Emitter e(env, selfType, graph);
  std::vector<Argument> args = bindParameters(e, def, selfType);
  TypePtr declared;
  if (def.decl().returnType().present()) declared = e.parseType(def.decl().returnType().get());
  TypePtr ret;
  try {
    if (!declared && returnsInsideLoop(toVector(def.statements()))) {
      // The value a loop carries for `return` needs its type before the loop: a probe
      // compile (its graph thrown away) unifies the types of the return statements.
      Emitter probe(env, selfType, std::make_shared<Graph>());
      bindParameters(probe, def, selfType);
      probe.emitBody(def, nullptr);
      e.inferredReturn_ = probe.mergedReturn_;
    }
    ret = e.emitBody(def, declared);
  } catch (Error& err) {
    err.addContext("while compiling " + qualname);
    throw;
  }
  convertToSSA(*graph, e.flagIfs_);
  FunctionSchema schema(def.name().name(), "", std::move(args), {Argument("", ret)});
  return std::make_unique<GraphFunction>(qualname, graph, std::move(schema));
}

}  // namespace torchless::frontend
