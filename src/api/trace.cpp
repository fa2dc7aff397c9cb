// torchless::trace: a tracing evaluator over the IR that records what it runs (Note [Tracing]
// in api/trace.h), the check-input comparisons of torch.jit.trace, and the traced Module.
//
// The evaluator walks a method's graph node by node in frames (one per call) that map IR
// values to runtime values, running each operator with the kernel the interpreter would use
// (KernelRegistry::operationFor). It does not go through the interpreter's instruction list,
// so the interpreter's hot loop carries no tracing hook at all; control flow, calls, GetAttr
// and SetAttr are evaluated here with the interpreter's semantics (runtime/interpreter.h).
//
// Traced values live in three maps:
//  - tensors by identity (TensorImpl, held weakly: an expired entry is a stale address);
//  - int/float/bool values computed from sizes, per frame by IR value (frame.syms);
//  - lists and tuples holding such values, by identity, element by element (seqs_).
#include "api/trace.h"

#include "core/error.h"
#include "ir/dead_code_elimination.h"
#include "ir/operator_matching.h"
#include "ir/operator_registry.h"
#include "ir/verifier.h"
#include "runtime/interpreter.h"
#include "runtime/kernel.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace torchless {

std::string TraceWarning::str() const {
  return (place.empty() ? std::string() : place + ": ") + "TracerWarning: " + message;
}

namespace {

// torch/csrc/jit/frontend/tracer.cpp: WARN_PYTHON_DATAFLOW and WARN_CONSTRUCTOR.
constexpr const char* kWarnDataflow =
    " might cause the trace to be incorrect. We can't record the data flow of Python values, so "
    "this value will be treated as a constant in the future. This means that the trace might "
    "not generalize to other inputs!";
constexpr const char* kWarnConstructor =
    " results are registered as constants in the trace. You can safely ignore this warning if "
    "you use this function to create tensors out of constant variables that would be the same "
    "every time you call this function. In any other case, this might cause the trace to be "
    "incorrect.";

std::string placeOf(const Node* n) {
  if (n && n->sourceRange()) return n->sourceRange()->str();
  return {};
}

bool typeHasTensor(const TypePtr& t) {
  if (!t) return false;
  if (t->kind() == TypeKind::TensorType) return true;
  for (const TypePtr& c : t->containedTypes())
    if (typeHasTensor(c)) return true;
  return false;
}

bool valueHasTensor(const IValue& v) {
  if (v.isTensor()) return true;
  if (v.isList()) {
    const auto& l = v.toList();
    if (typeHasTensor(l->elementType)) return true;
    return std::any_of(l->list.begin(), l->list.end(), valueHasTensor);
  }
  if (v.isTuple()) {
    const auto& t = v.toTuple();
    return std::any_of(t->elements.begin(), t->elements.end(), valueHasTensor);
  }
  if (v.isDict()) {
    for (const auto& [k, x] : v.toDict()->entries())
      if (valueHasTensor(k) || valueHasTensor(x)) return true;
  }
  return false;
}

/// A deep copy of tensors inside `v` (torch.jit._trace._clone_inputs).
IValue cloneValue(const IValue& v) {
  if (v.isTensor()) return IValue(v.toTensor().clone());
  if (v.isList()) {
    const auto& l = v.toList();
    std::vector<IValue> items;
    for (const auto& x : l->list) items.push_back(cloneValue(x));
    return IValue(ListImpl::create(l->elementType, std::move(items)));
  }
  if (v.isTuple()) {
    const auto& t = v.toTuple();
    std::vector<IValue> items;
    for (const auto& x : t->elements) items.push_back(cloneValue(x));
    return IValue(TupleImpl::create(std::move(items), t->type));
  }
  if (v.isDict()) {
    const auto& d = v.toDict();
    auto c = DictImpl::create(d->keyType, d->valueType);
    for (const auto& [k, x] : d->entries()) c->insertOrAssign(k, cloneValue(x));
    return IValue(c);
  }
  return v;
}

std::vector<IValue> cloneValues(const std::vector<IValue>& vs) {
  std::vector<IValue> out;
  for (const auto& v : vs) out.push_back(cloneValue(v));
  return out;
}

/// Which TracerWarning a data-dependent conversion gives ("" when `kind` is none).
std::string conversionWarning(Symbol kind) {
  const std::string_view k = kind.toUnqualString();
  if (kind.is_aten()) {
    if (k == "Bool" || k == "is_nonzero" || k == "equal" || k == "allclose") return "Python boolean";
    if (k == "Int") return "Python integer";
    if (k == "IntImplicit") return "Python index";
    if (k == "Float" || k == "FloatImplicit") return "Python float";
    if (k == "item" || k == "ScalarImplicit") return "Python number";
    if (k == "tolist") return "Python list";
  } else if (kind.is_prim()) {
    if (k == "ImplicitTensorToNum") return "Python number";
    if (k == "tolist") return "Python list";
  }
  return {};
}

/// Nodes that only move values between containers: not recorded, their tensors keep their
/// identity (schema-less prim nodes, and schemas whose returns are type variables such as
/// aten::__getitem__.t(t[] list, int idx) -> t).
bool isPassThrough(const Node* n, const OpInfo* op) {
  switch (n->kind()) {
    case prim::ListConstruct:
    case prim::ListUnpack:
    case prim::TupleConstruct:
    case prim::TupleUnpack:
    case prim::TupleIndex:
    case prim::TupleSlice:
    case prim::DictConstruct:
    case prim::DictIndex:
    case prim::unchecked_cast:
    case prim::unchecked_unwrap_optional:
    case prim::Uninitialized:
    case prim::ModuleContainerIndex:
      return true;
    default:
      break;
  }
  if (!op) return false;
  for (const auto& r : op->schema.returns())
    if (r.type()->hasFreeVariables()) return true;
  return false;
}

/// Per block: which values (defined in the block) die after each node, so that the live
/// references PyTorch counts for the in-place warning are those a Python program would hold.
struct BlockPlan {
  std::unordered_map<const Node*, std::vector<const Value*>> freeAfter;
  std::vector<const Value*> unusedInputs;
};

BlockPlan planBlock(const Block* b) {
  BlockPlan plan;
  std::unordered_map<const Node*, size_t> pos;
  size_t i = 0;
  for (const Node* n : b->nodes()) pos[n] = i++;
  const size_t kReturn = i;
  auto lastUse = [&](const Value* v) -> std::optional<size_t> {
    std::optional<size_t> last;
    for (const Use& u : v->uses()) {
      const Node* user = u.user;
      while (user && user->owningBlock() != b) {
        const Block* ob = user->owningBlock();
        user = ob ? ob->owningNode() : nullptr;
      }
      if (!user) return kReturn;  // used from somewhere else: keep
      size_t p = user == b->returnNode() ? kReturn : pos.at(user);
      last = last ? std::max(*last, p) : p;
    }
    return last;
  };
  std::vector<const Node*> byPos;
  for (const Node* n : b->nodes()) byPos.push_back(n);
  auto note = [&](const Value* v, const Node* def) {
    auto last = lastUse(v);
    if (!last) {
      if (def) plan.freeAfter[def].push_back(v);
      else plan.unusedInputs.push_back(v);
    } else if (*last != kReturn) {
      plan.freeAfter[byPos[*last]].push_back(v);
    }
  };
  for (const Value* v : b->inputs()) note(v, nullptr);
  for (const Node* n : b->nodes())
    for (const Value* v : n->outputs()) note(v, n);
  return plan;
}

/// Runtime values and traced scalars of one call.
struct Frame {
  std::unordered_map<const Value*, IValue> vals;
  std::unordered_map<const Value*, Value*> syms;
};

class Tracer {
 public:
  explicit Tracer(const Module& module) : self_(module.object()) {
    initOperatorRegistry();
    initKernels();
    g_ = std::make_shared<Graph>();
    collectPaths(self_, {});
  }

