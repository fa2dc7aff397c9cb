// specialize: folds the tensor-property reads of a graph to the values one call observed, so
// that the graph run for that call's input signature has no branches on dtype, rank, device
// or None-ness left (Note [Specialization] in api/pipeline.h). PyTorch's profiling executor
// does the same with prim::profile nodes and type guards; TorchScript modules such as
// nn.TransformerEncoder and nn.MultiheadAttention branch on these facts around every layer
// (`if src.dim() == 3`, `if key_padding_mask is not None`, `if x.is_nested`).
//
//   %d : int = aten::dim(%src)                    (observed: 3)
//   %c : bool = aten::eq(%d, %three)        ==>   (the taken branch, inlined; the other gone)
//   %y = prim::If(%c) ...
#include "ir/walk.h"
#include "passes/node_facts.h"
#include "passes/passes.h"
#include "runtime/kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace torchless::passes {

const char* const kSpecializeDescription =
    "Folds tensor-property reads (dtype, dim, device, is_floating_point, is_nested, ..., and "
    "`is None` tests) to the values one call observed, then propagates constants; the result "
    "is valid only for that call's input signature (Note [Specialization] in api/pipeline.h).";

bool isTensorPropertyRead(const Node& n) {
  static const std::unordered_set<Symbol> kinds = [] {
    std::unordered_set<Symbol> s;
    for (const char* k : {"prim::dtype",
                          "prim::device",
                          "prim::layout",
                          "prim::is_cuda",
                          "prim::is_nested",
                          "prim::is_sparse",
                          "prim::is_sparse_csr",
                          "prim::is_mkldnn",
                          "prim::is_quantized",
                          "prim::is_meta",
                          "prim::is_xpu",
                          "prim::is_vulkan",
                          "prim::is_ipu",
                          "prim::is_mps",
                          "prim::is_ort",
                          "prim::is_hpu",
                          "prim::requires_grad",
                          "aten::dim",
                          "aten::is_floating_point",
                          "aten::is_complex",
                          "aten::is_signed",
                          "aten::is_grad_enabled",
                          "aten::is_autocast_enabled",
                          "aten::is_autocast_cpu_enabled",
                          "aten::is_inference"})
      s.insert(Symbol::fromQualString(k));
    return s;
  }();
  if (n.outputs().size() != 1 || !n.blocks().empty()) return false;
  if (kinds.count(n.kind())) return true;
  // `x is None` / `x is not None` on an Optional (or Any) value, and `x is x`.
  if (n.kind() == Symbol::aten("__is__") || n.kind() == Symbol::aten("__isnot__")) {
    if (n.inputs().size() == 2 && n.input(0) == n.input(1)) return true;
    for (const Value* v : n.inputs()) {
      const TypeKind k = v->type()->kind();
      if (k == TypeKind::OptionalType || k == TypeKind::NoneType || k == TypeKind::AnyType)
        return true;
    }
  }
  return false;
}

namespace {

// The walk of propertyReadsNotSettled. A value's None-ness varies when an If whose branch
// the signature does not decide yields None on one side and a value on the other (or a value
// that varies itself), or when a loop carries an Optional; its nestedness varies when it may
// come from aten::_nested_tensor_from_mask on one side only. Rank and dtype are taken to follow
// from the signature on both sides, as PyTorch's guards take them. `decided` holds the
// non-tensor values that follow from the signature alone (constants, property reads whose
// answer is settled, pure arithmetic on them): an If on one takes the same branch every call.
struct SettledWalk {
  explicit SettledWalk(const Graph& g) : mayBeNested(valuesThatMayBeNested(g)) {}
  const std::unordered_set<const Value*> mayBeNested;
  std::unordered_set<const Value*> noneVaries, nestedVaries, decided;
  std::unordered_set<const Node*> unsettledReads;

  static bool isNoneValue(const Value* v) { return v->type()->kind() == TypeKind::NoneType; }

