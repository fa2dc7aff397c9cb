// fold_conv_add_mul: folds a constant add/sub (into the bias) or mul/div (into weight and
// bias) applied to a convolution's output into the convolution, as PyTorch's
// FoldFrozenConvAddOrSub and FoldFrozenConvMulOrDiv (torch/csrc/jit/passes/
// frozen_conv_folding.cpp). The node must be aten::add/sub (Tensor or Scalar overload, with
// constant alpha) or aten::mul/div (Tensor or Scalar overload, no rounding mode) whose first
// input is the output of aten::conv1d/2d/3d or non-transposed aten::_convolution with
// constant parameters, and whose other operand is an int/float constant or a constant
// tensor that is one element or has the output-channel count at dim 1 and ones elsewhere
// (so it cannot broadcast the conv output to another shape). New bias = b + alpha * t
// (b - alpha * t), new weight / bias = w * t, b * t (w / t, b / t), per output channel, in
// the weight's dtype; a missing bias is zeros for add/sub and stays None for mul/div. Uses
// move to the conv (its location stays; new constants take it). It leaves alone: convs with
// other uses of their output, non-float weights, tensors of another floating dtype than the
// weight with more than 0 dims (eager PyTorch would promote the result), bool and complex
// operands, and an add/mul in another block than the conv (a loop's body, where it makes a
// fresh tensor each trip; PyTorch's pass does not check this). Runs eliminate_dead_code
// afterwards.
//
//   %c : Tensor = aten::conv2d(%x, %w, %b, ...)          %c : Tensor = aten::conv2d(%x, %w,
//   %y : Tensor = aten::add(%c, %three, %one)    ==>          %b_fused_add, ...)
//   return (%y)                                           return (%c)
#include "passes/fold_utils.h"
#include "passes/node_facts.h"
#include "passes/passes.h"

#include <algorithm>

