// fold_linear_mul: folds a constant mul/div applied to a linear's output features into the
// linear's weight and bias: the layer scale of ConvNeXt, CaiT and DeiT III blocks
// (`gamma * mlp(x)`), which otherwise costs a pass over the activations per block. PyTorch
// has no such frozen fold (its FoldFrozenConvMulOrDiv, torch/csrc/jit/passes/
// frozen_conv_folding.cpp, is the convolution's); this is its linear counterpart, with the
// same conditions, run by optimize_for_inference (api/freeze.cpp), not by plain freezing.
//
// The node must be aten::mul (Tensor or Scalar overload; either operand may be the linear's
// path, mul commutes) or aten::div (no rounding mode; the linear's path divided). The path is
// the output of aten::linear(x, w, b) with a constant 2-D float weight [out, in] and a
// constant bias or None, either directly or through one aten::permute with constant dims.
// Factors that are not finite (or zero divisors) in the weight's dtype, products that overflow,
// and a mul in another block than the linear (a loop's body) are left to run.
// The other operand is an int/float constant or a constant tensor of the weight's dtype (or
// with 0 dims) that has `out` elements along the dim that lines up with the linear's last
// dim (after the permute, if any) and ones elsewhere, and no more dims than the path's value
// has (so it cannot broadcast the result to another shape). New weight / bias = w * k, b * k
// (w / k, b / k) per output feature, in the weight's dtype; a missing bias stays None. The
// linear's output and the permute's must have no other use. The mul's uses move to the path
// (the permute, or the linear), so the result is the permuted view PyTorch's mul would have
// copied: the same values, possibly other strides. Runs eliminate_dead_code afterwards.
//
//   %l : Tensor = aten::linear(%x, %w, %b)             %l : Tensor = aten::linear(%x,
//   %p : Tensor = aten::permute(%l, %dims)     ==>          %w_fused_mul, %b_fused_mul)
//   %y : Tensor = aten::mul(%gamma, %p)                %p : Tensor = aten::permute(%l, %dims)
//   return (%y)                                        return (%p)
#include "passes/fold_utils.h"
#include "passes/node_facts.h"
#include "passes/passes.h"

#include <cmath>

