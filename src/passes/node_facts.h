#pragma once
// What passes ask about nodes and values: side effects, mutation, determinism, mutable types,
// constant values. Per-op facts come from the op table (ir/operator_registry.h); this file
// only combines them with what the IR itself knows (Node::hasSideEffects).

#include "ir/ir.h"
#include "ir/operator_registry.h"

#include <optional>

namespace torchless::passes {

/// The op-table entry the node calls (matchOperator against the global table), or nullptr
/// for structural nodes and unknown ops.
const OpInfo* opFor(const Node* n);

/// True when the node may write to one of its inputs or to state reachable from them:
/// a mutating schema (`add_`, `out=`), list and dict mutators, prim::SetAttr, calls.
bool mayWrite(const Node* n);

/// Must stay even when unused: Node::hasSideEffects (prints, raises, SetAttr, calls,
/// in-place ops), the op table's hasSideEffects and mutates, and nodes whose blocks contain
/// such a node.
bool hasSideEffects(const Node* n);

/// Draws random numbers (the op table's nondeterministic fact).
bool isNondeterministic(const Node* n);

/// PyTorch's AliasDb::isMutableType: tensors, lists, dicts, objects, futures, and tuples /
/// optionals / unions containing one.
bool isMutableType(const TypePtr& t);

/// True when some node of the graph (any block) may write (mayWrite).
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
