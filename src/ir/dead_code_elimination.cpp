// Dead code elimination (dead_code_elimination.h): removes nodes whose outputs are unused
// and that have no side effects, and the outputs of prim::If / prim::Loop that nothing uses
// (for loops: carried values unused both after the loop and inside the body), as PyTorch's
// EliminateDeadCode (torch/csrc/jit/passes/dead_code_elimination.cpp) does. Liveness starts at the
// graph's outputs and at every node with side effects (hasSideEffectsWithin: prim::Print,
// prim::RaiseException, prim::SetAttr, calls, in-place and other mutating schemas of the op
// table, and If/Loop nodes containing any of them), and flows back through inputs and
// through loop-carried values. It leaves alone: graph inputs (even unused ones), anything
// with side effects, and the condition of loops (with what computes it: a while loop stays).
// Unlike PyTorch: it keeps every in-place op (PyTorch deletes an in-place op on a dead,
// unaliased value using alias analysis); a loop-carried value is live only when used after
// the loop or by a live node of the body (PyTorch keeps any carried value its body reads,
// even one that only feeds itself, and with it the loop); and it repeats mark-and-sweep
// until nothing more dies, so one run does what PyTorch may need several runs for.
//
//   graph(%x : Tensor):                          graph(%x : Tensor):
//     %1 : int = prim::Constant[value=1]()         %1 : int = prim::Constant[value=1]()
//     %y : Tensor = aten::mul(%x, %x)      ==>      %z : Tensor = aten::add(%x, %x, %1)
//     %z : Tensor = aten::add(%x, %x, %1)           return (%z)
//     return (%z)
#include "ir/dead_code_elimination.h"

#include "ir/walk.h"

#include <unordered_map>
#include <unordered_set>

namespace torchless {

bool hasSideEffectsWithin(const Node* n) {
  if (n->hasSideEffects()) return true;
  for (const Block* b : n->blocks())
    if (anyNode(b, [](const Node* inner) { return inner->hasSideEffects(); })) return true;
  return false;
}

namespace {

class DeadCodeEliminator {
 public:
  /// Runs on `block` (the graph's block, or a nested block whose outputs then all count as
  /// live), repeating mark-and-sweep until nothing more dies.
  explicit DeadCodeEliminator(const DeadCodeOptions& options) : options_(options) {}

  bool run(Block* block, bool recurse) {
    bool changed = false;
    while (true) {
      marked_.clear();
      live_.clear();
      memo_.clear();
      if (Node* owner = block->owningNode()) {
        for (Value* v : owner->outputs()) live_.insert(v);
        for (Value* v : block->outputs()) live_.insert(v);
        marked_.insert(block->returnNode());
      }
      mark(block);
      bool c = sweep(block, recurse);
      changed |= c;
      if (!c) break;
    }
    return changed;
  }

 private:
  bool sideEffects(const Node* n) {
    auto it = memo_.find(n);
    if (it != memo_.end()) return it->second;
    bool r = hasSideEffectsWithin(n) || (options_.keep && options_.keep(n));
    memo_.emplace(n, r);
    return r;
  }

  bool mark(Block* block) {
    bool any = false;
    for (Node* n : block->nodes())
      if (sideEffects(n)) any |= mark(n);
    Node* owner = block->owningNode();
    if (owner && owner->kind() == prim::Loop)
      any |= markLoopCarried(owner);
    else
      any |= markReturnNode(block->returnNode());
    for (Node* n : block->nodes().reverse()) {
      if (n->kind() == prim::Loop) {
        while (mark(n->blocks().at(0))) {
        }
      } else {
        for (Block* b : n->blocks()) mark(b);
      }
      any |= markIfLive(n);
    }
    return any;
  }

  // A carried value is live when the loop's output is live or a live node of the body uses
  // its value from the previous iteration (PyTorch asks whether the body input has any use,
  // so values that only feed themselves live for ever there). The next-iteration condition
  // is always live: a while loop must keep running as often as it did.
  bool markLoopCarried(Node* loop) {
    Block* body = loop->blocks().at(0);
    bool any = false;
    for (size_t i = 0; i < loop->outputs().size(); ++i) {
      if (live_.count(loop->output(i)) || live_.count(body->inputs().at(i + 1)))
        any |= live_.insert(body->outputs().at(i + 1)).second;
    }
    any |= live_.insert(body->outputs().at(0)).second;
    return any;
  }