  void decide(const Node* n) {
    if (n->kind() == prim::Constant) {
      decided.insert(n->output());
      return;
    }
    if (isTensorPropertyRead(*n)) {
      bool settled = true;
      for (const Value* v : n->inputs()) {
        if (noneVaries.count(v) &&
            (n->kind() == Symbol::aten("__is__") || n->kind() == Symbol::aten("__isnot__")))
          settled = false;
        if (nestedVaries.count(v) && n->kind() == Symbol::prim("is_nested")) settled = false;
      }
      if (settled)
        decided.insert(n->output());
      else
        unsettledReads.insert(n);
      return;
    }
    if (!n->blocks().empty() || n->hasSideEffects() || n->isNondeterministic()) return;
    if (n->kind() == prim::GetAttr || n->kind() == prim::Param) return;
    for (const Value* v : n->inputs())
      if (!decided.count(v)) return;
    for (const Value* o : n->outputs())
      if (o->type()->kind() == TypeKind::TensorType) return;
    for (const Value* o : n->outputs()) decided.insert(o);
  }

  void walk(const Block* b) {
    for (const Node* n : b->nodes()) {
      if (n->kind() == prim::If) {
        for (const Block* sub : n->blocks()) walk(sub);
        const bool settledBranch = decided.count(n->input(0)) > 0;
        for (size_t i = 0; i < n->outputs().size(); ++i) {
          const Value* out = n->outputs()[i];
          bool dec = settledBranch, none = false, someNone = false, someValue = false;
          bool nested = false, someNested = false, someDense = false;
          for (const Block* sub : n->blocks()) {
            const Value* v = sub->outputs()[i];
            dec = dec && decided.count(v) > 0;
            none = none || noneVaries.count(v) > 0;
            nested = nested || nestedVaries.count(v) > 0;
            (isNoneValue(v) ? someNone : someValue) = true;
            (mayBeNested.count(v) ? someNested : someDense) = true;
          }
          if (dec) decided.insert(out);
          if (none || (!settledBranch && someNone && someValue)) noneVaries.insert(out);
          if (nested || (!settledBranch && someNested && someDense)) nestedVaries.insert(out);
        }
        continue;
      }
      if (n->kind() == prim::Loop) {
        const Block* body = n->blocks().at(0);
        for (size_t i = 0; i < n->outputs().size(); ++i) {
          const Value* init = n->input(i + 2);
          const Value* carried = body->inputs().at(i + 1);
          if (noneVaries.count(init) || n->outputs()[i]->type()->kind() == TypeKind::OptionalType)
            noneVaries.insert(carried);
          if (mayBeNested.count(carried)) nestedVaries.insert(carried);
        }
        walk(body);
        for (size_t i = 0; i < n->outputs().size(); ++i) {
          const Value* carried = body->inputs().at(i + 1);
          const Value* next = body->outputs().at(i + 1);
          const Value* out = n->outputs()[i];
          if (noneVaries.count(carried) || noneVaries.count(next)) noneVaries.insert(out);
          if (mayBeNested.count(out)) nestedVaries.insert(out);
        }
        continue;
      }
      for (const Block* sub : n->blocks()) walk(sub);
      decide(n);
      for (const Value* v : n->inputs())
        if (nestedVaries.count(v))
          for (const Value* o : n->outputs())
            if (mayBeNested.count(o)) nestedVaries.insert(o);
      // A cast of an Optional whose None-ness varies (the cast itself is not None-typed).
      if (n->kind() == prim::unchecked_cast && noneVaries.count(n->input(0)))
        noneVaries.insert(n->output());
    }
  }
};

}  // namespace

std::unordered_set<const Node*> propertyReadsNotSettled(const Graph& graph) {
  SettledWalk w(graph);
  w.walk(const_cast<Graph&>(graph).block());
  return std::move(w.unsettledReads);
}

