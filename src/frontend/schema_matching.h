#pragma once
// Overload resolution: which schema of an operator a call matches, and the inputs it gets
// (torch/csrc/jit/frontend/schema_matching.cpp in behaviour).
//
// A call's arguments (positional, keyword, and an optional `self`) are matched against each
// argument of a schema in order: `self` by name, then positional arguments, then keywords,
// then defaults. Along the way, as PyTorch does:
//   - a single int/float given for a fixed-size list (`int[2] stride`) is repeated N times;
//   - the remaining positional arguments are packed into a list when the schema's last
//     positional argument is a (non fixed-size, non type-variable) list: `x.view(1, 2)`;
//   - homogeneous tuples convert to lists, `T` converts to `Optional[T]`, None matches
//     Optional arguments;
//   - with conversions allowed: Tensor -> int/float/Scalar (aten::IntImplicit ...),
//     Scalar/bool -> int/float (aten::Int / aten::Float), str -> Device (aten::device);
//     int -> float and numbers -> Tensor are *not* implicit (PyTorch resolves those through
//     overloads such as aten::add.int_float and aten::add.Scalar);
//   - schema type variables (`t`, `t[]`) bind on first use; returns are typed from them.
// Several overloads: first every schema without conversions, then every schema with them;
// the first match wins. No match: "Arguments for call are not valid. The following variants
// are available: ..." listing each candidate with why it failed.

#include "frontend/source.h"
#include "ir/function_schema.h"
#include "ir/ir.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace torchless::frontend {

/// An argument of a call: its value, the keyword it was passed with ("" if positional) and
/// where it is in the source.
struct NamedValue {
  SourceRange loc;
  std::string name;
  Value* value = nullptr;
};

/// The outcome of matching one schema: the node's inputs in schema order and its return types.
struct MatchedSchema {
  std::vector<Value*> inputs;
  std::vector<TypePtr> returnTypes;
  std::vector<std::string> returnNames;
};

/// The SourceLocation a node gets for `range` (col 0-based as PyTorch prints it).
SourceLocationPtr toLocation(const SourceRange& range);

/// Inserts `n` at the graph's insertion point with `range` as its location.
Node* insertNodeAt(Graph& graph, Node* n, const SourceRange& range);

/// Inserts a constant with `range` as its location.
Value* insertConstantAt(Graph& graph, const IValue& value, const SourceRange& range);

/// `value` converted where PyTorch converts implicitly (see the file comment); the value
/// unchanged when no conversion applies (the caller checks subtyping).
Value* tryConvertToType(const SourceRange& loc, Graph& graph, const TypePtr& concreteType,
                        Value* value, bool allowConversions);

/// The elements of a tuple value: the inputs of its prim::TupleConstruct, or a new
/// prim::TupleUnpack.
std::vector<Value*> createTupleUnpack(Graph& graph, Value* tuple, const SourceRange& loc);

/// Tries one schema; on failure returns nullopt and, when `failures` is set, appends PyTorch's
/// explanation ("\n<schema>:\nExpected a value of type ..."). Nodes created by a failed attempt
/// are removed again.
std::optional<MatchedSchema> tryMatchSchema(const FunctionSchema& schema, const SourceRange& loc,
                                            Graph& graph, const std::vector<NamedValue>& args,
                                            const std::vector<NamedValue>& kwargs,
                                            const std::optional<NamedValue>& self,
                                            std::ostream* failures, bool allowConversions);

/// Matches one of `schemas` (two passes, see the file comment); throws the TorchScript error at
/// `loc` when none fits. Returns the index of the schema and the match.
std::pair<size_t, MatchedSchema> matchSchemas(const std::vector<const FunctionSchema*>& schemas,
                                              const SourceRange& loc, Graph& graph,
                                              const std::vector<NamedValue>& args,
                                              const std::vector<NamedValue>& kwargs,
                                              const std::optional<NamedValue>& self = std::nullopt);

/// Emits a call of the operator `name` (`aten::add`) resolved against the op table. Returns
/// the single output, a prim::TupleConstruct of several outputs, or an empty tuple for none.
/// Throws "Unknown builtin op: ..." when the table has no such operator.
Value* emitBuiltinCall(const SourceRange& loc, Graph& graph, Symbol name,
                       const std::vector<NamedValue>& args, const std::vector<NamedValue>& kwargs,
                       const std::optional<NamedValue>& self = std::nullopt);

/// As emitBuiltinCall, returning the node (one output per schema return).
Node* emitBuiltinNode(const SourceRange& loc, Graph& graph, Symbol name,
                      const std::vector<NamedValue>& args, const std::vector<NamedValue>& kwargs,
                      const std::optional<NamedValue>& self = std::nullopt);

/// Positional NamedValues from plain values.
std::vector<NamedValue> toNamedValues(const SourceRange& loc, const std::vector<Value*>& values);

}  // namespace torchless::frontend
