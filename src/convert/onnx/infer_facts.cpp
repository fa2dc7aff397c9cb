// Note [Facts of branches no run took]
// The example runs give every value they reach a dtype and a rank (Note [Facts inside blocks] in
// prepare.cpp). A branch whose condition follows a dynamic axis may be taken by none of them:
// torchvision's shifted-window attention builds its mask under `if sum(shift_size) > 0`, which
// holds for a 56x56 feature map and not for the 7x7 one of the last stage at 224x224. Exported
// with dynamic H and W, that branch is still part of the ONNX graph and its converters need
// ranks (unsqueeze at a negative dim, permute, masked_fill's broadcast). torch.onnx reads them
// from the traced types; a scripted graph's types carry none. So the values no run reached get
// a rank, and where it follows as surely a dtype, from the ops that make them, as PyTorch's
// shape functions (torch/csrc/jit/runtime/symbolic_shape_registry.cpp) give them: factories and
// views by the length of their size list, broadcasting ops by the largest rank of their
// tensor operands, ops that keep their input's layout by its rank. A value no rule covers stays
// without facts, and the converter that needs them says so as before.
#include "convert/onnx/prepare.h"
#include "core/scalar_type.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

namespace torchless::onnx_export {
namespace {

// Ops whose output has the shape and dtype of their first operand.
const std::unordered_set<std::string>& keepsInput() {
  static const std::unordered_set<std::string> ops{"contiguous",
                                                   "clone",
                                                   "detach",
                                                   "neg",
                                                   "relu",
                                                   "relu_",
                                                   "sigmoid",
                                                   "tanh",
                                                   "gelu",
                                                   "silu",
                                                   "hardswish",
                                                   "hardsigmoid",
                                                   "leaky_relu",
                                                   "elu",
                                                   "exp",
                                                   "log",
                                                   "sqrt",
                                                   "rsqrt",
                                                   "abs",
                                                   "softmax",
                                                   "log_softmax",
                                                   "dropout",
                                                   "dropout_",
                                                   "fill_",
                                                   "zero_",
                                                   "roll",
                                                   "flip",
                                                   "slice",
                                                   "cumsum",
                                                   "clamp",
                                                   "clamp_min",
                                                   "clamp_max",
                                                   "layer_norm",
                                                   "group_norm",
                                                   "batch_norm",
                                                   "instance_norm",
                                                   "floor",
                                                   "ceil",
                                                   "round",
                                                   "sign",
                                                   "reciprocal",
                                                   "sin",
                                                   "cos",
                                                   "erf",
                                                   "narrow",
                                                   "constant_pad_nd",
                                                   "pad",
                                                   "reflection_pad2d",
                                                   "replicate_pad2d",
                                                   "hardtanh",
                                                   "relu6",
                                                   "softplus",
                                                   "mish",
                                                   "normalize",
                                                   "copy_",
                                                   "masked_fill_",
                                                   "index_put",
                                                   "index_put_",
                                                   "scatter",
                                                   "scatter_add",
                                                   "slice_scatter",
                                                   "select_scatter",
                                                   "transpose",
                                                   "t",
                                                   "tril",
                                                   "triu",
                                                   "nan_to_num",
                                                   "alias",
                                                   "index_fill",
                                                   "masked_scatter",
                                                   "celu",
                                                   "selu",
                                                   "prelu",
                                                   "logit",
                                                   "frac",
                                                   "trunc",
                                                   "expm1",
                                                   "log1p",
                                                   "log2",
                                                   "square",
                                                   "pixel_shuffle",
                                                   "pixel_unshuffle",
                                                   "channel_shuffle"};
  return ops;
}

// Ops whose output has their first operand's rank but their own dtype.
bool keepsRankOnly(const std::string& op) {
  return op == "type_as" || op == "float" || op == "long" || op == "int" || op == "bool" ||
         op == "half" || op == "double" || op == "logical_not" || op == "bitwise_not" ||
         op == "isnan" || op == "isinf" || op == "argsort" || op == "interpolate" ||
         op == "upsample_nearest2d" || op == "upsample_bilinear2d" || op == "adaptive_avg_pool2d" ||
         op == "max_pool2d" || op == "avg_pool2d" || op == "conv2d" || op == "conv1d" ||
         op == "conv3d" || op == "linear" || op == "index_select" || op == "gather";
}

// Broadcasting ops: the largest rank among their tensor operands.
const std::unordered_set<std::string>& broadcasts() {
  static const std::unordered_set<std::string> ops{
      "add",          "sub",         "mul",         "div",         "rsub",        "pow",
      "maximum",      "minimum",     "max",         "min",         "remainder",   "fmod",
      "floor_divide", "where",       "masked_fill", "atan2",       "lerp",        "addcmul",
      "addcdiv",      "eq",          "ne",          "lt",          "le",          "gt",
      "ge",           "logical_and", "logical_or",  "logical_xor", "bitwise_and", "bitwise_or",
      "bitwise_xor",  "__and__",     "__or__",      "__xor__",     "add_",        "sub_",
      "mul_",         "div_",        "copysign",    "hypot",       "true_divide"};
  return ops;
}

bool isComparison(const std::string& op) {
  return op == "eq" || op == "ne" || op == "lt" || op == "le" || op == "gt" || op == "ge" ||
         op == "logical_and" || op == "logical_or" || op == "logical_xor" || op == "logical_not" ||
         op == "isnan" || op == "isinf";
}

// Factories whose size list is operand `at` (the rest of the ops listed here are methods whose
// size list follows self).
std::optional<size_t> sizeListOperand(const std::string& op) {
  if (op == "zeros" || op == "ones" || op == "empty" || op == "full" || op == "rand" ||
      op == "randn")
    return 0;
  if (op == "new_zeros" || op == "new_ones" || op == "new_empty" || op == "new_full" ||
      op == "view" || op == "reshape" || op == "expand" || op == "broadcast_to" ||
      op == "permute" || op == "repeat" || op == "tile")
    return 1;
  return std::nullopt;
}

bool reduces(const std::string& op) {
  static const std::unordered_set<std::string> ops{"sum",    "mean",      "prod",  "max", "min",
                                                   "amax",   "amin",      "all",   "any", "argmax",
                                                   "argmin", "logsumexp", "nansum"};
  return ops.count(op) > 0;
}

class Inference {
 public:
  explicit Inference(PreparedGraph& out) : out_(out) {}

