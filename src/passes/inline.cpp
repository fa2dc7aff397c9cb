// inline: replaces prim::CallFunction (the callee is the GraphFunction of the function
// value's FunctionType) and prim::CallMethod on ClassType receivers (the class's method) by
// a copy of the callee's graph, recursively (calls inside the copy are inlined too), as
// torch._C._jit_pass_inline (torch/csrc/jit/passes/inliner.cpp). Copied nodes keep their
// source locations and value names (uniqued); the call's output names move to the values
// that replace them. It leaves alone: calls on interface-typed receivers (the method is only
// known at run time), callees that are not GraphFunctions, calls whose argument count does
// not match the callee, and the function constants of inlined calls (eliminate_dead_code
// removes them). Unlike PyTorch it inlines the callee's graph as it is, not its
// "optimized graph" (PyTorch runs peephole and constant propagation on callees first), and
// records no call stack.
//
//   graph(%x : Tensor):                              graph(%x : Tensor):
//     %f : Function = prim::Constant[name="f"]()       %f : Function = prim::Constant[name="f"]()
//     %y : Tensor = prim::CallFunction(%f, %x)  ==>    %y : Tensor = aten::relu(%x)
//     return (%y)                                       return (%y)
//   with f = graph(%a : Tensor): %r : Tensor = aten::relu(%a) return (%r)
#include "core/error.h"
#include "core/stack_guard.h"
#include "ir/function.h"
#include "passes/passes.h"

#include <unordered_map>

namespace torchless::passes {

const char* const kInlineDescription =
    "Replaces prim::CallFunction and prim::CallMethod on class-typed receivers by a copy of "
    "the callee's graph, recursively, keeping source locations and names (PyTorch's "
    "_jit_pass_inline). Leaves interface calls, non-graph callees and the now unused "
    "function constants (eliminate_dead_code removes them).";

namespace {

constexpr size_t kMaxInlinedCalls = 100000;  // a recursive function would never end

const GraphFunction* calleeOf(const Node* n) {
  if (n->kind() == prim::CallFunction) {
    if (n->inputs().empty()) return nullptr;
    const auto* ft = n->input(0)->type()->cast<FunctionType>();
    return ft ? dynamic_cast<const GraphFunction*>(ft->function()) : nullptr;
  }
  if (n->kind() == prim::CallMethod) {
    if (n->inputs().empty() || !n->hasAttribute(attr::name)) return nullptr;
    const auto* cls = n->input(0)->type()->cast<ClassType>();
    return cls ? dynamic_cast<const GraphFunction*>(cls->findMethod(n->s(attr::name))) : nullptr;
  }
  return nullptr;
}

class Inliner {
 public:
  bool run(Block* block) {
    checkStack("inline: blocks");  // Note [Stack guard]
    for (auto it = block->nodes().begin(); it != block->nodes().end();) {
      Node* n = *it;
      const GraphFunction* fn = calleeOf(n);
      if (!fn) {
        for (Block* b : n->blocks()) run(b);
        ++it;
        continue;
      }
      Node* before = n->prev();
      if (inlineCall(n, *fn)) {
        it = NodeIterator(before, false);
        ++it;  // the first inlined node: calls inside the copy are inlined next
      } else {
        ++it;
      }
    }
    return changed_;
  }

 private:
  bool inlineCall(Node* call, const GraphFunction& fn) {
    size_t first = call->kind() == prim::CallFunction ? 1 : 0;
    const Graph& callee = *fn.graph();
    if (call->inputs().size() - first != callee.inputs().size() ||
        call->outputs().size() != callee.outputs().size())
      return false;
    if (++inlined_ > kMaxInlinedCalls)
      throw Error(fmt::format("inline: more than {} calls inlined; is '{}' recursive?",
                              kMaxInlinedCalls, fn.qualname()));
    Graph& g = *call->owningGraph();
    WithInsertPoint guard(call);
    std::unordered_map<const Value*, Value*> map;
    for (size_t i = 0; i < callee.inputs().size(); ++i)
      map[callee.inputs()[i]] = call->input(first + i);
    auto lookup = [&](Value* v) -> Value* {
      auto it = map.find(v);
      TL_INTERNAL_ASSERT(it != map.end(), "inline: callee value %{} defined outside it",
                         v->debugName());
      return it->second;
    };
    for (const Node* n : callee.nodes()) {
      Node* copy = g.insertNode(g.createClone(n, lookup));
      for (size_t i = 0; i < n->outputs().size(); ++i) map[n->output(i)] = copy->output(i);
    }
    for (size_t i = 0; i < call->outputs().size(); ++i) {
      Value* old = call->output(i);
      Value* replacement = map.at(callee.outputs()[i]);
      if (old->hasDebugName()) replacement->setDebugName(old->debugName());
      old->replaceAllUsesWith(replacement);
    }
    call->destroy();
    changed_ = true;
    return true;
  }

  size_t inlined_ = 0;
  bool changed_ = false;
};

}  // namespace

bool inlineCalls(Graph& graph) { return Inliner().run(graph.block()); }

}  // namespace torchless::passes
