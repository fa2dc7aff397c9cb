#pragma once
// Dead code elimination: the one implementation, for the eliminate_dead_code pass, the passes
// that clean up after themselves, and the tracer. What it removes and keeps is described at
// the top of dead_code_elimination.cpp (PyTorch's EliminateDeadCode, with the differences).

#include "ir/ir.h"

#include <functional>

namespace torchless {

/// Node::hasSideEffects of `n` or of any node in its blocks: dead code elimination keeps it.
bool hasSideEffectsWithin(const Node* n);

struct DeadCodeOptions {
  /// Nodes to keep even when nothing uses them (the tracer keeps prim::GetAttr, as PyTorch's
  /// traced graphs do); null keeps only what has side effects.
  std::function<bool(const Node*)> keep;
};

/// Removes dead nodes and dead prim::If / prim::Loop outputs of `block` (and, with `recurse`,
/// of the blocks nested in it; a nested `block`'s outputs all count as live). Returns true
/// when anything was removed.
bool eliminateDeadCode(Block* block, bool recurse, const DeadCodeOptions& options = {});
/// As eliminateDeadCode on the graph's block, recursively.
bool eliminateDeadCode(Graph& graph, const DeadCodeOptions& options = {});

}  // namespace torchless
