#include "runtime/canonicalize_ops.h"

#include "ir/operator_registry.h"
#include "ir/walk.h"

#include <string_view>

namespace torchless {
namespace {

/// The 0-dim tensor a prim::Constant input `other` holds, if any.
std::optional<Tensor> zeroDimConstant(const Value* other) {
  if (other->node()->kind() != prim::Constant) return std::nullopt;
  std::optional<IValue> v = toIValue(other);
  if (!v || !v->isTensor()) return std::nullopt;
  const Tensor& t = v->toTensor();
  if (!t.defined() || t.dim() != 0 || isComplexType(t.dtype())) return std::nullopt;
  return t;
}

/// True for the four schemas CanonicalizeOps rewrites, whose input 1 is `Tensor other`.
bool isCanonicalized(const Node* n) {
  const OpInfo* op = n->maybeOperator();
  if (!op) return false;
  const std::string_view name = op->schema.name();
  const std::string_view overload = op->schema.overloadName();
  return overload == "Tensor" &&
         (name == "aten::add" || name == "aten::sub" || name == "aten::mul" || name == "aten::div");
}

bool canonicalizable(const Node* n) {
  return n->inputs().size() >= 2 && isCanonicalized(n) && zeroDimConstant(n->input(1)).has_value();
}

}  // namespace

std::shared_ptr<Graph> canonicalizeOps(const std::shared_ptr<Graph>& graph) {
  if (!anyNode(graph->block(), canonicalizable)) return graph;
  std::shared_ptr<Graph> copy = graph->copy();
  visitNodes(*copy, [](Node* n) {
    if (!canonicalizable(n)) return false;
    WithInsertPoint guard(n);
    Value* number = n->owningGraph()->insertConstant(itemIValue(*zeroDimConstant(n->input(1))));
    n->replaceInput(1, number);
    return true;
  });
  return copy;
}

}  // namespace torchless