namespace {

void collectLists(Block* b, std::vector<Node*>& out) {
  visitNodes(b, [&](Node* n) {
    if (n->kind() == prim::ListConstruct) out.push_back(n);
    return false;
  });
}

// A list that is only appended to (the argument lists functional.py builds for checks whose
// readers constant propagation removed): the list and its appends go.
bool removeWriteOnlyLists(Graph& g) {
  std::vector<Node*> lists;
  collectLists(g.block(), lists);
  bool changed = false;
  for (Node* l : lists) {
    bool writeOnly = true;
    for (const Use& u : l->output()->uses())
      if (u.user->kind() != aten::append || u.offset != 0 || u.user->output()->hasUses())
        writeOnly = false;
    if (!writeOnly) continue;
    std::vector<Node*> appends;
    for (const Use& u : l->output()->uses()) appends.push_back(u.user);
    for (Node* a : appends) a->destroy();
    l->destroy();
    changed = true;
  }
  return changed;
}

// The node of `b` that is `n` or holds it in a nested block; null when n is outside b.
Node* ancestorIn(Node* n, const Block* b) {
  while (n && n->owningBlock() != b) n = n->owningBlock()->owningNode();
  return n;
}

// A list built by prim::ListConstruct and aten::append in one block, then only read (the
// bool lists of nn.MultiheadAttention's fast-path checks, `all(...)` of them): one
// ListConstruct of every element, placed at the last append, so that constant propagation
// can fold the reads. PyTorch's RemoveListMutation does this for appends.
bool foldAppendedLists(Graph& g) {
  std::vector<Node*> lists;
  collectLists(g.block(), lists);
  bool changed = false;
  for (Node* l : lists) {
    const Block* home = l->owningBlock();
    std::vector<Node*> appends;
    bool ok = true;
    for (const Use& u : l->output()->uses()) {
      if (u.user->kind() == aten::append && u.offset == 0) {
        if (u.user->owningBlock() != home || u.user->output()->hasUses()) ok = false;
        appends.push_back(u.user);
      }
    }
    if (!ok || appends.empty()) continue;
    // Appends in program order; every other use after the last one.
    std::sort(appends.begin(), appends.end(),
              [](const Node* a, const Node* b) { return a->isBefore(b); });
    Node* last = appends.back();
    for (const Use& u : l->output()->uses()) {
      if (u.user->kind() == aten::append && u.offset == 0) continue;
      Node* at = ancestorIn(u.user, home);
      if (!at || !last->isBefore(at)) ok = false;
      // A reader that could write the list (insert, pop, setitem, a call) keeps it as it is.
      if (u.user->mayWrite()) ok = false;
    }
    if (!ok) continue;
    std::vector<Value*> elems(l->inputs().begin(), l->inputs().end());
    for (Node* a : appends) elems.push_back(a->input(1));
    Node* folded = g.create(prim::ListConstruct, elems, 1);
    folded->output()->setType(l->output()->type());
    folded->output()->copyMetadata(l->output());
    folded->insertAfter(last);
    std::vector<Use> readers;
    for (const Use& u : l->output()->uses())
      if (!(u.user->kind() == aten::append && u.offset == 0)) readers.push_back(u);
    for (const Use& u : readers) u.user->replaceInput(u.offset, folded->output());
    for (Node* a : appends) a->destroy();
    l->destroy();
    changed = true;
  }
  return changed;
}

bool isConstant(const Value* v) { return v->node()->kind() == prim::Constant; }

// A constant list/dict that nothing can write: each use is a read returning no container.
bool neverWritten(const Value* v) {
  for (const Use& u : v->uses()) {
    const Node* n = u.user;
    if (n->mayWrite() || hasSideEffects(n) || !n->blocks().empty()) return false;
    const Symbol k = n->kind();
    if (k == prim::ListConstruct || k == prim::TupleConstruct || k == prim::DictConstruct ||
        k == prim::Return || k == prim::SetAttr)
      return false;
    for (const Value* o : n->outputs())
      if (isMutableType(o->type())) return false;
  }
  return true;
}

// The value of a constant, or of a list built from constants.
std::optional<IValue> constantOrList(const Value* v) {
  if (isConstant(v)) return toIValue(v);
  const Node* n = v->node();
  if (n->kind() != prim::ListConstruct || v->type()->kind() != TypeKind::ListType)
    return std::nullopt;
  std::vector<IValue> elems;
  for (const Value* e : n->inputs()) {
    if (!isConstant(e)) return std::nullopt;
    elems.push_back(*toIValue(e));
  }
  return IValue(ListImpl::create(v->type()->containedTypes().at(0), std::move(elems)));
}

// Reads (`in`, `[]`, len ...) of a constant dict or list that nothing writes, evaluated now.
// constant_propagation leaves them whenever the graph writes any container, as PyTorch's does.
bool foldConstantContainerReads(Block* b) {
  return visitNodes(b, [](Node* n) {
    if (!n->blocks().empty() || n->outputs().size() != 1 || isMutableType(n->output()->type()))
      return false;
    if (hasSideEffects(n) || n->mayWrite() || n->isNondeterministic()) return false;
    bool readsContainer = false, ok = !n->inputs().empty();
    Stack stack;
    for (const Value* v : n->inputs()) {
      std::optional<IValue> value = constantOrList(v);
      if (!value) {
        ok = false;
        break;
      }
      if (isMutableType(v->type())) readsContainer = true, ok = ok && neverWritten(v);
      stack.push_back(std::move(*value));
    }
    if (!ok || !readsContainer) return false;
    const OpInfo* op = n->maybeOperator();
    Operation operation = KernelRegistry::global().operationFor(*n, op);
    if (!operation) return false;
    try {
      operation(stack);
    } catch (...) {
      return false;  // raises at run time (a missing key): left to raise there
    }
    if (stack.size() != 1 || stack[0].isTensor() || stack[0].isObject()) return false;
    Value* c = nullptr;
    {
      WithInsertPoint guard(n);
      try {
        c = n->owningGraph()->insertConstant(stack[0], n->sourceRange(), n->scope());
      } catch (const Error&) {
        return false;
      }
    }
    c->setType(n->output()->type());
    n->output()->replaceAllUsesWith(c);
    n->destroy();
    return true;
  });
}

void collectDicts(Block* b, std::vector<Node*>& out) {
  visitNodes(b, [&](Node* n) {
    if ((n->kind() == Symbol::aten("dict") && n->inputs().empty()) ||
        n->kind() == prim::DictConstruct)
      out.push_back(n);
    return false;
  });
}

// A dict built by aten::dict() / prim::DictConstruct and `d[k] = v` with constant keys in one
// block, then only read: one DictConstruct at the last write (later writes of a key replace
// its value and keep its place, as Python's dict does); reads `d[k]` of a constant key become
// the value. torchvision's IntermediateLayerGetter and segmentation heads build their
// OrderedDict results this way.
bool foldDictWrites(Graph& g) {
  std::vector<Node*> dicts;
  collectDicts(g.block(), dicts);
  bool changed = false;
  for (Node* d : dicts) {
    const Block* home = d->owningBlock();
    std::vector<Node*> writes;
    bool ok = true;
    for (const Use& u : d->output()->uses()) {
      if (u.user->kind() == aten::_set_item && u.offset == 0) {
        if (u.user->owningBlock() != home || !isConstant(u.user->input(1))) ok = false;
        writes.push_back(u.user);
      }
    }
    if (!ok) continue;
    std::sort(writes.begin(), writes.end(),
              [](const Node* a, const Node* b) { return a->isBefore(b); });
    Node* last = writes.empty() ? d : writes.back();
    for (const Use& u : d->output()->uses()) {
      if (u.user->kind() == aten::_set_item && u.offset == 0) continue;
      Node* at = ancestorIn(u.user, home);
      if (!at || !last->isBefore(at) || u.user->mayWrite()) ok = false;
    }
    if (!ok) continue;
    std::vector<Value*> keys, values;
    for (size_t i = 0; i + 1 < d->inputs().size(); i += 2) {
      keys.push_back(d->input(i));
      values.push_back(d->input(i + 1));
    }
    for (const Node* w : writes) {
      const IValue k = *toIValue(w->input(1));
      size_t i = 0;
      while (i < keys.size() && !(isConstant(keys[i]) && toIValue(keys[i])->equals(k))) ++i;
      if (i < keys.size() && !isConstant(keys[i])) ok = false;
      if (i == keys.size()) {
        keys.push_back(w->input(1));
        values.push_back(w->input(2));
      } else {
        values[i] = w->input(2);
      }
    }
    if (!ok) continue;
    Node* folded = d;  // a DictConstruct never written stays; reads of it are forwarded
    if (!writes.empty() || d->kind() != prim::DictConstruct) {
      folded = g.create(prim::DictConstruct, {}, 1);
      for (size_t i = 0; i < keys.size(); ++i) {
        folded->addInput(keys[i]);
        folded->addInput(values[i]);
      }
      folded->output()->setType(d->output()->type());
      folded->output()->copyMetadata(d->output());
      folded->insertAfter(last);
    }
    std::vector<Use> readers;
    for (const Use& u : d->output()->uses())
      if (!(u.user->kind() == aten::_set_item && u.offset == 0)) readers.push_back(u);
    bool forwarded = false;
    for (const Use& u : readers) {
      Node* r = u.user;
      // d[k] with a constant key present: the value.
      if (r->kind() == aten::__getitem__ && u.offset == 0 && isConstant(r->input(1))) {
        const IValue k = *toIValue(r->input(1));
        size_t i = 0;
        while (i < keys.size() && !(isConstant(keys[i]) && toIValue(keys[i])->equals(k))) ++i;
        if (i < keys.size()) {
          r->output()->replaceAllUsesWith(values[i]);
          r->destroy();
          forwarded = true;
          continue;
        }
      }
      if (folded != d) r->replaceInput(u.offset, folded->output());
    }
    if (folded == d) {
      changed |= forwarded;
      continue;
    }
    for (Node* w : writes) w->destroy();
    d->destroy();
    changed = true;
  }
  return changed;
}

// prim::unchecked_cast whose input already has the cast's type (an Optional input refined to
// Tensor): the input itself.
bool removeNoopCasts(Block* b) {
  return visitNodes(b, [](Node* n) {
    if (n->kind() != prim::unchecked_cast) return false;
    if (!n->input(0)->type()->isSubtypeOf(*n->output()->type())) return false;
    n->output()->replaceAllUsesWith(n->input(0));
    n->destroy();
    return true;
  });
}

}  // namespace