  TracedGraph run(const GraphFunction& fn, std::vector<IValue> inputs) {
    const auto& args = fn.schema().arguments();
    TL_CHECK(!args.empty(), "{} is not a method", fn.qualname());
    if (inputs.size() + 1 > args.size())
      throw Error(fmt::format("{}() takes {} argument{} but {} were given", fn.name(), args.size() - 1,
                              args.size() == 2 ? "" : "s", inputs.size()));
    selfValue_ = g_->addInput("self")->setType(self_->type);
    std::vector<IValue> callArgs{IValue(self_)};
    std::vector<Value*> callSyms{nullptr};
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string& name = args[i + 1].name();
      Value* in = g_->addInput(name);
      in->setType(inputType(inputs[i], name));
      bindInput(inputs[i], in, name);
      callArgs.push_back(inputs[i]);
      callSyms.push_back(nullptr);
    }
    for (size_t i = inputs.size() + 1; i < args.size(); ++i) {
      if (!args[i].defaultValue())
        throw Error(fmt::format("{}() missing value for argument '{}'", fn.name(), args[i].name()));
      callArgs.push_back(*args[i].defaultValue());
      callSyms.push_back(nullptr);
    }
    auto [outs, outSyms] = call(fn, std::move(callArgs), std::move(callSyms));
    for (size_t i = 0; i < outs.size(); ++i) {
      Value* v = outSyms[i] ? outSyms[i] : materialize(outs[i]);
      g_->registerOutput(v);
    }
    sweepDeadNodes();
    verify(*g_);
    return {g_, std::move(warnings_)};
  }

 private:
  // ---- module paths -------------------------------------------------------------------------

  void collectPaths(const ObjectPtr& obj, const std::vector<std::string>& path) {
    modulePaths_.emplace(obj.get(), path);
    const auto& attrs = obj->type->attributes();
    for (size_t i = 0; i < attrs.size() && i < obj->slots.size(); ++i) {
      const IValue& v = obj->slots[i];
      std::vector<std::string> p = path;
      p.push_back(attrs[i].name);
      if (v.isTensor()) {
        const Tensor t = v.toTensor();
        if (!paramPaths_.count(t.impl().get())) paramPaths_.emplace(t.impl().get(), ParamEntry{t.impl(), p});
      } else if (v.isObject() && !modulePaths_.count(v.toObject().get())) {
        // Submodules recursively; other objects (TorchBind state such as prepacked weights)
        // are read from their attribute when an operator takes them.
        if (v.toObject()->type->isModule()) collectPaths(v.toObject(), p);
        else modulePaths_.emplace(v.toObject().get(), p);
      }
    }
  }

  /// The GetAttr chain from self to `path` (one node per path prefix, made once).
  Value* ensurePath(const std::vector<std::string>& path) {
    Value* cur = selfValue_;
    ObjectPtr obj = self_;
    std::string key;
    for (size_t i = 0; i < path.size(); ++i) {
      key += "." + path[i];
      const IValue& v = obj->getAttr(path[i]);
      auto it = attrCache_.find(key);
      if (it != attrCache_.end()) {
        cur = it->second;
      } else {
        const auto* attr = obj->type->findAttribute(path[i]);
        TL_INTERNAL_ASSERT(attr != nullptr, "no attribute {}", path[i]);
        Node* ga = g_->insertNode(g_->createGetAttr(cur, path[i], attr->type));
        if (Value::isValidName(path[i])) ga->output()->setDebugName(path[i]);
        cur = ga->output();
        attrCache_.emplace(key, cur);
      }
      if (i + 1 < path.size()) obj = v.toObject();
    }
    return cur;
  }

  // ---- inputs -------------------------------------------------------------------------------

  TypePtr inputType(const IValue& v, const std::string& name) {
    if (v.isTensor()) return TensorType::get();
    if (v.isTuple()) {
      std::vector<TypePtr> elems;
      for (const auto& e : v.toTuple()->elements) elems.push_back(inputType(e, name));
      return TupleType::create(std::move(elems));
    }
    if (v.isList() && !v.toList()->list.empty()) {
      TypePtr e = inputType(v.toList()->list[0], name);
      return ListType::create(e);
    }
    if (v.isDict() && v.toDict()->size() > 0 && v.toDict()->keyType->kind() == TypeKind::StringType)
      return DictType::create(StringType::get(), inputType(v.toDict()->entries()[0].second, name));
    throw Error(fmt::format("argument '{}': Type '{}' cannot be traced. Only Tensors and (possibly "
                            "nested) Lists, Dicts, and Tuples of Tensors can be traced",
                            name, v.tagName()));
  }

