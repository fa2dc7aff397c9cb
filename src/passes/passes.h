#pragma once
// Every pass as a plain function (see Note [Passes] in pass.h). Each returns true when it
// changed the graph. The descriptions are at the top of each pass's file.

#include "ir/ir.h"

namespace torchless::passes {

/// eliminate_dead_code.cpp. `block` limits the sweep to one block and the blocks inside it
/// when `recurse` (PyTorch's EliminateDeadCode(Block*, recurse)).
bool eliminateDeadCode(Graph& graph);
bool eliminateDeadCode(Block* block, bool recurse = true);
/// constant_propagation.cpp.
bool constantPropagation(Graph& graph);
/// common_subexpression_elimination.cpp.
bool commonSubexpressionElimination(Graph& graph);
/// inline.cpp.
bool inlineCalls(Graph& graph);
/// unroll_loops.cpp.
bool unrollLoops(Graph& graph);
/// peephole.cpp.
bool peephole(Graph& graph);
/// lower_tuples.cpp.
bool lowerTuples(Graph& graph);

// Descriptions (the one paragraph each pass file starts with), for the registry.
extern const char* const kEliminateDeadCodeDescription;
extern const char* const kConstantPropagationDescription;
extern const char* const kCommonSubexpressionEliminationDescription;
extern const char* const kInlineDescription;
extern const char* const kUnrollLoopsDescription;
extern const char* const kPeepholeDescription;
extern const char* const kLowerTuplesDescription;

}  // namespace torchless::passes
