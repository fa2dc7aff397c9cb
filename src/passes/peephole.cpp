// peephole: local simplifications, as PyTorch's PeepholeOptimize
// (torch/csrc/jit/passes/peephole.cpp, peephole_non_tensor.cpp, peephole_list_idioms.cpp)
// where they apply here:
//   ints:     x + 0, x - 0, 0 + x, x * 1, 1 * x, x // 1 -> x; (x + a) + b -> x + (a+b)
//             (add/mul with a constant first operand are reordered, as PyTorch does)
//   None:     `x is None` / `x is not None` when x cannot be None, `None is None` -> constant;
//             unchecked_unwrap_optional of a value that cannot be None -> the value; a
//             non-constant NoneType output -> the None constant
//   casts:    prim::unchecked_cast whose input already has the type -> the input;
//             prim::isinstance whose input's static type decides it -> the constant;
//             aten::Int/Float/ScalarImplicit(prim::NumToTensor(x)) of the same type -> x
//   tensors:  aten::dim, aten::size(x), aten::size(x, const d), prim::dtype, prim::device,
//             prim::is_cuda -> constants when the tensor type says; aten::t(aten::t(x)) -> x
//             (only when nothing in the graph mutates, as the views then are unobservable)
//   lists:    len, constant-index __getitem__ and prim::ListUnpack of a prim::ListConstruct
//             that nothing mutates -> the length / the element / the elements
//   bools:    `not not x` -> x
//   prim::If: outputs that are the same value in both branches -> that value; a bool output
//             that is True in then and False in else -> the condition; Optional outputs whose
//             branches give non-optional values get the unified type; an If whose two branches
//             are identical -> the then branch, inlined
// then eliminate_dead_code when anything changed. It leaves alone: float arithmetic
// (x + 0.0 is not x for -0.0), int division `/` (it returns float; PyTorch rewrites x / 1 to
// x, we do not), tensor arithmetic, and lists that may be mutated.
//
//   graph(%x : int):                             graph(%x : int):
//     %0 : int = prim::Constant[value=0]()         return (%x)
//     %y : int = aten::add(%x, %0)         ==>
//     return (%y)
#include "passes/node_facts.h"
#include "passes/passes.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace torchless::passes {

const char* const kPeepholeDescription =
    "Local simplifications as PyTorch's PeepholeOptimize: int x+0, x-0, x*1, x//1 and constant "
    "chains; `is None` checks of values that cannot be None; unchecked_cast to the type the "
    "value has; dim/size/dtype/device of tensors whose type says; len/index/unpack of list "
    "literals nothing mutates; `not not x`; If outputs equal in both branches, `c and True`, "
    "identical branches. Leaves float and tensor arithmetic and possibly mutated lists.";

namespace {

bool isIntValue(const Value* v) { return v->type() && v->type()->kind() == TypeKind::IntType; }

const TensorType* tensorTypeOf(const Value* v) {
  return v->type() ? v->type()->cast<TensorType>() : nullptr;
}

// Structural equality of two blocks, values of `b` mapped onto values of `a`.
bool sameBlock(const Block* a, const Block* b,
               std::unordered_map<const Value*, const Value*>& map) {
  if (a->inputs().size() != b->inputs().size()) return false;
  for (size_t i = 0; i < a->inputs().size(); ++i) map[b->inputs()[i]] = a->inputs()[i];
  auto mapped = [&](const Value* v) {
    auto it = map.find(v);
    return it == map.end() ? v : it->second;
  };
  auto ia = a->nodes().begin(), ib = b->nodes().begin();
  for (; ia != a->nodes().end() && ib != b->nodes().end(); ++ia, ++ib) {
    const Node* x = *ia;
    const Node* y = *ib;
    if (x->kind() != y->kind() || x->inputs().size() != y->inputs().size() ||
        x->blocks().size() != y->blocks().size() || !sameOutputTypes(x, y) || !sameAttributes(x, y))
      return false;
    for (size_t i = 0; i < x->inputs().size(); ++i)
      if (mapped(y->input(i)) != x->input(i)) return false;
    for (size_t i = 0; i < x->blocks().size(); ++i)
      if (!sameBlock(x->blocks()[i], y->blocks()[i], map)) return false;
    for (size_t i = 0; i < x->outputs().size(); ++i) map[y->output(i)] = x->output(i);
  }
  if (ia != a->nodes().end() || ib != b->nodes().end()) return false;
  if (a->outputs().size() != b->outputs().size()) return false;
  for (size_t i = 0; i < a->outputs().size(); ++i)
    if (mapped(b->outputs()[i]) != a->outputs()[i]) return false;
  return true;
}

class Peephole {
 public:
  explicit Peephole(Graph& g) : graph_(g), writers_(graphHasWriters(g)) {}

