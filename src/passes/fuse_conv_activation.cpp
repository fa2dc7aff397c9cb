// fuse_conv_activation: rewrites a convolution (aten::conv1d/2d/3d with integer padding,
// aten::convolution and aten::_convolution that are not transposed), optionally followed by
// an aten::add / add_ of a residual tensor (alpha 1) and then optionally by one activation
// (relu, relu_, relu6, hardtanh, hardtanh_, clamp, clamp_ with constant number bounds,
// sigmoid, silu, hardswish and their in-place forms, gelu) into one torchless::conv_fused
// node, which runs as a single oneDNN primitive with post-ops (ops::convolutionFused). Every
// intermediate value must have exactly one use, the next node of the chain, in the same block,
// so no other node can observe it; in-place activations and add_ on it then write only the
// value the fused node replaces. A convolution with nothing to fuse is rewritten too when its
// weight is a constant, so that oneDNN's reordered weights are cached: the node's
// constant_weight argument is true when the weight is a prim::Constant used only as the
// weight of convolutions (nothing can mutate it; Note [oneDNN convolution cache] in
// ops/conv.cpp).
//
//   %y = aten::_convolution(%x, %w, %b, ...)        %r = torchless::conv_fused(%x, %w, %b, %s,
//   %z = aten::add_(%y, %id, %one)           ==>         %p, %d, %g, %id, "clamp", 0., 6., True,
//   %r = aten::hardtanh_(%z, %zero, %six)                 False)
//
// The last argument (channels_last) is then set where only fused convolutions read the result
// (Note [Channels-last between fused convolutions]).
//
// Note [Execution rewrites]
// torchless:: operators are ours, not PyTorch's: they must never reach a saved archive or an
// ONNX export. So this pass is not in any pipeline that edits a module's graphs; it runs only
// on the copy of a graph that the interpreter compiles for execution
// (installExecutionRewrites() below, called when an archive is loaded, sets the runtime's
// execution-graph hook). TORCHLESS_JIT=0 in the environment turns it off, as it does the other
// execution-time optimizations.
#include "ir/ir.h"
#include "ir/walk.h"
#include "passes/pass_manager.h"
#include "passes/passes.h"
#include "runtime/interpreter.h"

#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace torchless::passes {

const char* const kFuseConvActivationDescription =
    "Rewrites convolution [+ add of a residual] [+ activation] chains whose intermediate values "
    "have no other use into torchless::conv_fused (one oneDNN primitive with post-ops), and "
    "marks constant convolution weights so their reordered form is cached. Execution only: "
    "never run it on graphs that are saved or exported.";