  void bindInput(const IValue& v, Value* traced, const std::string& name) {
    if (v.isTensor()) {
      setTensor(v.toTensor(), traced);
    } else if (v.isTuple()) {
      Node* un = g_->insertNode(g_->createTupleUnpack(traced));
      const auto& els = v.toTuple()->elements;
      for (size_t i = 0; i < els.size(); ++i) bindInput(els[i], un->output(i), name);
    } else if (v.isList()) {
      const auto& els = v.toList()->list;
      Node* un = g_->insertNode(g_->createListUnpack(traced, els.size()));
      for (size_t i = 0; i < els.size(); ++i) {
        if (!els[i].isTensor() && !els[i].isTuple() && !els[i].isList() && !els[i].isDict())
          inputType(els[i], name);  // throws
        bindInput(els[i], un->output(i), name);
      }
    } else if (v.isDict()) {
      for (const auto& [k, x] : v.toDict()->entries()) {
        Node* gi = g_->insertNode(g_->create(aten::__getitem__, {traced, g_->insertConstant(k)}));
        gi->output()->setType(inputType(x, name));
        bindInput(x, gi->output(), name);
      }
    }
  }

  // ---- traced values ------------------------------------------------------------------------

  void setTensor(const Tensor& t, Value* v) {
    if (!t.defined()) return;
    tensors_[t.impl().get()] = TensorEntry{t.impl(), v};
  }

  Value* tensorValue(const Tensor& t) {
    const TensorImpl* key = t.impl().get();
    auto it = tensors_.find(key);
    if (it != tensors_.end() && !it->second.impl.expired()) return it->second.value;
    auto p = paramPaths_.find(key);
    if (p != paramPaths_.end() && !p->second.impl.expired()) {
      Value* v = ensurePath(p->second.path);
      setTensor(t, v);
      return v;
    }
    // Not produced by the trace and not an attribute: a constant (as PyTorch bakes it in).
    Value* c = g_->insertConstant(IValue(t));
    c->setType(TensorType::get());
    setTensor(t, c);
    return c;
  }

  struct SeqSym {
    std::weak_ptr<void> obj;
    std::vector<Value*> elems;  // null: a constant element
  };

  const SeqSym* findSeq(const void* p, size_t n) const {
    auto it = seqs_.find(p);
    if (it == seqs_.end() || it->second.obj.expired() || it->second.elems.size() != n) return nullptr;
    return &it->second;
  }
  const SeqSym* seqOf(const IValue& v) const {
    if (v.isList()) return findSeq(v.toList().get(), v.toList()->list.size());
    if (v.isTuple()) return findSeq(v.toTuple().get(), v.toTuple()->elements.size());
    return nullptr;
  }
  static bool anyElem(const SeqSym* s) {
    return s && std::any_of(s->elems.begin(), s->elems.end(), [](Value* v) { return v != nullptr; });
  }

  /// The traced value for runtime value `v` of IR value `irv` (may be null) in frame `f`.
  Value* materialize(const IValue& v, const Value* irv = nullptr, const Frame* f = nullptr) {
    if (irv && f) {
      auto it = f->syms.find(irv);
      if (it != f->syms.end()) return it->second;
    }
    if (v.isTensor()) return tensorValue(v.toTensor());
    if (v.isList()) {
      const auto& l = v.toList();
      const SeqSym* seq = findSeq(l.get(), l->list.size());
      const TypeKind ek = l->elementType->kind();
      const bool asList = seq || typeHasTensor(l->elementType) || ek == TypeKind::IntType ||
                          ek == TypeKind::FloatType || ek == TypeKind::BoolType;
      if (asList) {
        std::vector<Value*> els;
        for (size_t i = 0; i < l->list.size(); ++i)
          els.push_back(seq && seq->elems[i] ? seq->elems[i] : materialize(l->list[i]));
        return g_->insertNode(g_->createList(l->elementType, els))->output();
      }
      return g_->insertConstant(v);
    }
    if (v.isTuple()) {
      const auto& t = v.toTuple();
      const SeqSym* seq = findSeq(t.get(), t->elements.size());
      if (valueHasTensor(v) || anyElem(seq)) {
        std::vector<Value*> els;
        for (size_t i = 0; i < t->elements.size(); ++i)
          els.push_back(seq && seq->elems[i] ? seq->elems[i] : materialize(t->elements[i]));
        return g_->insertNode(g_->createTuple(els, t->type))->output();
      }
      return g_->insertConstant(v);
    }
    if (v.isDict() && valueHasTensor(v)) {
      const auto& d = v.toDict();
      std::vector<Value*> keys, vals;
      for (const auto& [k, x] : d->entries()) {
        keys.push_back(materialize(k));
        vals.push_back(materialize(x));
      }
      return g_->insertNode(g_->createDict(d->keyType, d->valueType, keys, vals))->output();
    }
    if (v.isObject()) {
      if (irv && irv->node()->kind() == prim::Constant) {
        // An object constant of the code (TorchBind state in CONSTANTS): the same constant.
        Node* c = g_->insertNode(g_->createClone(irv->node(), [](Value* x) { return x; }));
        return c->output();
      }
      auto it = modulePaths_.find(v.toObject().get());
      if (it != modulePaths_.end()) return it->second.empty() ? selfValue_ : ensurePath(it->second);
      throw Error(fmt::format("cannot trace a value of class {} passed to an operator (only objects "
                              "held in attributes of the module tree can be)",
                              v.toObject()->type->name()));
    }
    return g_->insertConstant(v);
  }

  void warn(const std::string& message, const Node* n) {
    TraceWarning w{message, placeOf(n)};
    if (seenWarnings_.insert({w.message, w.place}).second) warnings_.push_back(std::move(w));
  }

  // ---- evaluation ---------------------------------------------------------------------------

  using CallResult = std::pair<std::vector<IValue>, std::vector<Value*>>;

  CallResult call(const GraphFunction& fn, std::vector<IValue> args, std::vector<Value*> syms) {
    const Graph& graph = *fn.graph();
    TL_CHECK(args.size() == graph.inputs().size(), "{} takes {} arguments, got {}", fn.qualname(),
             graph.inputs().size(), args.size());
    Frame f;
    for (size_t i = 0; i < args.size(); ++i) {
      f.vals[graph.inputs()[i]] = std::move(args[i]);
      if (syms[i]) f.syms[graph.inputs()[i]] = syms[i];
    }
    runBlock(graph.block(), f, fn.qualname());
    CallResult r;
    for (const Value* o : graph.outputs()) {
      r.first.push_back(get(f, o));
      auto it = f.syms.find(o);
      r.second.push_back(it == f.syms.end() ? nullptr : it->second);
    }
    return r;
  }

