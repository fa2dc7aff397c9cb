// The tracer (Note [Tracing] in frontend/tracer.h): an execution observer that records what
// the interpreter runs.
//
// Traced values live in three maps:
//  - tensors by identity (TensorImpl, held weakly: an expired entry is a stale address);
//  - int/float/bool values computed from sizes, per call frame by IR value (Frame::syms; the
//    observer's events announce every definition, Note [Execution observer]);
//  - lists and tuples holding such values, by identity, element by element (seqs_).
#include "frontend/tracer.h"

#include "core/error.h"
#include "ir/dead_code_elimination.h"
#include "ir/operator_registry.h"
#include "ir/verifier.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
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

/// Which TracerWarning a data-dependent conversion gives ("" when `kind` is none).
std::string conversionWarning(Symbol kind) {
  const std::string_view k = kind.toUnqualString();
  if (kind.is_aten()) {
    if (k == "Bool" || k == "is_nonzero" || k == "equal" || k == "allclose")
      return "Python boolean";
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
    case prim::ModuleContainerIndex: return true;
    default: break;
  }
  if (!op) return false;
  for (const auto& r : op->schema.returns())
    if (r.type()->hasFreeVariables()) return true;
  return false;
}

/// Traced scalars of one call: the traced Value of each IR value computed from sizes.
struct Frame {
  std::unordered_map<const Value*, Value*> syms;
};

class TracerImpl final : public Tracer {
 public:
  explicit TracerImpl(ObjectPtr self) : self_(std::move(self)) {
    g_ = std::make_shared<Graph>();
    collectPaths(self_, {});
  }

