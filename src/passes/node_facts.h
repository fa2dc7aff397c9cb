#pragma once
// What passes ask about nodes and values: side effects with blocks, mutable types, constant
// values, node equality. Per-op facts (mutation, side effects, determinism) are the op
// table's, read through Node::maybeOperator / mayWrite / hasSideEffects / isNondeterministic
// (ir/ir.h); this file only combines them.

#include "ir/ir.h"
#include "ir/operator_registry.h"

#include <optional>

namespace torchless::passes {

/// Must stay even when unused: Node::hasSideEffects of the node or of a node in its blocks
/// (hasSideEffectsWithin, ir/dead_code_elimination.h).
bool hasSideEffects(const Node* n);

/// PyTorch's AliasDb::isMutableType: tensors, lists, dicts, objects, futures, and tuples /
/// optionals / unions containing one.
bool isMutableType(const TypePtr& t);

/// True when some node of the graph (any block) may write (Node::mayWrite).
bool graphHasWriters(const Graph& g);

/// True when the value cannot be None: its type admits no None (not Optional, None, Any,
/// Union with None) or it is a non-None constant.
bool mustNotBeNone(const Value* v);
/// True when the value is None: a None constant or of NoneType.
bool mustBeNone(const Value* v);

/// The value of a prim::Constant as an int / bool.
std::optional<int64_t> constantInt(const Value* v);
std::optional<bool> constantBool(const Value* v);

/// True when `a` and `b` are the same node up to inputs: kind, attributes (constants by
/// value, tensors by dtype/shape/data), output count and types, and the same sub-blocks.
/// Used by CSE (with identical inputs) and by peephole's identical-branch check.
bool sameAttributes(const Node* a, const Node* b);
bool sameOutputTypes(const Node* a, const Node* b);
/// A hash of kind, inputs and attributes consistent with sameAttributes.
size_t hashNode(const Node* n);

}  // namespace torchless::passes