  const IValue& get(Frame& f, const Value* v) {
    auto it = f.vals.find(v);
    if (it != f.vals.end()) return it->second;
    if (v->node()->kind() == prim::Constant) {
      auto c = toIValue(v);
      TL_CHECK(c.has_value(), "constant %{} has no value", v->debugName());
      return f.vals[v] = *c;
    }
    TL_INTERNAL_ASSERT(false, "value %{} used before it is defined", v->debugName());
    static IValue none;
    return none;
  }

  void set(Frame& f, const Value* dst, const IValue& v, Value* sym) {
    f.vals[dst] = v;
    if (sym) f.syms[dst] = sym;
    else f.syms.erase(dst);
  }

  Value* symOf(const Frame& f, const Value* v) const {
    auto it = f.syms.find(v);
    return it == f.syms.end() ? nullptr : it->second;
  }

  const BlockPlan& planFor(const Block* b) {
    auto it = plans_.find(b);
    if (it == plans_.end()) it = plans_.emplace(b, planBlock(b)).first;
    return it->second;
  }

  void release(Frame& f, const std::vector<const Value*>& vs) {
    for (const Value* v : vs) {
      f.vals.erase(v);
      f.syms.erase(v);
    }
  }

  void runBlock(const Block* b, Frame& f, const std::string& fnName) {
    const BlockPlan& plan = planFor(b);
    release(f, plan.unusedInputs);
    for (const Node* n : b->nodes()) {
      runNode(n, f, fnName);
      auto it = plan.freeAfter.find(n);
      if (it != plan.freeAfter.end()) release(f, it->second);
    }
  }

  void runNode(const Node* n, Frame& f, const std::string& fnName) {
    switch (n->kind()) {
      case prim::Constant:  // read when used (Function constants have no value)
        return;
      case prim::If: {
        const Value* c = n->input(0);
        if (symOf(f, c)) warn(std::string("Converting a tensor to a Python boolean") + kWarnDataflow, n);
        const Block* taken = n->blocks().at(get(f, c).toBool() ? 0 : 1);
        runBlock(taken, f, fnName);
        std::vector<IValue> outs;
        std::vector<Value*> syms;
        for (const Value* o : taken->outputs()) {
          outs.push_back(get(f, o));
          syms.push_back(symOf(f, o));
        }
        for (size_t i = 0; i < outs.size(); ++i) set(f, n->output(i), outs[i], syms[i]);
        return;
      }
      case prim::Loop: {
        runLoop(n, f, fnName);
        return;
      }
      case prim::GetAttr: {
        const IValue& obj = get(f, n->input(0));
        set(f, n->output(), obj.toObject()->getAttr(n->s(attr::name)), nullptr);
        return;
      }
      case prim::SetAttr: {
        ObjectPtr obj = get(f, n->input(0)).toObject();
        const IValue& v = get(f, n->input(1));
        if (v.isTensor() && obj->type->isModule())
          warn(fmt::format("the assignment to module attribute '{}' is not recorded in the trace: "
                           "the traced module reads the attribute's value from before the call "
                           "(torchless)",
                           n->s(attr::name)),
               n);
        obj->setAttr(n->s(attr::name), v);
        return;
      }
      case prim::CallFunction: {
        const auto* ft = n->input(0)->type()->cast<FunctionType>();
        const auto* fn = ft ? dynamic_cast<const GraphFunction*>(ft->function()) : nullptr;
        if (!fn) throw Error("prim::CallFunction of a value that is not a known function", placeOf(n));
        std::vector<IValue> args;
        std::vector<Value*> syms;
        for (size_t i = 1; i < n->inputs().size(); ++i) {
          args.push_back(get(f, n->input(i)));
          syms.push_back(symOf(f, n->input(i)));
        }
        finishCall(n, f, *fn, std::move(args), std::move(syms), fnName);
        return;
      }
      case prim::CallMethod: {
        ObjectPtr obj = get(f, n->input(0)).toObject();
        const std::string& method = n->s(attr::name);
        const auto* fn = dynamic_cast<const GraphFunction*>(obj->type->findMethod(method));
        if (!fn) throw Error(fmt::format("'{}' has no method '{}'", obj->type->name(), method), placeOf(n));
        // A submodule's method called: PyTorch's traced graphs read the submodule from its
        // parent (prim::GetAttr) even when its forward uses nothing of it (ReLU).
        auto p = modulePaths_.find(obj.get());
        if (p != modulePaths_.end() && !p->second.empty() && obj->type->isModule()) ensurePath(p->second);
        std::vector<IValue> args;
        std::vector<Value*> syms;
        for (const Value* v : n->inputs()) {
          args.push_back(get(f, v));
          syms.push_back(symOf(f, v));
        }
        finishCall(n, f, *fn, std::move(args), std::move(syms), fnName);
        return;
      }
      default:
        runOp(n, f);
    }
  }

  void finishCall(const Node* n, Frame& f, const GraphFunction& fn, std::vector<IValue> args,
                  std::vector<Value*> syms, const std::string& fnName) {
    CallResult r;
    try {
      r = call(fn, std::move(args), std::move(syms));
    } catch (Error& e) {
      std::string where = placeOf(n);
      e.addContext(fmt::format("called from {}{}", fnName, where.empty() ? "" : " at " + where));
      throw;
    }
    for (size_t i = 0; i < n->outputs().size(); ++i) set(f, n->output(i), r.first[i], r.second[i]);
  }

  void runLoop(const Node* n, Frame& f, const std::string& fnName) {
    const Block* body = n->blocks().at(0);
    const int64_t trip = get(f, n->input(0)).toInt();
    bool cond = get(f, n->input(1)).toBool();
    if (symOf(f, n->input(1))) warn(std::string("Converting a tensor to a Python boolean") + kWarnDataflow, n);
    const size_t carried = n->inputs().size() - 2;
    std::vector<IValue> vals;
    std::vector<Value*> syms;
    for (size_t i = 0; i < carried; ++i) {
      vals.push_back(get(f, n->input(2 + i)));
      syms.push_back(symOf(f, n->input(2 + i)));
    }
    for (int64_t i = 0; i < trip && cond; ++i) {
      set(f, body->inputs()[0], IValue(i), nullptr);
      for (size_t k = 0; k < carried; ++k) set(f, body->inputs()[1 + k], vals[k], syms[k]);
      runBlock(body, f, fnName);
      const Value* c = body->outputs()[0];
      cond = get(f, c).toBool();
      if (symOf(f, c)) warn(std::string("Converting a tensor to a Python boolean") + kWarnDataflow, n);
      for (size_t k = 0; k < carried; ++k) {
        vals[k] = get(f, body->outputs()[1 + k]);
        syms[k] = symOf(f, body->outputs()[1 + k]);
      }
    }
    for (size_t k = 0; k < carried; ++k) set(f, n->output(k), vals[k], syms[k]);
  }