  /// Walks `b`; nodes of nested blocks get facts (the top level's were all observed).
  void block(const Block* b, bool nested = false) {
    for (const Node* n : b->nodes()) {
      for (const Block* inner : n->blocks()) {
        seedBlockInputs(*n, inner);
        block(inner, true);
      }
      if (nested) node(*n);
    }
  }

 private:
  std::optional<int64_t> rank(const Value* v) const {
    if (auto it = out_.facts.find(v); it != out_.facts.end()) {
      if (it->second.sizes) return static_cast<int64_t>(it->second.sizes->size());
      if (it->second.rank) return it->second.rank;
    }
    if (auto c = toIValue(v); c && c->isTensor()) return c->toTensor().dim();
    if (v->type())
      if (const auto* t = v->type()->cast<TensorType>(); t && t->dim())
        return static_cast<int64_t>(*t->dim());
    return std::nullopt;
  }

  std::optional<ScalarType> dtype(const Value* v) const {
    if (auto it = out_.facts.find(v); it != out_.facts.end() && it->second.dtype)
      return it->second.dtype;
    if (auto c = toIValue(v); c && c->isTensor()) return c->toTensor().dtype();
    if (v->type())
      if (const auto* t = v->type()->cast<TensorType>(); t && t->scalarType())
        return t->scalarType();
    return std::nullopt;
  }

  // A dtype argument: a constant ScalarType number, or prim::dtype of a tensor whose dtype is
  // known (`torch.tensor(0, dtype=x.dtype)` scripted).
  std::optional<ScalarType> dtypeArg(const Value* v) const {
    if (auto c = toIValue(v); c && c->isInt()) return scalarTypeFromInt(c->toInt());
    if (v->node()->kind() == prim::dtype) return dtype(v->node()->input(0));
    return std::nullopt;
  }

  static bool isTensorValue(const Value* v) {
    return v->type() && v->type()->cast<TensorType>() != nullptr;
  }

  // The length of an int[] operand: a prim::ListConstruct's inputs or a constant list's.
  static std::optional<int64_t> listLength(const Value* v) {
    if (v->node()->kind() == prim::ListConstruct)
      return static_cast<int64_t>(v->node()->inputs().size());
    if (auto c = toIValue(v); c && c->isList())
      return static_cast<int64_t>(c->toList()->list.size());
    return std::nullopt;
  }

