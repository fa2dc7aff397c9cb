// Export preparation: PyTorch's transformer fast paths decomposed into the ops they compute,
// as torch.onnx exports them (it never sees the fused ops: its exporter traces the slow path).
//   aten::_native_multi_head_attention (traced nn.MultiheadAttention under no_grad: ViT) ->
//     linear q / k / v, heads (reshape, transpose), q / sqrt(d) @ k^T, softmax, @ v, linear;
//   aten::_transformer_encoder_layer_fwd (nn.TransformerEncoderLayer's fast path) -> the same
//     attention, residual adds, layer_norm, linear + relu / gelu + linear.
// The arithmetic follows runtime/register_nn.cpp's kernels (multiHeadAttention,
// transformerEncoderLayer). A mask (mask_type 0: an attention mask [L, S]; 1: a key padding
// mask [B, S], viewed [B, 1, 1, S]) is applied to the scores as the kernel does: a bool mask by
// masked_fill(-inf), a float one added. Its dtype comes from the example run's facts (or its
// IR type); when it is unknown, or a node's sizes, heads or flags are not constants yet, the node
// stays: the preparation decomposes again once folding made them constants (scripted
// TransformerEncoderLayer computes them through ifs), and the pre-flight names what is left.
#include "convert/onnx/prepare.h"

#include "core/error.h"

#include <cmath>
#include <limits>

namespace torchless::onnx_export {

namespace {

// An attention mask as the fast-path kernels apply it (none when value is null).
struct Mask {
  Value* value = nullptr;
  bool isBool = false;
  bool keyPadding = false;  // mask_type 1 with a [B, S] mask: viewed [B, 1, 1, S]
};

class Builder {
 public:
  Builder(Graph& g, Node* at) : g_(g), guard_(at), at_(at) {}

  Value* op(const char* kind, const std::vector<Value*>& inputs, TypePtr type = TensorType::get()) {
    Node* n = g_.create(Symbol::fromQualString(kind), inputs);
    n->output()->setType(std::move(type));
    n->setSourceRange(at_->sourceRange());
    n->setScope(at_->scope());
    g_.insertNode(n);
    return n->output();
  }
  Value* c(const IValue& v) { return g_.insertConstant(v); }
  Value* i(int64_t v) { return c(IValue(v)); }
  Value* none() { return g_.insertNode(g_.createNone())->output(); }
  Value* ints(const std::vector<Value*>& xs) {
    return g_.insertNode(g_.createList(IntType::get(), xs))->output();
  }
  Value* size(Value* x, int64_t d) { return op("aten::size", {x, i(d)}, IntType::get()); }
  // rows [k * n, (k + 1) * n) of a [3n, ...] weight.
  Value* third(Value* w, int64_t k, int64_t n) {
    return op("aten::slice", {w, i(0), i(k * n), i((k + 1) * n), i(1)});
  }
  Value* linear(Value* x, Value* w, Value* b) { return op("aten::linear", {x, w, b}); }

  // Self- or cross-attention: [B, L, E] -> [B, L, E] (and the [B, H, L, S] probabilities).
  std::pair<Value*, Value*> attention(Value* q, Value* k, Value* v, int64_t e, int64_t h,
                                      Value* qkvW, Value* qkvB, Value* projW, Value* projB,
                                      const Mask& mask) {
    const int64_t d = e / h;
    Value* qp = linear(q, third(qkvW, 0, e), third(qkvB, 0, e));
    Value* kp = linear(k, third(qkvW, 1, e), third(qkvB, 1, e));
    Value* vp = linear(v, third(qkvW, 2, e), third(qkvB, 2, e));
    Value* b = size(q, 0);
    Value* l = size(q, 1);
    Value* s = size(k, 1);
    auto heads = [&](Value* t, Value* len) {
      return op("aten::transpose",
                {op("aten::reshape", {t, ints({b, len, i(h), i(d)})}), i(1), i(2)});
    };
    Value* qh = op("aten::div", {heads(qp, l), c(IValue(std::sqrt(static_cast<double>(d))))});
    Value* kh = heads(kp, s);
    Value* vh = heads(vp, s);
    Value* scores = op("aten::matmul", {qh, op("aten::transpose", {kh, i(2), i(3)})});
    if (mask.value) {
      Value* m = mask.value;
      if (mask.keyPadding) m = op("aten::reshape", {m, ints({b, i(1), i(1), s})});
      scores = mask.isBool ? op("aten::masked_fill",
                                {scores, m, c(IValue(-std::numeric_limits<double>::infinity()))})
                           : op("aten::add", {scores, m, i(1)});
    }
    Value* attn = op("aten::softmax", {scores, i(-1), none()});
    Value* out = op("aten::matmul", {attn, vh});
    out = op("aten::reshape", {op("aten::transpose", {out, i(1), i(2)}), ints({b, l, i(e)})});
    return {linear(out, projW, projB), attn};
  }

