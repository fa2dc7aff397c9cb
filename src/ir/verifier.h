#pragma once
// The IR verifier: checks the invariants of Note [Graph ownership] and Note [Uses] (ir.h)
// plus the shape of control flow. Cheap enough to run after every pass in tests.

#include "ir/ir.h"

namespace torchless {

/// Checks `graph` and throws torchless::Error naming the first broken rule, with the node
/// printed as details:
///   - every input is defined before its use, in the same block or an enclosing one
///     (so no dangling values from other blocks or destroyed nodes);
///   - `node->inputs()[i] == v` if and only if `Use{node, i}` is in `v->uses()`, and every
///     user is a live node of the graph;
///   - outputs know their node and offset; nodes know their block; lists are well linked;
///   - prim::Constant has no inputs and one output;
///   - prim::If: one bool input, two blocks without inputs, each returning as many values
///     as the node has outputs, of subtypes of the output types;
///   - prim::Loop: inputs (max trip count, condition, carried...), one block with inputs
///     (iteration, carried...) and outputs (condition, carried...), outputs = carried, with
///     agreeing types where known.
void verify(const Graph& graph);

}  // namespace torchless