namespace torchless::passes {

const char* const kFoldLinearMulDescription =
    "Folds aten::mul/div of a linear's output (directly or through one aten::permute) by a "
    "constant broadcasting only along the output features into the linear's constant weight "
    "and bias (the layer scale of ConvNeXt and CaiT blocks; the linear counterpart of "
    "PyTorch's FoldFrozenConvMulOrDiv). Leaves linears or permutes whose output has other "
    "uses, non-float weights, operands that would change the result's dtype or shape.";

namespace {

/// The ints of a constant int[] or of a prim::ListConstruct of int constants.
std::optional<std::vector<int64_t>> constantInts(const Value* v) {
  const Node* d = v->node();
  if (d->kind() == prim::Constant) {
    std::optional<IValue> iv = toIValue(v);
    if (!iv || !iv->isList()) return std::nullopt;
    std::vector<int64_t> out;
    for (const IValue& e : iv->toList()->list) {
      if (!e.isInt()) return std::nullopt;
      out.push_back(e.toInt());
    }
    return out;
  }
  if (d->kind() != prim::ListConstruct) return std::nullopt;
  std::vector<int64_t> out;
  for (const Value* e : d->inputs()) {
    std::optional<int64_t> i = constantInt(e);
    if (!i) return std::nullopt;
    out.push_back(*i);
  }
  return out;
}

struct Path {
  Node* linear = nullptr;
  Node* permute = nullptr;  // may be null
  /// The rank of the mul's operand (the permute's dims), or -1 when unknown.
  int64_t rank = -1;
  /// Where the linear's last dim is in the operand, counted from the right (0: last).
  int64_t featuresFromRight = 0;
};

std::optional<Path> pathOf(Value* v) {
  Path p;
  Node* n = v->node();
  if (n->kind() == Symbol::aten("permute") && n->inputs().size() == 2 && n->outputs().size() == 1) {
    std::optional<std::vector<int64_t>> dims = constantInts(n->input(1));
    if (!dims || dims->empty()) return std::nullopt;
    const int64_t r = static_cast<int64_t>(dims->size());
    if (v->uses().size() != 1) return std::nullopt;
    p.permute = n;
    p.rank = r;
    int64_t at = -1;  // the operand's dim that holds the linear's last dim
    for (int64_t i = 0; i < r; ++i) {
      const int64_t d = (*dims)[i] < 0 ? (*dims)[i] + r : (*dims)[i];
      if (d == r - 1) at = i;
    }
    if (at < 0) return std::nullopt;
    p.featuresFromRight = r - 1 - at;
    n = n->input(0)->node();
  }
  if (n->kind() != Symbol::aten("linear") || n->inputs().size() != 3 || n->outputs().size() != 1)
    return std::nullopt;
  if (n->output()->uses().size() != 1) return std::nullopt;
  if (fold::nonConstantParameters(n)) return std::nullopt;
  p.linear = n;  // without a permute the rank is unknown (types are not checked at run time)
  return p;
}

/// The per-feature operand as float64 values (length `features`), or nullopt.
std::optional<std::vector<double>> featureOperand(const Value* v, const Tensor& weight,
                                                  const Path& p) {
  const int64_t features = weight.size(0);
  if (v->node()->kind() != prim::Constant) return std::nullopt;
  std::optional<Tensor> t = fold::foldOperand(v, weight);
  if (!t) return std::nullopt;
  if (t->dim() > 1 && (p.rank < 0 || t->dim() > p.rank)) return std::nullopt;  // no new dims
  for (int64_t i = 0; i < t->dim(); ++i) {
    const int64_t fromRight = t->dim() - 1 - i;
    if (fromRight == p.featuresFromRight && t->size(i) == features) continue;
    if (t->size(i) != 1) return std::nullopt;
  }
  return fold::valuesPerChannel(*t, features);
}

// The rows of `base` times (or over) k, computed in base's dtype; nullopt when a factor is not
// finite or (dividing) zero in that dtype, or when a product overflows: eager's result could be
// finite (or another non-finite value) where the folded one would not.
template <typename T>
std::optional<Tensor> scaleRows(const Tensor& base, const std::vector<double>& k, bool divide) {
  Tensor src = base.contiguous();
  Tensor out = Tensor::empty(base.sizes(), base.dtype());
  const int64_t rows = static_cast<int64_t>(k.size());
  const int64_t inner = rows ? base.numel() / rows : 0;
  const T* in = src.data<T>();
  T* o = out.data<T>();
  for (int64_t r = 0; r < rows; ++r) {
    const T kr = static_cast<T>(k[r]);
    if (!std::isfinite(kr) || (divide && kr == 0)) return std::nullopt;
    for (int64_t j = 0; j < inner; ++j) {
      const T x = in[r * inner + j];
      o[r * inner + j] = divide ? x / kr : x * kr;
      if (std::isfinite(x) && !std::isfinite(o[r * inner + j])) return std::nullopt;
    }
  }
  return out;
}

std::optional<Tensor> scaled(const Tensor& base, const std::vector<double>& k, bool divide) {
  return base.dtype() == ScalarType::Double ? scaleRows<double>(base, k, divide)
                                            : scaleRows<float>(base, k, divide);
}

std::string fusedName(const Value* v, bool divide) {
  return v->hasDebugName() ? v->debugName() + (divide ? "_fused_div" : "_fused_mul")
                           : std::string();
}

bool foldOne(Node* n) {
  const bool mul = n->kind() == aten::mul, div = n->kind() == Symbol::aten("div");
  if ((!mul && !div) || n->inputs().size() != 2 || n->outputs().size() != 1) return false;
  if (n->input(0) == n->input(1)) return false;
  // The operand on the linear's path, and the constant.
  size_t pathAt = 0;
  std::optional<Path> p = pathOf(n->input(0));
  if (!p && mul) {
    p = pathOf(n->input(1));
    pathAt = 1;
  }
  if (!p) return false;
  Node* linear = p->linear;
  // In one block: a mul inside a loop makes a fresh tensor each trip, which the loop may then
  // write in place; the linear's output, computed once outside, must not take its place.
  if (linear->owningBlock() != n->owningBlock() ||
      (p->permute && p->permute->owningBlock() != n->owningBlock()))
    return false;
  std::optional<Tensor> w = fold::constantTensor(linear->input(1));
  if (!w || !fold::isFoldableFloat(*w) || w->dim() != 2) return false;
  std::optional<Tensor> b = fold::constantTensor(linear->input(2));
  if (!b && !fold::isNone(linear->input(2))) return false;
  if (b && (!fold::isFoldableFloat(*b) || b->dim() != 1 || b->numel() != w->size(0))) return false;
  std::optional<std::vector<double>> k = featureOperand(n->input(1 - pathAt), *w, *p);
  if (!k) return false;
  std::optional<Tensor> nw = scaled(*w, *k, div), nb;
  if (!nw) return false;
  if (b && !(nb = scaled(*b, *k, div))) return false;
  Graph& g = *n->owningGraph();
  Value* oldB = linear->input(2);
  linear->replaceInput(
      1, fold::insertTensorConstant(g, linear, *nw, fusedName(linear->input(1), div)));
  if (b) linear->replaceInput(2, fold::insertTensorConstant(g, linear, *nb, fusedName(oldB, div)));
  n->output()->replaceAllUsesWith(n->input(pathAt));
  n->destroy();
  return true;
}

}  // namespace

bool foldLinearMul(Graph& graph) { return fold::foldNodes(graph, foldOne); }

}  // namespace torchless::passes