  struct OpCache {
    const OpInfo* op = nullptr;
    Operation operation;
  };

  const OpCache& opFor(const Node* n) {
    auto it = ops_.find(n);
    if (it != ops_.end()) return it->second;
    OpCache c;
    c.op = matchOperator(n, OperatorRegistry::global());
    const auto& registry = KernelRegistry::global();
    if (!registry.hasKernel(*n, c.op)) {
      std::string what = c.op ? c.op->key
                              : fmt::format("{} (no schema matches its inputs)", n->kind().toQualString());
      throw UnsupportedError(fmt::format("unsupported operator {}", what), placeOf(n));
    }
    c.operation = registry.operationFor(*n, c.op);
    return ops_.emplace(n, std::move(c)).first->second;
  }

  void runOp(const Node* n, Frame& f) {
    const OpCache& oc = opFor(n);
    Stack stack;
    stack.reserve(n->inputs().size());
    for (const Value* v : n->inputs()) stack.push_back(get(f, v));
    std::vector<IValue> in = stack;
    try {
      oc.operation(stack);
    } catch (Error& e) {
      e.withPlace(placeOf(n));
      if (!n->kind().is_prim()) e.addContext(fmt::format("while tracing {}", n->kind().toQualString()));
      throw;
    } catch (const std::exception& ex) {
      Error e(ex.what(), placeOf(n));
      e.addContext(fmt::format("while tracing {}", n->kind().toQualString()));
      throw e;
    }
    const size_t nout = n->outputs().size();
    TL_INTERNAL_ASSERT(stack.size() == nout, "{} pushed {} values for {} outputs",
                       n->kind().toQualString(), stack.size(), nout);
    for (size_t i = 0; i < nout; ++i) set(f, n->output(i), stack[i], nullptr);
    observe(n, oc.op, f, in, stack);
  }

  // ---- what to record -----------------------------------------------------------------------

  void observe(const Node* n, const OpInfo* op, Frame& f, const std::vector<IValue>& in,
               const std::vector<IValue>& out) {
    const Symbol k = n->kind();
    const bool tensorIn = std::any_of(in.begin(), in.end(), [](const IValue& v) { return v.isTensor(); });
    if (k == aten::size && !in.empty() && in[0].isTensor()) {
      recordSize(n, f, in, out);
      return;
    }
    if (k == aten::len && in.size() == 1 && in[0].isTensor()) {
      Node* s = g_->insertNode(g_->create(aten::size, {tensorValue(in[0].toTensor()), g_->insertConstant(IValue(int64_t{0}))}));
      s->setSourceRange(n->sourceRange());
      s->output()->setType(IntType::get());
      f.syms[n->output()] = s->output();
      return;
    }
    if (k == aten::len && in.size() == 1 && in[0].isList()) return;  // lengths are static
    if (tensorIn) {
      std::string what = conversionWarning(k);
      if (!what.empty()) {
        const Tensor t = std::find_if(in.begin(), in.end(), [](const IValue& v) { return v.isTensor(); })->toTensor();
        Value* tv = tensorValue(t);
        if (shapeTensors_.count(tv)) {
          record(n, op, f, in, out);
        } else if (tv->node()->kind() != prim::Constant) {
          warn("Converting a tensor to a " + what + kWarnDataflow, n);
        }
        return;
      }
    }
    if (k.is_aten() && (k.toUnqualString() == "tensor" || k.toUnqualString() == "as_tensor")) {
      warn(fmt::format("torch.{}{}", k.toUnqualString(), kWarnConstructor), n);
      return;
    }
    if (isPassThrough(n, op)) {
      passSyms(n, op, f, in, out);
      return;
    }
    bool producesTensor = false;
    for (size_t i = 0; i < out.size(); ++i)
      producesTensor |= typeHasTensor(n->output(i)->type()) || valueHasTensor(out[i]);
    if (producesTensor) {
      record(n, op, f, in, out);
      return;
    }
    bool anySym = false;
    for (size_t i = 0; i < in.size(); ++i) anySym |= symOf(f, n->input(i)) || anyElem(seqOf(in[i]));
    if (anySym && !out.empty()) record(n, op, f, in, out);
  }

  /// aten::size(x, d) is recorded; aten::size(x) becomes one aten::size(x, i) per dimension,
  /// as PyTorch's tracer does for x.shape (unused ones are swept at the end).
  void recordSize(const Node* n, Frame& f, const std::vector<IValue>& in, const std::vector<IValue>& out) {
    Value* x = tensorValue(in[0].toTensor());
    if (in.size() == 2) {
      Node* s = g_->insertNode(g_->create(aten::size, {x, materialize(in[1], n->input(1), &f)}));
      s->setSourceRange(n->sourceRange());
      s->output()->setType(IntType::get());
      f.syms[n->output()] = s->output();
      return;
    }
    const auto& l = out[0].toList();
    SeqSym seq{l, {}};
    for (size_t i = 0; i < l->list.size(); ++i) {
      Node* s = g_->insertNode(g_->create(aten::size, {x, g_->insertConstant(IValue(static_cast<int64_t>(i)))}));
      s->setSourceRange(n->sourceRange());
      s->output()->setType(IntType::get());
      seq.elems.push_back(s->output());
    }
    seqs_[l.get()] = std::move(seq);
  }

