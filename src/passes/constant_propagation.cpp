// constant_propagation: folds nodes whose inputs are all constants by running their runtime
// kernel (KernelRegistry) at compile time and replacing the outputs by prim::Constant nodes
// (tensors become tensor constants), inlines prim::If with a constant condition (the taken
// block's nodes move before the If), removes prim::Loop nodes that run zero times (constant
// trip count <= 0 or constant false start condition), drops If outputs that are the same
// value (or equal constants) in both branches and loop-carried values the body passes
// through unchanged, then runs eliminate_dead_code, as PyTorch's ConstantPropagation
// (torch/csrc/jit/passes/constant_propagation.cpp). New constants go where the folded node
// was, as in PyTorch. It leaves alone: nodes with side effects, nondeterministic ops,
// mutating ops, nodes with blocks, prim::Uninitialized, vararg schemas, nodes whose kernel
// is missing or throws, results that cannot be constants (tensors requiring grad, objects),
// and, when anything in the graph writes to a mutable value (in-place ops, list appends,
// SetAttr, calls), every node with a mutable (tensor, list, dict, object) input or output:
// without alias analysis that is the safe reading of PyTorch's hasWriters check.
//
//   graph(%x : Tensor):                          graph(%x : Tensor):
//     %1 : int = prim::Constant[value=1]()         %4 : int = prim::Constant[value=3]()
//     %2 : int = prim::Constant[value=2]()  ==>    %y : Tensor = aten::add(%x, %x, %4)
//     %3 : int = aten::add(%1, %2)                 return (%y)
//     %y : Tensor = aten::add(%x, %x, %3)
//     return (%y)
#include "core/error.h"
#include "passes/node_facts.h"
#include "passes/passes.h"
#include "runtime/kernel.h"

#include <algorithm>
#include <unordered_set>

namespace torchless::passes {

const char* const kConstantPropagationDescription =
    "Folds nodes whose inputs are all constants by running their kernel, inlines prim::If "
    "with a constant condition, removes loops that run zero times, drops If/Loop outputs "
    "that do not depend on the branch or iteration, then removes dead code (PyTorch's "
    "ConstantPropagation). Leaves side effects, nondeterministic and mutating ops, results "
    "that cannot be constants and, when the graph mutates anything, nodes with mutable "
    "inputs or outputs.";

namespace {

bool isConstant(const Value* v) { return v->node()->kind() == prim::Constant; }

class ConstantPropagator {
 public:
  explicit ConstantPropagator(Graph& g) : graph_(g), writers_(graphHasWriters(g)) { initKernels(); }

  bool run() {
    propagate(graph_.block());
    if (changed_) eliminateDeadCode(graph_);
    return changed_;
  }

 private:
  void propagate(Block* block) {
    for (auto it = block->nodes().begin(); it != block->nodes().end();) {
      Node* n = *it;
      ++it;  // n may be destroyed
      propagate(n);
    }
  }

  void propagate(Node* n) {
    bool constInputs = std::all_of(n->inputs().begin(), n->inputs().end(), isConstant);
    if (n->kind() == prim::If) {
      if (constInputs && constantBool(n->input(0))) {
        inlineIf(n);
      } else {
        for (Block* b : n->blocks()) propagate(b);
        removeExtraIfOutputs(n);
      }
    } else if (n->kind() == prim::Loop) {
      if (loopWillNotRun(n)) {
        removeLoop(n);
      } else {
        propagate(n->blocks().at(0));
        removeExtraLoopOutputs(n);
      }
    } else if (constInputs && supported(n)) {
      fold(n);
    } else {
      for (Block* b : n->blocks()) propagate(b);
    }
  }

  bool supported(const Node* n) const {
    switch (n->kind()) {
      // IR constructs whose value exists only at run time.
      case prim::Constant:
      case prim::Closure:
      case prim::awaitable:
      case prim::fork:
      case prim::GetAttr:
      case prim::CreateObject: return false;
      default: break;
    }
    if (n->kind().is_onnx() || !n->blocks().empty()) return false;
    // The op table's foldability (Note [Op facts]); for a node no overload matched, that of
    // every overload of its name.
    if (const OpInfo* op = n->maybeOperator()) {
      if (!op->foldable) return false;
    } else {
      for (const OpInfo* o : OperatorRegistry::global().lookup(n->kind().toQualString()))
        if (!o->foldable) return false;
    }
    if (hasSideEffects(n) || n->isNondeterministic() || n->mayWrite()) return false;
    if (writers_) {
      for (const Value* v : n->inputs())
        if (isMutableType(v->type())) return false;
      for (const Value* v : n->outputs())
        if (isMutableType(v->type())) return false;
    }
    return true;
  }

