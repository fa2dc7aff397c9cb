// Shared pieces of the frozen-graph folds (fold_utils.h).
#include "passes/fold_utils.h"

#include "ir/walk.h"
#include "passes/node_facts.h"
#include "passes/passes.h"

#include <cmath>

namespace torchless::passes::fold {

bool isConv(const Node* n) {
  if (n->outputs().size() != 1) return false;
  if (n->kind() == Symbol::aten("conv1d") || n->kind() == Symbol::aten("conv2d") ||
      n->kind() == Symbol::aten("conv3d"))
    return n->inputs().size() == 7;
  if (n->kind() == Symbol::aten("_convolution") && n->inputs().size() >= 9) {
    std::optional<bool> transposed = constantBool(n->input(6));
    return transposed && !*transposed;
  }
  return false;
}

bool nonConstantParameters(const Node* n) {
  auto constant = [](const Value* v) {
    const Node* d = v->node();
    if (d->kind() == prim::Constant) return true;
    // A list of constants (stride, padding) that constant propagation left as a
    // ListConstruct because the graph mutates something: its values are known all the same.
    if (d->kind() != prim::ListConstruct) return false;
    for (const Value* e : d->inputs())
      if (e->node()->kind() != prim::Constant) return false;
    return true;
  };
  for (size_t i = 1; i < n->inputs().size(); ++i)
    if (!constant(n->input(i))) return true;
  return false;
}

std::optional<Tensor> constantTensor(const Value* v) {
  if (v->node()->kind() != prim::Constant) return std::nullopt;
  std::optional<IValue> iv = toIValue(v);
  if (!iv || !iv->isTensor() || !iv->toTensor().defined()) return std::nullopt;
  return iv->toTensor();
}

bool isNone(const Value* v) { return mustBeNone(v); }

bool isFoldableFloat(const Tensor& t) {
  return t.defined() && !t.isQuantized() &&
         (t.dtype() == ScalarType::Float || t.dtype() == ScalarType::Double);
}

Tensor asDouble(const Tensor& t) { return t.to(ScalarType::Double).contiguous(); }

Value* insertTensorConstant(Graph& g, Node* before, const Tensor& t, const std::string& name) {
  WithInsertPoint guard(before);
  Value* c = g.insertConstant(IValue(t), before->sourceRange(), before->scope());
  if (!name.empty() && Value::isValidName(name)) c->setDebugName(name);
  return c;
}

std::optional<Tensor> foldOperand(const Value* v, const Tensor& weight) {
  std::optional<IValue> iv = toIValue(v);
  if (!iv) return std::nullopt;
  if (iv->isInt() || iv->isDouble()) return Tensor::scalar(iv->toScalarDouble());
  if (!iv->isTensor() || !iv->toTensor().defined()) return std::nullopt;
  const Tensor& t = iv->toTensor();
  if (t.isQuantized() || t.dtype() == ScalarType::Bool || isComplexType(t.dtype()))
    return std::nullopt;
  // A float tensor of another dtype promotes the output; integer tensors do not (eager: a float
  // output stays float), and PyTorch's pass refuses those whose promotion with the weight is
  // not the weight's dtype; float-vs-int promotes to float: fine.
  if (t.dim() > 0 && t.dtype() != weight.dtype() && isFloatingType(t.dtype())) return std::nullopt;
  return t;
}

std::vector<double> valuesPerChannel(const Tensor& t, int64_t n) {
  Tensor d = asDouble(t);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c)
    out[static_cast<size_t>(c)] = d.data<double>()[t.numel() == 1 ? 0 : c];
  return out;
}

int64_t innerSize(const Tensor& t) {
  int64_t inner = 1;
  for (int64_t d = 1; d < t.dim(); ++d) inner *= t.size(d);
  return inner;
}

namespace {

template <typename T>
ScalarType dtypeOf();
template <>
ScalarType dtypeOf<float>() {
  return ScalarType::Float;
}
template <>
ScalarType dtypeOf<double>() {
  return ScalarType::Double;
}

/// `t` as a contiguous tensor of `dt`: `t` itself when it already is one (Tensor::to always
/// copies; the weights of a large model were copied twice per folded conv).
Tensor contiguousAs(const Tensor& t, ScalarType dt) {
  return t.dtype() == dt ? t.contiguous() : t.to(dt).contiguous();
}

template <typename T>
FoldedWeights compute(const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv,
                      double eps, const Tensor& bnW, const Tensor& bnB, bool linearOrder,
                      ScalarType biasType) {
  const ScalarType dt = dtypeOf<T>();
  Tensor wc = contiguousAs(w, dt), bc = contiguousAs(b, dt), rmc = contiguousAs(rm, dt),
         rvc = contiguousAs(rv, dt), bwc = contiguousAs(bnW, dt), bbc = contiguousAs(bnB, dt);
  const int64_t channels = w.size(0), inner = innerSize(w);
  Tensor nw = Tensor::empty(w.sizes(), dt), nb = Tensor::empty({channels}, dt);
  const T* pw = wc.data<T>();
  const T *pb = bc.data<T>(), *prm = rmc.data<T>(), *prv = rvc.data<T>(), *pbw = bwc.data<T>(),
          *pbb = bbc.data<T>();
  T* ow = nw.data<T>();
  T* ob = nb.data<T>();
  const T e = static_cast<T>(eps);
  for (int64_t c = 0; c < channels; ++c) {
    const T rsq = T(1) / std::sqrt(prv[c] + e);
    const T scale = pbw[c] * rsq;
    for (int64_t k = 0; k < inner; ++k) ow[c * inner + k] = pw[c * inner + k] * scale;
    ob[c] =
        linearOrder ? (pb[c] - prm[c]) * scale + pbb[c] : (pb[c] - prm[c]) * rsq * pbw[c] + pbb[c];
  }
  return {nw.dtype() == w.dtype() ? nw : nw.to(w.dtype()),
          nb.dtype() == biasType ? nb : nb.to(biasType)};
}

}  // namespace

