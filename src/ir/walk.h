#pragma once
// The block walker: every node of a block and of the blocks nested in it, the one recursion
// passes share instead of each writing `for (Block* b : n->blocks()) run(b)` by hand.
//
//   graph(%c : bool, %x : Tensor):         visitNodes(graph.block(), f) calls f on
//     %y : Tensor = prim::If(%c)              %a, %b (the If's blocks, in order),
//       block0():  %a = aten::relu(%x) ...    then the If itself,
//       block1():  %b = aten::neg(%x) ...     then %z
//     %z : Tensor = aten::add(%y, %x, %1)
//
// A node is visited after the nodes inside it, so a visit that destroys or replaces the node
// it is given sees its blocks already done. The walk moves past a node before visiting it:
// the visit may destroy that node or insert nodes before it, not touch the nodes after it.

#include "ir/ir.h"

#include <functional>

namespace torchless {

/// Calls `visit(n)` on every node of `block` and of the blocks nested in it, each node's
/// blocks before the node. Returns true when some call returned true.
bool visitNodes(Block* block, const std::function<bool(Node*)>& visit);
/// As visitNodes on the graph's block.
bool visitNodes(Graph& graph, const std::function<bool(Node*)>& visit);

/// Calls `fn(n)` on every node of `block` and of the blocks nested in it, each node before its
/// blocks (the order nodes print in). `fn` must not destroy or insert nodes.
void forEachNode(Block* block, const std::function<void(Node*)>& fn);

/// True when `pred(n)` holds for some node of `block` or of the blocks nested in it (nodes in
/// order, each node before its blocks; stops at the first).
bool anyNode(const Block* block, const std::function<bool(const Node*)>& pred);

}  // namespace torchless
