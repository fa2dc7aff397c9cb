#pragma once
// Which op-table entry a node calls. In the IR every argument is explicit and positional, so
// a node matches an overload of its kind when the input count fits and each input's type is
// a subtype of the argument's type, with schema type variables (`t`, `t[]`) bound
// consistently (Node::matches / findOperatorFor in torch/csrc/jit/ir/ir.cpp).

#include "core/type.h"
#include "ir/ir.h"
#include "ir/operator_registry.h"

#include <map>
#include <string>

namespace torchless {

/// Type-variable bindings made while matching (`t` -> `int`).
using TypeEnv = std::map<std::string, TypePtr>;

/// True when a value of type `actual` can be passed where the schema says `formal`, binding
/// type variables in `env` (the first binding of a variable wins; later uses must unify).
bool matchTypeVariables(const TypePtr& formal, const TypePtr& actual, TypeEnv& env);

/// `formal` with its type variables replaced from `env` (unbound ones stay).
TypePtr substituteTypeVariables(const TypePtr& formal, const TypeEnv& env);

/// The most specific overload of node->kind() in `registry` whose schema the node's inputs and
/// output count fit, or nullptr (prim::Constant, prim::If and other structural nodes have
/// none). Against the global table this is node->maybeOperator(), matched once per node.
const OpInfo* matchOperator(const Node* node, const OperatorRegistry& registry);
/// As matchOperator, without the node's cache (Node::maybeOperator fills it with this).
const OpInfo* matchOperatorUncached(const Node* node, const OperatorRegistry& registry);

}  // namespace torchless
