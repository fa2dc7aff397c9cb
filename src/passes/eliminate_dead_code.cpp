// eliminate_dead_code: the pass of ir/dead_code_elimination.cpp (where what it removes and
// keeps is described).
#include "ir/dead_code_elimination.h"
#include "passes/passes.h"

namespace torchless::passes {

const char* const kEliminateDeadCodeDescription =
    "Removes nodes whose outputs are unused and that have no side effects, and unused "
    "outputs of prim::If and prim::Loop (loop-carried values unused after and inside the "
    "loop), as PyTorch's EliminateDeadCode. Keeps graph inputs, prints, raises, SetAttr, "
    "calls, in-place and other mutating ops (per the op table), and blocks containing them.";

bool eliminateDeadCode(Block* block, bool recurse) {
  return torchless::eliminateDeadCode(block, recurse);
}

bool eliminateDeadCode(Graph& graph) { return torchless::eliminateDeadCode(graph); }

}  // namespace torchless::passes