namespace {

const Symbol kConvFused = Symbol::fromQualString("torchless::conv_fused");

enum class ConvForm { None, ConvNd, Convolution, UnderscoreConvolution };

std::optional<IValue> constantOf(const Value* v) { return toIValue(v); }

std::optional<double> numberOf(const Value* v) {
  auto iv = constantOf(v);
  if (!iv) return std::nullopt;
  if (iv->isInt()) return static_cast<double>(iv->toInt());
  if (iv->isDouble()) return iv->toDouble();
  return std::nullopt;
}

ConvForm convForm(const Node* n) {
  const std::string k = n->kind().toQualString();
  if ((k == "aten::conv1d" || k == "aten::conv2d" || k == "aten::conv3d") &&
      n->inputs().size() == 7) {
    if (n->input(4)->type()->kind() == TypeKind::StringType)
      return ConvForm::None;  // 'same'/'valid'
    return ConvForm::ConvNd;
  }
  const bool conv = k == "aten::convolution" && n->inputs().size() == 9;
  const bool under =
      k == "aten::_convolution" && (n->inputs().size() == 12 || n->inputs().size() == 13);
  if (!conv && !under) return ConvForm::None;
  auto transposed = constantOf(n->input(6));
  if (!transposed || !transposed->isBool() || transposed->toBool()) return ConvForm::None;
  return conv ? ConvForm::Convolution : ConvForm::UnderscoreConvolution;
}

bool isConvWeightUse(const Use& u) {
  if (u.offset != 1) return false;
  return u.user->kind() == kConvFused || convForm(u.user) != ConvForm::None;
}

// A prim::Constant weight that only convolutions read (so nothing mutates or returns it).
bool constantWeight(const Value* w) {
  if (w->node()->kind() != prim::Constant) return false;
  for (const Use& u : w->uses())
    if (!isConvWeightUse(u)) return false;
  return true;
}

// The only user of v, when there is exactly one use and it is in v's block.
Node* soleUser(Value* v) {
  if (v->uses().size() != 1) return nullptr;
  Node* u = v->uses()[0].user;
  return u->owningBlock() == v->node()->owningBlock() ? u : nullptr;
}

struct Activation {
  std::string name = "none";
  double alpha = 0, beta = 0;
};

// The activation `n` applies to its input 0, when it is one we fuse.
std::optional<Activation> activationOf(const Node* n) {
  const std::string k = n->kind().toQualString();
  const size_t ni = n->inputs().size();
  auto named = [](const char* s) { return Activation{s, 0, 0}; };
  if ((k == "aten::relu" || k == "aten::relu_") && ni == 1) return named("relu");
  if ((k == "aten::sigmoid" || k == "aten::sigmoid_") && ni == 1) return named("sigmoid");
  if ((k == "aten::silu" || k == "aten::silu_") && ni == 1) return named("silu");
  if ((k == "aten::hardswish" || k == "aten::hardswish_") && ni == 1) return named("hardswish");
  if ((k == "aten::relu6" || k == "aten::relu6_") && ni == 1) return Activation{"clamp", 0, 6};
  if (k == "aten::gelu" && ni == 2) {
    auto a = constantOf(n->input(1));
    if (!a || !a->isString()) return std::nullopt;
    if (a->toStringRef() == "none") return named("gelu");
    if (a->toStringRef() == "tanh") return named("gelu_tanh");
    return std::nullopt;
  }
  if ((k == "aten::hardtanh" || k == "aten::hardtanh_") && ni == 3) {
    auto lo = numberOf(n->input(1)), hi = numberOf(n->input(2));
    if (!lo || !hi || !(*lo <= *hi)) return std::nullopt;  // NaN bounds fail too
    return Activation{"clamp", *lo, *hi};
  }
  if ((k == "aten::clamp" || k == "aten::clamp_") && ni == 3) {
    const Value* lo = n->input(1);
    const Value* hi = n->input(2);
    if (lo->type()->kind() == TypeKind::TensorType || hi->type()->kind() == TypeKind::TensorType)
      return std::nullopt;
    auto lv = constantOf(lo), hv = constantOf(hi);
    if (!lv || !hv || (lv->isNone() && hv->isNone())) return std::nullopt;
    const double inf = std::numeric_limits<double>::infinity();
    std::optional<double> l = lv->isNone() ? std::optional<double>(-inf) : numberOf(lo);
    std::optional<double> h = hv->isNone() ? std::optional<double>(inf) : numberOf(hi);
    if (!l || !h || !(*l <= *h)) return std::nullopt;
    return Activation{"clamp", *l, *h};
  }
  return std::nullopt;
}

// add(v, other, 1) / add_(v, other, 1) / add(other, v, 1): the residual operand, or null.
Value* residualOf(Node* add, const Value* v) {
  const std::string k = add->kind().toQualString();
  if ((k != "aten::add" && k != "aten::add_") || add->inputs().size() != 3) return nullptr;
  auto alpha = numberOf(add->input(2));
  if (!alpha || *alpha != 1.0) return nullptr;
  Value* a = add->input(0);
  Value* b = add->input(1);
  if (a->type()->kind() != TypeKind::TensorType || b->type()->kind() != TypeKind::TensorType)
    return nullptr;
  if (a == b) return nullptr;
  if (a == v) return b;
  if (b == v && k == "aten::add") return a;  // add_ would write the residual itself
  return nullptr;
}

bool fuseBlock(Block* block) {
  bool changed = false;
  std::vector<Node*> convs;
  visitNodes(block, [&](Node* n) {
    if (convForm(n) != ConvForm::None) convs.push_back(n);
    return false;
  });
  for (Node* conv : convs) {
    std::vector<Node*> chain{conv};
    Value* v = conv->output();
    Value* residual = nullptr;
    Activation act;
    if (Node* u = soleUser(v)) {
      if (Value* r = residualOf(u, v)) {
        residual = r;
        chain.push_back(u);
        v = u->output();
      }
    }
    if (Node* u = soleUser(v)) {
      if (u->inputs().size() > 0 && u->input(0) == v) {
        if (auto a = activationOf(u)) {
          act = *a;
          chain.push_back(u);
          v = u->output();
        }
      }
    }
    const bool constW = constantWeight(conv->input(1));
    if (chain.size() == 1 && !constW) continue;
    Graph& g = *conv->owningGraph();
    Node* last = chain.back();
    WithInsertPoint guard(last);
    const ConvForm form = convForm(conv);
    Value* groups = conv->input(form == ConvForm::ConvNd ? 6 : 8);
    Value* none = g.insertConstant(IValue());
    std::vector<Value*> inputs{conv->input(0),
                               conv->input(1),
                               conv->input(2),
                               conv->input(3),
                               conv->input(4),
                               conv->input(5),
                               groups,
                               residual ? residual : none,
                               g.insertConstant(IValue(act.name)),
                               g.insertConstant(IValue(act.alpha)),
                               g.insertConstant(IValue(act.beta)),
                               g.insertConstant(IValue(constW)),
                               g.insertConstant(IValue(false))};
    Node* fused = g.insertNode(g.create(kConvFused, inputs));
    fused->setSourceRange(conv->sourceRange());
    fused->setScope(conv->scope());
    fused->output()->copyMetadata(last->output());
    last->output()->replaceAllUsesWith(fused->output());
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) (*it)->destroy();
    changed = true;
  }
  return changed;
}