  std::vector<IValue> begin(const GraphFunction& fn, const std::vector<IValue>& inputs) override {
    const auto& args = fn.schema().arguments();
    TL_CHECK(!args.empty(), "{} is not a method", fn.qualname());
    if (inputs.size() + 1 > args.size())
      throw Error(fmt::format("{}() takes {} argument{} but {} were given", fn.name(),
                              args.size() - 1, args.size() == 2 ? "" : "s", inputs.size()));
    selfValue_ = g_->addInput("self")->setType(self_->type);
    std::vector<IValue> callArgs{IValue(self_)};
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string& name = args[i + 1].name();
      Value* in = g_->addInput(name);
      in->setType(inputType(inputs[i], name));
      bindInput(inputs[i], in, name);
      callArgs.push_back(inputs[i]);
    }
    for (size_t i = inputs.size() + 1; i < args.size(); ++i) {
      if (!args[i].defaultValue())
        throw Error(fmt::format("{}() missing value for argument '{}'", fn.name(), args[i].name()));
      callArgs.push_back(*args[i].defaultValue());
    }
    return callArgs;
  }

  TracedGraph finish(const std::vector<IValue>& outputs) override {
    TL_INTERNAL_ASSERT(outputs.size() == outputSyms_.size(), "{} outputs for {} traced outputs",
                       outputs.size(), outputSyms_.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      Value* v = outputSyms_[i] ? outputSyms_[i] : materialize(outputs[i]);
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
        if (!paramPaths_.count(t.impl().get()))
          paramPaths_.emplace(t.impl().get(), ParamEntry{t.impl(), p});
      } else if (v.isObject() && !modulePaths_.count(v.toObject().get())) {
        // Submodules recursively; other objects (TorchBind state such as prepacked weights)
        // are read from their attribute when an operator takes them.
        if (v.toObject()->type->isModule())
          collectPaths(v.toObject(), p);
        else
          modulePaths_.emplace(v.toObject().get(), p);
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
    throw Error(
        fmt::format("argument '{}': Type '{}' cannot be traced. Only Tensors and (possibly "
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
    if (it == seqs_.end() || it->second.obj.expired() || it->second.elems.size() != n)
      return nullptr;
    return &it->second;
  }
  const SeqSym* seqOf(const IValue& v) const {
    if (v.isList()) return findSeq(v.toList().get(), v.toList()->list.size());
    if (v.isTuple()) return findSeq(v.toTuple().get(), v.toTuple()->elements.size());
    return nullptr;
  }
  static bool anyElem(const SeqSym* s) {
    return s &&
           std::any_of(s->elems.begin(), s->elems.end(), [](Value* v) { return v != nullptr; });
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
      throw Error(
          fmt::format("cannot trace a value of class {} passed to an operator (only objects "
                      "held in attributes of the module tree can be)",
                      v.toObject()->type->name()));
    }
    return g_->insertConstant(v);
  }

  void warn(const std::string& message, const Node* n) {
    TraceWarning w{message, placeOf(n)};
    if (seenWarnings_.insert({w.message, w.place}).second) warnings_.push_back(std::move(w));
  }

  // ---- the interpreter's events (Note [Execution observer]) --------------------------------

  void enterCall(const Node* caller, const Graph& callee, const IValue* args, size_t n) override {
    Frame f;
    if (caller) {
      const Frame& from = frames_.back();
      const size_t first = caller->kind() == prim::CallFunction ? 1 : 0;
      for (size_t i = 0; i < n; ++i)
        if (Value* s = symOf(from, caller->input(first + i))) f.syms[callee.inputs()[i]] = s;
      if (caller->kind() == prim::CallMethod && args[0].isObject()) {
        // A submodule's method called: PyTorch's traced graphs read the submodule from its
        // parent (prim::GetAttr) even when its forward uses nothing of it (ReLU).
        const ObjectPtr& obj = args[0].toObject();
        auto p = modulePaths_.find(obj.get());
        if (p != modulePaths_.end() && !p->second.empty() && obj->type->isModule())
          ensurePath(p->second);
      }
    }
    frames_.push_back(std::move(f));
  }

  void exitCall(const Node* caller, const Graph& callee, const IValue*, size_t) override {
    std::vector<Value*> outs;
    for (const Value* o : callee.outputs()) outs.push_back(symOf(frames_.back(), o));
    frames_.pop_back();
    if (!caller) {
      outputSyms_ = std::move(outs);
      return;
    }
    for (size_t i = 0; i < caller->outputs().size(); ++i)
      setSym(frames_.back(), caller->output(i), outs.at(i));
  }

  void afterOp(const Node& n, const OpInfo* op, const std::vector<IValue>& in,
               const IValue* outputs, size_t nout) override {
    Frame& f = frames_.back();
    for (size_t i = 0; i < nout; ++i) f.syms.erase(n.output(i));
    observe(&n, op, f, in, std::vector<IValue>(outputs, outputs + nout));
  }

  void enterIf(const Node& n, size_t) override {
    if (symOf(frames_.back(), n.input(0)))
      warn(std::string("Converting a tensor to a Python boolean") + kWarnDataflow, &n);
  }

  void exitIf(const Node& n, size_t block) override {
    copySyms(frames_.back(), n.blocks().at(block)->outputs(), 0, n.outputs());
  }

  void enterLoop(const Node& n) override {
    Frame& f = frames_.back();
    if (symOf(f, n.input(1)))
      warn(std::string("Converting a tensor to a Python boolean") + kWarnDataflow, &n);
    const Block* body = n.blocks().at(0);
    f.syms.erase(body->inputs()[0]);
    copySyms(f, n.inputs(), 2,
             std::vector<Value*>(body->inputs().begin() + 1, body->inputs().end()));
  }

  void endIteration(const Node& n) override {
    Frame& f = frames_.back();
    const Block* body = n.blocks().at(0);
    if (symOf(f, body->outputs()[0]))
      warn(std::string("Converting a tensor to a Python boolean") + kWarnDataflow, &n);
    f.syms.erase(body->inputs()[0]);
    copySyms(f, body->outputs(), 1,
             std::vector<Value*>(body->inputs().begin() + 1, body->inputs().end()));
  }

  void exitLoop(const Node& n) override {
    copySyms(frames_.back(), n.blocks().at(0)->inputs(), 1, n.outputs());
  }

  void afterGetAttr(const Node& n, const IValue&) override {
    frames_.back().syms.erase(n.output());
  }

  void beforeSetAttr(const Node& n, const IValue& object, const IValue& value) override {
    if (value.isTensor() && object.isObject() && object.toObject()->type->isModule())
      warn(fmt::format("the assignment to module attribute '{}' is not recorded in the trace: "
                       "the traced module reads the attribute's value from before the call "
                       "(torchless)",
                       n.s(attr::name)),
           &n);
  }

  Value* symOf(const Frame& f, const Value* v) const {
    auto it = f.syms.find(v);
    return it == f.syms.end() ? nullptr : it->second;
  }

  static void setSym(Frame& f, const Value* dst, Value* sym) {
    if (sym)
      f.syms[dst] = sym;
    else
      f.syms.erase(dst);
  }

  /// dst[i] takes the traced value of src[first + i], all at once (the two may overlap).
  void copySyms(Frame& f, const std::vector<Value*>& src, size_t first,
                const std::vector<Value*>& dst) {
    std::vector<Value*> syms;
    for (size_t i = 0; i < dst.size(); ++i) syms.push_back(symOf(f, src.at(first + i)));
    for (size_t i = 0; i < dst.size(); ++i) setSym(f, dst[i], syms[i]);
  }

  // ---- what to record -----------------------------------------------------------------------

  void observe(const Node* n, const OpInfo* op, Frame& f, const std::vector<IValue>& in,
               const std::vector<IValue>& out) {
    const Symbol k = n->kind();
    const bool tensorIn =
        std::any_of(in.begin(), in.end(), [](const IValue& v) { return v.isTensor(); });
    if (k == aten::size && !in.empty() && in[0].isTensor()) {
      recordSize(n, f, in, out);
      return;
    }
    if (k == aten::len && in.size() == 1 && in[0].isTensor()) {
      Node* s = g_->insertNode(g_->create(
          aten::size, {tensorValue(in[0].toTensor()), g_->insertConstant(IValue(int64_t{0}))}));
      s->setSourceRange(n->sourceRange());
      s->output()->setType(IntType::get());
      f.syms[n->output()] = s->output();
      return;
    }
    if (k == aten::len && in.size() == 1 && in[0].isList()) return;  // lengths are static
    if (tensorIn) {
      std::string what = conversionWarning(k);
      if (!what.empty()) {
        const Tensor t = std::find_if(in.begin(), in.end(), [](const IValue& v) {
                           return v.isTensor();
                         })->toTensor();
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
  void recordSize(const Node* n, Frame& f, const std::vector<IValue>& in,
                  const std::vector<IValue>& out) {
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
      Node* s = g_->insertNode(
          g_->create(aten::size, {x, g_->insertConstant(IValue(static_cast<int64_t>(i)))}));
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
      if (out[0].isList())
        seq.obj = out[0].toList();
      else if (out[0].isTuple())
        seq.obj = out[0].toTuple();
      else
        return;
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
      if (it != seqs_.end() && !it->second.obj.expired() &&
          it->second.elems.size() + 1 == l->list.size()) {
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
      if (shapeTensors_.count(tin[i]))
        shapeIn = true;
      else if (tin[i]->node()->kind() != prim::Constant)
        otherIn = true;
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
  void decomposeConvolution(const OpInfo* op, const std::vector<IValue>& in,
                            std::vector<Value*>& tin, Symbol& kind) {
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
      std::vector<Value*> v{tin[0], tin[1],       tin[2],        tin[3], tin[4],
                            tin[5], boolC(false), outputPadding, tin[6]};
      tail(v);
      tin = std::move(v);
      kind = Symbol::aten("_convolution");
    } else if (convT && tin.size() == 8) {
      // (input, weight, bias, stride, padding, output_padding, groups, dilation)
      std::vector<Value*> v{tin[0], tin[1],      tin[2], tin[3], tin[4],
                            tin[7], boolC(true), tin[5], tin[6]};
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
  std::vector<Frame> frames_;
  std::vector<Value*> outputSyms_;
  std::vector<TraceWarning> warnings_;
  std::set<std::pair<std::string, std::string>> seenWarnings_;
};

}  // namespace

std::unique_ptr<Tracer> Tracer::create(ObjectPtr self) {
  return std::make_unique<TracerImpl>(std::move(self));
}

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

}  // namespace torchless