  static std::optional<int64_t> constInt(const Value* v) {
    if (auto c = toIValue(v); c && c->isInt()) return c->toInt();
    return std::nullopt;
  }

  void set(const Value* v, std::optional<int64_t> r, std::optional<ScalarType> d) {
    if (!r || *r < 0 || out_.facts.count(v)) return;
    ValueFacts& f = out_.facts[v];
    f.rank = r;
    f.dtype = d;
  }

  // Loop-carried block inputs take their initial value's facts.
  void seedBlockInputs(const Node& n, const Block* inner) {
    if (n.kind() != prim::Loop) return;
    // prim::Loop(max_trip_count, cond, carried...) -> block(i, carried...)
    for (size_t i = 1; i < inner->inputs().size() && i + 1 < n.inputs().size(); ++i) {
      const Value* init = n.input(i + 1);
      if (isTensorValue(inner->inputs()[i])) set(inner->inputs()[i], rank(init), dtype(init));
    }
  }

  static bool isTensorList(const Value* v) {
    return v->type() && v->type()->kind() == TypeKind::ListType &&
           v->type()->expect<ListType>().getElementType()->kind() == TypeKind::TensorType;
  }

  // Ops with several outputs, or a list, or outside aten (the detection ops of a batched NMS):
  // true when `n` is one of them (handled here, facts or not).
  bool several(const Node& n) {
    const std::string ns(n.kind().domainString());
    const std::string op(n.kind().toUnqualString());
    const Value* self = n.input(0);
    const auto r0 = rank(self);
    const auto d0 = dtype(self);
    if (ns == "torchvision" && op == "nms") {
      set(n.output(0), 1, ScalarType::Long);
      return true;
    }
    if (ns == "aten" && op == "__getitem__" && n.inputs().size() == 2 && isTensorList(self)) {
      if (auto it = out_.facts.find(self); it != out_.facts.end())
        set(n.output(0), it->second.rank, it->second.dtype);
      return true;
    }
    if (ns != "aten") return n.outputs().size() != 1;
    if (op == "_unique2" || op == "unique_consecutive" || op == "_unique") {
      // No dim: the sorted unique values (1-d), the inverse (self's shape), the counts (1-d).
      set(n.output(0), 1, d0);
      if (n.outputs().size() > 1) set(n.output(1), r0, ScalarType::Long);
      if (n.outputs().size() > 2) set(n.output(2), 1, ScalarType::Long);
      return true;
    }
    if (op == "unique_dim" || op == "unique_dim_consecutive") {
      // Along a dim: self's rank; the inverse and the counts are 1-d.
      set(n.output(0), r0, d0);
      for (size_t i = 1; i < n.outputs().size(); ++i) set(n.output(i), 1, ScalarType::Long);
      return true;
    }
    if (reduces(op) && !(n.inputs().size() > 1 && isTensorValue(n.input(1)))) {
      // Reductions: over all dims (no dim, dim=None, or sum's dtype) 0-d; over a dim or a list
      // of dims one or len(dims) fewer, none fewer with keepdim (a constant).
      std::optional<int64_t> r;
      bool dtypeGiven = false;
      if (n.inputs().size() == 1) {
        r = 0;
      } else {
        const Value* a1 = n.input(1);
        const TypeKind k = a1->type() ? a1->type()->kind() : TypeKind::NoneType;
        auto c = toIValue(a1);
        if (c && c->isNone()) {
          r = 0;
        } else if (k == TypeKind::ListType || k == TypeKind::IntType) {
          auto len = k == TypeKind::IntType ? std::optional<int64_t>(1) : listLength(a1);
          auto keep = n.inputs().size() > 2 ? toIValue(n.input(2)) : std::nullopt;
          if (r0 && len && keep && keep->isBool()) r = keep->toBool() ? *r0 : *r0 - *len;
        } else if (k != TypeKind::OptionalType) {
          r = 0;  // sum(self, dtype)
          dtypeGiven = true;
        }
      }
      std::optional<ScalarType> d = d0;
      if (op == "all" || op == "any") d = ScalarType::Bool;
      if (op == "argmax" || op == "argmin") d = ScalarType::Long;
      if ((op == "sum" || op == "prod" || op == "nansum") && d0 && !isFloatingType(*d0))
        d = ScalarType::Long;
      if (dtypeGiven) d.reset();
      set(n.output(0), r, d);
      if ((op == "max" || op == "min") && n.outputs().size() == 2)
        set(n.output(1), r, ScalarType::Long);  // max.dim's indices
      return true;
    }
    if ((op == "sort" || op == "topk") && n.outputs().size() == 2) {
      set(n.output(0), r0, d0);
      set(n.output(1), r0, ScalarType::Long);
      return true;
    }
    if (op == "nonzero") {
      set(n.output(0), 2, ScalarType::Long);
      return true;
    }
    if ((op == "where" && n.inputs().size() == 1) || op == "nonzero_numpy") {
      set(n.output(0), 1, ScalarType::Long);  // a list of 1-d index tensors
      return true;
    }
    if (op == "index" && n.inputs().size() == 2 && n.outputs().size() == 1) {
      // One index tensor: Long replaces dim 0 by its dims, Bool the dims it covers by one.
      const Node* list = n.input(1)->node();
      if (!r0 || list->kind() != prim::ListConstruct || list->inputs().size() != 1) return true;
      const Value* idx = list->input(0);
      const auto ri = rank(idx);
      const auto di = dtype(idx);
      if (!ri || !di) return true;
      if (*di == ScalarType::Bool || *di == ScalarType::Byte)
        set(n.output(0), *r0 - *ri + 1, d0);
      else
        set(n.output(0), *r0 - 1 + *ri, d0);
      return true;
    }
    return n.outputs().size() != 1;
  }

