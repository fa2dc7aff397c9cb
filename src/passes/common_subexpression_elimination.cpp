// common_subexpression_elimination: hash-conses pure nodes. A node with the same kind, the
// same inputs, the same attributes (constants compared by value) and the same output types
// as a node met earlier in its block or in an enclosing block (which dominates it) is
// replaced by that earlier node, as PyTorch's EliminateCommonSubexpression
// (torch/csrc/jit/passes/common_subexpression_elimination.cpp). Constants are merged too.
// It never merges: nodes with side effects (prints, raises, SetAttr, calls, mutating
// schemas), nondeterministic ops (random numbers), nodes with blocks (If, Loop), and, when
// anything in the graph writes to a mutable value, nodes with mutable (tensor, list, dict,
// object) inputs or outputs; nor two nodes whose mutable outputs both reach the graph's
// outputs (that would make two outputs alias). Nodes inside sub-blocks may be replaced by
// nodes of enclosing blocks, never the other way round.
//
//   graph(%x : Tensor):                          graph(%x : Tensor):
//     %a : Tensor = aten::relu(%x)                 %a : Tensor = aten::relu(%x)
//     %b : Tensor = aten::relu(%x)         ==>     %c : Tensor = aten::mul(%a, %a)
//     %c : Tensor = aten::mul(%a, %b)              return (%c)
//     return (%c)
#include "passes/node_facts.h"
#include "passes/passes.h"

#include <unordered_map>
#include <vector>

namespace torchless::passes {

const char* const kCommonSubexpressionEliminationDescription =
    "Replaces a pure node by an identical earlier one (same kind, inputs, attributes and "
    "output types) in the same or an enclosing block, constants included, as PyTorch's "
    "EliminateCommonSubexpression. Never merges nodes with side effects, nondeterministic or "
    "mutating ops, nodes with blocks, nodes on mutable values when the graph mutates "
    "anything, or two nodes whose mutable outputs are both graph outputs.";

namespace {

struct Scope {
  const Scope* parent = nullptr;
  std::unordered_multimap<size_t, Node*> byHash;
};

bool equalNodes(const Node* a, const Node* b) {
  return a->kind() == b->kind() && a->inputs() == b->inputs() && sameOutputTypes(a, b) &&
         sameAttributes(a, b) && a->blocks().empty() && b->blocks().empty();
}

class CSE {
 public:
  explicit CSE(Graph& g) : graph_(g), writers_(graphHasWriters(g)) {}

  bool run() {
    Scope top;
    runBlock(graph_.block(), top);
    return changed_;
  }

 private:
  bool candidate(const Node* n) const {
    if (n->kind() == prim::profile || !n->blocks().empty()) return false;
    if (hasSideEffects(n) || n->isNondeterministic() || n->mayWrite()) return false;
    if (n->kind() == prim::Uninitialized) return false;
    if (writers_) {
      for (const Value* v : n->inputs())
        if (isMutableType(v->type())) return false;
      for (const Value* v : n->outputs())
        if (isMutableType(v->type())) return false;
    }
    return true;
  }

  // Whether a mutable output of `n` may be (part of) a graph output.
  bool reachesGraphOutputs(const Node* n) const {
    for (const Value* v : n->outputs()) {
      if (!isMutableType(v->type())) continue;
      for (const Use& u : v->uses()) {
        if (u.user == graph_.block()->returnNode()) return true;
        switch (u.user->kind()) {
          case prim::TupleConstruct:
          case prim::ListConstruct:
          case prim::DictConstruct:
            if (reachesGraphOutputs(u.user)) return true;
            break;
          default: break;
        }
      }
    }
    return false;
  }

  static Node* lookup(const Scope& s, Node* n, size_t h) {
    for (const Scope* sc = &s; sc; sc = sc->parent) {
      auto range = sc->byHash.equal_range(h);
      for (auto it = range.first; it != range.second; ++it)
        if (equalNodes(it->second, n)) return it->second;
    }
    return nullptr;
  }

  void runBlock(Block* block, Scope& scope) {
    for (auto it = block->nodes().begin(); it != block->nodes().end(); ++it) {
      Node* n = *it;
      if (!n->blocks().empty()) {
        for (Block* b : n->blocks()) {
          Scope inner;
          inner.parent = &scope;
          runBlock(b, inner);
        }
        continue;
      }
      if (!candidate(n)) continue;
      size_t h = hashNode(n);
      if (Node* existing = lookup(scope, n, h)) {
        if (reachesGraphOutputs(n) && reachesGraphOutputs(existing)) continue;
        n->replaceAllUsesWith(existing);
        it.destroyCurrent();
        changed_ = true;
        continue;
      }
      scope.byHash.emplace(h, n);
    }
  }

  Graph& graph_;
  bool writers_;
  bool changed_ = false;
};

}  // namespace

bool commonSubexpressionElimination(Graph& graph) { return CSE(graph).run(); }

}  // namespace torchless::passes