bool simplifyContainers(Graph& graph) {
  bool changed = false;
  for (int round = 0; round < 8; ++round) {
    bool again = foldConstantContainerReads(graph.block());
    again |= foldAppendedLists(graph);
    again |= foldDictWrites(graph);
    again |= removeWriteOnlyLists(graph);
    again |= lowerTuples(graph);
    if (again) constantPropagation(graph);
    if (!again) break;
    changed = true;
  }
  if (changed) eliminateDeadCode(graph);
  return changed;
}

namespace {

// At the top of `graph`: `if <cond>: raise RuntimeError(message)`.
void insertGuard(Graph& graph, Value* cond, const std::string& message) {
  Node* check = graph.create(prim::If, {cond}, 0);
  Block* raise = check->addBlock();
  check->addBlock();
  graph.insertNode(check);
  WithInsertPoint inRaise(raise);
  Value* msg = graph.insertConstant(IValue("RuntimeError: " + message));
  Value* none = graph.insertConstant(IValue());
  graph.insertNode(graph.create(Symbol::fromQualString("prim::RaiseException"), {msg, none}, 0));
}

// Guards of the signature `inputs` was specialized to (see specialize's doc comment).
void insertSignatureGuards(Graph& graph, const std::vector<SignatureGuard>& guards) {
  Node* first = graph.block()->nodes().begin() == graph.block()->nodes().end()
                    ? graph.block()->returnNode()
                    : graph.block()->nodes().front();
  WithInsertPoint top(first);
  // None guards first: they stay in the interpreter, and the dtype/rank checks after them
  // then join the engine run that follows (they are shape checks).
  std::vector<SignatureGuard> ordered;
  for (const SignatureGuard& g : guards)
    if (g.isNone) ordered.push_back(g);
  for (const SignatureGuard& g : guards)
    if (!g.isNone) ordered.push_back(g);
  for (const SignatureGuard& g : ordered) {
    Value* in = graph.inputs().at(g.input);
    const std::string name = in->debugNameBase();
    if (g.isNone) {
      Value* none = graph.insertConstant(IValue());
      Node* test = graph.insertNode(graph.create(Symbol::aten("__isnot__"), {in, none}, 1));
      test->output()->setType(BoolType::get());
      insertGuard(
          graph, test->output(),
          fmt::format("this method was specialized for {}=None; it cannot take a value", name));
      continue;
    }
    if (!g.scalarType) continue;
    Node* dtype = graph.insertNode(graph.create(prim::dtype, {in}, 1));
    dtype->output()->setType(IntType::get());
    Value* want = graph.insertConstant(IValue(static_cast<int64_t>(*g.scalarType)));
    Node* ne = graph.insertNode(graph.create(Symbol::aten("ne"), {dtype->output(), want}, 1));
    ne->output()->setType(BoolType::get());
    insertGuard(graph, ne->output(),
                fmt::format("this method was specialized for a {} tensor {}; pass that dtype",
                            toString(*g.scalarType), name));
    Node* dim = graph.insertNode(graph.create(Symbol::aten("dim"), {in}, 1));
    dim->output()->setType(IntType::get());
    Value* rank = graph.insertConstant(IValue(g.rank));
    Node* ne2 = graph.insertNode(graph.create(Symbol::aten("ne"), {dim->output(), rank}, 1));
    ne2->output()->setType(BoolType::get());
    insertGuard(
        graph, ne2->output(),
        fmt::format("this method was specialized for a {}-dimensional tensor {}; pass that rank",
                    g.rank, name));
  }
}

}  // namespace