  void node(const Node& n) {
    if (n.outputs().empty()) return;
    if (n.kind() == prim::If) {
      for (size_t i = 0; i < n.outputs().size(); ++i) {
        std::optional<int64_t> r;
        std::optional<ScalarType> d;
        bool first = true, agree = true;
        for (const Block* b : n.blocks()) {
          const Value* o = b->outputs().at(i);
          if (first) {
            r = rank(o), d = dtype(o), first = false;
          } else {
            if (rank(o) != r) agree = false;
            if (dtype(o) != d) d.reset();
          }
        }
        if (agree && isTensorValue(n.output(i))) set(n.output(i), r, d);
      }
      return;
    }
    if (n.kind() == prim::Loop) {
      for (size_t i = 0; i < n.outputs().size() && i + 2 < n.inputs().size(); ++i)
        if (isTensorValue(n.output(i)))
          set(n.output(i), rank(n.input(i + 2)), dtype(n.input(i + 2)));
      return;
    }
    if (n.inputs().empty()) return;
    if (several(n)) return;
    if (!n.kind().is_aten() || n.outputs().size() != 1) return;
    const Value* o = n.output(0);
    if (!isTensorValue(o) || out_.facts.count(o)) return;
    const std::string op(n.kind().toUnqualString());
    const Value* self = n.input(0);
    const auto r0 = rank(self);
    const auto d0 = dtype(self);

    // Factories with a dtype argument (aten::tensor of a number is 0-d).
    if (op == "tensor" || op == "scalar_tensor") {
      const TypeKind k = self->type() ? self->type()->kind() : TypeKind::AnyType;
      if (k != TypeKind::IntType && k != TypeKind::FloatType && k != TypeKind::BoolType) return;
      return set(o, 0, n.inputs().size() > 1 ? dtypeArg(n.input(1)) : std::nullopt);
    }
    if (op == "to" && n.inputs().size() > 1) {
      const Value* a1 = n.input(1);
      std::optional<ScalarType> d;
      if (isTensorValue(a1)) {
        d = dtype(a1);  // to.other
      } else if (a1->type() && a1->type()->kind() == TypeKind::DeviceObjType) {
        if (n.inputs().size() > 2) d = dtypeArg(n.input(2));  // to.device
      } else {
        d = dtypeArg(a1);  // to.dtype
      }
      return set(o, r0, d);
    }
    // zeros_like(self, dtype=None, ...), full_like(self, fill_value, dtype=None, ...): self's
    // rank, and its dtype unless one is given.
    if (op == "zeros_like" || op == "ones_like" || op == "empty_like" || op == "full_like" ||
        op == "rand_like" || op == "randn_like") {
      const size_t dt = op == "full_like" ? 2 : 1;
      std::optional<ScalarType> d = d0;
      if (dt < n.inputs().size()) {
        auto c = toIValue(n.input(dt));
        if (!c || !c->isNone()) d = dtypeArg(n.input(dt));
      }
      return set(o, r0, d);
    }
    if (keepsInput().count(op)) return set(o, r0, d0);
    if (keepsRankOnly(op)) {
      std::optional<ScalarType> d;
      if (isComparison(op)) d = ScalarType::Bool;
      return set(o, r0, d);
    }
    if (broadcasts().count(op)) {
      std::optional<int64_t> r;
      std::optional<ScalarType> d;
      bool allKnown = true, first = true, sameDtype = true;
      for (const Value* in : n.inputs()) {
        if (!isTensorValue(in)) continue;
        auto ri = rank(in);
        if (!ri) {
          allKnown = false;
          break;
        }
        r = std::max(r.value_or(0), *ri);
        auto di = dtype(in);
        if (first) {
          d = di, first = false;
        } else if (di != d) {
          sameDtype = false;
        }
      }
      if (!allKnown) return;
      if (isComparison(op)) {
        d = ScalarType::Bool;
      } else if (op == "where" || op == "masked_fill") {
        // where(cond, a, b): a's dtype when a and b agree; masked_fill keeps self's.
        d = op == "masked_fill" ? d0 : std::nullopt;
        if (op == "where" && n.inputs().size() == 3 && dtype(n.input(1)) == dtype(n.input(2)))
          d = dtype(n.input(1));
      } else if (!sameDtype || op == "div" || op == "true_divide") {
        d.reset();
      }
      return set(o, r, d);
    }
    if (auto at = sizeListOperand(op); at && *at < n.inputs().size()) {
      auto len = listLength(n.input(*at));
      if (!len) return;
      if (op == "repeat" || op == "tile") {
        if (!r0) return;
        return set(o, std::max(*len, *r0), d0);
      }
      // A view has self's dtype, and so has a new_* whose dtype argument is None; a factory's
      // dtype is left to its converter.
      std::optional<ScalarType> d;
      if (*at == 1) d = d0;
      if (*at == 0) {  // zeros(size, dtype, ...), full(size, fill_value, dtype, ...)
        const size_t dt = op == "full" ? 2 : 1;
        if (dt < n.inputs().size()) {
          auto c = toIValue(n.input(dt));
          if (!c || !c->isNone())
            d = dtypeArg(n.input(dt));
          else if (op != "full")
            d = ScalarType::Float;  // the default dtype (full's follows its fill value)
        }
      }
      if (op.rfind("new_", 0) == 0) {
        const size_t dt = op == "new_full" ? 3 : 2;
        if (dt < n.inputs().size()) {
          auto c = toIValue(n.input(dt));
          if (!c || !c->isNone()) d = dtypeArg(n.input(dt));
        }
      }
      return set(o, len, d);
    }
    if (!r0) return;
    if (op == "unsqueeze") return set(o, *r0 + 1, d0);
    if (op == "select") return set(o, *r0 - 1, d0);
    if (op == "flatten" && n.inputs().size() == 3) {
      auto s = constInt(n.input(1)), e = constInt(n.input(2));
      if (!s || !e) return;
      int64_t start = *s < 0 ? *s + *r0 : *s, end = *e < 0 ? *e + *r0 : *e;
      if (*r0 == 0) return set(o, 1, d0);
      return set(o, *r0 - (end - start), d0);
    }
    if (op == "expand_as" || op == "view_as" || op == "reshape_as")
      return set(o, rank(n.input(1)), d0);
    if (op == "matmul" && n.inputs().size() == 2) {
      auto r1 = rank(n.input(1));
      if (!r1) return;
      std::optional<ScalarType> d = dtype(n.input(1)) == d0 ? d0 : std::nullopt;
      if (*r0 == 1 && *r1 == 1) return set(o, 0, d);
      if (*r0 == 1) return set(o, *r1 - 1, d);
      if (*r1 == 1) return set(o, *r0 - 1, d);
      return set(o, std::max(*r0, *r1), d);
    }
    if (op == "mm") return set(o, 2, d0);
    if (op == "bmm" || op == "baddbmm") return set(o, 3, d0);
  }

  PreparedGraph& out_;
};

}  // namespace

void inferUnobservedFacts(PreparedGraph& out) { Inference(out).block(out.graph->block()); }

}  // namespace torchless::onnx_export