namespace torchless::passes {

const char* const kFoldConvAddMulDescription =
    "Folds aten::add/sub/mul/div of a convolution's output by a constant (scalar, or a "
    "tensor broadcasting only along the output channels) into the convolution's constant "
    "weight and bias, as PyTorch's FoldFrozenConvAddOrSub and FoldFrozenConvMulOrDiv. Leaves "
    "convs whose output has other uses, non-float weights, operands that would change the "
    "result's dtype or shape.";

namespace {

enum class Op { Add, Sub, Mul, Div };

std::optional<Op> opOf(const Node* n) {
  if (n->outputs().size() != 1) return std::nullopt;
  if (n->kind() == aten::add && n->inputs().size() == 3) return Op::Add;
  if (n->kind() == Symbol::aten("sub") && n->inputs().size() == 3) return Op::Sub;
  if (n->kind() == aten::mul && n->inputs().size() == 2) return Op::Mul;
  if (n->kind() == Symbol::aten("div") && n->inputs().size() == 2) return Op::Div;
  return std::nullopt;
}

/// The per-output-channel operand as float64 values (length `channels`), or nullopt.
std::optional<std::vector<double>> channelOperand(const Value* v, const Tensor& weight) {
  const int64_t channels = weight.size(0);
  std::optional<Tensor> t = fold::foldOperand(v, weight);
  if (!t) return std::nullopt;
  // PyTorch's opDoesNotBroadCastWithConv.
  if (t->dim() > weight.dim()) return std::nullopt;
  for (int64_t i = t->dim() - 1; i >= 0; --i) {
    // The channel-sized dim must line up with the output's dim 1: same rank as the weight.
    if (i == 1 && t->size(i) == channels && t->dim() == weight.dim()) continue;
    if (t->size(i) != 1) return std::nullopt;
  }
  return fold::valuesPerChannel(*t, channels);
}

template <typename T>
Tensor apply(const Tensor& base, int64_t channels, const std::vector<double>& k, Op op,
             double alpha) {
  Tensor src = base.contiguous();
  Tensor out = Tensor::empty(base.sizes(), base.dtype());
  const int64_t inner = channels ? base.numel() / channels : 0;
  const T* in = src.data<T>();
  T* o = out.data<T>();
  const T a = static_cast<T>(alpha);
  for (int64_t c = 0; c < channels; ++c) {
    const T kc = static_cast<T>(k[c]);
    for (int64_t j = 0; j < inner; ++j) {
      const T x = in[c * inner + j];
      switch (op) {
        case Op::Add: o[c * inner + j] = x + a * kc; break;
        case Op::Sub: o[c * inner + j] = x - a * kc; break;
        case Op::Mul: o[c * inner + j] = x * kc; break;
        case Op::Div: o[c * inner + j] = x / kc; break;
      }
    }
  }
  return out;
}

Tensor applyTo(const Tensor& base, int64_t channels, const std::vector<double>& k, Op op,
               double alpha) {
  return base.dtype() == ScalarType::Double ? apply<double>(base, channels, k, op, alpha)
                                            : apply<float>(base, channels, k, op, alpha);
}

std::string fusedName(const Value* v, Op op) {
  static const char* names[] = {"_fused_add", "_fused_sub", "_fused_mul", "_fused_div"};
  return v->hasDebugName() ? v->debugName() + names[static_cast<int>(op)] : std::string();
}

bool foldOne(Node* n) {
  std::optional<Op> op = opOf(n);
  if (!op) return false;
  Node* conv = n->input(0)->node();
  if (!fold::isConv(conv) || n->input(0) == n->input(1)) return false;
  if (fold::nonConstantParameters(conv) || fold::nonConstantParameters(n)) return false;
  if (conv->output()->uses().size() != 1) return false;
  if (conv->owningBlock() != n->owningBlock()) return false;  // as fold_linear_mul: a loop's body
  std::optional<Tensor> w = fold::constantTensor(conv->input(1));
  if (!w || !fold::isFoldableFloat(*w) || w->dim() < 1) return false;
  std::optional<Tensor> b = fold::constantTensor(conv->input(2));
  if (!b && !fold::isNone(conv->input(2))) return false;
  if (b && (!fold::isFoldableFloat(*b) || b->numel() != w->size(0))) return false;
  double alpha = 1;
  if (*op == Op::Add || *op == Op::Sub) {
    std::optional<IValue> a = toIValue(n->input(2));
    if (!a || !(a->isInt() || a->isDouble())) return false;
    alpha = a->toScalarDouble();
  }
  std::optional<std::vector<double>> k = channelOperand(n->input(1), *w);
  if (!k) return false;
  const int64_t channels = w->size(0);
  Graph& g = *n->owningGraph();
  if (*op == Op::Add || *op == Op::Sub) {
    Tensor bias = b ? *b : Tensor::empty({channels}, w->dtype());
    if (!b) std::fill_n(static_cast<char*>(bias.rawData()), bias.nbytes(), 0);
    Tensor nb = applyTo(bias, channels, *k, *op, alpha);
    conv->replaceInput(2, fold::insertTensorConstant(g, conv, nb, fusedName(conv->input(2), *op)));
  } else {
    Tensor nw = applyTo(*w, channels, *k, *op, 1);
    Value* oldB = conv->input(2);
    conv->replaceInput(1, fold::insertTensorConstant(g, conv, nw, fusedName(conv->input(1), *op)));
    if (b) {
      Tensor nb = applyTo(*b, channels, *k, *op, 1);
      conv->replaceInput(2, fold::insertTensorConstant(g, conv, nb, fusedName(oldB, *op)));
    }
  }
  n->output()->replaceAllUsesWith(conv->output());
  n->destroy();
  return true;
}

}  // namespace

bool foldConvAddMul(Graph& graph) { return fold::foldNodes(graph, foldOne); }

}  // namespace torchless::passes