  /// Traced scalars through container nodes.
  void passSyms(const Node* n, const OpInfo* op, Frame& f, const std::vector<IValue>& in,
                const std::vector<IValue>& out) {
    const Symbol k = n->kind();
    auto constIndex = [&](size_t i, size_t size) -> std::optional<size_t> {
      if (i >= in.size() || !in[i].isInt()) return std::nullopt;
      int64_t idx = in[i].toInt();
      if (idx < 0) idx += static_cast<int64_t>(size);
      if (idx < 0 || idx >= static_cast<int64_t>(size)) return std::nullopt;
      return static_cast<size_t>(idx);
    };
    if (k == prim::ListConstruct || k == prim::TupleConstruct) {
      SeqSym seq;
      bool any = false;
      for (size_t i = 0; i < in.size(); ++i) {
        Value* s = symOf(f, n->input(i));
        seq.elems.push_back(s);
        any |= s != nullptr;
      }
      if (!any || out.empty()) return;
      if (out[0].isList()) seq.obj = out[0].toList();
      else if (out[0].isTuple()) seq.obj = out[0].toTuple();
      else return;
      const void* key = out[0].isList() ? static_cast<const void*>(out[0].toList().get())
                                        : static_cast<const void*>(out[0].toTuple().get());
      seqs_[key] = std::move(seq);
      return;
    }
    if (k == prim::ListUnpack || k == prim::TupleUnpack) {
      const SeqSym* seq = seqOf(in[0]);
      if (!seq) return;
      for (size_t i = 0; i < n->outputs().size() && i < seq->elems.size(); ++i)
        if (seq->elems[i]) f.syms[n->output(i)] = seq->elems[i];
      return;
    }
    if ((k == prim::TupleIndex || k == aten::__getitem__) && in.size() == 2) {
      const SeqSym* seq = seqOf(in[0]);
      if (!seq) return;
      if (auto idx = constIndex(1, seq->elems.size()); idx && seq->elems[*idx])
        f.syms[n->output()] = seq->elems[*idx];
      return;
    }
    if (k == aten::append && in.size() == 2 && in[0].isList()) {
      const auto& l = in[0].toList();
      auto it = seqs_.find(l.get());
      Value* s = symOf(f, n->input(1));
      if (it != seqs_.end() && !it->second.obj.expired() && it->second.elems.size() + 1 == l->list.size()) {
        it->second.elems.push_back(s);
      } else if (s) {
        SeqSym seq{l, std::vector<Value*>(l->list.size() - 1, nullptr)};
        seq.elems.push_back(s);
        seqs_[l.get()] = std::move(seq);
      }
      return;
    }
    if (op && op->mutates && !in.empty() && in[0].isList()) seqs_.erase(in[0].toList().get());
  }

  /// Adds a node like `n` (same kind, attributes, place) over the traced inputs.
  void record(const Node* n, const OpInfo* op, Frame& f, const std::vector<IValue>& in,
              const std::vector<IValue>& out) {
    std::vector<Value*> tin;
    for (size_t i = 0; i < in.size(); ++i) {
      Value* v = materialize(in[i], n->input(i), &f);
      // An Optional[Tensor] attribute holding a tensor, passed where a Tensor is expected.
      if (op && i < op->schema.arguments().size() && in[i].isTensor() &&
          v->type()->kind() != TypeKind::TensorType &&
          op->schema.arguments()[i].type()->kind() == TypeKind::TensorType)
        v = g_->insertNode(g_->createUncheckedCast(v, TensorType::get()))->output();
      tin.push_back(v);
    }
    Symbol kind = n->kind();
    decomposeConvolution(op, in, tin, kind);
    if (op && op->mutates && !in.empty() && in[0].isTensor()) {
      const long refs = in[0].toTensor().storage().useCount();
      if (refs > 1) {
        std::string name(n->kind().toUnqualString());
        if (name == "copy_") name += " (possibly due to an assignment)";
        warn(fmt::format("There are {} live references to the data region being modified when "
                         "tracing in-place operator {}. This might cause the trace to be "
                         "incorrect, because all other views that also reference this data will "
                         "not reflect this change in the trace! On the other hand, if all other "
                         "views use the same memory chunk, but are disjoint (e.g. are outputs of "
                         "torch.split), this might still be safe.",
                         refs, name),
             n);
      }
    }
    Node* r = g_->create(kind, tin, out.size());
    if (kind == n->kind()) r->copyAttributes(*n);
    r->setSourceRange(n->sourceRange());
    g_->insertNode(r);
    bool shapeIn = false, otherIn = false;
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].isTensor()) continue;
      if (shapeTensors_.count(tin[i])) shapeIn = true;
      else if (tin[i]->node()->kind() != prim::Constant) otherIn = true;
    }
    if (kind == prim::NumToTensor && symOf(f, n->input(0))) shapeIn = true;
    for (size_t i = 0; i < out.size(); ++i) {
      Value* o = r->output(i);
      const Value* irOut = n->output(i);
      TypePtr t = irOut->type();
      if (out[i].isTensor() && t->kind() != TypeKind::TensorType) t = TensorType::get();
      o->setType(t);
      if (irOut->hasDebugName()) o->setDebugName(irOut->debugNameBase());
      if (out[i].isTensor()) {
        setTensor(out[i].toTensor(), o);
        if (shapeIn && !otherIn) shapeTensors_.insert(o);
      } else if (out[i].isList() && !out[i].toList()->list.empty() &&
                 std::all_of(out[i].toList()->list.begin(), out[i].toList()->list.end(),
                             [](const IValue& e) { return e.isTensor(); })) {
        // Tensor[] results are unpacked right away, as PyTorch's tracer does.
        const auto& els = out[i].toList()->list;
        Node* un = g_->insertNode(g_->createListUnpack(o, els.size()));
        un->setSourceRange(n->sourceRange());
        for (size_t e = 0; e < els.size(); ++e) setTensor(els[e].toTensor(), un->output(e));
      } else if (!out[i].isNone()) {
        f.syms[irOut] = o;
      }
    }
  }

  /// conv1d/2d/3d, conv_transpose1d/2d/3d and aten::convolution are in PyTorch's
  /// DONT_RECORD_TRACE (tools/autograd/gen_trace_type.py): traces hold aten::_convolution.
  void decomposeConvolution(const OpInfo* op, const std::vector<IValue>& in, std::vector<Value*>& tin,
                            Symbol& kind) {
    if (!op) return;
    const std::string& key = op->overloadKey;
    auto boolC = [&](bool b) { return g_->insertConstant(IValue(b)); };
    auto tail = [&](std::vector<Value*>& v) {
      v.push_back(boolC(false));  // benchmark
      v.push_back(boolC(false));  // deterministic
      v.push_back(boolC(true));   // cudnn_enabled
      v.push_back(boolC(true));   // allow_tf32
    };
    const bool conv = key == "aten::conv1d" || key == "aten::conv2d" || key == "aten::conv3d";
    const bool convT = key == "aten::conv_transpose1d" || key == "aten::conv_transpose2d.input" ||
                       key == "aten::conv_transpose3d.input";
    if (conv && tin.size() == 7 && in[1].isTensor()) {
      // (input, weight, bias, stride, padding, dilation, groups)
      const int64_t k = in[1].toTensor().dim() - 2;
      std::vector<Value*> zeros;
      for (int64_t i = 0; i < k; ++i) zeros.push_back(g_->insertConstant(IValue(int64_t{0})));
      Value* outputPadding = g_->insertNode(g_->createList(IntType::get(), zeros))->output();
      std::vector<Value*> v{tin[0], tin[1], tin[2], tin[3], tin[4], tin[5], boolC(false), outputPadding, tin[6]};
      tail(v);
      tin = std::move(v);
      kind = Symbol::aten("_convolution");
    } else if (convT && tin.size() == 8) {
      // (input, weight, bias, stride, padding, output_padding, groups, dilation)
      std::vector<Value*> v{tin[0], tin[1], tin[2], tin[3], tin[4], tin[7], boolC(true), tin[5], tin[6]};
      tail(v);
      tin = std::move(v);
      kind = Symbol::aten("_convolution");
    } else if (key == "aten::convolution" && tin.size() == 9) {
      tail(tin);
      kind = Symbol::aten("_convolution");
    }
  }

  /// Removes unused nodes without side effects, except prim::GetAttr (PyTorch's inlined
  /// traced graphs keep the GetAttr of every submodule whose method ran).
  void sweepDeadNodes() {
    DeadCodeOptions options;
    options.keep = [](const Node* n) { return n->kind() == prim::GetAttr; };
    eliminateDeadCode(*g_, options);
  }

  struct TensorEntry {
    std::weak_ptr<TensorImpl> impl;
    Value* value = nullptr;
  };
  struct ParamEntry {
    std::weak_ptr<TensorImpl> impl;
    std::vector<std::string> path;
  };

  ObjectPtr self_;
  std::shared_ptr<Graph> g_;
  Value* selfValue_ = nullptr;
  std::unordered_map<const TensorImpl*, TensorEntry> tensors_;
  std::unordered_map<const TensorImpl*, ParamEntry> paramPaths_;
  std::unordered_map<const Object*, std::vector<std::string>> modulePaths_;
  std::map<std::string, Value*> attrCache_;
  std::unordered_map<const void*, SeqSym> seqs_;
  std::unordered_set<const Value*> shapeTensors_;
  std::unordered_map<const Node*, OpCache> ops_;
  std::unordered_map<const Block*, BlockPlan> plans_;
  std::vector<TraceWarning> warnings_;
  std::set<std::pair<std::string, std::string>> seenWarnings_;
};

