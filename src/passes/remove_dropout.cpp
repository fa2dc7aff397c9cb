// remove_dropout: replaces aten::dropout, aten::feature_dropout, aten::alpha_dropout and
// aten::feature_alpha_dropout (and their in-place forms, `dropout_` ...) whose `train`
// argument is the constant false by their input: in eval mode they return the input
// unchanged (the in-place forms return the input itself), as PyTorch's removeDropout
// (torch/csrc/jit/passes/remove_dropout.cpp, which handles dropout and feature_dropout). It
// leaves alone dropouts whose `train` is true or not a constant (freeze first: it turns
// `self.training` into a constant). Nested blocks are visited.
//
//   %f : bool = prim::Constant[value=0]()
//   %y : Tensor = aten::dropout(%x, %p, %f)   ==>   (uses of %y now use %x)
//   %z : Tensor = aten::relu(%y)                     %z : Tensor = aten::relu(%x)
#include "ir/walk.h"
#include "passes/node_facts.h"
#include "passes/passes.h"

#include <vector>

namespace torchless::passes {

const char* const kRemoveDropoutDescription =
    "Replaces aten::dropout, feature_dropout, alpha_dropout, feature_alpha_dropout and their "
    "in-place forms whose train argument is the constant false by their input (PyTorch's "
    "removeDropout). Leaves dropouts with train true or not constant.";

namespace {

bool isDropout(const Node* n) {
  static const Symbol kinds[] = {Symbol::aten("dropout"),
                                 Symbol::aten("dropout_"),
                                 Symbol::aten("feature_dropout"),
                                 Symbol::aten("feature_dropout_"),
                                 Symbol::aten("alpha_dropout"),
                                 Symbol::aten("alpha_dropout_"),
                                 Symbol::aten("feature_alpha_dropout"),
                                 Symbol::aten("feature_alpha_dropout_")};
  for (Symbol k : kinds)
    if (n->kind() == k) return n->inputs().size() == 3 && n->outputs().size() == 1;
  return false;
}

bool run(Block* block) {
  return visitNodes(block, [](Node* n) {
    if (!isDropout(n)) return false;
    std::optional<bool> train = constantBool(n->input(2));
    if (!train || *train) return false;
    n->output()->replaceAllUsesWith(n->input(0));
    n->destroy();
    return true;
  });
}

}  // namespace

bool removeDropout(Graph& graph) { return run(graph.block()); }

}  // namespace torchless::passes
