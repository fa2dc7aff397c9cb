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
#include "passes/passes.h"

namespace torchless::passes {

const char* const kFoldLinearBnDescription =
    "Folds an eval-mode aten::batch_norm with constant parameters into the preceding "
    "aten::linear with constant weight and bias (PyTorch 2's FoldFrozenLinearBatchnorm; "
    "assumes a 2-D input unless the type says otherwise). Leaves linears whose output has "
    "other uses, non-constant parameters, training-mode batch_norm, non-float weights.";

namespace {

// aten::linear(input, weight, bias); PyTorch's fold assumes a 2-D input ([N, in]: batch_norm
// normalises the linear's output features), so another rank in the input's type is left.
bool isFoldableLinear(const Node* n) {
  if (n->kind() != Symbol::aten("linear") || n->inputs().size() != 3) return false;
  if (const auto* tt = n->input(0)->type()->cast<TensorType>()) {
    if (tt->dim() && *tt->dim() != 2) return false;
  }
  return true;
}

}  // namespace

bool foldLinearBn(Graph& graph) {
  static const fold::BatchNormFoldTarget linear{
      .accepts = isFoldableLinear, .weightDim = 2, .linearOrder = true};
  return fold::foldNodes(graph, [](Node* n) {
    return n->kind() == Symbol::aten("batch_norm") && fold::foldBatchNormInto(n, linear);
  });
}

}  // namespace torchless::passes