// ---- checks ---------------------------------------------------------------------------------

std::string indent(const std::string& s) {
  std::string out;
  std::istringstream in(s);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (!first) out += "\n";
    first = false;
    out += "\t" + line;
  }
  return out;
}

std::string pyFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string indexTuple(int64_t flat, const IntList& sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (size_t i = sizes.size(); i-- > 0;) {
    idx[i] = flat % sizes[i];
    flat /= sizes[i];
  }
  if (idx.size() == 1) return fmt::format("({},)", idx[0]);
  return fmt::format("({})", fmt::join(idx, ", "));
}

/// torch.testing.assert_close's message for `actual` vs `expected` (both compared as double),
/// or "" when they are close.
std::string compareTensors(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  if (actual.sizes() != expected.sizes())
    return fmt::format("The values for attribute 'shape' do not match: torch.Size([{}]) != torch.Size([{}]).",
                       fmt::join(actual.sizes(), ", "), fmt::join(expected.sizes(), ", "));
  Tensor a = actual.contiguous(), e = expected.contiguous();
  const int64_t n = a.numel();
  int64_t bad = 0, absIdx = 0, relIdx = 0;
  double maxAbs = 0, maxRel = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = a.doubleAt(i), y = e.doubleAt(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    const double d = std::fabs(x - y);
    if (x == y || d <= atol + rtol * std::fabs(y)) continue;
    ++bad;
    if (bad == 1 || d > maxAbs) maxAbs = d, absIdx = i;
    const double r = d / std::fabs(y);
    if (bad == 1 || r > maxRel) maxRel = r, relIdx = i;
  }
  if (bad == 0) return {};
  return fmt::format(
      "Tensor-likes are not close!\n\nMismatched elements: {} / {} ({:.1f}%)\n"
      "Greatest absolute difference: {} at index {} (up to {} allowed)\n"
      "Greatest relative difference: {} at index {} (up to {} allowed)",
      bad, n, 100.0 * static_cast<double>(bad) / static_cast<double>(n), pyFloat(maxAbs),
      indexTuple(absIdx, a.sizes()), fmt::format("{}", atol), pyFloat(maxRel),
      indexTuple(relIdx, a.sizes()), fmt::format("{}", rtol));
}

/// torch.jit._trace: `wrap_retval` then keep the tensors.
std::vector<Tensor> tensorOutputs(const IValue& v) {
  std::vector<Tensor> out;
  if (v.isTuple()) {
    for (const auto& e : v.toTuple()->elements)
      if (e.isTensor()) out.push_back(e.toTensor());
  } else if (v.isTensor()) {
    out.push_back(v.toTensor());
  }
  return out;
}

std::vector<std::string> splitLines(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

Module makeTracedModule(const Module& module, const std::shared_ptr<Graph>& graph) {
  static std::atomic<int> counter{0};
  const auto& old = module.object()->type;
  auto cls = ClassType::create(old->name(), true);
  for (const auto& a : old->attributes()) cls->addAttribute(a.name, a.type, a.isParameter, a.isBuffer);
  auto obj = Object::create(cls);
  obj->slots = module.object()->slots;
  graph->inputs()[0]->setType(cls);
  FunctionSchema schema = GraphFunction::schemaFromGraph("forward", *graph);
  auto fn = std::make_unique<GraphFunction>(
      fmt::format("{}.___torchless_trace_{}.forward", old->name(), counter++), graph, std::move(schema));
  GraphFunction* f = module.unit()->addFunction(std::move(fn));
  cls->addMethod(f);
  return Module(obj, module.unit());
}

}  // namespace

std::string canonicalGraphText(const Graph& graph) {
  std::shared_ptr<Graph> g = graph.copy();
  std::vector<Value*> values;
  auto visit = [&](auto& self, Block* b) -> void {
    for (Value* v : b->inputs()) values.push_back(v);
    for (Node* n : b->nodes()) {
      for (Block* sub : n->blocks()) self(self, sub);
      for (Value* v : n->outputs()) values.push_back(v);
    }
  };
  visit(visit, g->block());
  for (Value* v : values) v->setDebugName("");
  return g->copy()->toString(/*printSourceLocations=*/false);
}

