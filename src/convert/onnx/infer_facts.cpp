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
                                                   "gelu",
                                                   "silu",
                                                   "hardswish",
                                                   "hardsigmoid",
                                                   "leaky_relu",
                                                   "elu",
                                                   "abs",
                                                   "dropout",
                                                   "dropout_",
                                                   "fill_",
                                                   "zero_",
                                                   "roll",
                                                   "flip",
                                                   "slice",
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
                                                   "frac",
                                                   "trunc",
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
        if (n->kind() == prim::Loop)
          loopBody(*n, inner);
        else
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
    if (journal_) journal_->push_back(v);
  }

  // A loop body: its carried inputs take their initial values' facts, which hold only when each
  // iteration's result has them too (`y = y.unsqueeze(0)` in the body changes the rank): when
  // one does not, every fact inferred in the body goes and the body is inferred without them.
  void loopBody(const Node& loop, const Block* body) {
    std::vector<const Value*> journal;
    std::vector<const Value*>* outer = journal_;
    journal_ = &journal;
    // prim::Loop(max_trip_count, cond, carried...) -> block(i, carried...) -> (cond, carried...)
    for (size_t i = 1; i < body->inputs().size() && i + 1 < loop.inputs().size(); ++i) {
      const Value* init = loop.input(i + 1);
      if (isTensorValue(body->inputs()[i])) set(body->inputs()[i], rank(init), dtype(init));
    }
    block(body, true);
    bool holds = true;
    for (size_t i = 1; i < body->inputs().size() && i < body->outputs().size(); ++i) {
      const Value* in = body->inputs()[i];
      if (!isTensorValue(in)) continue;
      holds =
          holds && rank(body->outputs()[i]) == rank(in) && dtype(body->outputs()[i]) == dtype(in);
    }
    if (!holds) {
      for (const Value* v : journal) out_.facts.erase(v);
      journal.clear();
      block(body, true);
    }
    journal_ = outer;
    if (outer) outer->insert(outer->end(), journal.begin(), journal.end());
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
    if (op == "unique_consecutive" && n.inputs().size() > 3) {
      // unique_consecutive(self, return_inverse, return_counts, dim): along a dim as unique_dim.
      auto c = toIValue(n.input(3));
      if (!c || !c->isNone()) {
        set(n.output(0), r0, d0);
        for (size_t i = 1; i < n.outputs().size(); ++i) set(n.output(i), 1, ScalarType::Long);
        return true;
      }
    }
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
      // Reductions (PyTorch 1.13's overloads): sum / prod / mean (self, dtype) and max / min /
      // all / any (self) over all dims, 0-d; over dims (self, dim or dims, keepdim[, dtype]):
      // one or len(dims) fewer, none fewer with keepdim; dims [] or None is all of them.
      const bool dtypeForm =
          n.inputs().size() == 2 && (op == "sum" || op == "prod" || op == "mean" || op == "nansum");
      std::optional<int64_t> r;
      std::optional<ScalarType> given;  // a dtype argument
      bool dtypeArgument = false;
      if (n.inputs().size() == 1) {
        r = 0;
      } else if (dtypeForm) {
        r = 0;
        auto c = toIValue(n.input(1));
        dtypeArgument = !(c && c->isNone());
        if (dtypeArgument) given = dtypeArg(n.input(1));
      } else {
        const Value* a1 = n.input(1);
        const TypeKind k = a1->type() ? a1->type()->kind() : TypeKind::NoneType;
        auto c = toIValue(a1);
        auto keep = n.inputs().size() > 2 ? toIValue(n.input(2)) : std::nullopt;
        const bool keepKnown = keep && keep->isBool();
        std::optional<int64_t> len;
        if (k == TypeKind::IntType) len = 1;
        if (k == TypeKind::ListType) len = listLength(a1);
        const bool all = (c && c->isNone()) || (len && *len == 0);
        if (r0 && keepKnown && keep->toBool()) {
          r = *r0;
        } else if (all && (keepKnown || n.inputs().size() == 2)) {
          r = 0;
        } else if (r0 && len && keepKnown) {
          r = *r0 - *len;
        }
        if (n.inputs().size() > 3 && (op == "sum" || op == "prod" || op == "mean" ||
                                      op == "nansum")) {  // (self, dims, keepdim, dtype)
          auto dt = toIValue(n.input(3));
          dtypeArgument = !(dt && dt->isNone());
          if (dtypeArgument) given = dtypeArg(n.input(3));
        }
      }
      std::optional<ScalarType> d = d0;
      if (op == "all" || op == "any")  // uint8 stays uint8 (PyTorch 1.13)
        d = d0 == ScalarType::Byte ? d0 : std::optional<ScalarType>(ScalarType::Bool);
      if (op == "argmax" || op == "argmin") d = ScalarType::Long;
      if ((op == "sum" || op == "prod" || op == "nansum") && d0 && !isFloatingType(*d0))
        d = ScalarType::Long;
      if (dtypeArgument) d = given;
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
      // An output is the initial value (no iteration) or a body result: facts they share.
      const Block* body = n.blocks()[0];
      for (size_t i = 0; i < n.outputs().size() && i + 2 < n.inputs().size(); ++i) {
        if (!isTensorValue(n.output(i)) || i + 1 >= body->outputs().size()) continue;
        const Value* init = n.input(i + 2);
        const Value* last = body->outputs()[i + 1];
        if (rank(init) == rank(last))
          set(n.output(i), rank(init), dtype(init) == dtype(last) ? dtype(init) : std::nullopt);
      }
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
    // Functions defined on floats: an integer or bool input gives the default float dtype.
    static const std::unordered_set<std::string> floatResult{
        "sigmoid", "tanh", "exp", "log",   "sqrt",  "rsqrt", "reciprocal",
        "sin",     "cos",  "erf", "logit", "expm1", "log1p", "log2"};
    if (floatResult.count(op))
      return set(o, r0, d0 && !isFloatingType(*d0) ? ScalarType::Float : d0);
    // cumsum(self, dim, dtype=None): an integer or bool input sums in int64.
    // softmax / log_softmax(self, dim, dtype=None): the dtype given, else self's.
    if (op == "cumsum" || op == "softmax" || op == "log_softmax") {
      std::optional<ScalarType> d = d0;
      if (op == "cumsum" && d0 && !isFloatingType(*d0)) d = ScalarType::Long;
      if (n.inputs().size() > 2)
        if (auto c = toIValue(n.input(2)); !c || !c->isNone()) d = dtypeArg(n.input(2));
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
      // A Python number takes part in type promotion against a tensor of a lower category
      // (torch.result_type): `long_tensor + 0.5` is float32 (the default dtype), `bool_tensor
      // + 1` is int64. (add / sub's alpha is no operand; where's and masked_fill's numbers are
      // values, judged below.)
      const size_t operands =
          op == "add" || op == "sub" || op == "add_" || op == "sub_" || op == "rsub"
              ? 2
              : n.inputs().size();
      for (size_t i = 0; i < operands && i < n.inputs().size() && d && sameDtype; ++i) {
        const Value* in = n.input(i);
        const TypeKind k = in->type() ? in->type()->kind() : TypeKind::AnyType;
        if (isTensorValue(in) || op == "where" || op == "masked_fill") continue;
        if (k == TypeKind::FloatType && !isFloatingType(*d))
          d = ScalarType::Float;
        else if (k == TypeKind::IntType && *d == ScalarType::Bool)
          d = ScalarType::Long;
        else if (k == TypeKind::NumberType)
          sameDtype = false;  // a Scalar of unknown kind (a str is div's rounding mode)
      }
      if (isComparison(op)) {
        d = ScalarType::Bool;
      } else if (op == "where" || op == "masked_fill") {
        // where(cond, a, b): a's dtype when a and b agree; masked_fill keeps self's.
        d = op == "masked_fill" ? d0 : std::nullopt;
        if (op == "where" && n.inputs().size() == 3 && dtype(n.input(1)) == dtype(n.input(2)))
          d = dtype(n.input(1));
      } else if (!sameDtype) {
        d.reset();
      } else if ((op == "div" || op == "true_divide") && d && !isFloatingType(*d)) {
        // True division of integers is float; with a rounding mode it stays integral.
        auto mode = n.inputs().size() > 2 ? toIValue(n.input(2)) : std::nullopt;
        if (n.inputs().size() <= 2 || (mode && mode->isNone())) d = ScalarType::Float;
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
  std::vector<const Value*>* journal_ = nullptr;  // facts set in the loop body being inferred
};

}  // namespace

void inferUnobservedFacts(PreparedGraph& out) { Inference(out).block(out.graph->block()); }

}  // namespace torchless::onnx_export