 private:
  Graph& g_;
  WithInsertPoint guard_;
  Node* at_;
};

std::optional<int64_t> constInt(const Value* v) {
  auto iv = toIValue(v);
  if (!iv || !iv->isInt()) return std::nullopt;
  return iv->toInt();
}
std::optional<bool> constBool(const Value* v) {
  auto iv = toIValue(v);
  if (!iv || !iv->isBool()) return std::nullopt;
  return iv->toBool();
}
bool isNoneConst(const Value* v) {
  auto iv = toIValue(v);
  return iv && iv->isNone();
}

// The mask input `m` with its mask_type input `type` (None: a [B, S] mask of a batch B and
// S keys is a key padding mask, as the kernel decides), or nullopt when its dtype or (for an
// undecided type) sizes are unknown.
std::optional<Mask> resolveMask(const Value* m, const Value* type, const Value* query,
                                const Value* key, const FactsOf& facts) {
  if (isNoneConst(m)) return Mask{};
  auto factsOf = [&](const Value* v) { return facts ? facts(v) : nullptr; };
  auto rankOf = [&](const Value* v) -> std::optional<size_t> {
    const ValueFacts* f = factsOf(v);
    return f && f->sizes ? std::optional<size_t>(f->sizes->size()) : std::nullopt;
  };
  std::optional<ScalarType> dtype;
  if (const ValueFacts* f = factsOf(m)) dtype = f->dtype;
  if (const TensorType* tt = m->type() ? m->type()->cast<TensorType>() : nullptr; !dtype && tt)
    dtype = tt->scalarType();
  auto kind = constInt(type);
  if (!dtype || (!kind && !isNoneConst(type))) return std::nullopt;
  Mask mask{const_cast<Value*>(m), *dtype == ScalarType::Bool, false};
  if (kind && *kind != 1) return mask;
  auto rank = rankOf(m);
  if (!rank) return std::nullopt;
  if (kind) {
    mask.keyPadding = *rank == 2;
    return mask;
  }
  // No mask_type: a [B, S] mask is a key padding mask.
  const ValueFacts *mf = factsOf(m), *qf = factsOf(query), *kf = factsOf(key);
  if (!qf || !kf || !qf->sizes || !kf->sizes || qf->sizes->size() != 3 || kf->sizes->size() != 3)
    return std::nullopt;
  mask.keyPadding =
      *rank == 2 && (*mf->sizes)[0] == (*qf->sizes)[0] && (*mf->sizes)[1] == (*kf->sizes)[1];
  return mask;
}

bool decomposeMha(Graph& g, Node* n, const FactsOf& facts) {
  if (n->inputs().size() != 13) return false;
  auto mask = resolveMask(n->input(9), n->input(12), n->input(0), n->input(1), facts);
  if (!mask) return false;
  auto e = constInt(n->input(3)), h = constInt(n->input(4));
  auto need = constBool(n->input(10)), average = constBool(n->input(11));
  if (!e || !h || !need || !average || *h <= 0 || *e % *h != 0) return false;
  Builder b(g, n);
  auto [out, attn] = b.attention(n->input(0), n->input(1), n->input(2), *e, *h, n->input(5),
                                 n->input(6), n->input(7), n->input(8), *mask);
  if (n->output(1)->hasUses() && !*need) {
    // The kernel's weights without need_weights: None, PyTorch's undefined tensor (a scripted
    // `a, _ = mha(...)` keeps the use through its tuple; a returned `w` is no output).
    n->output(1)->replaceAllUsesWith(b.none());
  } else if (n->output(1)->hasUses()) {
    Value* w = *average ? b.op("aten::mean", {attn, b.ints({b.i(1)}), b.c(IValue(false)), b.none()})
                        : attn;
    n->output(1)->replaceAllUsesWith(w);
  }
  n->output(0)->replaceAllUsesWith(out);
  n->destroy();
  return true;
}

bool decomposeEncoderLayer(Graph& g, Node* n, const FactsOf& facts) {
  if (n->inputs().size() != 20) return false;
  auto mask = resolveMask(n->input(18), n->input(19), n->input(0), n->input(0), facts);
  if (!mask) return false;
  auto e = constInt(n->input(1)), h = constInt(n->input(2));
  auto gelu = constBool(n->input(7)), normFirst = constBool(n->input(8));
  if (!e || !h || !gelu || !normFirst || *h <= 0 || *e % *h != 0) return false;
  Builder b(g, n);
  Value* shape = b.ints({b.i(*e)});
  auto norm = [&](Value* x, size_t w) {
    return b.op("aten::layer_norm",
                {x, shape, n->input(w), n->input(w + 1), n->input(9), b.c(IValue(true))});
  };
  auto attention = [&](Value* x) {
    return b.attention(x, x, x, *e, *h, n->input(3), n->input(4), n->input(5), n->input(6), *mask)
        .first;
  };
  auto ffn = [&](Value* x) {
    Value* y = b.linear(x, n->input(14), n->input(15));
    y = *gelu ? b.op("aten::gelu", {y, b.c(IValue(std::string("none")))}) : b.op("aten::relu", {y});
    return b.linear(y, n->input(16), n->input(17));
  };
  auto add = [&](Value* x, Value* y) { return b.op("aten::add", {x, y, b.i(1)}); };
  Value* x = n->input(0);
  if (*normFirst) {
    x = add(x, attention(norm(x, 10)));
    x = add(x, ffn(norm(x, 12)));
  } else {
    x = norm(add(x, attention(x)), 10);
    x = norm(add(x, ffn(x)), 12);
  }
  n->output()->replaceAllUsesWith(x);
  n->destroy();
  return true;
}

bool decomposeBlock(Graph& g, Block* block, const FactsOf& facts) {
  bool changed = false;
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    Node* n = *it;
    ++it;
    for (Block* b : n->blocks()) changed |= decomposeBlock(g, b, facts);
    if (n->kind() == Symbol::aten("_native_multi_head_attention"))
      changed |= decomposeMha(g, n, facts);
    else if (n->kind() == Symbol::aten("_transformer_encoder_layer_fwd"))
      changed |= decomposeEncoderLayer(g, n, facts);
  }
  return changed;
}

}  // namespace

bool decomposeFastPaths(Graph& g, const FactsOf& facts) {
  return decomposeBlock(g, g.block(), facts);
}

}  // namespace torchless::onnx_export
