#pragma once
// The pre-flight: before converting anything, find every node the backend cannot take and
// report them all at once, each with where it is used (Torch-TensorRT's
// CheckMethodOperatorSupport, with places).

#include "ir/ir.h"
#include "ir/operator_registry.h"

#include <functional>
#include <string>
#include <vector>

namespace torchless::convert {

/// One unsupported node: the op (full schema, or the kind when no schema matches) and where.
struct UnsupportedOp {
  std::string op;
  std::string place;
  /// "unsupported operator aten::foo(Tensor self) -> Tensor used at m.py:3:9".
  std::string str() const;
};

/// Decides whether the backend takes a node; `op` is its op-table entry (null when none).
using SupportPredicate = std::function<bool(const Node& node, const OpInfo* op)>;

/// Every node of `graph` (nested blocks included, in order) that `supported` rejects.
/// Graph structure (prim::Constant, prim::If, prim::Loop, prim::Return ...) is offered to the
/// predicate too: a backend decides what it takes.
std::vector<UnsupportedOp> findUnsupported(const Graph& graph, const SupportPredicate& supported);

/// Throws torchless::UnsupportedError when findUnsupported finds anything. First line (as
/// cli.md asks): "unsupported operator <op> used at <place> (and N more for <what>, listed
/// below)"; details: every one, one line each. `what` names the conversion ("ONNX export").
void checkSupported(const Graph& graph, const std::string& what, const SupportPredicate& supported);

}  // namespace torchless::convert
