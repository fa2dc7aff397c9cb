// fold_conv_bn: folds an eval-mode aten::batch_norm into the convolution that feeds it, as
// PyTorch's FoldFrozenConvBatchnorm (torch/csrc/jit/passes/frozen_conv_folding.cpp) does for
// frozen graphs. The convolution (aten::conv1d/2d/3d, or aten::_convolution that is not
// transposed) gets a new constant weight w * s and bias (b - mean) * rsqrt(var + eps) * gamma
// + beta, with s = gamma * rsqrt(var + eps) per output channel, computed in the weight's
// float type and stored in the weight's and bias's dtypes; the batch_norm's uses move to the
// convolution, whose source location stays; the new constants take the conv's location and
// are named `<weight>_fused_bn` / `<bias>_fused_bn`. It leaves alone: convolutions whose
// output has another use, nodes with a non-constant parameter (anything but the input),
// batch_norm in training mode (train not the constant false) or without running stats,
// weights that are not float32/float64, and sizes that do not match. Runs
// eliminate_dead_code afterwards (the old weights become dead).
//
//   %c : Tensor = aten::conv2d(%x, %w, %b, %s, %p, %d, %g)        %c : Tensor = aten::conv2d(
//   %y : Tensor = aten::batch_norm(%c, %gamma, %beta, %mean,  ==>      %x, %w_fused_bn,
//                     %var, %false, %momentum, %eps, %cudnn)           %b_fused_bn, %s, %p, %d, %g)
//   return (%y)                                                   return (%c)
#include "passes/fold_utils.h"
#include "passes/passes.h"

namespace torchless::passes {

const char* const kFoldConvBnDescription =
    "Folds an eval-mode aten::batch_norm with constant parameters into the preceding "
    "aten::conv1d/2d/3d or non-transposed aten::_convolution with constant weight and bias "
    "(new weight and bias constants), as PyTorch's FoldFrozenConvBatchnorm. Leaves convs "
    "whose output has other uses, non-constant parameters, training-mode batch_norm, "
    "non-float weights.";

bool foldConvBn(Graph& graph) {
  static const fold::BatchNormFoldTarget conv{
      .accepts = fold::isConv, .weightDim = 0, .linearOrder = false};
  return fold::foldNodes(graph, [](Node* n) {
    return n->kind() == Symbol::aten("batch_norm") && fold::foldBatchNormInto(n, conv);
  });
}

}  // namespace torchless::passes
