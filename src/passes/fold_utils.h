#pragma once
// Shared pieces of the frozen-graph folds (fold_conv_bn.cpp, fold_conv_add_mul.cpp,
// fold_linear_bn.cpp), after PyTorch's frozen_conv_folding.cpp / frozen_linear_folding.cpp:
// which nodes are convolutions, the "every parameter is a constant" test, and reading
// constants. The arithmetic is done in the weight's floating dtype (float or double), in the
// order PyTorch's formulas use, so folded weights equal PyTorch's to rounding.
#include "ir/ir.h"

#include <functional>
#include <optional>
#include <vector>

namespace torchless::passes::fold {

/// aten::conv1d / conv2d / conv3d, or aten::_convolution whose `transposed` is the constant
/// false (PyTorch's supportedConvNode).
bool isConv(const Node* n);
/// PyTorch's nonConstantParameters: some input other than the first is not a prim::Constant
/// (a prim::ListConstruct of constants counts as constant: without alias analysis our
/// constant propagation keeps those when the graph has in-place ops).
bool nonConstantParameters(const Node* n);
/// The tensor held by a prim::Constant, or nullopt (None, other values, not a constant).
std::optional<Tensor> constantTensor(const Value* v);
/// The value is None (a None constant or NoneType).
bool isNone(const Value* v);
/// A float32 or float64 tensor (the dtypes the folds compute in).
bool isFoldableFloat(const Tensor& t);
/// The contiguous float64 copy of `t` (any real dtype), for reading values.
Tensor asDouble(const Tensor& t);
/// Inserts `t` as a constant before `before`, with `before`'s source range and scope, named
/// `name` when that is a valid value name.
Value* insertTensorConstant(Graph& g, Node* before, const Tensor& t, const std::string& name);

/// The folded weight and bias of a conv or linear followed by an eval-mode batch_norm:
///   s = bn_w * rsqrt(bn_rv + eps);  w' = w * s (per output channel, dim 0);
///   b' = (b - bn_rm) * rsqrt(bn_rv + eps) * bn_w + bn_b
/// (PyTorch's computeUpdatedConvWeightAndBias; linear's fused_b = (b - rm) * s + bb differs
/// only in rounding order, selected by `linearOrder`). Computed in the promoted float type
/// of w and the bn tensors, returned in w's / b's dtypes. Missing bias / bn weight / bn bias
/// are zeros / ones / zeros. Returns nullopt when dtypes or sizes do not fit.
struct FoldedWeights {
  Tensor weight, bias;
};
std::optional<FoldedWeights> foldBatchNorm(const Tensor& w, const std::optional<Tensor>& b,
                                           const Tensor& rm, const Tensor& rv, double eps,
                                           const std::optional<Tensor>& bnW,
                                           const std::optional<Tensor>& bnB, bool linearOrder);

/// Makes `op` (a conv or linear whose output feeds `bn` only) use `f`'s weight and bias as new
/// constants named after the old ones + "_fused_bn", gives `bn`'s uses to `op` and destroys `bn`.
void replaceWithFolded(Node* op, Node* bn, const FoldedWeights& f);

/// What differs between folding a batch_norm into a convolution (fold_conv_bn) and into a
/// linear (fold_linear_bn): the one parameterised fold below.
struct BatchNormFoldTarget {
  /// Accepts the node that feeds the batch_norm (its kind, arity, input rank).
  std::function<bool(const Node*)> accepts;
  /// The rank the constant weight must have; 0 for any.
  int64_t weightDim = 0;
  /// foldBatchNorm's linearOrder.
  bool linearOrder = false;
};

/// Folds `bn`, an aten::batch_norm, into the node `op` feeding it when `target` accepts `op`,
/// both are in one block, `op`'s output has no other use, every parameter of both is a constant, bn
/// is in eval mode (train the constant false) with running stats and a number eps, and
/// foldBatchNorm fits the tensors; then replaceWithFolded. Returns whether it folded.
bool foldBatchNormInto(Node* bn, const BatchNormFoldTarget& target);

/// Calls `fold(n)` on every node of `graph`, blocks nested in a node before the node itself
/// (`fold` may destroy the node it is given, nothing else), then eliminates dead code when a
/// fold changed something. Returns whether anything changed. The walk of every fold pass.
bool foldNodes(Graph& graph, const std::function<bool(Node*)>& fold);

/// The constant operand of a fold by add/sub/mul/div (PyTorch's FoldFrozenConv*MulOrDiv rules):
/// an int or float number (as a 0-dim double tensor), or a defined tensor that is not quantized,
/// bool or complex and, when it has dims, not a floating tensor of another dtype than `weight`
/// (eager PyTorch would promote the result). nullopt otherwise. Its shape is the caller's check.
std::optional<Tensor> foldOperand(const Value* v, const Tensor& weight);
/// `t`'s values (one, or `n`) as `n` doubles, the one value repeated.
std::vector<double> valuesPerChannel(const Tensor& t, int64_t n);

/// The product of the sizes after dim 0 (elements per output channel of a weight).
int64_t innerSize(const Tensor& t);

}  // namespace torchless::passes::fold
