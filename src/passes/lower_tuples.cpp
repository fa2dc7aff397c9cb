// lower_tuples: removes tuples that are only packed and unpacked, as PyTorch's
// LowerSimpleTuples and, where it can, LowerAllTuples (torch/csrc/jit/passes/
// lower_tuples.cpp): prim::TupleUnpack, prim::TupleIndex with a constant index and
// prim::TupleSlice of a prim::TupleConstruct (or of a tuple constant, expanded into a
// TupleConstruct of constants) are replaced by the construct's inputs; tuple-typed outputs of
// prim::If whose branches both return a TupleConstruct (or tuple constant) become one output
// per element, and so do tuple-typed loop-carried values whose initial value and body result
// are TupleConstructs (or the body passes the value through); a TupleConstruct is rebuilt
// after the node for any remaining use, and nested tuples are flattened level by level until
// nothing changes; then eliminate_dead_code. It leaves alone: the graph's own inputs and
// outputs (LowerAllTuples flattens them and changes the signature; we keep it), tuples
// flowing into other ops (calls, prints, lists), If/Loop slots where some producer is not a
// TupleConstruct, TupleIndex with a non-constant or out-of-range index; and, unlike
// LowerAllTuples, it never fails: what it cannot lower stays a tuple.
//
//   graph(%a : int, %b : int):                        graph(%a : int, %b : int):
//     %t : (int, int) = prim::TupleConstruct(%a, %b)    return (%b)
//     %x : int, %y : int = prim::TupleUnpack(%t)  ==>
//     return (%y)
#include "ir/walk.h"
#include "passes/node_facts.h"
#include "passes/passes.h"

#include <vector>

namespace torchless::passes {

const char* const kLowerTuplesDescription =
    "Replaces TupleUnpack/TupleIndex/TupleSlice of a TupleConstruct (or tuple constant) by "
    "its elements and flattens tuple-typed If outputs and loop-carried values that are "
    "only packed and unpacked, level by level (PyTorch's LowerSimpleTuples/LowerAllTuples). "
    "Keeps the graph's inputs and outputs and any tuple it cannot lower.";

namespace {

const TupleType* tupleTypeOf(const Value* v) {
  return v->type() ? v->type()->cast<TupleType>() : nullptr;
}

bool isTupleConstant(const Value* v) {
  return v->node()->kind() == prim::Constant && tupleTypeOf(v) && toIValue(v) &&
         toIValue(v)->isTuple();
}

// The producer of a tuple value as a TupleConstruct: a tuple constant is expanded first.
Node* asConstruct(Value* v) {
  Node* n = v->node();
  if (n->kind() == prim::TupleConstruct) return n;
  if (!isTupleConstant(v)) return nullptr;
  Graph& g = *n->owningGraph();
  WithInsertPoint guard(n);
  std::vector<Value*> elems;
  for (const IValue& e : toIValue(v)->toTuple()->elements) {
    Value* c = g.insertConstant(e, n->sourceRange(), n->scope());
    elems.push_back(c);
  }
  Node* tc = g.insertNode(g.createTuple(elems, v->type()));
  tc->setSourceRange(n->sourceRange());
  v->replaceAllUsesWith(tc->output());
  return tc;
}

bool isConstructLike(const Value* v) {
  return v->node()->kind() == prim::TupleConstruct || isTupleConstant(v);
}

class TupleLowering {
 public:
  bool run(Graph& g) {
    bool changed = false;
    while (lowerBlock(g.block())) changed = true;
    if (changed) eliminateDeadCode(g);
    return changed;
  }

 private:
  bool lowerBlock(Block* block) {
    return visitNodes(block, [this](Node* n) {
      switch (n->kind()) {
        case prim::TupleUnpack:
        case prim::TupleIndex:
        case prim::TupleSlice:
          if (!removeTupleNode(n)) return false;
          n->destroy();
          return true;
        case prim::If: return flattenIf(n);
        case prim::Loop: return flattenLoop(n);
        default: return false;
      }
    });
  }