  bool run() {
    optimize(graph_.block());
    if (changed_) eliminateDeadCode(graph_);
    return changed_;
  }

 private:
  void replace(Value* from, Value* to) {
    from->replaceAllUsesWith(to);
    changed_ = true;
  }

  Value* constantBefore(Node* n, const IValue& v) {
    WithInsertPoint guard(n);
    return graph_.insertConstant(v);
  }

  // The constant int operand at `idx` of a binary int op, reordering add/mul so that a
  // constant comes second (PyTorch's checkArithNode).
  std::optional<int64_t> arithConstant(Node* n, size_t idx) {
    if (n->inputs().size() != 2 || !isIntValue(n->input(0)) || !isIntValue(n->input(1)))
      return std::nullopt;
    if ((n->kind() == aten::mul || n->kind() == aten::add) && constantInt(n->input(0)) &&
        !constantInt(n->input(1))) {
      Value* a = n->input(0);
      Value* b = n->input(1);
      n->replaceInput(0, b);
      n->replaceInput(1, a);
      changed_ = true;
    }
    return constantInt(n->input(idx));
  }

  void simplifyAddOrSub(Node* n) {
    auto c = arithConstant(n, 1);
    if (!c) return;
    if (*c == 0) return replace(n->output(), n->input(0));
    Node* dep = n->input(0)->node();
    if ((dep->kind() != aten::add && dep->kind() != aten::sub) || !isIntValue(dep->output()))
      return;
    auto delta = arithConstant(dep, 1);
    if (!delta) return;
    int64_t merged = dep->kind() == n->kind() ? *c + *delta : *c - *delta;
    if (merged == 0) return replace(n->output(), dep->input(0));
    n->replaceInput(0, dep->input(0));
    n->replaceInput(1, constantBefore(n, IValue(merged)));
    changed_ = true;
  }

  void simplifyMulOrFloordiv(Node* n) {
    auto c = arithConstant(n, 1);
    if (c && *c == 1) replace(n->output(), n->input(0));
  }

  // Users that neither mutate the list nor keep an alias of it.
  bool listNotMutated(const Value* list) const {
    if (!writers_) return true;
    for (const Use& u : list->uses()) {
      const Node* user = u.user;
      switch (user->kind()) {
        case aten::len:
        case prim::ListUnpack:
        case prim::Print:
        case aten::format: continue;
        default: break;
      }
      if (user->kind() == prim::Return || !user->blocks().empty()) return false;
      const OpInfo* op = user->maybeOperator();
      if (!op || op->mutates || op->returnsAlias || user->mayWrite()) return false;
    }
    return true;
  }

