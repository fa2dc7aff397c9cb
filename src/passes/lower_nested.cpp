// lower_nested: nn.TransformerEncoder's sparsity fast path on a padded batch, without nested
// tensors. Traced under no_grad (and freezing the scripted one folds to the same straight line),
// TransformerEncoder.forward with a src_key_padding_mask records
//   %keep : Tensor = aten::logical_not(%pad)
//   %n0 : Tensor = aten::_nested_tensor_from_mask(%x, %keep, %check)   # a NestedTensor
//   %n1 : Tensor = aten::_transformer_encoder_layer_fwd(%n0, ..., %none, %none)
//   ...
//   %y : Tensor = aten::to_padded_tensor(%nk, %padding, %output_size)
// Each layer runs on the sequences without their padding, which is what the same layer
// computes on the padded batch with the key padding mask (mask_type 1: padded keys take no
// attention; every position's layer norm and feed-forward are its own). The chain becomes
//   %lengths : Tensor = aten::sum(%keep, [1], False, None)
//   %pad2 : Tensor = aten::ge(aten::arange(x.size(1))[None, :], %lengths[:, None])
//   %d1 : Tensor = aten::_transformer_encoder_layer_fwd(%x, ..., %pad2, 1)
//   ...
//   %f : Tensor = aten::masked_fill(%dk, aten::unsqueeze(%pad2, -1), %padding)
//   %y : Tensor = aten::slice(%f, 1, 0, int(max(%lengths)), 1)
// which is to_padded_tensor's result: padded positions hold `padding`, and dim 1 is the
// longest sequence's length (PyTorch pads to the longest, not to the input's length).
// With an output_size (PyTorch 2 passes src.size()), each dim is padded to its size (an
// output_size smaller than the longest sequence, PyTorch's error, crops here).
// Only that exact chain is rewritten (each nested value used once, by the next layer or by
// to_padded_tensor); anything else keeps the nested ops, which the
// interpreter runs (Note [Nested tensors] in core/tensor.h). Sequence i is x[i, :lengths[i]]
// with lengths = keep.sum(1), as PyTorch's kernel takes it when mask_check is False (what
// TransformerEncoder passes); with mask_check True a mask that is not left-aligned is
// PyTorch's error, here it is read the same way.
#include "passes/passes.h"

#include <functional>

