// fold_linear_bn: folds an eval-mode aten::batch_norm into the aten::linear that feeds it,
// as PyTorch's FoldFrozenLinearBatchnorm (torch/csrc/jit/passes/frozen_linear_folding.cpp,
// PyTorch 2.x): new weight w * s (s = gamma * rsqrt(var + eps) per output feature, dim 0 of
// w) and bias (b - mean) * s + beta, in the weight's and bias's dtypes, named
// `<weight>_fused_bn`; the batch_norm's uses move to the linear, whose location stays. As in
// PyTorch this assumes the linear's input is 2-D ([N, in]; batch_norm normalises dim 1, the
// linear's output features); when the input's type says it has another rank the fold is
// skipped. It also leaves alone: linears whose output has another use, non-constant
// parameters, training-mode batch_norm or missing running stats, non-float weights,
// mismatched sizes. Runs eliminate_dead_code afterwards.
//
//   %l : Tensor = aten::linear(%x, %w, %b)                    %l : Tensor = aten::linear(%x,
//   %y : Tensor = aten::batch_norm(%l, %gamma, ...)    ==>         %w_fused_bn, %b_fused_bn)
//   return (%y)                                               return (%l)
#include "passes/fold_utils.h"
#include "passes/node_facts.h"
#include "passes/passes.h"

namespace torchless::passes {

const char* const kFoldLinearBnDescription =
    "Folds an eval-mode aten::batch_norm with constant parameters into the preceding "
    "aten::linear with constant weight and bias (PyTorch 2's FoldFrozenLinearBatchnorm; "
    "assumes a 2-D input unless the type says otherwise). Leaves linears whose output has "
    "other uses, non-constant parameters, training-mode batch_norm, non-float weights.";

namespace {

std::optional<Tensor> optionalTensor(const Value* v, bool& ok) {
  if (fold::isNone(v)) return std::nullopt;
  std::optional<Tensor> t = fold::constantTensor(v);
  if (!t) ok = false;
  return t;
}

bool foldOne(Node* bn) {
  Node* linear = bn->input(0)->node();
  if (linear->kind() != Symbol::aten("linear") || linear->inputs().size() != 3 ||
      bn->inputs().size() != 9)
    return false;
  if (fold::nonConstantParameters(linear) || fold::nonConstantParameters(bn)) return false;
  if (linear->output()->uses().size() != 1) return false;
  if (const auto* tt = linear->input(0)->type()->cast<TensorType>()) {
    if (tt->dim() && *tt->dim() != 2) return false;
  }
  std::optional<bool> training = constantBool(bn->input(5));
  if (!training || *training) return false;
  std::optional<IValue> eps = toIValue(bn->input(7));
  if (!eps || !(eps->isDouble() || eps->isInt())) return false;
  bool ok = true;
  std::optional<Tensor> w = fold::constantTensor(linear->input(1));
  std::optional<Tensor> b = optionalTensor(linear->input(2), ok);
  std::optional<Tensor> gamma = optionalTensor(bn->input(1), ok);
  std::optional<Tensor> beta = optionalTensor(bn->input(2), ok);
  std::optional<Tensor> mean = fold::constantTensor(bn->input(3));
  std::optional<Tensor> var = fold::constantTensor(bn->input(4));
  if (!ok || !w || w->dim() != 2 || !mean || !var) return false;
  std::optional<fold::FoldedWeights> f = fold::foldBatchNorm(
      *w, b, *mean, *var, eps->toScalarDouble(), gamma, beta, /*linearOrder=*/true);
  if (!f) return false;
  fold::replaceWithFolded(linear, bn, *f);
  return true;
}

}  // namespace

bool foldLinearBn(Graph& graph) {
  return fold::foldNodes(graph, [](Node* n) {
    return n->kind() == Symbol::aten("batch_norm") && foldOne(n);
  });
}

}  // namespace torchless::passes