  void fold(Node* n) {
    const OpInfo* op = n->maybeOperator();
    if (op && op->schema.isVararg()) return;
    Operation operation = KernelRegistry::global().operationFor(*n, op);
    if (!operation) return;
    Stack stack;
    for (const Value* v : n->inputs()) {
      auto iv = toIValue(v);
      if (!iv) return;
      stack.push_back(std::move(*iv));
    }
    try {
      operation(stack);
    } catch (...) {
      return;  // the node raises at run time; leave it to raise there
    }
    if (stack.size() != n->outputs().size()) return;
    for (const IValue& v : stack) {
      if (v.isTensor() && v.toTensor().defined() && v.toTensor().requiresGrad()) return;
      if (v.isObject() || v.isCapsule() || v.tag() == IValue::Tag::Uninitialized) return;
    }
    WithInsertPoint guard(n);
    for (size_t i = 0; i < stack.size(); ++i) {
      Value* c = nullptr;
      try {
        c = graph_.insertConstant(stack[i], n->sourceRange(), n->scope());
      } catch (const Error&) {
        continue;  // not representable as a constant: keep this output
      }
      if (stack[i].isNone()) c->setType(n->output(i)->type());
      n->output(i)->replaceAllUsesWith(c);
      changed_ = true;
    }
  }

  void inlineIf(Node* n) {
    bool cond = *constantBool(n->input(0));
    Block* body = n->blocks().at(cond ? 0 : 1);
    propagate(body);
    for (auto it = body->nodes().begin(); it != body->nodes().end();) {
      Node* inner = *it;
      ++it;
      inner->moveBefore(n);
    }
    for (size_t i = 0; i < n->outputs().size(); ++i)
      n->output(i)->replaceAllUsesWith(body->outputs().at(i));
    n->destroy();  // even with side effects in the dead branch
    changed_ = true;
  }

  void removeExtraIfOutputs(Node* n) {
    Block* thenB = n->blocks().at(0);
    Block* elseB = n->blocks().at(1);
    size_t initial = n->outputs().size();
    WithInsertPoint guard(n);
    for (size_t i = 0; i < thenB->outputs().size();) {
      Value* t = thenB->outputs().at(i);
      Value* f = elseB->outputs().at(i);
      if (t == f) {
        n->output(i)->replaceAllUsesWith(t);
      } else if (auto tc = toIValue(t); tc && isConstant(f) &&
                                        sameAttributes(t->node(), f->node()) &&
                                        sameOutputTypes(t->node(), f->node())) {
        Value* c = graph_.insertConstant(*tc);
        c->setType(t->type());
        n->output(i)->replaceAllUsesWith(c);
      } else {
        ++i;
        continue;
      }
      n->eraseOutput(i);
      thenB->eraseOutput(i);
      elseB->eraseOutput(i);
    }
    changed_ |= initial != n->outputs().size();
  }

  static bool loopWillNotRun(const Node* n) {
    int64_t trips = constantInt(n->input(0)).value_or(1);
    bool cond = constantBool(n->input(1)).value_or(true);
    return !(cond && trips > 0);
  }

  void removeLoop(Node* n) {
    for (size_t i = 0; i < n->outputs().size(); ++i)
      n->output(i)->replaceAllUsesWith(n->input(i + 2));
    n->destroy();
    changed_ = true;
  }

  void removeExtraLoopOutputs(Node* n) {
    Block* body = n->blocks().at(0);
    size_t initial = n->outputs().size();
    for (size_t i = n->outputs().size(); i-- > 0;) {
      if (body->inputs().at(i + 1) != body->outputs().at(i + 1)) continue;
      Value* init = n->input(i + 2);
      n->output(i)->replaceAllUsesWith(init);
      body->inputs().at(i + 1)->replaceAllUsesWith(init);
      n->eraseOutput(i);
      n->removeInput(i + 2);
      body->eraseInput(i + 1);
      body->eraseOutput(i + 1);
    }
    changed_ |= initial != n->outputs().size();
  }

  Graph& graph_;
  bool writers_;
  bool changed_ = false;
};

}  // namespace

bool constantPropagation(Graph& graph) { return ConstantPropagator(graph).run(); }

}  // namespace torchless::passes
