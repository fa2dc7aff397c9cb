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
#include "passes/node_facts.h"
#include "passes/passes.h"

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
    for (const char* k : {"prim::dtype", "prim::device", "prim::layout", "prim::is_cuda", "prim::is_nested",
                          "prim::is_sparse", "prim::is_sparse_csr", "prim::is_mkldnn", "prim::is_quantized",
                          "prim::is_meta", "prim::is_xpu", "prim::is_vulkan", "prim::is_ipu", "prim::is_mps",
                          "prim::is_ort", "prim::is_hpu", "prim::requires_grad", "aten::dim",
                          "aten::is_floating_point", "aten::is_complex", "aten::is_signed",
                          "aten::is_grad_enabled", "aten::is_autocast_enabled", "aten::is_autocast_cpu_enabled",
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
      if (k == TypeKind::OptionalType || k == TypeKind::NoneType || k == TypeKind::AnyType) return true;
    }
  }
  return false;
}

namespace {

void collectLists(Block* b, std::vector<Node*>& out) {
  for (Node* n : b->nodes()) {
    for (Block* sub : n->blocks()) collectLists(sub, out);
    if (n->kind() == prim::ListConstruct) out.push_back(n);
  }
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
      if (u.user->kind() != aten::append || u.offset != 0 || u.user->output()->hasUses()) writeOnly = false;
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
    std::sort(appends.begin(), appends.end(), [](const Node* a, const Node* b) { return a->isBefore(b); });
    Node* last = appends.back();
    for (const Use& u : l->output()->uses()) {
      if (u.user->kind() == aten::append && u.offset == 0) continue;
      Node* at = ancestorIn(u.user, home);
      if (!at || !last->isBefore(at)) ok = false;
      // A reader that could write the list (insert, pop, setitem, a call) keeps it as it is.
      if (mayWrite(u.user)) ok = false;
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

// prim::unchecked_cast whose input already has the cast's type (an Optional input refined to
// Tensor): the input itself.
bool removeNoopCasts(Block* b) {
  bool changed = false;
  std::vector<Node*> dead;
  for (Node* n : b->nodes()) {
    for (Block* sub : n->blocks()) changed |= removeNoopCasts(sub);
    if (n->kind() != prim::unchecked_cast) continue;
    if (!n->input(0)->type()->isSubtypeOf(*n->output()->type())) continue;
    n->output()->replaceAllUsesWith(n->input(0));
    dead.push_back(n);
  }
  for (Node* n : dead) n->destroy();
  return changed || !dead.empty();
}

}  // namespace

bool specialize(Graph& graph, const std::vector<std::pair<Node*, IValue>>& facts,
                const std::vector<std::optional<bool>>& inputIsNone) {
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
    again |= foldAppendedLists(graph);
    again |= constantPropagation(graph);
    again |= peephole(graph);
    again |= removeWriteOnlyLists(graph);
    again |= eliminateDeadCode(graph);
    if (!again) break;
  }
  return true;
}

}  // namespace torchless::passes