// Note [Channels-last between fused convolutions]
// oneDNN runs convolutions on NHWC activations; a plain NCHW tensor costs a reorder before
// and after each one (about as much time as the depthwise convolutions of mobilenet_v2). A
// fused convolution whose result only other fused convolutions read (as input or residual)
// returns it with channels-last strides, which the next one takes without a reorder. Nothing
// else can observe those strides.
void markChannelsLast(Block* block) {
  visitNodes(block, [](Node* n) {
    if (n->kind() != kConvFused || !n->output()->hasUses()) return false;
    bool onlyConvs = true;
    for (const Use& u : n->output()->uses())
      onlyConvs &= u.user->kind() == kConvFused && (u.offset == 0 || u.offset == 7);
    if (!onlyConvs) return false;
    Graph& g = *n->owningGraph();
    WithInsertPoint guard(n);
    n->replaceInput(12, g.insertConstant(IValue(true)));
    return true;
  });
}

}  // namespace

bool fuseConvActivation(Graph& graph) {
  if (!jitOptimizationsEnabled()) return false;
  const bool changed = fuseBlock(graph.block());
  if (changed) markChannelsLast(graph.block());
  if (changed) eliminateDeadCode(graph);
  return changed;
}

void installExecutionRewrites() {
  static std::once_flag once;
  std::call_once(once, [] {
    setExecutionGraphRewrite([](const std::shared_ptr<Graph>& g) -> std::shared_ptr<Graph> {
      if (!jitOptimizationsEnabled()) return g;
      std::shared_ptr<Graph> copy = g->copy();
      return fuseConvActivation(*copy) ? copy : g;
    });
  });
}

}  // namespace torchless::passes