  void optimizeIf(Node* n) {
    Block* thenB = n->blocks().at(0);
    Block* elseB = n->blocks().at(1);
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      Value* out = n->output(i);
      Value* t = thenB->outputs().at(i);
      Value* f = elseB->outputs().at(i);
      if (!out->hasUses()) continue;
      if (t == f && t->node()->owningBlock() != thenB && t->node()->owningBlock() != elseB) {
        replace(out, t);
        continue;
      }
      if (out->type() && out->type()->kind() == TypeKind::BoolType &&
          constantBool(t).value_or(false) && !constantBool(f).value_or(true)) {
        replace(out, n->input(0));
        continue;
      }
      if (out->type() && out->type()->kind() == TypeKind::OptionalType &&
          t->type()->kind() != TypeKind::OptionalType &&
          f->type()->kind() != TypeKind::OptionalType) {
        if (auto unified = unifyTypes(t->type(), f->type())) {
          if (**unified != *out->type()) {
            out->setType(*unified);
            changed_ = true;
          }
        }
      }
    }
    // Identical branches: the condition does not matter.
    std::unordered_map<const Value*, const Value*> map;
    if (!thenB->nodes().empty() && sameBlock(thenB, elseB, map)) {
      for (auto it = thenB->nodes().begin(); it != thenB->nodes().end();) {
        Node* inner = *it;
        ++it;
        inner->moveBefore(n);
      }
      for (size_t i = 0; i < n->outputs().size(); ++i)
        n->output(i)->replaceAllUsesWith(thenB->outputs().at(i));
      n->destroy();
      changed_ = true;
    }
  }