  // The graph's outputs are live; a sub-block's output is live when its owner's is (asked
  // again on every round of a loop body's fixed point).
  bool markReturnNode(Node* ret) {
    Node* outer = ret->owningBlock()->owningNode();
    if (!outer) return mark(ret);
    bool any = false;
    for (size_t i = 0; i < outer->outputs().size(); ++i)
      if (live_.count(outer->output(i))) any |= live_.insert(ret->inputs().at(i)).second;
    marked_.insert(ret);
    return any;
  }

  bool markIfLive(Node* n) {
    for (Value* v : n->outputs())
      if (live_.count(v)) return mark(n);
    return false;
  }

  bool mark(Node* n) {
    if (marked_.count(n)) return false;
    marked_.insert(n);
    // Owning nodes of a live node are live.
    for (Node* owner = n->owningBlock() ? n->owningBlock()->owningNode() : nullptr; owner;
         owner = owner->owningBlock() ? owner->owningBlock()->owningNode() : nullptr)
      mark(owner);
    for (Value* v : n->inputs()) live_.insert(v);
    return true;
  }

  bool sweep(Block* block, bool recurse) {
    bool changed = false;
    auto nodes = block->nodes().reverse();
    for (auto it = nodes.begin(); it != nodes.end(); ++it) {
      Node* n = *it;
      changed |= removeDeadIfOutputs(n);
      changed |= passThroughDeadCarriedValues(n);
      if (recurse)
        for (Block* b : n->blocks()) changed |= sweep(b, true);
      changed |= removeDeadLoopOutputs(n);
      if (!marked_.count(n) && !n->hasUses()) {
        it.destroyCurrent();
        changed = true;
      }
    }
    return changed;
  }

  // A dead carried value (not live after the loop nor read by a live body node) is made to
  // pass through the body unchanged, so the nodes computing it lose their last use.
  bool passThroughDeadCarriedValues(Node* n) {
    if (n->kind() != prim::Loop) return false;
    Block* body = n->blocks().at(0);
    bool changed = false;
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      Value* in = body->inputs().at(i + 1);
      Value* out = body->outputs().at(i + 1);
      if (out == in || live_.count(n->output(i)) || live_.count(out)) continue;
      body->replaceOutput(i + 1, in);
      changed = true;
    }
    return changed;
  }

  static bool removeDeadIfOutputs(Node* n) {
    if (n->kind() != prim::If) return false;
    bool changed = false;
    for (size_t i = n->outputs().size(); i-- > 0;) {
      if (n->output(i)->hasUses()) continue;
      n->eraseOutput(i);
      for (Block* b : n->blocks()) b->eraseOutput(i);
      changed = true;
    }
    return changed;
  }

  static bool removeDeadLoopOutputs(Node* n) {
    if (n->kind() != prim::Loop) return false;
    Block* body = n->blocks().at(0);
    bool changed = false;
    for (size_t i = n->outputs().size(); i-- > 0;) {
      Value* in = body->inputs().at(i + 1);
      // Unused inside except for passing itself on.
      bool usedInside = false;
      for (const Use& u : in->uses())
        usedInside |= !(u.user == body->returnNode() && u.offset == i + 1);
      if (n->output(i)->hasUses() || usedInside) continue;
      body->eraseOutput(i + 1);
      n->eraseOutput(i);
      n->removeInput(i + 2);
      body->eraseInput(i + 1);
      changed = true;
    }
    return changed;
  }

  const DeadCodeOptions& options_;
  std::unordered_set<const Node*> marked_;
  std::unordered_set<const Value*> live_;
  std::unordered_map<const Node*, bool> memo_;
};

}  // namespace

bool eliminateDeadCode(Block* block, bool recurse, const DeadCodeOptions& options) {
  return DeadCodeEliminator(options).run(block, recurse);
}

bool eliminateDeadCode(Graph& graph, const DeadCodeOptions& options) {
  return eliminateDeadCode(graph.block(), true, options);
}

}  // namespace torchless
