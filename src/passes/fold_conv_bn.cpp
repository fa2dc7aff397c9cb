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
#include "passes/node_facts.h"
#include "passes/passes.h"

namespace torchless::passes {

const char* const kFoldConvBnDescription =
    "Folds an eval-mode aten::batch_norm with constant parameters into the preceding "
    "aten::conv1d/2d/3d or non-transposed aten::_convolution with constant weight and bias "
    "(new weight and bias constants), as PyTorch's FoldFrozenConvBatchnorm. Leaves convs "
    "whose output has other uses, non-constant parameters, training-mode batch_norm, "
    "non-float weights.";

namespace {

std::optional<Tensor> optionalTensor(const Value* v, bool& ok) {
  if (fold::isNone(v)) return std::nullopt;
  std::optional<Tensor> t = fold::constantTensor(v);
  if (!t) ok = false;
  return t;
}

bool foldOne(Node* bn) {
  Node* conv = bn->input(0)->node();
  if (!fold::isConv(conv) || bn->inputs().size() != 9) return false;
  if (fold::nonConstantParameters(conv) || fold::nonConstantParameters(bn)) return false;
  if (conv->output()->uses().size() != 1) return false;
  std::optional<bool> training = constantBool(bn->input(5));
  if (!training || *training) return false;
  std::optional<IValue> eps = toIValue(bn->input(7));
  if (!eps || !(eps->isDouble() || eps->isInt())) return false;
  bool ok = true;
  std::optional<Tensor> w = fold::constantTensor(conv->input(1));
  std::optional<Tensor> b = optionalTensor(conv->input(2), ok);
  std::optional<Tensor> gamma = optionalTensor(bn->input(1), ok);
  std::optional<Tensor> beta = optionalTensor(bn->input(2), ok);
  std::optional<Tensor> mean = fold::constantTensor(bn->input(3));
  std::optional<Tensor> var = fold::constantTensor(bn->input(4));
  if (!ok || !w || !mean || !var) return false;
  std::optional<fold::FoldedWeights> f = fold::foldBatchNorm(
      *w, b, *mean, *var, eps->toScalarDouble(), gamma, beta, /*linearOrder=*/false);
  if (!f) return false;
  fold::replaceWithFolded(conv, bn, *f);
  return true;
}

}  // namespace

bool foldConvBn(Graph& graph) {
  return fold::foldNodes(graph, [](Node* n) {
    return n->kind() == Symbol::aten("batch_norm") && foldOne(n);
  });
}

}  // namespace torchless::passes