  void optimizeNode(Node* n) {
    Symbol k = n->kind();
    // A value that can only be None is the None constant.
    if (k != prim::Constant) {
      for (Value* out : n->outputs()) {
        if (out->type() && out->type()->kind() == TypeKind::NoneType && out->hasUses()) {
          Value* none = constantBefore(n, IValue());
          replace(out, none);
        }
      }
    }
    switch (k) {
      case prim::If: return optimizeIf(n);
      case aten::add:
      case aten::sub: return simplifyAddOrSub(n);
      case aten::mul: return simplifyMulOrFloordiv(n);
      case aten::__is__:
      case aten::__isnot__: {
        if (n->inputs().size() != 2) return;
        bool is = k == aten::__is__;
        if (mustBeNone(n->input(0)) && mustBeNone(n->input(1)))
          return replace(n->output(), constantBefore(n, IValue(is)));
        for (size_t i : {0, 1})
          if (mustBeNone(n->input(i)) && mustNotBeNone(n->input(1 - i)))
            return replace(n->output(), constantBefore(n, IValue(!is)));
        return;
      }
      case prim::unchecked_unwrap_optional:
        if (mustNotBeNone(n->input(0))) replace(n->output(), n->input(0));
        return;
      case prim::unchecked_cast: {
        TypePtr in = unshapedType(n->input()->type());
        TypePtr out = unshapedType(n->output()->type());
        if (in->isSubtypeOf(*out)) replace(n->output(), n->input());
        return;
      }
      case aten::Int:
      case aten::Float:
      case aten::ScalarImplicit: {
        if (n->inputs().size() != 1) return;
        Node* in = n->input()->node();
        if (in->kind() == prim::NumToTensor && *n->output()->type() == *in->input()->type())
          replace(n->output(), in->input());
        return;
      }
      case aten::__not__: {
        Node* in = n->input()->node();
        if (in->kind() == aten::__not__ && in->inputs().size() == 1)
          replace(n->output(), in->input());
        return;
      }
      case aten::len: {
        if (n->inputs().size() != 1) return;
        Node* in = n->input()->node();
        if (in->kind() == prim::ListConstruct && listNotMutated(n->input()))
          replace(n->output(), constantBefore(n, IValue(int64_t(in->inputs().size()))));
        return;
      }
      case aten::__getitem__: {
        if (n->inputs().size() != 2) return;
        Node* in = n->input(0)->node();
        auto idx = constantInt(n->input(1));
        if (in->kind() != prim::ListConstruct || !idx || !listNotMutated(n->input(0))) return;
        int64_t len = static_cast<int64_t>(in->inputs().size());
        int64_t i = *idx < 0 ? *idx + len : *idx;
        if (i >= 0 && i < len) replace(n->output(), in->input(static_cast<size_t>(i)));
        return;
      }
      case prim::ListUnpack: {
        Node* in = n->input()->node();
        if (in->kind() != prim::ListConstruct || in->inputs().size() != n->outputs().size() ||
            !listNotMutated(n->input()))
          return;
        for (size_t i = 0; i < n->outputs().size(); ++i) replace(n->output(i), in->input(i));
        return;
      }
      case aten::size: {
        const TensorType* tt = tensorTypeOf(n->input(0));
        if (!tt || !tt->sizes()) return;
        const auto& sizes = *tt->sizes();
        if (n->inputs().size() == 1) {
          std::vector<IValue> xs;
          for (const auto& s : sizes) {
            if (!s) return;
            xs.emplace_back(*s);
          }
          replace(n->output(), constantBefore(n, IValue(ListImpl::create(IntType::get(), xs))));
        } else if (n->inputs().size() == 2 && isIntValue(n->input(1))) {
          auto d = constantInt(n->input(1));
          if (!d) return;
          int64_t rank = static_cast<int64_t>(sizes.size());
          int64_t dim = *d < 0 ? *d + rank : *d;
          if (dim < 0 || dim >= rank || !sizes[static_cast<size_t>(dim)]) return;
          replace(n->output(), constantBefore(n, IValue(*sizes[static_cast<size_t>(dim)])));
        }
        return;
      }
      case prim::isinstance: {
        // The static type decides when it is a subtype of a candidate (true), or a concrete
        // type that is none (false: a Tensor is never a list; a list's and a dict's run-time
        // type is their declared one). Not a tuple's: its run-time type is built from its
        // elements' (a Tuple[Optional[Tensor], int] may hold a Tuple[Tensor, int]).
        TypePtr t = n->input()->type() ? unshapedType(n->input()->type()) : nullptr;
        if (!t) return;
        bool any = false;
        for (const TypePtr& c : n->tys(attr::types)) any = any || t->isSubtypeOf(*c);
        static const std::unordered_set<TypeKind> concrete = {
            TypeKind::TensorType, TypeKind::ListType,     TypeKind::DictType,
            TypeKind::IntType,    TypeKind::FloatType,    TypeKind::BoolType,
            TypeKind::StringType, TypeKind::DeviceObjType};
        if (any || concrete.count(t->kind())) replace(n->output(), constantBefore(n, IValue(any)));
        return;
      }
      case prim::dtype: {
        const TensorType* tt = tensorTypeOf(n->input());
        if (tt && tt->scalarType())
          replace(n->output(), constantBefore(n, IValue(int64_t(*tt->scalarType()))));
        return;
      }
      case prim::device: {
        const TensorType* tt = tensorTypeOf(n->input());
        if (tt && tt->device()) replace(n->output(), constantBefore(n, IValue(*tt->device())));
        return;
      }
      case prim::is_cuda: {
        const TensorType* tt = tensorTypeOf(n->input());
        if (tt && tt->device())
          replace(n->output(), constantBefore(n, IValue(tt->device()->type == DeviceType::CUDA)));
        return;
      }
      default: break;
    }
    if (k == Symbol::aten("floordiv")) return simplifyMulOrFloordiv(n);
    if (k == Symbol::aten("dim") && n->inputs().size() == 1) {
      const TensorType* tt = tensorTypeOf(n->input());
      if (tt && tt->dim()) replace(n->output(), constantBefore(n, IValue(int64_t(*tt->dim()))));
      return;
    }
    if (k == Symbol::aten("_unwrap_optional") && mustNotBeNone(n->input(0))) {
      replace(n->output(), n->input(0));
      return;
    }
    if (k == Symbol::aten("t") && !writers_ && n->inputs().size() == 1) {
      Node* in = n->input()->node();
      if (in->kind() == k && in->inputs().size() == 1) replace(n->output(), in->input());
    }
  }

  void optimize(Block* block) {
    for (auto it = block->nodes().begin(); it != block->nodes().end();) {
      Node* n = *it;
      ++it;  // optimizeIf may destroy n
      for (Block* b : n->blocks()) optimize(b);
      optimizeNode(n);
    }
  }

  Graph& graph_;
  bool writers_;
  bool changed_ = false;
};

}  // namespace

bool peephole(Graph& graph) { return Peephole(graph).run(); }

}  // namespace torchless::passes