bool specialize(Graph& graph, const std::vector<std::pair<Node*, IValue>>& facts,
                const std::vector<std::optional<bool>>& inputIsNone,
                const std::vector<SignatureGuard>* guards) {
  bool changed = false;
  for (size_t i = 0; i < inputIsNone.size() && i < graph.inputs().size(); ++i) {
    Value* in = graph.inputs()[i];
    if (!inputIsNone[i] || in->type()->kind() != TypeKind::OptionalType) continue;
    if (*inputIsNone[i]) {
      WithInsertPoint guard(graph.block()->nodes().begin() == graph.block()->nodes().end()
                                ? graph.block()->returnNode()
                                : graph.block()->nodes().front());
      in->replaceAllUsesWith(graph.insertConstant(IValue()));
    } else {
      in->setType(in->type()->containedTypes().at(0));
    }
    changed = true;
  }
  for (const auto& [n, value] : facts) {
    WithInsertPoint guard(n);
    Value* c = graph.insertConstant(value);
    c->setType(n->output()->type());
    n->output()->replaceAllUsesWith(c);
    n->destroy();
    changed = true;
  }
  if (!changed) return false;
  for (int round = 0; round < 4; ++round) {
    bool again = removeNoopCasts(graph.block());
    again |= simplifyContainers(graph);
    again |= constantPropagation(graph);
    again |= peephole(graph);
    again |= removeWriteOnlyLists(graph);
    again |= eliminateDeadCode(graph);
    if (!again) break;
  }
  if (guards) insertSignatureGuards(graph, *guards);
  return true;
}

}  // namespace torchless::passes