  static bool removeTupleNode(Node* n) {
    if (n->inputs().empty() || !isConstructLike(n->input(0))) return false;
    if (n->kind() == prim::TupleUnpack) {
      const TupleType* tt = tupleTypeOf(n->input(0));
      if (!tt || tt->elements().size() != n->outputs().size()) return false;
      Node* c = asConstruct(n->input(0));
      for (size_t i = 0; i < n->outputs().size(); ++i)
        n->output(i)->replaceAllUsesWith(c->input(i));
      return true;
    }
    if (n->kind() == prim::TupleIndex) {
      auto idx = constantInt(n->input(1));
      const TupleType* tt = tupleTypeOf(n->input(0));
      if (!idx || !tt) return false;
      auto len = static_cast<int64_t>(tt->elements().size());
      int64_t i = *idx < 0 ? *idx + len : *idx;
      if (i < 0 || i >= len) return false;  // raises at run time; leave it
      Node* c = asConstruct(n->input(0));
      n->output()->replaceAllUsesWith(c->input(static_cast<size_t>(i)));
      return true;
    }
    // prim::TupleSlice[beg, end]
    Symbol beg = Symbol::attr("beg"), end = Symbol::attr("end");
    if (!n->hasAttribute(beg) || !n->hasAttribute(end)) return false;
    const TupleType* tt = tupleTypeOf(n->input(0));
    int64_t b = n->i(beg), e = n->i(end);
    if (!tt || b < 0 || e < b || e > static_cast<int64_t>(tt->elements().size())) return false;
    Node* c = asConstruct(n->input(0));
    std::vector<Value*> values(c->inputs().begin() + b, c->inputs().begin() + e);
    Graph& g = *n->owningGraph();
    WithInsertPoint guard(n);
    Node* slice = g.insertNode(g.createTuple(values, n->output()->type()));
    slice->setSourceRange(n->sourceRange());
    n->output()->replaceAllUsesWith(slice->output());
    return true;
  }

  // Replaces block output i (a TupleConstruct) by the construct's inputs.
  static void flattenBlockOutput(Block* b, size_t i) {
    Node* c = asConstruct(b->outputs().at(i));
    std::vector<Value*> elems(c->inputs().begin(), c->inputs().end());
    b->eraseOutput(i);
    for (size_t j = 0; j < elems.size(); ++j) b->insertOutput(i + j, elems[j]);
  }

  // Replaces output i of `n` (a tuple) by one output per element; a TupleConstruct of them,
  // inserted before `insertBefore`, takes the old output's uses.
  static void flattenNodeOutput(Node* n, size_t i, Node* insertBefore) {
    Value* old = n->output(i);
    TypePtr type = old->type();
    const auto& elems = type->cast<TupleType>()->elements();
    std::vector<Value*> outs;
    for (size_t j = 0; j < elems.size(); ++j)
      outs.push_back(n->insertOutput(i + 1 + j)->setType(elems[j]));
    if (old->hasUses()) {
      Graph& g = *n->owningGraph();
      WithInsertPoint guard(insertBefore);
      Node* tc = g.insertNode(g.createTuple(outs, type));
      tc->setSourceRange(n->sourceRange());
      old->replaceAllUsesWith(tc->output());
    }
    n->eraseOutput(i);
  }

  static bool flattenIf(Node* n) {
    bool changed = false;
    Block* thenB = n->blocks().at(0);
    Block* elseB = n->blocks().at(1);
    for (size_t i = 0; i < n->outputs().size();) {
      const TupleType* tt = tupleTypeOf(n->output(i));
      if (!tt || !n->output(i)->hasUses() || !isConstructLike(thenB->outputs().at(i)) ||
          !isConstructLike(elseB->outputs().at(i))) {
        ++i;
        continue;
      }
      size_t k = tt->elements().size();
      flattenBlockOutput(thenB, i);
      flattenBlockOutput(elseB, i);
      flattenNodeOutput(n, i, n->next());
      changed = true;
      i += k;
    }
    return changed;
  }

  static bool flattenLoop(Node* n) {
    bool changed = false;
    Block* body = n->blocks().at(0);
    for (size_t i = 0; i < n->outputs().size();) {
      const TupleType* tt = tupleTypeOf(n->output(i));
      Value* init = n->input(i + 2);
      Value* in = body->inputs().at(i + 1);
      Value* result = body->outputs().at(i + 1);
      bool used = n->output(i)->hasUses() || in->hasUses();
      if (!tt || !used || !isConstructLike(init) || !(result == in || isConstructLike(result))) {
        ++i;
        continue;
      }
      size_t k = tt->elements().size();
      TypePtr type = n->output(i)->type();
      // Initial values.
      Node* c = asConstruct(init);
      std::vector<Value*> initElems(c->inputs().begin(), c->inputs().end());
      n->removeInput(i + 2);
      for (size_t j = 0; j < k; ++j) n->insertInput(i + 2 + j, initElems[j]);
      // Body inputs: one per element, packed at the top of the body for the old uses.
      std::vector<Value*> ins;
      for (size_t j = 0; j < k; ++j)
        ins.push_back(body->insertInput(i + 2 + j)->setType(tt->elements()[j]));
      {
        Graph& g = *n->owningGraph();
        WithInsertPoint guard(body->nodes().front());
        Node* tc = g.insertNode(g.createTuple(ins, type));
        in->replaceAllUsesWith(tc->output());
      }
      body->eraseInput(i + 1);
      // Body results (now a TupleConstruct either way).
      flattenBlockOutput(body, i + 1);
      // Loop outputs.
      flattenNodeOutput(n, i, n->next());
      changed = true;
      i += k;
    }
    return changed;
  }
};

}  // namespace

bool lowerTuples(Graph& graph) { return TupleLowering().run(graph); }

}  // namespace torchless::passes