namespace torchless::passes {

const char* const kLowerNestedTensorsDescription =
    "Rewrites nn.TransformerEncoder's nested-tensor fast path (_nested_tensor_from_mask, "
    "_transformer_encoder_layer_fwd on the nested value, to_padded_tensor) into the same "
    "layers on the padded batch with a key padding mask, padded positions filled and dim 1 "
    "cut to the longest sequence, as to_padded_tensor gives them.";

namespace {

bool isNoneConstant(const Value* v) {
  return v->node()->kind() == prim::Constant && v->type()->kind() == TypeKind::NoneType;
}

bool lowerOne(Graph& g, Node* from) {
  static const Symbol kLayer = Symbol::aten("_transformer_encoder_layer_fwd");
  static const Symbol kPadded = Symbol::aten("to_padded_tensor");
  if (from->inputs().size() != 3) return false;
  std::vector<Node*> layers;
  Value* cur = from->output();
  Node* end = nullptr;
  while (!end) {
    if (cur->uses().size() != 1) return false;
    const Use& u = cur->uses()[0];
    Node* user = u.user;
    if (u.offset != 0 || user->owningBlock() != from->owningBlock()) return false;
    if (user->kind() == kLayer && user->inputs().size() == 20 && isNoneConstant(user->input(18))) {
      layers.push_back(user);
      cur = user->output();
    } else if (user->kind() == kPadded && user->inputs().size() == 3) {
      end = user;
    } else {
      return false;
    }
  }
  Value* x = from->input(0);
  Value* keep = from->input(1);
  auto op = [&](const char* name, const std::vector<Value*>& inputs, TypePtr type) {
    Node* c = g.create(Symbol::aten(name), inputs);
    c->output()->setType(std::move(type));
    c->setSourceRange(from->sourceRange());
    c->setScope(from->scope());
    g.insertNode(c);
    return c->output();
  };
  // Sequence i is x[i, :lengths[i]] (mask_check=False takes the first lengths[i] rows
  // wherever the mask's trues are), so the padding is every position j >= lengths[i].
  Value* pad = nullptr;
  Value* lengths = nullptr;
  {
    WithInsertPoint guard(from);
    Value* one = g.insertConstant(IValue(int64_t{1}));
    Value* zero = g.insertConstant(IValue(int64_t{0}));
    Value* no = g.insertConstant(IValue(false));
    Value* dims = g.insertConstant(IValue(ListImpl::create(IntType::get(), {IValue(int64_t{1})})));
    Value* none = g.insertNode(g.createNone())->output();
    lengths = op("sum", {keep, dims, no, none}, TensorType::get());
    Value* positions = op("arange", {op("size", {x, one}, IntType::get()), none, none, none, none},
                          TensorType::get());
    pad = op("ge",
             {op("unsqueeze", {positions, zero}, TensorType::get()),
              op("unsqueeze", {lengths, one}, TensorType::get())},
             TensorType::get());
  }
  Value* one = nullptr;
  {
    WithInsertPoint guard(layers.empty() ? end : layers.front());
    one = g.insertConstant(IValue(int64_t{1}));
  }
  Value* dense = x;
  for (Node* l : layers) {
    l->replaceInput(0, dense);
    l->replaceInput(18, pad);
    l->replaceInput(19, one);
    dense = l->output();
  }
  WithInsertPoint guard(end);
  Value* minusOne = g.insertConstant(IValue(int64_t{-1}));
  Value* zero = g.insertConstant(IValue(int64_t{0}));
  Value* filled =
      op("masked_fill", {dense, op("unsqueeze", {pad, minusOne}, TensorType::get()), end->input(1)},
         TensorType::get());
  Value* y = nullptr;
  if (isNoneConstant(end->input(2))) {
    Value* longest = op("Int", {op("max", {lengths}, TensorType::get())}, IntType::get());
    y = op("slice", {filled, one, zero, longest, one}, TensorType::get());
  } else {
    // output_size (PyTorch 2's TransformerEncoder passes src.size()): each dim padded with
    // `padding` to its size, dim 1 from the longest sequence's length.
    Value* longest = op("Int", {op("max", {lengths}, TensorType::get())}, IntType::get());
    Value* cut = op("slice", {filled, one, zero, longest, one}, TensorType::get());
    std::vector<Value*> widths;
    for (int64_t d = 2; d >= 0; --d) {
      Value* dim = g.insertConstant(IValue(d));
      Value* want = op("__getitem__", {end->input(2), dim}, IntType::get());
      widths.push_back(zero);
      widths.push_back(op("sub", {want, op("size", {cut, dim}, IntType::get())}, IntType::get()));
    }
    Node* list = g.insertNode(g.createList(IntType::get(), widths));
    y = op("constant_pad_nd", {cut, list->output(), end->input(1)}, TensorType::get());
  }
  end->output()->replaceAllUsesWith(y);
  end->destroy();
  from->destroy();
  return true;
}

bool lowerBlock(Graph& g, Block* b) {
  static const Symbol kFromMask = Symbol::aten("_nested_tensor_from_mask");
  bool changed = false;
  std::vector<Node*> found;
  for (Node* n : b->nodes()) {
    for (Block* sub : n->blocks()) changed |= lowerBlock(g, sub);
    if (n->kind() == kFromMask) found.push_back(n);
  }
  for (Node* n : found) changed |= lowerOne(g, n);
  return changed;
}

}  // namespace

bool lowerNestedTensors(Graph& graph) { return lowerBlock(graph, graph.block()); }

// Note [Values that may be nested]
// nn.TransformerEncoder packs its batch into a nested tensor when the padding mask is
// left-aligned (a fact of the mask's values, Note [Nested tensors] in core/tensor.h), so in a
// scripted encoder the value reaching its layers is nested on one call and dense on the next,
// merged through prim::If outputs. An engine takes dense tensors of planned sizes; a node that
// reads a value which may be nested stays with the interpreter, whose kernels read the
// lengths. Maybe-nested: the outputs of aten::_nested_tensor_from_mask, and what is computed
// from them (If and Loop outputs included) up to aten::to_padded_tensor; numbers read from them
// (dim, size) are plain. A frozen traced encoder has none left: lowerNestedTensors rewrote its
// chain.
std::unordered_set<const Value*> valuesThatMayBeNested(const Graph& graph) {
  static const Symbol kFromMask = Symbol::aten("_nested_tensor_from_mask");
  static const Symbol kPadded = Symbol::aten("to_padded_tensor");
  std::unordered_set<const Value*> nested;
  auto carries = [](const Value* v) {
    switch (v->type()->kind()) {
      case TypeKind::IntType:
      case TypeKind::FloatType:
      case TypeKind::BoolType:
      case TypeKind::StringType:
      case TypeKind::DeviceObjType:
      case TypeKind::NoneType: return false;
      default: return true;
    }
  };
  bool grew = true;
  std::function<void(const Block*)> walk = [&](const Block* b) {
    for (const Node* n : b->nodes()) {
      for (const Block* sub : n->blocks()) walk(sub);
      auto mark = [&](const Value* v) {
        if (carries(v) && nested.insert(v).second) grew = true;
      };
      if (n->kind() == kFromMask) {
        mark(n->output());
        continue;
      }
      if (n->kind() == kPadded) continue;
      if (n->kind() == prim::If) {
        for (size_t i = 0; i < n->outputs().size(); ++i)
          for (const Block* sub : n->blocks())
            if (nested.count(sub->outputs()[i])) mark(n->outputs()[i]);
        continue;
      }
      if (n->kind() == prim::Loop) {
        const Block* body = n->blocks().at(0);
        for (size_t i = 0; i < n->outputs().size(); ++i)
          if (nested.count(n->input(i + 2)) || nested.count(body->outputs().at(i + 1))) {
            mark(body->inputs().at(i + 1));
            mark(n->outputs()[i]);
          }
        continue;
      }
      bool reads = false;
      for (const Value* v : n->inputs()) reads = reads || nested.count(v) > 0;
      if (reads)
        for (const Value* o : n->outputs()) mark(o);
    }
  };
  for (int round = 0; grew && round < 8; ++round) {
    grew = false;
    walk(graph.block());
  }
  return nested;
}

}  // namespace torchless::passes