std::optional<FoldedWeights> foldBatchNorm(const Tensor& w, const std::optional<Tensor>& b,
                                           const Tensor& rm, const Tensor& rv, double eps,
                                           const std::optional<Tensor>& bnW,
                                           const std::optional<Tensor>& bnB, bool linearOrder) {
  if (!isFoldableFloat(w) || !isFoldableFloat(rm) || !isFoldableFloat(rv)) return std::nullopt;
  if (w.dim() < 1) return std::nullopt;
  const int64_t channels = w.size(0);
  auto fits = [&](const std::optional<Tensor>& t) {
    return !t || (isFoldableFloat(*t) && t->dim() == 1 && t->numel() == channels);
  };
  if (!fits(rm) || !fits(rv) || !fits(b) || !fits(bnW) || !fits(bnB)) return std::nullopt;
  bool dbl = w.dtype() == ScalarType::Double || rm.dtype() == ScalarType::Double ||
             rv.dtype() == ScalarType::Double || (bnW && bnW->dtype() == ScalarType::Double) ||
             (bnB && bnB->dtype() == ScalarType::Double) || (b && b->dtype() == ScalarType::Double);
  // Defaults as PyTorch: bias zeros_like(running_mean), bn weight ones, bn bias zeros.
  auto filled = [&](double v) {
    Tensor t = Tensor::empty({channels}, ScalarType::Double);
    for (int64_t i = 0; i < channels; ++i) t.data<double>()[i] = v;
    return t.to(rm.dtype());
  };
  Tensor bias = b ? *b : filled(0.0);
  Tensor weightBn = bnW ? *bnW : filled(1.0);
  Tensor biasBn = bnB ? *bnB : filled(0.0);
  ScalarType biasType = bias.dtype();
  if (dbl) return compute<double>(w, bias, rm, rv, eps, weightBn, biasBn, linearOrder, biasType);
  return compute<float>(w, bias, rm, rv, eps, weightBn, biasBn, linearOrder, biasType);
}

void replaceWithFolded(Node* op, Node* bn, const FoldedWeights& f) {
  Graph& g = *bn->owningGraph();
  auto name = [](const Value* v) {
    return v->hasDebugName() ? v->debugName() + "_fused_bn" : std::string();
  };
  Value* nw = insertTensorConstant(g, op, f.weight, name(op->input(1)));
  Value* nb = insertTensorConstant(g, op, f.bias, name(op->input(2)));
  op->replaceInput(1, nw);
  op->replaceInput(2, nb);
  bn->output()->replaceAllUsesWith(op->output());
  bn->destroy();
}

bool foldNodes(Graph& graph, const std::function<bool(Node*)>& fold) {
  const bool changed = visitNodes(graph, fold);
  if (changed) eliminateDeadCode(graph);
  return changed;
}

namespace {
std::optional<Tensor> optionalTensor(const Value* v, bool& ok) {
  if (isNone(v)) return std::nullopt;
  std::optional<Tensor> t = constantTensor(v);
  if (!t) ok = false;
  return t;
}
}  // namespace

bool foldBatchNormInto(Node* bn, const BatchNormFoldTarget& target) {
  Node* op = bn->input(0)->node();
  if (!target.accepts(op) || bn->inputs().size() != 9) return false;
  if (nonConstantParameters(op) || nonConstantParameters(bn)) return false;
  if (op->output()->uses().size() != 1) return false;
  // A batch_norm in a loop's body makes a fresh tensor each trip: the convolution's output,
  // computed once outside, must not take its place (the loop may write it in place).
  if (op->owningBlock() != bn->owningBlock()) return false;
  std::optional<bool> training = constantBool(bn->input(5));
  if (!training || *training) return false;
  std::optional<IValue> eps = toIValue(bn->input(7));
  if (!eps || !(eps->isDouble() || eps->isInt())) return false;
  bool ok = true;
  std::optional<Tensor> w = constantTensor(op->input(1));
  std::optional<Tensor> b = optionalTensor(op->input(2), ok);
  std::optional<Tensor> gamma = optionalTensor(bn->input(1), ok);
  std::optional<Tensor> beta = optionalTensor(bn->input(2), ok);
  std::optional<Tensor> mean = constantTensor(bn->input(3));
  std::optional<Tensor> var = constantTensor(bn->input(4));
  if (!ok || !w || !mean || !var) return false;
  if (target.weightDim && w->dim() != target.weightDim) return false;
  std::optional<FoldedWeights> f =
      foldBatchNorm(*w, b, *mean, *var, eps->toScalarDouble(), gamma, beta, target.linearOrder);
  if (!f) return false;
  replaceWithFolded(op, bn, *f);
  return true;
}

}  // namespace torchless::passes::fold