std::string unifiedDiff(const std::string& a, const std::string& b, const std::string& nameA,
                        const std::string& nameB) {
  if (a == b) return {};
  const std::vector<std::string> x = splitLines(a), y = splitLines(b);
  // Longest common subsequence over lines (graphs are small); ops: ' ', '-', '+'.
  const size_t n = x.size(), m = y.size();
  std::vector<std::pair<char, std::string>> ops;
  size_t pre = 0;
  while (pre < n && pre < m && x[pre] == y[pre]) ++pre;
  size_t suf = 0;
  while (suf < n - pre && suf < m - pre && x[n - 1 - suf] == y[m - 1 - suf]) ++suf;
  for (size_t i = 0; i < pre; ++i) ops.emplace_back(' ', x[i]);
  const size_t xn = n - pre - suf, yn = m - pre - suf;
  if (xn * yn <= 16'000'000) {
    std::vector<std::vector<uint32_t>> L(xn + 1, std::vector<uint32_t>(yn + 1, 0));
    for (size_t i = xn; i-- > 0;)
      for (size_t j = yn; j-- > 0;)
        L[i][j] = x[pre + i] == y[pre + j] ? L[i + 1][j + 1] + 1 : std::max(L[i + 1][j], L[i][j + 1]);
    size_t i = 0, j = 0;
    while (i < xn || j < yn) {
      if (i < xn && j < yn && x[pre + i] == y[pre + j]) {
        ops.emplace_back(' ', x[pre + i]);
        ++i, ++j;
      } else if (i < xn && (j == yn || L[i + 1][j] >= L[i][j + 1])) {
        ops.emplace_back('-', x[pre + i++]);
      } else {
        ops.emplace_back('+', y[pre + j++]);
      }
    }
  } else {
    for (size_t i = 0; i < xn; ++i) ops.emplace_back('-', x[pre + i]);
    for (size_t j = 0; j < yn; ++j) ops.emplace_back('+', y[pre + j]);
  }
  for (size_t i = n - suf; i < n; ++i) ops.emplace_back(' ', x[i]);

  std::string out = "--- " + nameA + "\n+++ " + nameB + "\n";
  constexpr size_t kContext = 3;
  size_t k = 0;
  while (k < ops.size()) {
    while (k < ops.size() && ops[k].first == ' ') ++k;
    if (k == ops.size()) break;
    size_t start = k >= kContext ? k - kContext : 0;
    size_t end = k;  // extend while changes are within 2*context of each other
    while (end < ops.size()) {
      if (ops[end].first != ' ') {
        ++end;
        continue;
      }
      size_t run = end;
      while (run < ops.size() && ops[run].first == ' ') ++run;
      if (run == ops.size() || run - end > 2 * kContext) {
        end = std::min(ops.size(), end + kContext);
        break;
      }
      end = run;
    }
    size_t aLine = 1, bLine = 1;
    for (size_t q = 0; q < start; ++q) {
      if (ops[q].first != '+') ++aLine;
      if (ops[q].first != '-') ++bLine;
    }
    size_t aCount = 0, bCount = 0;
    for (size_t q = start; q < end; ++q) {
      if (ops[q].first != '+') ++aCount;
      if (ops[q].first != '-') ++bCount;
    }
    out += fmt::format("@@ -{},{} +{},{} @@\n", aCount ? aLine : aLine - 1, aCount,
                       bCount ? bLine : bLine - 1, bCount);
    for (size_t q = start; q < end; ++q) out += std::string(1, ops[q].first) + ops[q].second + "\n";
    k = end;
  }
  return out;
}

TracedGraph traceGraph(const Module& module, const std::string& method, std::vector<IValue> inputs) {
  TL_CHECK(module.defined(), "cannot trace an empty module");
  const GraphFunction* fn = module.findMethod(method);
  if (!fn)
    throw module.noSuchMethod(method);
  return Tracer(module).run(*fn, std::move(inputs));
}

TraceResult trace(const Module& module, std::vector<IValue> inputs, const TraceOptions& options) {
  TracedGraph first = traceGraph(module, options.method, std::move(inputs));
  TraceResult result;
  result.graph = first.graph;
  result.warnings = std::move(first.warnings);
  result.module = makeTracedModule(module, result.graph);
  const std::string tracedText = canonicalGraphText(*result.graph);

  for (size_t c = 0; c < options.checkInputs.size(); ++c) {
    const auto& check = options.checkInputs[c];
    std::string extra, graphDiff;
    const std::string setName = fmt::format("check input set {}", c + 1);
    TracedGraph again;
    try {
      again = traceGraph(module, options.method, cloneValues(check));
    } catch (Error& e) {
      e.addContext(fmt::format("while tracing with {}", setName));
      throw;
    }
    const std::string checkText = canonicalGraphText(*again.graph);
    std::string diff = unifiedDiff(tracedText, checkText, "trace of the example inputs", "trace of " + setName);
    if (!diff.empty()) graphDiff = "Graph diff:\n" + indent(diff);

    auto runOrReport = [&](const Module& m, const std::string& methodName, const char* what,
                           std::optional<IValue>& out) {
      try {
        out = m.runMethod(methodName, cloneValues(check));
      } catch (const Error& e) {
        extra = fmt::format("encountered an exception while running the {} with test inputs.\nException:\n{}",
                            what, indent(e.what()));
      }
    };
    std::optional<IValue> tracedOut, fnOut;
    runOrReport(result.module, "forward", "trace", tracedOut);
    if (extra.empty()) runOrReport(module, options.method, "Python function", fnOut);
    std::string mismatches;
    if (tracedOut && fnOut) {
      std::vector<Tensor> a = tensorOutputs(*tracedOut), b = tensorOutputs(*fnOut);
      for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        std::string msg = compareTensors(a[i].to(ScalarType::Double), b[i].to(ScalarType::Double),
                                         options.checkRtol, options.checkAtol);
        if (!msg.empty())
          mismatches += fmt::format("Output nr {}. of the traced function does not match the "
                                    "corresponding output of the Python function. Detailed error:\n{}\n",
                                    i + 1, msg);
      }
    }
    if (extra.empty() && graphDiff.empty() && mismatches.empty()) continue;
    std::string details = fmt::format("({} of {})\n", setName, options.checkInputs.size());
    if (!extra.empty()) details += extra + "\n";
    details += mismatches;
    if (!graphDiff.empty()) details += "ERROR: Graphs differed across invocations!\n" + indent(graphDiff) + "\n";
    if (!details.empty() && details.back() == '\n') details.pop_back();
    throw TracingCheckError(details, result.warnings);
  }
  return result;
}

}  // namespace torchless
