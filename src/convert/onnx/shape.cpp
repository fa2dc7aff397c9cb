// ONNX converters: shapes, views, indexing, lists and the shape arithmetic of traced graphs
// (src/ops/shape.cpp's family). Values known at export time are folded before conversion (see
// prepare.h); what reaches these converters is either a constant or follows a dynamic axis,
// in which case ints are 0-d int64 tensors and int lists 1-d int64 tensors.
#include "convert/onnx/onnx_ctx.h"
#include "convert/onnx/prepare.h"
#include "runtime/kernel.h"

#include <algorithm>
#include <limits>

namespace torchless::onnx_export {

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// An int[] argument as a 1-d int64 tensor (constant or computed).
std::string intListTensor(OnnxCtx& ctx, const convert::ArgValue<std::string>& a) {
  if (a.isIValue()) return ctx.constInt64s(a.unwrapToIntList());
  return ctx.castTo(a.unwrapToTensor(), ctx.dtypeOf(a.value()), ScalarType::Long);
}

// Records that every element of the tensor list `list` has `dtype` and `rank` (ValueFacts).
void setElementFacts(OnnxCtx& ctx, const Value* list, std::optional<ScalarType> dtype,
                     std::optional<int64_t> rank,
                     std::optional<std::vector<int64_t>> sizes = std::nullopt) {
  ValueFacts f;
  f.dtype = dtype;
  f.rank = rank;
  f.sizes = std::move(sizes);
  ctx.setFacts(list, f);
}

void identity(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ctx.setOutput(n, 0, args[0].unwrapToTensor());
  // Inside Loop / If bodies nothing was observed: the output is the input, and so are its facts.
  const Value* in = args[0].value();
  if (!ctx.rankOf(n.output()) && ctx.rankOf(in)) {
    ValueFacts f;
    f.dtype = ctx.dtypeOf(in);
    f.sizes = ctx.sizesOf(in);
    f.rank = ctx.rankOf(in);
    ctx.setFacts(n.output(), f);
  }
}

// view / reshape -> Reshape (https://onnx.ai/onnx/operators/onnx__Reshape.html).
void convertReshape(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ctx.setOutput(n, 0, ctx.op("Reshape", {args[0].unwrapToTensor(), intListTensor(ctx, args[1])}));
  // Inside Loop / If bodies nothing was observed: the rank is the shape list's length.
  if (!ctx.rankOf(n.output()) && args[1].isIValue()) {
    ValueFacts f;
    f.dtype = ctx.dtypeOf(args[0].value());
    f.rank = static_cast<int64_t>(args[1].unwrapToIntList().size());
    ctx.setFacts(n.output(), f);
  }
}

// flatten(start, end) -> Flatten from 1 to the last dim; Reshape to [-1] from 0; else Reshape
// with 0 (copy) before start, the merged dims' product, and the dims after end. No -1 there: ONNX
// Runtime cannot infer a -1 when the tensor is empty (a detection level with no box left: [0, 1, 4]
// flattened from 1 is [0, 4]), and a 0 copies the input's dim. Dims that follow a dynamic axis (or
// sizes not known, inside a loop body) come from Shape: the product by ReduceProd, the trailing
// dims by Slice.
void convertFlatten(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const Value* in = args[0].value();
  int64_t rank = ctx.expectRank(n, in);
  std::string x = args[0].unwrapToTensor();
  if (rank == 0) {
    ctx.setOutput(n, 0, ctx.op("Reshape", {x, ctx.constInt64s({1})}));
    return;
  }
  int64_t start = wrapDim(args[1].unwrapToInt(), rank), end = wrapDim(args[2].unwrapToInt(), rank);
  if (start > end) args[1].fail("at most end_dim", std::to_string(start));
  if (start == end) {
    ctx.setOutput(n, 0, x);
    return;
  }
  if (start == 1 && end == rank - 1) {  // onnx::Flatten, as torch.onnx exports it
    ctx.setOutput(n, 0, ctx.op("Flatten", {x}, {attrI("axis", 1)}));
    return;
  }
  if (start == 0 && end == rank - 1) {  // one -1 and no other dim: defined for empty tensors too
    ctx.setOutput(n, 0, ctx.op("Reshape", {x, ctx.constInt64s({-1})}));
    return;
  }
  const auto sizes = ctx.sizesOf(in);
  auto known = [&](int64_t from, int64_t to) {  // dims [from, to) static
    if (!sizes) return false;
    for (int64_t d = from; d < to; ++d)
      if (ctx.isDynamicDim(in, d)) return false;
    return true;
  };
  std::string shapeOfX;
  auto shapeSlice = [&](int64_t from, int64_t to) {
    if (shapeOfX.empty()) shapeOfX = ctx.op("Shape", {x});
    return ctx.op("Slice", {shapeOfX, ctx.constInt64s({from}), ctx.constInt64s({to})});
  };
  std::vector<std::string> parts;
  std::vector<int64_t> head(start, 0);
  if (known(start, end + 1)) {
    int64_t merged = 1;
    for (int64_t d = start; d <= end; ++d) merged *= (*sizes)[d];
    head.push_back(merged);
  } else {
    if (!head.empty()) parts.push_back(ctx.constInt64s(head));
    head.clear();
    parts.push_back(reduce(ctx, "Prod", shapeSlice(start, end + 1), {}, true));
  }
  if (end + 1 < rank && known(end + 1, rank)) {
    for (int64_t d = end + 1; d < rank; ++d) head.push_back((*sizes)[d]);
    parts.push_back(ctx.constInt64s(head));
  } else {
    if (!head.empty()) parts.push_back(ctx.constInt64s(head));
    if (end + 1 < rank) parts.push_back(shapeSlice(end + 1, rank));
  }
  const std::string shape =
      parts.size() == 1 ? parts[0] : ctx.op("Concat", parts, {attrI("axis", 0)});
  ctx.setOutput(n, 0, ctx.op("Reshape", {x, shape}));
}

// unflatten(self, dim, sizes) (nn.Unflatten) -> Reshape to self's dims before dim, `sizes`
// (one may be -1), then self's dims after dim, those taken from Shape so that dynamic axes stay.
void convertUnflatten(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const int64_t rank = ctx.expectRank(n, args[0].value());
  const int64_t dim = wrapDim(args[1].unwrapToInt(), std::max<int64_t>(rank, 1));
  std::string x = args[0].unwrapToTensor();
  std::vector<std::string> parts;
  const std::string shape = ctx.op("Shape", {x});
  if (dim > 0)
    parts.push_back(ctx.op(
        "Slice", {shape, ctx.constInt64s({0}), ctx.constInt64s({dim}), ctx.constInt64s({0})}));
  parts.push_back(ctx.constInt64s(args[2].unwrapToIntList()));
  if (dim + 1 < rank)
    parts.push_back(ctx.op("Slice", {shape, ctx.constInt64s({dim + 1}), ctx.constInt64s({rank}),
                                     ctx.constInt64s({0})}));
  std::string target = parts.size() == 1 ? parts[0] : ctx.op("Concat", parts, {attrI("axis", 0)});
  ctx.setOutput(n, 0, ctx.op("Reshape", {x, target}));
}

// channel_shuffle(self [N, C, *], groups) (nn.ChannelShuffle): [N, g, C / g, rest] transposed
// to [N, C / g, g, rest] and back to self's shape, as ATen's math_channel_shuffle.
void convertChannelShuffle(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const int64_t rank = ctx.expectRank(n, args[0].value());
  if (rank < 3) args[0].fail("a tensor of rank 3 or more", fmt::format("rank {}", rank));
  auto sizes = ctx.expectSizes(n, args[0].value());
  const int64_t g = args[1].unwrapToInt();
  if (g <= 0 || sizes[1] % g != 0 || ctx.isDynamicDim(args[0].value(), 1))
    args[1].fail(fmt::format("a group count dividing the {} static channels", sizes[1]),
                 std::to_string(g));
  std::string x = args[0].unwrapToTensor();
  std::string y = ctx.op("Reshape", {x, ctx.constInt64s({0, g, sizes[1] / g, -1})});
  y = ctx.op("Transpose", {y}, {attrIs("perm", {0, 2, 1, 3})});
  ctx.setOutput(n, 0, ctx.op("Reshape", {y, ctx.op("Shape", {x})}));
}

// transpose / t / permute -> Transpose(perm).
void convertTranspose(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  int64_t rank = ctx.expectRank(n, args[0].value());
  std::vector<int64_t> perm(rank);
  for (int64_t i = 0; i < rank; ++i) perm[i] = i;
  if (n.kind() == Symbol::aten("t")) {
    if (rank < 2) return identity(ctx, n, args);
    std::swap(perm[0], perm[1]);
  } else if (n.kind() == Symbol::aten("permute")) {
    auto dims = args[1].unwrapToIntList();
    for (int64_t i = 0; i < rank; ++i) perm[i] = wrapDim(dims.at(i), rank);
  } else {
    if (rank == 0) return identity(ctx, n, args);
    std::swap(perm[wrapDim(args[1].unwrapToInt(), rank)],
              perm[wrapDim(args[2].unwrapToInt(), rank)]);
  }
  ctx.setOutput(n, 0, ctx.op("Transpose", {args[0].unwrapToTensor()}, {attrIs("perm", perm)}));
}

// squeeze / squeeze.dim -> Squeeze (axes input from 13); squeezing a dim of size != 1 is a no-op.
void convertSqueeze(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string x = args[0].unwrapToTensor();
  auto sizes = ctx.sizesOf(args[0].value());
  if (args.size() == 1) {
    if (!sizes) return ctx.setOutput(n, 0, squeeze(ctx, x, {}));
    std::vector<int64_t> axes;
    for (size_t d = 0; d < sizes->size(); ++d)
      if ((*sizes)[d] == 1) axes.push_back(static_cast<int64_t>(d));
    return ctx.setOutput(n, 0, axes.empty() ? x : squeeze(ctx, x, axes));
  }
  int64_t rank = ctx.expectRank(n, args[0].value());
  if (rank == 0) return ctx.setOutput(n, 0, x);
  int64_t dim = wrapDim(args[1].unwrapToInt(), rank);
  if (sizes && (*sizes)[dim] != 1) return ctx.setOutput(n, 0, x);
  ctx.setOutput(n, 0, squeeze(ctx, x, {dim}));
}

void convertUnsqueeze(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  int64_t rank = ctx.expectRank(n, args[0].value());
  ctx.setOutput(
      n, 0, unsqueeze(ctx, args[0].unwrapToTensor(), {wrapDim(args[1].unwrapToInt(), rank + 1)}));
}

// expand(size) -> Expand; -1 keeps the input's dim, which is what 1 means to Expand.
void convertExpand(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string shape;
  if (args[1].isIValue()) {
    auto sizes = args[1].unwrapToIntList();
    for (auto& s : sizes)
      if (s == -1) s = 1;
    shape = ctx.constInt64s(sizes);
  } else {
    shape = ctx.op("Abs", {intListTensor(ctx, args[1])});  // -1 -> 1
  }
  ctx.setOutput(n, 0, ctx.op("Expand", {args[0].unwrapToTensor(), shape}));
}

// to(dtype) / to(device[, dtype]) / type_as / to(other) -> Cast (or nothing when the dtype does
// not change).
void convertTo(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::optional<ScalarType> to;
  const std::string& overload = args.op() ? args.op()->schema.overloadName() : std::string();
  if (n.kind() == Symbol::aten("type_as") || overload == "other") {
    to = ctx.dtypeOf(args[1].value());
  } else if (overload == "dtype" || overload == "prim_dtype" || overload == "dtype_layout") {
    if (!args[1].isNone()) to = scalarTypeFromInt(args[1].unwrapToInt());
  } else if (overload == "device" || overload == "prim_Device") {
    // (a CPU tensor stays on the CPU; to(device, dtype) casts)
    if (!args[2].isNone()) to = scalarTypeFromInt(args[2].unwrapToInt());
  }
  if (!to) to = ctx.dtypeOf(n.output());
  std::string x = args[0].unwrapToTensor();
  ctx.setOutput(n, 0, to ? ctx.castTo(x, ctx.dtypeOf(args[0].value()), *to) : x);
}

// Gives `to` (a list, or a tensor made from a list's elements) the dtype and rank (plus
// `extraRank`) of list `from`'s elements, unless the example run told its own.
void inheritElementFacts(OnnxCtx& ctx, const Value* to, const Value* from, int64_t extraRank = 0) {
  if (ctx.factsOf(to)) return;
  ValueFacts f;
  f.dtype = ctx.dtypeOf(from);
  if (auto r = ctx.rankOf(from)) f.rank = *r + extraRank;
  if (f.dtype || f.rank) ctx.setFacts(to, f);
}

// cat -> Concat; stack -> Unsqueeze each, Concat.
void convertCat(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  if (ctx.isSequence(args[0].value())) {
    // A list grown at run time -> ConcatFromSequence (new_axis for stack).
    const bool stack = n.kind() == Symbol::aten("stack");
    ctx.setOutput(
        n, 0,
        ctx.op("ConcatFromSequence", {ctx.toTensor(args[0].value())},
               {attrI("axis", args[1].unwrapToInt(0)), attrI("new_axis", stack ? 1 : 0)}));
    inheritElementFacts(ctx, n.output(), args[0].value(), stack ? 1 : 0);
    return;
  }
  auto xs = args[0].unwrapToTensorList();
  const Value* list = args[0].value();
  // The elements' rank (stack's output has one more). cat skips the rank of 0-d elements (its
  // legacy empty inputs are 1-d); stack takes them (stacking scalars).
  const bool stack = n.kind() == Symbol::aten("stack");
  int64_t rank = -1;
  if (list->node()->kind() == prim::ListConstruct)
    for (const Value* v : list->node()->inputs())
      if (auto r = ctx.rankOf(v); r && (*r > 0 || stack)) rank = *r;
  if (rank < 0) rank = ctx.expectRank(n, n.output()) - (stack ? 1 : 0);
  int64_t dim = args[1].unwrapToInt(0);
  if (stack) {
    dim = wrapDim(dim, rank + 1);
    for (auto& x : xs) x = unsqueeze(ctx, x, {dim});
  } else {
    dim = wrapDim(dim, rank);
  }
  ctx.setOutput(n, 0, xs.size() == 1 ? xs[0] : ctx.op("Concat", xs, {attrI("axis", dim)}));
}

// Whether list `v` (split / unbind / chunk's result) has its length follow a dynamic axis of
// `x` along `dim`, and is used as a list (not unpacked to a fixed number of values): then it
// is an ONNX sequence from SplitToSequence, its length known only at run time.
bool splitsToSequence(const OnnxCtx& ctx, const Value* x, int64_t dim, const Value* v) {
  if (!ctx.isDynamicDim(x, dim)) return false;
  for (const Use& u : v->uses())
    if (u.user->kind() == prim::ListUnpack) return false;
  return true;
}

// split / split_with_sizes / chunk -> Split with a sizes input (opset 13+): a tensor list.
void convertSplit(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  auto sizes = ctx.expectSizes(n, args[0].value());
  int64_t rank = static_cast<int64_t>(sizes.size());
  int64_t dim = wrapDim(args[2].unwrapToInt(0), rank);
  std::vector<int64_t> parts;
  const std::string name(n.kind().toUnqualString());
  const bool chunk = name == "chunk" || name == "unsafe_chunk";
  const bool bySize = !chunk && args[1].isIValue() && args[1].unwrapToIValue().isInt();
  if ((chunk || bySize) && splitsToSequence(ctx, args[0].value(), dim, n.output())) {
    // Pieces of one size (the last one smaller) along a dynamic axis: SplitToSequence with a
    // 0-d split; chunk's size is ceil(size / chunks), computed at run time.
    std::string x = args[0].unwrapToTensor();
    std::string each;
    if (chunk) {
      const int64_t chunks = args[1].unwrapToInt();
      std::string size = ctx.op(
          "Gather",
          {ctx.op("Shape", {x}), ctx.constScalar(static_cast<double>(dim), ScalarType::Long)},
          {attrI("axis", 0)});
      each = ctx.op("Div", {ctx.op("Add", {size, ctx.constScalar(static_cast<double>(chunks - 1),
                                                                 ScalarType::Long)}),
                            ctx.constScalar(static_cast<double>(chunks), ScalarType::Long)});
    } else {
      each = ctx.constScalar(static_cast<double>(args[1].unwrapToInt()), ScalarType::Long);
    }
    ctx.setOutput(n, 0, ctx.op("SplitToSequence", {x, each}, {attrI("axis", dim)}));
    ctx.markSequence(n.output());
    return setElementFacts(ctx, n.output(), ctx.dtypeOf(args[0].value()), rank);
  }
  if (chunk) {
    int64_t chunks = args[1].unwrapToInt();
    int64_t each = (sizes[dim] + chunks - 1) / chunks;
    for (int64_t left = sizes[dim]; left > 0; left -= each) parts.push_back(std::min(each, left));
  } else if (bySize) {
    int64_t each = args[1].unwrapToInt();
    for (int64_t left = sizes[dim]; left > 0; left -= each) parts.push_back(std::min(each, left));
    if (parts.empty()) parts.push_back(0);
  } else if (!args[1].isIValue() && args[1].value()->node()->kind() == prim::ListConstruct) {
    // split_with_sizes by sizes computed at run time (detection heads split their pooled
    // boxes by each image's count): as many pieces as the list has, sized at run time.
    const Value* list = args[1].value();
    parts.assign(list->node()->inputs().size(), 0);
    auto outs = ctx.opN("Split",
                        {args[0].unwrapToTensor(),
                         ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(list), ScalarType::Long)},
                        parts.size(), {attrI("axis", dim)});
    ctx.setTensorList(n.output(), outs);
    return setElementFacts(ctx, n.output(), ctx.dtypeOf(args[0].value()), rank);
  } else {
    parts = args[1].unwrapToIntList();
  }
  std::string splitSizes = ctx.constInt64s(parts);
  if ((chunk || bySize) && parts.size() > 1 && ctx.isDynamicDim(args[0].value(), dim)) {
    // Unpacked into the example's number of pieces along a dynamic axis: each piece's size is
    // computed at run time (chunk: ceil(size / chunks); split: the given size), the last one
    // takes the rest (RAFT's `fmap1, fmap2 = torch.chunk(fmaps, 2, dim=0)` on a dynamic batch).
    const auto k = static_cast<int64_t>(parts.size());
    std::string size =
        ctx.op("Gather", {ctx.op("Shape", {args[0].unwrapToTensor()}), ctx.constInt64s({dim})},
               {attrI("axis", 0)});
    std::string each =
        chunk ? ctx.op("Div", {ctx.op("Add", {size, ctx.constInt64s({args[1].unwrapToInt() - 1})}),
                               ctx.constInt64s({args[1].unwrapToInt()})})
              : ctx.constInt64s({args[1].unwrapToInt()});
    std::string head = ctx.op("Expand", {each, ctx.constInt64s({k - 1})});
    std::string last = ctx.op("Sub", {size, ctx.op("Mul", {each, ctx.constInt64s({k - 1})})});
    splitSizes = ctx.op("Concat", {head, last}, {attrI("axis", 0)});
  }
  auto outs =
      ctx.opN("Split", {args[0].unwrapToTensor(), splitSizes}, parts.size(), {attrI("axis", dim)});
  ctx.setTensorList(n.output(), outs);
  setElementFacts(ctx, n.output(), ctx.dtypeOf(args[0].value()), rank);
}

// slice(dim, start, end, step) -> Slice; a slice over everything is nothing.
void convertSlice(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string x = args[0].unwrapToTensor();
  int64_t rank = ctx.expectRank(n, args[0].value());
  int64_t dim = wrapDim(args[1].unwrapToInt(0), rank);
  int64_t step = args[4].unwrapToInt(1);
  if (args[2].isIValue() && args[3].isIValue()) {
    int64_t start = args[2].unwrapToInt(0), end = args[3].unwrapToInt(kInt64Max);
    auto sizes = ctx.sizesOf(args[0].value());
    bool all =
        start == 0 && step == 1 &&
        (end == kInt64Max || (sizes && !ctx.isDynamic(args[0].value()) && end >= (*sizes)[dim]));
    if (all) return ctx.setOutput(n, 0, x);
  }
  std::string starts = args[2].isNone() ? ctx.constInt64s({0}) : intAsList(ctx, args[2]);
  std::string ends = args[3].isNone() ? ctx.constInt64s({kInt64Max}) : intAsList(ctx, args[3]);
  ctx.setOutput(
      n, 0, ctx.op("Slice", {x, starts, ends, ctx.constInt64s({dim}), ctx.constInt64s({step})}));
}

// narrow(dim, start, length) -> Slice(start, start + length).
void convertNarrow(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  int64_t rank = ctx.expectRank(n, args[0].value());
  int64_t dim = wrapDim(args[1].unwrapToInt(), rank);
  int64_t start = args[2].unwrapToInt(), length = args[3].unwrapToInt();
  ctx.setOutput(n, 0,
                ctx.op("Slice", {args[0].unwrapToTensor(), ctx.constInt64s({start}),
                                 ctx.constInt64s({start + length}), ctx.constInt64s({dim})}));
}

// select(dim, index) -> Gather with a 0-d index (drops the dim).
void convertSelect(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  int64_t rank = ctx.expectRank(n, args[0].value());
  int64_t dim = wrapDim(args[1].unwrapToInt(), rank);
  std::string index =
      args[2].isIValue()
          ? ctx.constScalar(static_cast<double>(args[2].unwrapToInt()), ScalarType::Long)
          : args[2].unwrapToTensor();
  ctx.setOutput(n, 0, ctx.op("Gather", {args[0].unwrapToTensor(), index}, {attrI("axis", dim)}));
}

// index_select(dim, index) -> Gather.
void convertIndexSelect(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  int64_t rank = ctx.expectRank(n, args[0].value());
  int64_t dim = wrapDim(args[1].unwrapToInt(), rank);
  std::string index =
      ctx.castTo(args[2].unwrapToTensor(), ctx.dtypeOf(args[2].value()), ScalarType::Long);
  ctx.setOutput(n, 0, ctx.op("Gather", {args[0].unwrapToTensor(), index}, {attrI("axis", dim)}));
}

// size(dim) along a dynamic axis -> Gather(Shape(x), dim); size() -> Shape.
void convertSize(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string shape = ctx.op("Shape", {args[0].unwrapToTensor()});
  if (args.size() == 1) return ctx.setOutput(n, 0, shape);
  int64_t rank = ctx.expectRank(n, args[0].value());
  std::string dim =
      ctx.constScalar(static_cast<double>(wrapDim(args[1].unwrapToInt(), rank)), ScalarType::Long);
  ctx.setOutput(n, 0, ctx.op("Gather", {shape, dim}, {attrI("axis", 0)}));
}

// Dynamic int arithmetic (0-d int64 tensors): add/sub/mul/floordiv -> Add/Sub/Mul/Div.
OnnxConverter intArith(std::string opType) {
  return [opType](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(n, 0,
                  ctx.op(opType, {tensorOrScalar(ctx, args[0], ScalarType::Long),
                                  tensorOrScalar(ctx, args[1], ScalarType::Long)}));
  };
}

// prim::NumToTensor, aten::Int, aten::ScalarImplicit, aten::FloatImplicit (`float(t)` of a 0-d
// tensor, kws_crnn_streaming's max probability) ...: the same 0-d tensor in ONNX.
void convertNumberIdentity(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string x = args[0].unwrapToTensor();
  if (n.kind() == Symbol::aten("Int") || n.kind() == Symbol::aten("IntImplicit"))
    x = ctx.castTo(x, ctx.dtypeOf(args[0].value()), ScalarType::Long);
  if (n.kind() == Symbol::aten("Float") || n.kind() == Symbol::aten("FloatImplicit"))
    x = ctx.castTo(x, ctx.dtypeOf(args[0].value()), ScalarType::Float);
  if (n.kind() == Symbol::aten("Bool"))
    x = ctx.castTo(x, ctx.dtypeOf(args[0].value()), ScalarType::Bool);
  ctx.setOutput(n, 0, x);
}

// A constant tensor of `sizes` filled with `value` (computed here: Storage::allocate does not
// zero-fill).
Tensor filled(const std::vector<int64_t>& sizes, double value, ScalarType dt) {
  Tensor t = Tensor::empty(sizes, ScalarType::Double);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = value;
  return t.to(dt);
}

// zeros / ones / full(size, [fill,] dtype, ...): a constant for known sizes; else
// ConstantOfShape(size) (https://onnx.ai/onnx/operators/onnx__ConstantOfShape.html).
OnnxConverter fillNew(std::optional<double> fixed) {
  return [fixed](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const size_t dtypeIndex = fixed ? 1 : 2;
    double value = fixed ? *fixed : args[1].unwrapToDouble();
    ScalarType dt =
        args[dtypeIndex].isNone()
            ? dtypeOr(ctx, n.output())
            : scalarTypeFromInt(args[dtypeIndex].unwrapToInt()).value_or(ScalarType::Float);
    if (args[0].isIValue())
      return ctx.setStatic(n.output(), IValue(filled(args[0].unwrapToIntList(), value, dt)));
    ::onnx::TensorProto v = toTensorProto(filled({1}, value, dt), "value");
    ctx.setOutput(n, 0,
                  ctx.op("ConstantOfShape", {intListTensor(ctx, args[0])}, {attrT("value", v)}));
  };
}

// zeros_like / ones_like / full_like(self, [fill,] dtype, ...): ConstantOfShape(Shape(self)).
OnnxConverter fillLike(std::optional<double> fixed) {
  return [fixed](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const size_t dtypeIndex = fixed ? 1 : 2;
    double value = fixed ? *fixed : args[1].unwrapToDouble();
    ScalarType dt =
        args[dtypeIndex].isNone()
            ? dtypeOr(ctx, args[0].value())
            : scalarTypeFromInt(args[dtypeIndex].unwrapToInt()).value_or(ScalarType::Float);
    if (auto sizes = ctx.sizesOf(args[0].value()); sizes && !ctx.isDynamic(args[0].value()))
      return ctx.setStatic(n.output(), IValue(filled(*sizes, value, dt)));
    ::onnx::TensorProto v = toTensorProto(filled({1}, value, dt), "value");
    ctx.setOutput(n, 0,
                  ctx.op("ConstantOfShape", {ctx.op("Shape", {args[0].unwrapToTensor()})},
                         {attrT("value", v)}));
  };
}

// Whether a Scalar argument is an int (or bool) at run time: its IR type, else its constant.
bool isIntScalar(const convert::ArgValue<std::string>& a) {
  if (a.isIValue()) return a.unwrapToIValue().isInt() || a.unwrapToIValue().isBool();
  const TypePtr& t = a.value()->type();
  return t && (t->kind() == TypeKind::IntType || t->kind() == TypeKind::BoolType);
}

// The dtype a factory op (arange, linspace, eye) makes: its dtype argument, else what the
// example run observed, else `dflt`.
ScalarType factoryDtype(OnnxCtx& ctx, const Node& n, OnnxArgs& args, size_t dtypeIndex,
                        ScalarType dflt) {
  if (dtypeIndex < args.size() && !args[dtypeIndex].isNone())
    return scalarTypeFromInt(args[dtypeIndex].unwrapToInt()).value_or(dflt);
  return ctx.dtypeOf(n.output()).value_or(dflt);
}

// arange(end) / arange.start(start, end) / arange.start_step(start, end, step), also with
// bounds only known at run time (a sequence length) -> Range
// (https://onnx.ai/onnx/operators/onnx__Range.html), as torch.onnx's symbolic_opset11.
// Int bounds count in int64, others in float (double for a double result); then a Cast to
// the dtype PyTorch gives (int64 when every bound is an int, else the default float).
OnnxConverter convertArange(size_t numBounds) {
  return [numBounds](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    bool ints = true;
    for (size_t i = 0; i < numBounds; ++i) ints &= isIntScalar(args[i]);
    const ScalarType dt =
        factoryDtype(ctx, n, args, numBounds, ints ? ScalarType::Long : ScalarType::Float);
    const bool integral = isIntegralType(dt, /*includeBool=*/false);
    const ScalarType compute = ints && integral           ? ScalarType::Long
                               : dt == ScalarType::Double ? ScalarType::Double
                                                          : ScalarType::Float;
    std::string start =
        numBounds == 1 ? ctx.constScalar(0, compute) : tensorOrScalar(ctx, args[0], compute);
    std::string end = tensorOrScalar(ctx, args[numBounds == 1 ? 0 : 1], compute);
    std::string step =
        numBounds == 3 ? tensorOrScalar(ctx, args[2], compute) : ctx.constScalar(1, compute);
    std::string r = ctx.op("Range", {start, end, step});
    ctx.setOutput(n, 0, compute == dt ? r : ctx.op("Cast", {r}, {attrI("to", onnxDataType(dt))}));
  };
}

// _dim_arange(like, dim): arange(like.size(dim)) as int64 -> Range(0, Shape(like)[dim], 1).
void convertDimArange(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const int64_t rank = ctx.expectRank(n, args[0].value());
  std::string size =
      ctx.op("Gather",
             {ctx.op("Shape", {args[0].unwrapToTensor()}),
              ctx.constScalar(static_cast<double>(wrapDim(args[1].unwrapToInt(), rank)),
                              ScalarType::Long)},
             {attrI("axis", 0)});
  ctx.setOutput(n, 0,
                ctx.op("Range", {ctx.constScalar(0, ScalarType::Long), size,
                                 ctx.constScalar(1, ScalarType::Long)}));
}

// linspace(start, end, steps): start + i * (end - start) / max(steps - 1, 1) for i in
// Range(0, steps), computed in float (double for a double result), as torch.onnx's
// symbolic_opset9 (PyTorch fills the upper half from `end` backwards: equal within float
// rounding).
void convertLinspace(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const ScalarType dt = factoryDtype(ctx, n, args, 3, ScalarType::Float);
  const ScalarType compute = dt == ScalarType::Double ? ScalarType::Double : ScalarType::Float;
  std::string start = tensorOrScalar(ctx, args[0], compute),
              end = tensorOrScalar(ctx, args[1], compute);
  std::string steps = tensorOrScalar(ctx, args[2], ScalarType::Long);
  std::string one = ctx.constScalar(1, ScalarType::Long);
  std::string i =
      ctx.op("Cast", {ctx.op("Range", {ctx.constScalar(0, ScalarType::Long), steps, one})},
             {attrI("to", onnxDataType(compute))});
  std::string denom = ctx.op("Cast", {ctx.op("Max", {ctx.op("Sub", {steps, one}), one})},
                             {attrI("to", onnxDataType(compute))});
  std::string delta = ctx.op("Div", {ctx.op("Sub", {end, start}), denom});
  std::string r = ctx.op("Add", {start, ctx.op("Mul", {i, delta})});
  ctx.setOutput(n, 0, compute == dt ? r : ctx.op("Cast", {r}, {attrI("to", onnxDataType(dt))}));
}

// eye(n) / eye.m(n, m) -> EyeLike(ConstantOfShape([n, m]))
// (https://onnx.ai/onnx/operators/onnx__EyeLike.html), as torch.onnx's symbolic_opset9.
OnnxConverter convertEye(bool square) {
  return [square](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const ScalarType dt = factoryDtype(ctx, n, args, square ? 1 : 2, ScalarType::Float);
    std::string rows = intAsList(ctx, args[0]);
    std::string shape =
        ctx.op("Concat", {rows, square ? rows : intAsList(ctx, args[1])}, {attrI("axis", 0)});
    ::onnx::TensorProto zero = toTensorProto(filled({1}, 0.0, dt), "value");
    std::string zeros = ctx.op("ConstantOfShape", {shape}, {attrT("value", zero)});
    ctx.setOutput(n, 0, ctx.op("EyeLike", {zeros}, {attrI("dtype", onnxDataType(dt))}));
  };
}

bool isTensorish(const TypePtr& t) {
  if (!t) return false;
  if (t->kind() == TypeKind::TensorType) return true;
  if (const auto* o = t->cast<OptionalType>())
    return o->getElementType()->kind() == TypeKind::TensorType;
  return false;
}

// prim::ListConstruct / prim::TupleConstruct: tensors -> a tensor list; all-constant -> a
// static list; dynamic ints -> Concat of Unsqueeze (a 1-d int64 shape tensor).
void convertListConstruct(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  bool tensors = false, allStatic = true;
  for (size_t i = 0; i < args.size(); ++i) {
    // (a tensor list element: a returned list of dicts, each its values, prepare.cpp lowerDicts)
    tensors |= isTensorish(args[i].value()->type()) || args[i].isTensorList() ||
               (args[i].isIValue() && args[i].unwrapToIValue().isTensor());
    allStatic &= args[i].isIValue();
  }
  // All constant (ints, or parameters as nn.LSTM's weights): a static list, materialized
  // element by element only where a converter asks for tensors (unwrapToTensorList).
  if (allStatic && n.kind() == prim::ListConstruct) {
    std::vector<IValue> xs;
    for (size_t i = 0; i < args.size(); ++i) xs.push_back(args[i].unwrapToIValue());
    TypePtr elem = n.output()->type() && n.output()->type()->cast<ListType>()
                       ? n.output()->type()->expect<ListType>().getElementType()
                       : IntType::get();
    ctx.setStatic(n.output(), IValue(ListImpl::create(elem, std::move(xs))));
    return;
  }
  if (tensors || (n.kind() == prim::TupleConstruct && !allStatic)) {
    std::vector<std::string> xs;
    for (size_t i = 0; i < args.size(); ++i) {
      // None in a returned tuple (googlenet's scripted GoogLeNetOutputs(x, None, None)): the
      // outputs are flattened from the node's inputs, None dropped.
      if (args[i].isNone() && n.kind() == prim::TupleConstruct) continue;
      // Tensor?[] (index's indices): "" stands for None.
      if (args[i].isNone()) {
        xs.emplace_back();
        continue;
      }
      if (args[i].isTensorList())
        for (const auto& t : args[i].unwrapToTensorList()) xs.push_back(t);
      else
        xs.push_back(args[i].unwrapToTensor());
    }
    ctx.setTensorList(n.output(), xs);
    return;
  }
  if (allStatic) {
    std::vector<IValue> xs;
    for (size_t i = 0; i < args.size(); ++i) xs.push_back(args[i].unwrapToIValue());
    if (n.kind() == prim::TupleConstruct) {
      ctx.setStatic(n.output(), IValue(TupleImpl::create(std::move(xs))));
    } else {
      TypePtr elem = n.output()->type() && n.output()->type()->cast<ListType>()
                         ? n.output()->type()->expect<ListType>().getElementType()
                         : IntType::get();
      ctx.setStatic(n.output(), IValue(ListImpl::create(elem, std::move(xs))));
    }
    return;
  }
  std::vector<std::string> parts;
  for (size_t i = 0; i < args.size(); ++i) parts.push_back(intAsList(ctx, args[i]));
  ctx.setOutput(n, 0, parts.size() == 1 ? parts[0] : ctx.op("Concat", parts, {attrI("axis", 0)}));
}

// prim::ListUnpack / prim::TupleUnpack: element i of a tensor list or a static list.
void convertUnpack(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  // Unpacking a tuple or list built in this graph: each output takes its element's own form
  // (tensor, constant, None, list), whatever the container's.
  if (const Node* def = args[0].value()->node();
      (def->kind() == prim::TupleConstruct || def->kind() == prim::ListConstruct) &&
      def->inputs().size() == n.outputs().size()) {
    for (size_t i = 0; i < n.outputs().size(); ++i) {
      const Value* e = def->input(i);
      if (ctx.hasTensor(e))
        ctx.setOutput(n, i, ctx.toTensor(e));
      else if (ctx.hasTensorList(e))
        ctx.setTensorList(n.output(i), ctx.tensorList(e));
      if (ctx.isStatic(e)) ctx.setStatic(n.output(i), ctx.staticValue(e));
    }
    return;
  }
  if (!args[0].isIValue() && !args[0].isTensorList() && args[0].value()->type() &&
      args[0].value()->type()->kind() == TypeKind::ListType) {
    // A list computed at run time: a sequence, element i by SequenceAt; an int list
    // (`n, c, h, w = x.size()` with a dynamic axis) a 1-d int64 tensor, element i by Gather
    // (0-d). Elements the preparation folded have no uses.
    const bool seq = ctx.isSequence(args[0].value());
    std::string list =
        seq ? args[0].unwrapToTensor()
            : ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), ScalarType::Long);
    for (size_t i = 0; i < n.outputs().size(); ++i) {
      if (!n.output(i)->hasUses()) continue;
      std::string k = ctx.constScalar(static_cast<double>(i), ScalarType::Long);
      ctx.setOutput(
          n, i,
          seq ? ctx.op("SequenceAt", {list, k}) : ctx.op("Gather", {list, k}, {attrI("axis", 0)}));
    }
    return;
  }
  if (args[0].isTensorList()) {
    auto xs = args[0].unwrapToTensorList();
    if (xs.size() != n.outputs().size())
      args[0].fail(fmt::format("a list of {} tensors", n.outputs().size()),
                   fmt::format("{}", xs.size()));
    for (size_t i = 0; i < xs.size(); ++i) ctx.setOutput(n, i, xs[i]);
    return;
  }
  const IValue& v = args[0].unwrapToIValue();
  std::vector<IValue> xs = v.isTuple() ? v.toTuple()->elements : v.toList()->list;
  for (size_t i = 0; i < xs.size() && i < n.outputs().size(); ++i)
    ctx.setStatic(n.output(i), xs[i]);
}

// aten::__getitem__ / aten::select.t of a tensor list with a constant index.
void convertListGetItem(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  if (!args[1].isIValue() && args[0].isIValue() && args[0].unwrapToIValue().isList()) {
    // A constant list of ints or floats read at a run-time index (a loop counter): Gather
    // from it as a 1-d constant.
    const auto& xs = args[0].unwrapToIValue().toList()->list;
    const bool ints =
        std::all_of(xs.begin(), xs.end(), [](const IValue& x) { return x.isInt() || x.isBool(); });
    const bool floats = std::all_of(xs.begin(), xs.end(),
                                    [](const IValue& x) { return x.isDouble() || x.isInt(); });
    if (!xs.empty() && (ints || floats)) {
      // Floats as Float: what OnnxCtx::dtypeOf says a float value is.
      Tensor t = Tensor::empty({static_cast<int64_t>(xs.size())},
                               ints ? ScalarType::Long : ScalarType::Float);
      for (size_t k = 0; k < xs.size(); ++k) {
        if (ints)
          t.data<int64_t>()[k] = xs[k].isBool() ? xs[k].toBool() : xs[k].toInt();
        else
          t.data<float>()[k] = static_cast<float>(xs[k].toScalarDouble());
      }
      std::string i =
          ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), ScalarType::Long);
      return ctx.setOutput(n, 0, ctx.op("Gather", {ctx.initializer(t), i}, {attrI("axis", 0)}));
    }
  }
  if (const Value* list = args[0].value();
      !args[0].isIValue() && !args[0].isTensorList() && !ctx.isSequence(list) && list->type() &&
      list->type()->kind() == TypeKind::ListType && !mayHoldTensor(list->type())) {
    // An int list computed at run time (x.shape with a dynamic axis, then x.shape[0]): a
    // 1-d int64 tensor, read by Gather (0-d); a negative index counts from the end (Gather's
    // indices may be negative).
    const bool floats = list->type()->expect<ListType>().getElementType()->kind() ==
                        TypeKind::FloatType;  // (a List[float] appended in a loop)
    std::string xs =
        floats ? args[0].unwrapToTensor()
               : ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(list), ScalarType::Long);
    std::string i =
        args[1].isIValue()
            ? ctx.constScalar(static_cast<double>(args[1].unwrapToInt()), ScalarType::Long)
            : ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), ScalarType::Long);
    return ctx.setOutput(n, 0, ctx.op("Gather", {xs, i}, {attrI("axis", 0)}));
  }
  if (ctx.isSequence(args[0].value()) || !args[1].isIValue()) {
    std::string seq = ctx.toSequence(args[0].value());
    std::string i =
        args[1].isIValue()
            ? ctx.constScalar(static_cast<double>(args[1].unwrapToInt()), ScalarType::Long)
            : ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), ScalarType::Long);
    ctx.setOutput(n, 0, ctx.op("SequenceAt", {seq, i}));
    // The element's dtype and rank, when the list's elements share them.
    std::optional<ScalarType> dtype;
    std::optional<int64_t> rank;
    if (const Value* list = args[0].value(); list->node()->kind() == prim::ListConstruct) {
      for (const Value* e : list->node()->inputs()) {
        auto d = ctx.dtypeOf(e);
        auto r = ctx.rankOf(e);
        if (e == list->node()->inputs().front()) dtype = d, rank = r;
        if (d != dtype) dtype.reset();
        if (r != rank) rank.reset();
      }
    } else {
      dtype = ctx.dtypeOf(list);
      rank = ctx.rankOf(list);
    }
    if (dtype || rank) {
      ValueFacts f;
      f.dtype = dtype;
      f.rank = rank;
      ctx.setFacts(n.output(), f);
    }
    return;
  }
  auto xs = args[0].unwrapToTensorList();
  int64_t i = args[1].unwrapToInt();
  if (i < 0) i += static_cast<int64_t>(xs.size());
  if (i < 0 || i >= static_cast<int64_t>(xs.size()))
    args[1].fail("an index into the list", std::to_string(i));
  ctx.setOutput(n, 0, xs[i]);
}

// prim::unchecked_cast / prim::unchecked_unwrap_optional: the value itself, in whatever form.
void convertPassThrough(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const Value* in = args[0].value();
  if (ctx.isStatic(in)) ctx.setStatic(n.output(), ctx.staticValue(in));
  if (ctx.hasTensorList(in)) ctx.setTensorList(n.output(), ctx.tensorList(in));
  if (ctx.hasTensor(in)) ctx.setOutput(n, 0, ctx.toTensor(in));
}

// new_zeros / new_ones / new_full / new_empty(self, size, [fill,] dtype ...): self's dtype
// unless given; a constant for a constant size, else ConstantOfShape.
OnnxConverter fillNewLike(std::optional<double> fixed) {
  return [fixed](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const size_t dtypeIndex = fixed ? 2 : 3;
    double value = fixed ? *fixed : args[2].unwrapToDouble();
    ScalarType dt =
        args[dtypeIndex].isNone()
            ? dtypeOr(ctx, args[0].value())
            : scalarTypeFromInt(args[dtypeIndex].unwrapToInt()).value_or(ScalarType::Float);
    if (args[1].isIValue())
      return ctx.setStatic(n.output(), IValue(filled(args[1].unwrapToIntList(), value, dt)));
    ::onnx::TensorProto v = toTensorProto(filled({1}, value, dt), "value");
    ctx.setOutput(n, 0,
                  ctx.op("ConstantOfShape", {intListTensor(ctx, args[1])}, {attrT("value", v)}));
  };
}

// _cast_Long & co.: Cast.
OnnxConverter castTo(ScalarType to) {
  return [to](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(n, 0, ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), to));
  };
}

// int / float comparisons computed at run time (loop counters): 0-d tensors compared.
OnnxConverter scalarCompare(std::string opType, bool negate = false) {
  return [opType, negate](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const bool isFloat = n.input(0)->type()->kind() == TypeKind::FloatType ||
                         n.input(1)->type()->kind() == TypeKind::FloatType;
    ScalarType dt = isFloat ? ScalarType::Double : ScalarType::Long;
    std::string y =
        ctx.op(opType, {tensorOrScalar(ctx, args[0], dt), tensorOrScalar(ctx, args[1], dt)});
    ctx.setOutput(n, 0, negate ? ctx.op("Not", {y}) : y);
  };
}

// flip(dims) -> Slice with step -1 over each dim.
void convertFlip(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  int64_t rank = ctx.expectRank(n, args[0].value());
  auto dims = args[1].unwrapToIntList();
  if (dims.empty()) return identity(ctx, n, args);
  std::vector<int64_t> axes, starts, ends, steps;
  for (int64_t d : dims) {
    axes.push_back(wrapDim(d, rank));
    starts.push_back(-1);
    ends.push_back(std::numeric_limits<int64_t>::min());
    steps.push_back(-1);
  }
  ctx.setOutput(
      n, 0,
      ctx.op("Slice", {args[0].unwrapToTensor(), ctx.constInt64s(starts), ctx.constInt64s(ends),
                       ctx.constInt64s(axes), ctx.constInt64s(steps)}));
}

// roll(shifts, dims) -> per dim Concat(Slice(x, size - s, end), Slice(x, 0, size - s)); no
// dims rolls the flattened tensor and reshapes back.
void convertRoll(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const Value* self = args[0].value();
  const int64_t rank = ctx.expectRank(n, self);
  auto dims = args[2].unwrapToIntList(std::vector<int64_t>{});
  std::string x = args[0].unwrapToTensor();
  const bool flat = dims.empty();
  // Shifts known now and rolled sizes that follow no dynamic axis: slices at constant places.
  bool fixed = args[1].isIValue();
  for (int64_t d = 0; d < rank; ++d)
    if (flat || std::find(dims.begin(), dims.end(), d) != dims.end() ||
        std::find(dims.begin(), dims.end(), d - rank) != dims.end())
      fixed = fixed && !ctx.isDynamicDim(self, d);
  std::string shape;
  if (flat) {
    shape = ctx.op("Shape", {x});
    x = ctx.op("Reshape", {x, ctx.constInt64s({-1})});
    dims = {0};
  }
  const int64_t r = flat ? 1 : rank;
  if (fixed) {
    auto shifts = args[1].unwrapToIntList();
    if (shifts.size() != dims.size())
      args[1].fail(fmt::format("{} shifts (one per dim)", dims.size()),
                   std::to_string(shifts.size()));
    auto sizes = ctx.expectSizes(n, self);
    if (flat) {
      int64_t numel = 1;
      for (int64_t s : sizes) numel *= s;
      sizes = {numel};
    }
    for (size_t i = 0; i < dims.size(); ++i) {
      int64_t d = wrapDim(dims[i], r);
      int64_t size = sizes[d];
      if (size == 0) continue;
      int64_t s = ((shifts[i] % size) + size) % size;
      if (s == 0) continue;
      std::string tail = ctx.op(
          "Slice", {x, ctx.constInt64s({size - s}), ctx.constInt64s({size}), ctx.constInt64s({d})});
      std::string head = ctx.op(
          "Slice", {x, ctx.constInt64s({0}), ctx.constInt64s({size - s}), ctx.constInt64s({d})});
      x = ctx.op("Concat", {tail, head}, {attrI("axis", d)});
    }
  } else {
    // Shifts or sizes known at run time (swin's shifts, zeroed for small feature maps): per dim,
    // k = shift mod size (Mod takes the divisor's sign, as Python's %), then the last k rows
    // before the others.
    std::string shifts = intListTensor(ctx, args[1]);
    for (size_t i = 0; i < dims.size(); ++i) {
      const int64_t d = wrapDim(dims[i], r);
      const auto at = [&](int64_t k) { return ctx.constInt64s({k}); };
      std::string size = ctx.op("Slice", {ctx.op("Shape", {x}), at(d), at(d + 1)});
      std::string shift =
          ctx.op("Slice", {shifts, at(static_cast<int64_t>(i)), at(static_cast<int64_t>(i) + 1)});
      std::string k = ctx.op("Mod", {shift, ctx.op("Max", {size, at(1)})});
      std::string cut = ctx.op("Sub", {size, k});
      std::string tail = ctx.op("Slice", {x, cut, size, at(d)});
      std::string head = ctx.op("Slice", {x, at(0), cut, at(d)});
      x = ctx.op("Concat", {tail, head}, {attrI("axis", d)});
    }
  }
  if (flat) x = ctx.op("Reshape", {x, shape});
  ctx.setOutput(n, 0, x);
}

// repeat(repeats) -> Tile; more repeats than dims first adds leading dims of 1.
void convertRepeat(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  int64_t rank = ctx.expectRank(n, args[0].value());
  std::string x = args[0].unwrapToTensor();
  std::string reps = intListTensor(ctx, args[1]);
  int64_t numReps = args[1].isIValue() ? static_cast<int64_t>(args[1].unwrapToIntList().size())
                                       : ctx.expectRank(n, n.output());
  if (numReps > rank) {
    std::vector<int64_t> axes;
    for (int64_t i = 0; i < numReps - rank; ++i) axes.push_back(i);
    x = unsqueeze(ctx, x, axes);
  }
  ctx.setOutput(n, 0, ctx.op("Tile", {x, reps}));
}

// repeat_interleave(self, repeats: int, dim) -> Unsqueeze(dim + 1), Tile there, Reshape to
// the output's sizes; dim None flattens first. A tensor of repeats -> Gather of the indices
// the repeats make (computed now: the repeats are known).
void convertRepeatInterleave(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string x = args[0].unwrapToTensor();
  const auto outKnown = ctx.sizesOf(n.output());
  int64_t dim = 0;
  if (args[2].isNone()) {
    x = ctx.op("Reshape", {x, ctx.constInt64s({-1})});
  } else {
    dim = wrapDim(args[2].unwrapToInt(), ctx.expectRank(n, args[0].value()));
  }
  const IValue& rv = args[1].unwrapToIValue();
  if (rv.isInt()) {
    int64_t reps = rv.toInt();
    int64_t rank = args[2].isNone() ? 1 : ctx.expectRank(n, args[0].value());
    std::vector<int64_t> tiles(rank + 1, 1);
    tiles[dim + 1] = reps;
    std::string t = ctx.op("Tile", {unsqueeze(ctx, x, {dim + 1}), ctx.constInt64s(tiles)});
    if (outKnown) return ctx.setOutput(n, 0, ctx.op("Reshape", {t, ctx.constInt64s(*outKnown)}));
    // Sizes known at run time only (inside a loop body): dims dim and dim + 1 merged.
    std::vector<int64_t> head(static_cast<size_t>(dim), 0);
    head.push_back(-1);
    std::string shape = ctx.constInt64s(head);
    if (dim + 1 < rank)
      shape = ctx.op("Concat",
                     {shape, ctx.op("Slice", {ctx.op("Shape", {x}), ctx.constInt64s({dim + 1}),
                                              ctx.constInt64s({rank})})},
                     {attrI("axis", 0)});
    return ctx.setOutput(n, 0, ctx.op("Reshape", {t, shape}));
  }
  const auto out = ctx.expectSizes(n, n.output());
  Tensor r = rv.toTensor().to(ScalarType::Long).contiguous();
  std::vector<int64_t> idx;
  const int64_t* p = r.data<int64_t>();
  for (int64_t i = 0; i < r.numel(); ++i)
    for (int64_t j = 0; j < p[i]; ++j) idx.push_back(r.numel() == 1 ? -1 : i);
  if (r.numel() == 1) {  // one count for every element
    auto sizes = ctx.expectSizes(n, args[0].value());
    int64_t len = args[2].isNone() ? out[0] / std::max<int64_t>(p[0], 1) : sizes[dim];
    idx.clear();
    for (int64_t i = 0; i < len; ++i)
      for (int64_t j = 0; j < p[0]; ++j) idx.push_back(i);
  }
  ctx.setOutput(n, 0, ctx.op("Gather", {x, ctx.constInt64s(idx)}, {attrI("axis", dim)}));
}

// movedim(source, destination) -> Transpose: the moved dims at their destinations, the others
// in order in the remaining places.
void convertMovedim(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  int64_t rank = ctx.expectRank(n, args[0].value());
  std::vector<int64_t> src, dst;
  if (args[1].unwrapToIValue().isInt()) {
    src = {args[1].unwrapToInt()};
    dst = {args[2].unwrapToInt()};
  } else {
    src = args[1].unwrapToIntList();
    dst = args[2].unwrapToIntList();
  }
  std::vector<int64_t> perm(rank, -1);
  std::vector<bool> used(rank, false);
  for (size_t i = 0; i < src.size(); ++i) {
    perm[wrapDim(dst[i], rank)] = wrapDim(src[i], rank);
    used[wrapDim(src[i], rank)] = true;
  }
  int64_t next = 0;
  for (auto& p : perm) {
    if (p >= 0) continue;
    while (used[next]) ++next;
    p = next++;
  }
  ctx.setOutput(n, 0, ctx.op("Transpose", {args[0].unwrapToTensor()}, {attrIs("perm", perm)}));
}

// unbind(dim) -> Split into ones, Squeeze each: a tensor list (a sequence where a list is
// needed at run time, see OnnxCtx::toSequence).
void convertUnbind(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  auto sizes = ctx.expectSizes(n, args[0].value());
  int64_t dim = wrapDim(args[1].unwrapToInt(0), static_cast<int64_t>(sizes.size()));
  const int64_t count = sizes[dim];
  if (splitsToSequence(ctx, args[0].value(), dim, n.output())) {
    // A dynamic count: SplitToSequence into ones, keepdims=0.
    ctx.setOutput(n, 0,
                  ctx.op("SplitToSequence", {args[0].unwrapToTensor()},
                         {attrI("axis", dim), attrI("keepdims", 0)}));
    ctx.markSequence(n.output());
    return setElementFacts(ctx, n.output(), ctx.dtypeOf(args[0].value()),
                           static_cast<int64_t>(sizes.size()) - 1);
  }
  std::vector<std::string> xs;
  if (count == 1) {
    xs.push_back(squeeze(ctx, args[0].unwrapToTensor(), {dim}));
  } else if (count > 1) {
    auto parts = ctx.opN(
        "Split", {args[0].unwrapToTensor(), ctx.constInt64s(std::vector<int64_t>(count, 1))},
        static_cast<size_t>(count), {attrI("axis", dim)});
    for (const auto& p : parts) xs.push_back(squeeze(ctx, p, {dim}));
  }
  ctx.setTensorList(n.output(), xs);
  std::vector<int64_t> elem = sizes;
  elem.erase(elem.begin() + dim);
  setElementFacts(
      ctx, n.output(), ctx.dtypeOf(args[0].value()), static_cast<int64_t>(elem.size()),
      ctx.isDynamic(args[0].value()) ? std::nullopt : std::optional<std::vector<int64_t>>(elem));
}

// tril / triu(diagonal) -> Trilu (opset 14); at opset 13 Where with the constant mask of the
// known sizes' last two dims.
OnnxConverter trilu(bool upper) {
  return [upper](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    int64_t k = args[1].unwrapToInt(0);
    if (ctx.opset() >= 14)
      return ctx.setOutput(
          n, 0,
          ctx.op("Trilu", {x, ctx.constScalar(static_cast<double>(k), ScalarType::Long)},
                 {attrI("upper", upper ? 1 : 0)}));
    auto sizes = ctx.expectSizes(n, args[0].value());
    if (sizes.size() < 2)
      args[0].fail("a tensor of at least 2 dims", fmt::format("rank {}", sizes.size()));
    const int64_t rows = sizes[sizes.size() - 2], cols = sizes.back();
    Tensor mask = Tensor::empty({rows, cols}, ScalarType::Bool);
    bool* m = mask.data<bool>();
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) m[i * cols + j] = upper ? j - i >= k : j - i <= k;
    ScalarType dt = dtypeOr(ctx, args[0].value());
    ctx.setOutput(n, 0, ctx.op("Where", {ctx.initializer(mask), x, ctx.constScalar(0, dt)}));
  };
}

// broadcast_tensors / meshgrid: each tensor expanded to the common shape (meshgrid: each 1-d
// input as a column of the grid first; indexing "xy" swaps the first two).
void convertBroadcastTensors(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  auto xs = args[0].unwrapToTensorList();
  const Value* list = args[0].value();
  if (list->node()->kind() != prim::ListConstruct)
    args[0].fail("a list built in the graph", "a list from elsewhere");
  const bool mesh = n.kind() == Symbol::aten("meshgrid");
  std::string indexing = mesh && args.size() > 1 ? args[1].unwrapToString() : "ij";
  std::vector<std::vector<int64_t>> shapes;
  for (const Value* v : list->node()->inputs()) shapes.push_back(ctx.expectSizes(n, v));
  std::vector<int64_t> out;
  if (mesh) {
    for (auto& s : shapes) out.push_back(s.empty() ? 1 : s[0]);
    if (indexing == "xy" && out.size() >= 2) std::swap(out[0], out[1]);
  } else {
    size_t rank = 0;
    for (auto& s : shapes) rank = std::max(rank, s.size());
    out.assign(rank, 1);
    for (auto& s : shapes)
      for (size_t i = 0; i < s.size(); ++i) {
        int64_t& o = out[rank - s.size() + i];
        if (s[i] != 1) o = s[i];
      }
  }
  // meshgrid's grid is read from its inputs' sizes at run time (a YOLO head's
  // meshgrid(arange(ny), arange(nx)) follows the feature map under dynamic axes).
  std::string target;
  if (mesh) {
    std::vector<std::string> dims;
    for (size_t i = 0; i < xs.size(); ++i)
      dims.push_back(shapes[i].empty() ? ctx.constInt64s({1}) : ctx.op("Shape", {xs[i]}));
    if (indexing == "xy" && dims.size() >= 2) std::swap(dims[0], dims[1]);
    target = ctx.op("Concat", dims, {attrI("axis", 0)});
  } else {
    target = ctx.constInt64s(out);
  }
  std::vector<std::string> ys;
  for (size_t i = 0; i < xs.size(); ++i) {
    std::string x = xs[i];
    if (mesh) {
      std::vector<int64_t> shape(out.size(), 1);
      size_t at = i;
      if (indexing == "xy" && out.size() >= 2 && i < 2) at = 1 - i;
      shape[at] = -1;
      x = ctx.op("Reshape", {x, ctx.constInt64s(shape)});
    }
    ys.push_back(ctx.op("Expand", {x, target}));
  }
  ctx.setTensorList(n.output(), ys);
  if (!list->node()->inputs().empty())
    setElementFacts(ctx, n.output(), ctx.dtypeOf(list->node()->input(0)),
                    static_cast<int64_t>(out.size()), out);
}

// tensor_split(self, sections | indices | tensor, dim): Slices along dim (known size): `sections`
// pieces, the first size % sections one longer, or the pieces between the indices (clamped to
// the size; a decreasing index makes an empty piece), as PyTorch.
void convertTensorSplit(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  auto sizes = ctx.expectSizes(n, args[0].value());
  const auto rank = static_cast<int64_t>(sizes.size());
  if (rank == 0) args[0].fail("a tensor of at least one dim", "a 0-d tensor");
  const int64_t dim = wrapDim(args[2].unwrapToInt(0), rank), size = sizes[dim];
  const IValue& spec = args[1].unwrapToIValue();
  std::vector<int64_t> bounds{0};
  const bool sections = spec.isInt() || (spec.isTensor() && spec.toTensor().dim() == 0);
  if (sections) {
    const int64_t k = spec.isInt() ? spec.toInt() : args[1].unwrapToScalar().toInt();
    if (k <= 0) args[1].fail("a number of sections of at least 1", std::to_string(k));
    for (int64_t i = 0; i < k; ++i)
      bounds.push_back(bounds.back() + size / k + (i < size % k ? 1 : 0));
  } else {
    for (int64_t i : args[1].unwrapToIntList())
      bounds.push_back(std::clamp(i < 0 ? i + size : i, int64_t{0}, size));
    bounds.push_back(size);
  }
  std::vector<std::string> outs;
  std::string x = args[0].unwrapToTensor();
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    const int64_t from = bounds[i], to = std::max(bounds[i], bounds[i + 1]);
    outs.push_back(ctx.op(
        "Slice", {x, ctx.constInt64s({from}), ctx.constInt64s({to}), ctx.constInt64s({dim})}));
  }
  ctx.setTensorList(n.output(), outs);
  setElementFacts(ctx, n.output(), ctx.dtypeOf(args[0].value()), rank);
}

// An index into the list sequence `seq` as a 0-d int64: a constant >= 0 as it is, else
// normalized by SequenceLength as Python does: i + len when negative; with clampForInsert,
// list.insert's clamping to [0, len] too.
std::string listIndex(OnnxCtx& ctx, const convert::ArgValue<std::string>& a, const std::string& seq,
                      bool clampForInsert) {
  if (a.isIValue() && a.unwrapToInt() >= 0 && (!clampForInsert || a.unwrapToInt() == 0))
    return ctx.constScalar(static_cast<double>(a.unwrapToInt()), ScalarType::Long);
  std::string i = ctx.castTo(a.unwrapToTensor(), ctx.dtypeOf(a.value()), ScalarType::Long);
  std::string len = ctx.op("SequenceLength", {seq});
  std::string zero = ctx.constScalar(0, ScalarType::Long);
  std::string wrapped = ctx.op("Where", {ctx.op("Less", {i, zero}), ctx.op("Add", {i, len}), i});
  if (!clampForInsert) return wrapped;
  return ctx.op("Min", {ctx.op("Max", {wrapped, zero}), len});
}

// l[i] = v on a list of numbers (Note [List writes] in prepare.cpp). Known list, index and
// value: the new list, computed now (PyTorch's "list index out of range" for a bad index).
// Otherwise the list is a 1-d tensor: ScatterElements of v at i (negative i counts from the
// end there too, as in Python).
void setNumberListItem(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  if (args[0].isIValue() && args[1].isIValue() && args[2].isIValue()) {
    const auto& list = args[0].unwrapToIValue().toList();
    std::vector<IValue> xs = list->list;
    const int64_t size = static_cast<int64_t>(xs.size());
    int64_t i = args[1].unwrapToInt();
    if (i < -size || i >= size)
      throw Error(fmt::format("list index out of range (index {} of a list of {})", i, size));
    xs[static_cast<size_t>(i < 0 ? i + size : i)] = args[2].unwrapToIValue();
    IValue after(ListImpl::create(list->elementType, std::move(xs)));
    ctx.setStatic(n.output(), after);
    ctx.setStaticListAfterWrite(args[0].value(), after);
    return;
  }
  const ScalarType dt = ctx.dtypeOf(args[0].value()).value_or(ScalarType::Long);
  std::string xs = args[0].unwrapToTensor();
  std::string i = intAsList(ctx, args[1]);
  std::string v = ctx.castTo(args[2].unwrapToTensor(), ctx.dtypeOf(args[2].value()), dt);
  if (auto r = ctx.rankOf(args[2].value()); !r || *r != 1) v = unsqueeze(ctx, v, {0});
  std::string after = ctx.op("ScatterElements", {xs, i, v}, {attrI("axis", 0)});
  ctx.setOutput(n, 0, after);
  ctx.setListAfterWrite(args[0].value(), after);
}

// insert(l, i, x): SequenceInsert at i clamped as list.insert clamps it.
void convertListInsert(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string seq = ctx.toSequence(args[0].value(), dtypeOr(ctx, args[2].value()));
  std::string i = listIndex(ctx, args[1], seq, /*clampForInsert=*/true);
  ctx.setListAfterWrite(args[0].value(),
                        ctx.op("SequenceInsert", {seq, args[2].unwrapToTensor(), i}));
}

// slice.t(l, start, end, step) of a list of tensors as an ONNX sequence: Python's bounds (None,
// negative from the end, clamped to [0, len]) computed at run time from SequenceLength, then a
// Loop of ceil((end - start) / step) steps that inserts l[start + i * step] into a sequence
// started empty (ONNX has no sequence slice). The step must be a positive constant.
std::string sliceSequence(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const ScalarType dt = ctx.dtypeOf(args[0].value()).value_or(ScalarType::Float);
  std::string seq = ctx.toSequence(args[0].value(), dt);
  const int64_t step = args[3].isNone() ? 1 : args[3].unwrapToInt();
  if (step <= 0) args[3].fail("a positive constant step", std::to_string(step));
  const std::string len = ctx.op("SequenceLength", {seq});
  const std::string zero = ctx.constScalar(0, ScalarType::Long);
  auto bound = [&](size_t i, bool isEnd) {
    if (args[i].isNone()) return isEnd ? len : zero;
    std::string b =
        args[i].isIValue()
            ? ctx.constScalar(static_cast<double>(args[i].unwrapToInt()), ScalarType::Long)
            : ctx.op("Reshape", {ctx.castTo(args[i].unwrapToTensor(), ctx.dtypeOf(args[i].value()),
                                            ScalarType::Long),
                                 ctx.constInt64s({})});
    b = ctx.op("Where", {ctx.op("Less", {b, zero}), ctx.op("Add", {b, len}), b});
    return ctx.op("Min", {ctx.op("Max", {b, zero}), len});
  };
  const std::string start = bound(1, false), end = bound(2, true);
  const std::string stepC = ctx.constScalar(static_cast<double>(step), ScalarType::Long);
  const std::string count = ctx.op(
      "Max",
      {ctx.op("Div",
              {ctx.op("Add", {ctx.op("Sub", {end, start}),
                              ctx.constScalar(static_cast<double>(step - 1), ScalarType::Long)}),
               stepC}),
       zero});
  const std::string empty = ctx.op("SequenceEmpty", {}, {attrI("dtype", onnxDataType(dt))});
  ::onnx::GraphProto body;
  body.set_name(ctx.freshName("slice_body"));
  const std::string iter = ctx.freshName("iter"), cond = ctx.freshName("cond_in"),
                    acc = ctx.freshName("acc");
  ctx.withGraph(&body, [&] {
    auto typed = [&](const std::string& name, ScalarType t) {
      auto* vi = body.add_input();
      vi->set_name(name);
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnxDataType(t));
      vi->mutable_type()->mutable_tensor_type()->mutable_shape();
    };
    typed(iter, ScalarType::Long);
    typed(cond, ScalarType::Bool);
    auto* vi = body.add_input();
    vi->set_name(acc);
    vi->mutable_type()
        ->mutable_sequence_type()
        ->mutable_elem_type()
        ->mutable_tensor_type()
        ->set_elem_type(onnxDataType(dt));
    std::string i = ctx.op("Add", {start, ctx.op("Mul", {iter, stepC})});
    body.add_output()->set_name(ctx.op("Identity", {cond}));
    body.add_output()->set_name(ctx.op("SequenceInsert", {acc, ctx.op("SequenceAt", {seq, i})}));
  });
  ctx.setCurrentNode(&n);
  return ctx.op("Loop", {count, "", empty}, {attrG("body", body)});
}

// as_strided(x, size, stride, storage_offset) -> Gather of x's storage, flattened, at the
// element indices offset + sum(i_k * stride_k) (torch.onnx's symbolic_opset9 as_strided, which
// flattens x itself). as_strided reads x's storage, not x's elements in order, and its offset
// is absolute in the storage (None: x's own): where the example run shows that x is a view
// whose elements fill a block of its storage in another order (a transpose, a permute) or
// from an offset, the block is rebuilt in storage order (Transpose by strides, descending)
// and the offset taken from it. A view that leaves gaps in its storage (a slice's, an
// expand's) is an error: the storage is not in the graph. Size, stride and offset must be
// constants and the indices inside the block.
void convertAsStrided(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const std::vector<int64_t> size = args[1].unwrapToIntList(), stride = args[2].unwrapToIntList();
  const ValueFacts* fx = ctx.factsOf(args[0].value());
  const int64_t base = fx && fx->strides ? fx->storageOffset : 0;
  const int64_t offset = args[3].isNone() ? base : args[3].unwrapToInt();
  if (size.size() != stride.size())
    args[2].fail(fmt::format("{} strides", size.size()), std::to_string(stride.size()));
  int64_t numel = 1;
  for (int64_t d : size) numel *= d;
  std::vector<int64_t> index(static_cast<size_t>(numel), offset - base);
  int64_t top = offset, bottom = offset;
  for (size_t k = 0; k < size.size(); ++k) {
    if (stride[k] < 0) args[2].fail("strides >= 0", std::to_string(stride[k]));
    if (size[k] > 0) top += (size[k] - 1) * stride[k];
    int64_t inner = 1;
    for (size_t m = k + 1; m < size.size(); ++m) inner *= size[m];
    for (int64_t e = 0; e < numel; ++e) index[e] += (e / inner) % size[k] * stride[k];
  }
  std::string x = args[0].unwrapToTensor();
  if (fx && fx->strides && fx->sizes) {
    // The dims by stride, descending: x laid out in that order is contiguous exactly when x
    // fills its block of storage without gaps (size-1 dims do not count).
    const std::vector<int64_t>& xs = *fx->sizes;
    const std::vector<int64_t>& st = *fx->strides;
    std::vector<int64_t> perm(xs.size());
    for (size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<int64_t>(d);
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return st[a] > st[b]; });
    int64_t expect = 1;
    bool dense = true;
    for (auto it = perm.rbegin(); it != perm.rend(); ++it) {
      if (xs[*it] == 1) continue;
      dense = dense && st[*it] == expect;
      expect *= xs[*it];
    }
    if (!dense)
      args[0].fail(
          "a tensor whose elements fill a block of its storage (as_strided reads the "
          "storage)",
          fmt::format("a view with strides [{}]", fmt::join(st, ", ")));
    bool identity = true;
    for (size_t d = 0; d < perm.size(); ++d) identity = identity && perm[d] == int64_t(d);
    if (!identity) x = ctx.op("Transpose", {x}, {attrIs("perm", perm)});
  }
  if (std::optional<std::vector<int64_t>> xs = ctx.sizesOf(args[0].value()); xs && numel > 0) {
    int64_t have = 1;
    for (int64_t d : *xs) have *= d;
    if (top - base >= have || bottom < base)
      args[2].fail(fmt::format("a view inside the input's {} elements", have),
                   fmt::format("element {}", top - base));
  }
  std::string flat = ctx.op("Reshape", {x, ctx.constInt64s({-1})});
  ctx.setOutput(n, 0,
                ctx.op("Gather", {flat, ctx.initializer(Tensor::fromVector(index, size))},
                       {attrI("axis", 0)}));
}

}  // namespace

void registerShapeConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"aten::view", "aten::reshape"}, convertReshape);
  r.addOverloads({"aten::flatten.using_ints"}, convertFlatten);
  r.addOverloads({"aten::unflatten.int"}, convertUnflatten);
  r.addOverloads({"aten::channel_shuffle"}, convertChannelShuffle);
  r.addOverloads({"aten::t", "aten::transpose.int", "aten::permute"}, convertTranspose);
  r.addOverloads({"aten::squeeze", "aten::squeeze.dim"}, convertSqueeze);
  r.addOverloads({"aten::unsqueeze"}, convertUnsqueeze);
  r.addOverloads({"aten::tensor_split.sections", "aten::tensor_split.indices",
                  "aten::tensor_split.tensor_indices_or_sections"},
                 convertTensorSplit);
  // list(l): a copy of a list. Exported lists are values (a sequence op returns a new
  // sequence), so the copy is the list itself.
  r.addOverloads({"aten::list.t"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    if (std::optional<IValue> known = ctx.takeStaticListAfterWrite(args[0].value())) {
      ctx.setStatic(n.output(), *known);
    } else if (std::optional<std::string> written = ctx.takeListAfterWrite(args[0].value())) {
      ctx.setOutput(n, 0, *written);
      if (mayHoldTensor(args[0].value()->type())) ctx.markSequence(n.output());
    } else if (ctx.isSequence(args[0].value())) {
      ctx.setOutput(n, 0, args[0].unwrapToTensor());
      ctx.markSequence(n.output());
    } else if (args[0].isTensorList()) {
      ctx.setTensorList(n.output(), args[0].unwrapToTensorList());
    } else if (!args[0].isIValue() && !mayHoldTensor(args[0].value()->type())) {
      // Numbers computed at run time (stft's `list(input.size())` under dynamic axes): the
      // 1-d tensor that holds them.
      ctx.setOutput(n, 0, args[0].unwrapToTensor());
    } else {
      ctx.setStatic(n.output(), args[0].unwrapToIValue());
    }
  });
  // is_pinned: CPU tensors of an exported model are never in pinned memory.
  r.addOverloads({"aten::is_pinned"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs&) {
    ctx.setStatic(n.output(), IValue(false));
  });
  r.addOverloads({"aten::expand"}, convertExpand);
  r.addOverloads({"aten::expand_as"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(
        n, 0,
        ctx.op("Expand", {args[0].unwrapToTensor(), ctx.op("Shape", {args[1].unwrapToTensor()})}));
  });
  // No-ops in a value graph: contiguous, detach, clone, alias, cpu (every tensor is there).
  r.addOverloads(
      {"aten::contiguous", "aten::detach", "aten::clone", "aten::alias", "prim::data", "aten::cpu"},
      identity);
  r.addOverloads(
      {"aten::to.dtype", "aten::to.dtype_layout", "aten::to.other", "aten::to.prim_dtype",
       "aten::to.prim_other", "aten::to.device", "aten::to.prim_Device", "aten::type_as"},
      convertTo);
  r.addOverloads({"aten::cat", "aten::concat", "aten::stack"}, convertCat);
  r.addOverloads({"aten::split.Tensor", "aten::split", "aten::split.sizes",
                  "aten::split_with_sizes", "aten::chunk"},
                 convertSplit);
  r.addOverloads({"aten::slice.Tensor"}, convertSlice);
  r.addOverloads({"aten::narrow"}, convertNarrow);
  r.addOverloads({"aten::select.int"}, convertSelect);
  r.addOverloads({"aten::index_select"}, convertIndexSelect);
  r.addOverloads({"aten::size.int", "aten::size"}, convertSize);
  r.addOverloads({"aten::add.int"}, intArith("Add"));
  r.addOverloads({"aten::sub.int"}, intArith("Sub"));
  r.addOverloads({"aten::mul.int"}, intArith("Mul"));
  // min(a, b) / max(a, b) of numbers computed at run time (d2go's `min(H, W)` of a dynamic
  // image): Min / Max of the 0-d tensors, int64 for ints, float when either is a float.
  r.addOverloads({"prim::min.int"}, intArith("Min"));
  r.addOverloads({"prim::max.int"}, intArith("Max"));
  auto floatMinMax = [](std::string opType) {
    return [opType](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
      ctx.setOutput(n, 0,
                    ctx.op(opType, {tensorOrScalar(ctx, args[0], ScalarType::Float),
                                    tensorOrScalar(ctx, args[1], ScalarType::Float)}));
    };
  };
  r.addOverloads({"prim::min.float", "prim::min.int_float", "prim::min.float_int"},
                 floatMinMax("Min"));
  r.addOverloads({"prim::max.float", "prim::max.int_float", "prim::max.float_int"},
                 floatMinMax("Max"));
  // math.floor / math.ceil of a float computed at run time (F.interpolate's output size from a
  // scale factor): Floor / Ceil, then the int64 it returns; of an int: the int.
  for (const auto& entry :
       std::vector<std::pair<std::string, std::string>>{{"floor", "Floor"}, {"ceil", "Ceil"}}) {
    const std::string opType = entry.second;
    r.addOverloads({"aten::" + entry.first + ".float"}, [opType](OnnxCtx& ctx, const Node& n,
                                                                 OnnxArgs& args) {
      ctx.setOutput(n, 0,
                    ctx.castTo(ctx.op(opType, {tensorOrScalar(ctx, args[0], ScalarType::Float)}),
                               ScalarType::Float, ScalarType::Long));
    });
    r.addOverloads({"aten::" + entry.first + ".int"}, convertNumberIdentity);
  }
  // floordiv rounds down (Python's //): (a - a mod b) / b, Mod taking the divisor's sign.
  r.addOverloads({"aten::floordiv.int"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string a = tensorOrScalar(ctx, args[0], ScalarType::Long),
                b = tensorOrScalar(ctx, args[1], ScalarType::Long);
    ctx.setOutput(n, 0, ctx.op("Div", {ctx.op("Sub", {a, ctx.op("Mod", {a, b})}), b}));
  });
  // remainder.int: Python's %, the result taking the divisor's sign: Mod (fmod=0).
  r.addOverloads({"aten::remainder.int"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(n, 0,
                  ctx.op("Mod", {tensorOrScalar(ctx, args[0], ScalarType::Long),
                                 tensorOrScalar(ctx, args[1], ScalarType::Long)}));
  });
  // __range_length(lo, hi, step): the trip count of range(lo, hi, step), max(0, ceil((hi - lo) /
  // step)) as max(0, (hi - lo + step - 1) // step) for a positive step (mirrored for a negative
  // one); step must be a constant (0 is PyTorch's error).
  r.addOverloads({"aten::__range_length"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const int64_t step = args[2].unwrapToInt();
    if (step == 0) args[2].fail("a step other than 0", "0");
    std::string lo = tensorOrScalar(ctx, args[0], ScalarType::Long),
                hi = tensorOrScalar(ctx, args[1], ScalarType::Long);
    std::string span = step > 0 ? ctx.op("Sub", {hi, lo}) : ctx.op("Sub", {lo, hi});
    const int64_t by = step > 0 ? step : -step;
    span = ctx.op("Add", {span, ctx.constScalar(static_cast<double>(by - 1), ScalarType::Long)});
    std::string count =
        ctx.op("Div", {span, ctx.constScalar(static_cast<double>(by), ScalarType::Long)});
    ctx.setOutput(n, 0, ctx.op("Max", {count, ctx.constScalar(0, ScalarType::Long)}));
  });
  // __derive_index(index, start, step) = start + index * step: the loop variable of a
  // `for i in range(start, end, step)` whose loop stays a Loop.
  r.addOverloads({"aten::__derive_index"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string i = tensorOrScalar(ctx, args[0], ScalarType::Long);
    std::string scaled = ctx.op("Mul", {i, tensorOrScalar(ctx, args[2], ScalarType::Long)});
    ctx.setOutput(n, 0, ctx.op("Add", {tensorOrScalar(ctx, args[1], ScalarType::Long), scaled}));
  });
  r.addOverloads({"aten::Int.Tensor", "aten::Float.Tensor", "aten::Bool.Tensor",
                  "aten::ScalarImplicit", "aten::Int.float", "aten::Int.Scalar", "aten::Int.bool",
                  "aten::Float.int", "aten::Float.Scalar", "aten::Float.bool", "aten::Bool.int",
                  "aten::Bool.float", "aten::FloatImplicit", "aten::IntImplicit"},
                 convertNumberIdentity);
  r.addOverloads({"aten::arange"}, convertArange(1));
  r.addOverloads({"aten::arange.start"}, convertArange(2));
  r.addOverloads({"aten::arange.start_step"}, convertArange(3));
  r.addOverloads({"aten::_dim_arange"}, convertDimArange);
  r.addOverloads({"aten::linspace"}, convertLinspace);
  r.addOverloads({"aten::eye"}, convertEye(true));
  r.addOverloads({"aten::eye.m"}, convertEye(false));
  r.addOverloads({"aten::zeros"}, fillNew(0.0));
  r.addOverloads({"aten::ones"}, fillNew(1.0));
  r.addOverloads({"aten::full"}, fillNew(std::nullopt));
  r.addOverloads({"aten::zeros_like"}, fillLike(0.0));
  r.addOverloads({"aten::new_zeros"}, fillNewLike(0.0));
  r.addOverloads({"aten::new_ones"}, fillNewLike(1.0));
  r.addOverloads({"aten::new_empty"}, fillNewLike(0.0));
  r.addOverloads({"aten::new_full"}, fillNewLike(std::nullopt));
  r.addOverloads({"aten::_cast_Long"}, castTo(ScalarType::Long));
  r.addOverloads({"aten::_cast_Int"}, castTo(ScalarType::Int));
  r.addOverloads({"aten::_cast_Float"}, castTo(ScalarType::Float));
  r.addOverloads({"aten::_cast_Double"}, castTo(ScalarType::Double));
  r.addOverloads({"aten::_cast_Byte"}, castTo(ScalarType::Byte));
  r.addOverloads({"aten::_cast_Char"}, castTo(ScalarType::Char));
  r.addOverloads({"aten::_cast_Short"}, castTo(ScalarType::Short));
  // Float scalars computed at run time (loop-carried, from a dynamic size): 0-d float tensors
  // (OnnxCtx::dtypeOf's Float for a float), int operands cast; int / int is a float division.
  // (Plain variables, not structured bindings: clang 14 cannot capture those in lambdas.)
  for (const auto& entry : std::vector<std::pair<std::string, std::string>>{
           {"add", "Add"}, {"sub", "Sub"}, {"mul", "Mul"}, {"div", "Div"}}) {
    const std::string& name = entry.first;
    const std::string& opType = entry.second;
    std::vector<std::string> schemas = {"aten::" + name + ".float", "aten::" + name + ".int_float",
                                        "aten::" + name + ".float_int"};
    // aten::div(Scalar, Scalar) -> float: d2go's `320. / min(H, W)` of a dynamic image.
    if (name == "div") schemas = {"aten::div.float", "aten::div.int", "aten::div"};
    for (const std::string& schema : schemas)
      r.addOverloads({schema}, [opType](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
        ctx.setOutput(n, 0,
                      ctx.op(opType, {tensorOrScalar(ctx, args[0], ScalarType::Float),
                                      tensorOrScalar(ctx, args[1], ScalarType::Float)}));
      });
  }
  r.addOverloads(
      {"aten::neg.float", "aten::neg.int"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
        ScalarType dt =
            n.kind() == Symbol::aten("neg") && n.input(0)->type()->kind() == TypeKind::IntType
                ? ScalarType::Long
                : ScalarType::Float;
        ctx.setOutput(n, 0, ctx.op("Neg", {tensorOrScalar(ctx, args[0], dt)}));
      });
  // Bool scalars (loop-carried flags) and bool tensors: And / Or / Xor. Integers (tensors and
  // int scalars): BitwiseAnd / BitwiseOr / BitwiseXor, which ONNX has from opset 18 (torch.onnx
  // 1.13 refuses them at every opset).
  for (const auto& entry : std::vector<std::pair<std::string, std::string>>{
           {"and", "And"}, {"or", "Or"}, {"xor", "Xor"}}) {
    const std::string& name = entry.first;
    const std::string& opType = entry.second;
    std::vector<std::string> schemas;
    for (const char* overload : {".bool", ".int", ".Tensor", ".Scalar"}) {
      schemas.push_back("aten::__" + name + "__" + overload);
      if (std::string(overload) != ".bool" && std::string(overload) != ".int")
        schemas.push_back("aten::__i" + name + "__" + overload);
    }
    for (const char* overload : {".Tensor", ".Scalar", ".Scalar_Tensor"})
      schemas.push_back("aten::bitwise_" + name + overload);
    for (const char* overload : {".Tensor", ".Scalar"})
      schemas.push_back("aten::bitwise_" + name + "_" + overload);
    std::vector<std::string> known;
    for (const auto& sc : schemas)
      if (OperatorRegistry::global().findOverload(sc)) known.push_back(sc);
    const std::string bitwise = "Bitwise" + opType;
    OnnxConverter fn = [opType, bitwise](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
      std::optional<ScalarType> dt = ctx.dtypeOf(n.output());
      if (!dt) {
        auto a = ctx.dtypeOf(args[0].value()), b = ctx.dtypeOf(args[1].value());
        dt = a && b ? promoteTypes(*a, *b) : a ? a : b;
      }
      if (dt.value_or(ScalarType::Bool) == ScalarType::Bool)
        return ctx.setOutput(n, 0,
                             ctx.op(opType, {tensorOrScalar(ctx, args[0], ScalarType::Bool),
                                             tensorOrScalar(ctx, args[1], ScalarType::Bool)}));
      if (!isIntegralType(*dt, false)) args[0].fail("a bool or integer tensor", toString(*dt));
      if (ctx.opset() < 18)
        throw Error(fmt::format(
            "{} of {} values is exported from opset 18 ({}); this export is at opset {}",
            n.kind().toQualString(), toString(*dt), bitwise, ctx.opset()));
      ctx.setOutput(
          n, 0,
          ctx.op(bitwise, {tensorOrScalar(ctx, args[0], *dt), tensorOrScalar(ctx, args[1], *dt)}));
    };
    for (const auto& sc : known) r.addOverloads({std::string_view(sc)}, fn);
  }
  // Shifts of integers (torch.onnx's symbolic_opset9 __lshift_ / __rshift_): x << y = x * 2^y,
  // x >> y = floor(x / 2^y) (an arithmetic shift), computed in double and cast back.
  for (const bool left : {true, false}) {
    const std::string name = left ? "lshift" : "rshift";
    std::vector<std::string> known;
    for (const std::string& sc : {"aten::__" + name + "__.Tensor", "aten::__" + name + "__.Scalar",
                                  "aten::__i" + name + "__.Tensor",
                                  "aten::__i" + name + "__.Scalar", "aten::__" + name + "__.int"})
      if (OperatorRegistry::global().findOverload(sc)) known.push_back(sc);
    OnnxConverter fn = [left](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
      std::optional<ScalarType> dt = ctx.dtypeOf(n.output());
      if (!dt) dt = ctx.dtypeOf(args[0].value());
      const ScalarType out = dt.value_or(ScalarType::Long);
      if (!isIntegralType(out, false)) args[0].fail("an integer tensor", toString(out));
      std::string x = tensorOrScalar(ctx, args[0], ScalarType::Double);
      std::string y = tensorOrScalar(ctx, args[1], ScalarType::Double);
      std::string p = ctx.op("Pow", {ctx.constScalar(2.0, ScalarType::Double), y});
      std::string v = left ? ctx.op("Mul", {x, p}) : ctx.op("Floor", {ctx.op("Div", {x, p})});
      ctx.setOutput(n, 0, ctx.op("Cast", {v}, {attrI("to", onnxDataType(out))}));
    };
    for (const auto& sc : known) r.addOverloads({std::string_view(sc)}, fn);
  }
  r.addOverloads({"aten::__not__"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(n, 0, ctx.op("Not", {tensorOrScalar(ctx, args[0], ScalarType::Bool)}));
  });
  r.addOverloads({"aten::lt.int", "aten::lt.float"}, scalarCompare("Less"));
  r.addOverloads({"aten::le.int", "aten::le.float"}, scalarCompare("LessOrEqual"));
  r.addOverloads({"aten::gt.int", "aten::gt.float"}, scalarCompare("Greater"));
  r.addOverloads({"aten::ge.int", "aten::ge.float"}, scalarCompare("GreaterOrEqual"));
  r.addOverloads({"aten::eq.int", "aten::eq.float"}, scalarCompare("Equal"));
  r.addOverloads({"aten::ne.int", "aten::ne.float"}, scalarCompare("Equal", /*negate=*/true));
  // tensor(int / float / bool, dtype, device, requires_grad): the 0-d value cast to dtype.
  r.addOverloads({"aten::tensor.int", "aten::tensor.float", "aten::tensor.bool"},
                 [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
                   std::optional<ScalarType> dt;
                   if (!args[1].isNone()) dt = scalarTypeFromInt(args[1].unwrapToInt());
                   if (!dt) dt = ctx.dtypeOf(n.output());
                   std::string x = args[0].unwrapToTensor();
                   ctx.setOutput(n, 0, dt ? ctx.castTo(x, ctx.dtypeOf(args[0].value()), *dt) : x);
                 });
  r.addOverloads({"aten::ones_like"}, fillLike(1.0));
  r.addOverloads({"aten::full_like"}, fillLike(std::nullopt));
  r.addNode(prim::NumToTensor, convertNumberIdentity);
  r.addNode(prim::ListConstruct, convertListConstruct);
  r.addOverloads({"prim::unchecked_cast"}, convertPassThrough);
  // prim::dtype / prim::device of a tensor computed at run time (inside Loop / If bodies, where
  // the example run observed nothing: `c[0] = 1.0` builds its value with the target's dtype
  // and device): the dtype the conversion knows, the CPU.
  r.addNode(prim::dtype, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    // Views and copies keep their input's dtype: followed back to a value whose dtype is known.
    static const std::unordered_set<Symbol> keep = {
        Symbol::aten("select"),    Symbol::aten("slice"),     Symbol::aten("t"),
        Symbol::aten("transpose"), Symbol::aten("permute"),   Symbol::aten("contiguous"),
        Symbol::aten("reshape"),   Symbol::aten("view"),      Symbol::aten("clone"),
        Symbol::aten("squeeze"),   Symbol::aten("unsqueeze"), Symbol::aten("flatten"),
        Symbol::aten("expand"),    Symbol::aten("narrow"),    Symbol::aten("detach")};
    const Value* x = args[0].value();
    std::optional<ScalarType> d = ctx.dtypeOf(x);
    while (!d && keep.count(x->node()->kind()) && !x->node()->inputs().empty()) {
      x = x->node()->input(0);
      d = ctx.dtypeOf(x);
    }
    if (!d)
      throw Error(fmt::format("prim::dtype: the dtype of %{} must be known for ONNX export",
                              x->debugName()),
                  convert::nodePlace(n));
    ctx.setStatic(n.output(), IValue(static_cast<int64_t>(*d)));
  });
  r.addNode(prim::device, [](OnnxCtx& ctx, const Node& n, OnnxArgs&) {
    ctx.setStatic(n.output(), IValue(Device()));
  });
  r.addNode(prim::unchecked_unwrap_optional, convertPassThrough);
  r.addNode(prim::TupleConstruct, convertListConstruct);
  // prim::DictConstruct(k0, v0, k1, v1, ...): its tensor values, in order (model outputs).
  r.addNode(prim::DictConstruct, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::vector<std::string> xs;
    for (size_t i = 1; i < args.size(); i += 2)
      if (!args[i].isNone()) xs.push_back(args[i].unwrapToTensor());
    ctx.setTensorList(n.output(), xs);
  });
  r.addNode(prim::ListUnpack, convertUnpack);
  // prim::Uninitialized: the placeholder output of a branch that raises or returns early; never
  // read on the path taken.
  r.addNode(prim::Uninitialized,
            [](OnnxCtx& ctx, const Node& n, OnnxArgs&) { ctx.setStatic(n.output(), IValue()); });
  // prim::TupleIndex(tuple, i): element i of a tensor list or a static tuple.
  r.addNode(prim::TupleIndex, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    int64_t i = args[1].unwrapToInt();
    if (args[0].isTensorList()) {
      auto xs = args[0].unwrapToTensorList();
      if (i < 0) i += static_cast<int64_t>(xs.size());
      if (i < 0 || i >= static_cast<int64_t>(xs.size()))
        args[1].fail("an index into the tuple", std::to_string(i));
      return ctx.setOutput(n, 0, xs[i]);
    }
    const IValue& t = args[0].unwrapToIValue();
    if (!t.isTuple()) args[0].fail("a tuple", convert::detail::describeIValue(t));
    const auto& es = t.toTuple()->elements;
    if (i < 0) i += static_cast<int64_t>(es.size());
    if (i < 0 || i >= static_cast<int64_t>(es.size()))
      args[1].fail("an index into the tuple", std::to_string(i));
    ctx.setStatic(n.output(), es[i]);
  });
  r.addNode(prim::TupleUnpack, convertUnpack);
  r.addOverloads({"aten::__getitem__.t", "aten::select.t"}, convertListGetItem);
  // Lists grown at run time (prepare.cpp's carryListAppends): ONNX sequences.
  r.addOverloads({"aten::append.t"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    // A constant list of constants that are no tensors (the CellParamsBase objects a quantized
    // GRU's forward collects inside a loop body): appended now, as the interpreter would.
    if (args[0].isIValue() && args[1].isIValue() && !args[1].unwrapToIValue().isTensor() &&
        args[0].unwrapToIValue().isList()) {
      ListPtr l = args[0].unwrapToIValue().toList();
      l->list.push_back(args[1].unwrapToIValue());
      ctx.setStatic(n.output(), IValue(l));
      return;
    }
    if (const TypePtr& t = n.input(1)->type(); t && t->kind() != TypeKind::TensorType) {
      // a list of numbers computed at run time (sizes appended in a loop) is a 1-d tensor:
      // Concat (as torch.onnx's scripting export of a List[int])
      std::string x = args[1].unwrapToTensor();
      if (auto d = ctx.dtypeOf(args[0].value()))
        x = ctx.castTo(x, ctx.dtypeOf(args[1].value()), *d);
      // Appended to `[]`: the element alone. ONNX Runtime's shape inference counts a Concat with
      // an empty constant as empty (F.interpolate's output_size of a run-time scale, unrolled,
      // reached Resize as "sizes (0) must be same as rank of input 'X' (4)").
      if (args[0].isIValue() && args[0].unwrapToIValue().isList() &&
          args[0].unwrapToIValue().toList()->list.empty())
        return ctx.setOutput(n, 0, unsqueeze(ctx, x, {0}));
      std::string list = args[0].unwrapToTensor();
      ctx.setOutput(n, 0, ctx.op("Concat", {list, unsqueeze(ctx, x, {0})}, {attrI("axis", 0)}));
      return;
    }
    std::string x = args[1].unwrapToTensor();
    std::string seq = ctx.toSequence(args[0].value(), dtypeOr(ctx, args[1].value()));
    ctx.setOutput(n, 0, ctx.op("SequenceInsert", {seq, x}));
    ctx.markSequence(n.output());
    inheritElementFacts(ctx, n.output(),
                        ctx.rankOf(args[1].value()) ? args[1].value() : args[0].value());
  });
  // Writes to lists of tensors (Note [List writes] in prepare.cpp): insert -> SequenceInsert,
  // pop -> SequenceAt + SequenceErase, _set_item -> SequenceErase + SequenceInsert, Delete ->
  // SequenceErase (torch.onnx's scripting symbolics).
  r.addOverloads({"aten::insert.t"}, convertListInsert);
  r.addOverloads({"aten::pop.t"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string seq = ctx.toSequence(args[0].value());
    std::string i =
        ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), ScalarType::Long);
    ctx.setOutput(n, 0, ctx.op("SequenceAt", {seq, i}));
    ctx.setListAfterWrite(args[0].value(), ctx.op("SequenceErase", {seq, i}));
  });
  r.addOverloads({"aten::Delete.t"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string seq = ctx.toSequence(args[0].value());
    std::string i =
        ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), ScalarType::Long);
    ctx.setListAfterWrite(args[0].value(), ctx.op("SequenceErase", {seq, i}));
  });
  r.addOverloads({"aten::_set_item.t"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    if (!mayHoldTensor(args[0].value()->type())) return setNumberListItem(ctx, n, args);
    std::string seq = ctx.toSequence(args[0].value(), dtypeOr(ctx, args[2].value()));
    // A negative index counts from the end: made non-negative first, so that the insert after
    // the erase lands where the element was.
    std::string i = listIndex(ctx, args[1], seq, /*clampForInsert=*/false);
    std::string after =
        ctx.op("SequenceInsert", {ctx.op("SequenceErase", {seq, i}), args[2].unwrapToTensor(), i});
    ctx.setOutput(n, 0, after);
    ctx.markSequence(n.output());
    ctx.setListAfterWrite(args[0].value(), after);
  });
  // slice.t(l, start, end, step): an int list computed at run time (fcn's x.shape[-2:] with
  // dynamic axes) -> Slice of the 1-d int64 tensor; a list of tensors with constant bounds ->
  // the sub-list; a list of tensors grown at run time (an ONNX sequence: a streaming model's
  // `self.frames = self.frames[1:]` in a loop) -> sliceSequence. (Constant lists were folded
  // before conversion.)
  r.addOverloads({"aten::slice.t"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    auto bound = [&](size_t i, int64_t dflt) {
      return args[i].isNone() ? ctx.constInt64s({dflt}) : intAsList(ctx, args[i]);
    };
    if (args[0].isTensorList() && args[1].isIValue() && args[2].isIValue() && args[3].isIValue()) {
      auto xs = args[0].unwrapToTensorList();
      const int64_t size = static_cast<int64_t>(xs.size()), step = args[3].unwrapToInt();
      if (step <= 0) args[3].fail("a positive step", std::to_string(step));
      auto clampIndex = [&](size_t i, int64_t dflt) {
        int64_t v = args[i].isNone() ? dflt : args[i].unwrapToInt();
        if (v < 0) v += size;
        return std::clamp<int64_t>(v, 0, size);
      };
      std::vector<std::string> ys;
      for (int64_t k = clampIndex(1, 0); k < clampIndex(2, size); k += step) ys.push_back(xs[k]);
      return ctx.setTensorList(n.output(), ys);
    }
    if (ctx.isSequence(args[0].value()) || args[0].isTensorList()) {
      ctx.setOutput(n, 0, sliceSequence(ctx, n, args));
      ctx.markSequence(n.output());
      inheritElementFacts(ctx, n.output(), args[0].value());
      return;
    }
    if (args[0].isIValue() || mayHoldTensor(args[0].value()->type()))
      args[0].fail("an int list computed at run time, or a list of tensors", "another list");
    std::string xs =
        ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), ScalarType::Long);
    ctx.setOutput(n, 0,
                  ctx.op("Slice", {xs, bound(1, 0), bound(2, kInt64Max), ctx.constInt64s({0}),
                                   intAsList(ctx, args[3])}));
  });
  // len(Tensor): its first dim's size at run time (a module state empty before the first
  // call: silero's `if len(h)`), Shape then Gather (0-d int64).
  r.addOverloads({"aten::len.Tensor"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(
        n, 0,
        ctx.op("Gather",
               {ctx.op("Shape", {args[0].unwrapToTensor()}), ctx.constScalar(0, ScalarType::Long)},
               {attrI("axis", 0)}));
  });
  // list + list (aten::add.t): the elements of both in order. nn.MultiheadAttention's packed
  // projection for a key that is the value (`[q] + linear(k).chunk(2)`) builds a tensor list so.
  r.addOverloads({"aten::add.t"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    if (args[0].isIValue() && args[1].isIValue() && args[0].unwrapToIValue().isList() &&
        args[1].unwrapToIValue().isList()) {
      const auto& a = args[0].unwrapToIValue().toList();
      std::vector<IValue> xs = a->list;
      for (const IValue& x : args[1].unwrapToIValue().toList()->list) xs.push_back(x);
      return ctx.setStatic(n.output(), IValue(ListImpl::create(a->elementType, std::move(xs))));
    }
    // Int lists, one of them computed at run time (HF BERT's and GPT-2's
    // `x.size()[:-1] + (heads, head_dim)` under dynamic axes): Concat of 1-d int64 tensors.
    const TypePtr& type = n.output()->type();
    if (type->kind() == TypeKind::ListType &&
        type->containedTypes().at(0)->kind() == TypeKind::IntType && !args[0].isTensorList() &&
        !args[1].isTensorList() && !ctx.isSequence(args[0].value()) &&
        !ctx.isSequence(args[1].value())) {
      auto ints = [&](const convert::ArgValue<std::string>& a) {
        if (a.isIValue()) return ctx.constInt64s(a.unwrapToIntList());
        return ctx.castTo(a.unwrapToTensor(), ctx.dtypeOf(a.value()), ScalarType::Long);
      };
      return ctx.setOutput(n, 0,
                           ctx.op("Concat", {ints(args[0]), ints(args[1])}, {attrI("axis", 0)}));
    }
    std::vector<std::string> xs = args[0].unwrapToTensorList();
    for (std::string& x : args[1].unwrapToTensorList()) xs.push_back(std::move(x));
    ctx.setTensorList(n.output(), xs);
  });
  // sum(List[int]) computed at run time (swin's `sum(shift_size) > 0` with dynamic sizes): the
  // list is a 1-d int64 tensor, ReduceSum of all of it (0-d). Known lists were folded.
  r.addOverloads({"aten::sum.int"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string xs =
        ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), ScalarType::Long);
    ctx.setOutput(n, 0, ctx.op("ReduceSum", {xs}, {attrI("keepdims", 0)}));
  });
  r.addOverloads({"aten::len.t"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const Value* list = args[0].value();
    if (!args[0].isIValue() && !args[0].isTensorList() && !ctx.isSequence(list) && list->type() &&
        list->type()->kind() == TypeKind::ListType &&
        !mayHoldTensor(list->type()))  // numbers computed at run time: a 1-d tensor
      return ctx.setOutput(n, 0, ctx.op("Size", {args[0].unwrapToTensor()}));
    ctx.setOutput(n, 0, ctx.op("SequenceLength", {ctx.toSequence(args[0].value())}));
  });
  r.addOverloads({"aten::as_strided"}, convertAsStrided);
  // _reshape_from_tensor(self, shape): Reshape by the 1-d shape tensor (torch.onnx's symbolic).
  r.addOverloads({"aten::_reshape_from_tensor"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string shape =
        ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), ScalarType::Long);
    ctx.setOutput(n, 0, ctx.op("Reshape", {args[0].unwrapToTensor(), shape}));
  });
  r.addOverloads({"aten::flip"}, convertFlip);
  r.addOverloads({"aten::roll"}, convertRoll);
  r.addOverloads({"aten::repeat"}, convertRepeat);
  r.addOverloads({"aten::repeat_interleave.self_int", "aten::repeat_interleave.self_Tensor"},
                 convertRepeatInterleave);
  r.addOverloads({"aten::movedim.int", "aten::movedim.intlist"}, convertMovedim);
  r.addOverloads({"aten::numpy_T"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    int64_t rank = ctx.expectRank(n, args[0].value());
    std::vector<int64_t> perm;
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    ctx.setOutput(n, 0, ctx.op("Transpose", {args[0].unwrapToTensor()}, {attrIs("perm", perm)}));
  });
  r.addOverloads({"aten::view_as", "aten::reshape_as"}, [](OnnxCtx& ctx, const Node& n,
                                                           OnnxArgs& args) {
    ctx.setOutput(
        n, 0,
        ctx.op("Reshape", {args[0].unwrapToTensor(), ctx.op("Shape", {args[1].unwrapToTensor()})}));
  });
  r.addOverloads({"aten::unbind.int"}, convertUnbind);
  r.addOverloads({"aten::unsafe_chunk", "aten::unsafe_split.Tensor"}, convertSplit);
  r.addOverloads({"aten::tril", "aten::tril_"}, trilu(false));
  r.addOverloads({"aten::triu", "aten::triu_"}, trilu(true));
  r.addOverloads({"aten::broadcast_tensors", "aten::meshgrid", "aten::meshgrid.indexing"},
                 convertBroadcastTensors);
  // tensor(list, dtype): a constant list -> an initializer (the runtime's kernel builds it, as
  // torch.tensor does); a 1-d list of numbers computed at run time -> their 0-d values
  // unsqueezed and concatenated, cast to dtype (torch.onnx's symbolic_opset9 tensor).
  r.addOverloads({"aten::tensor"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    bool allStatic = true;
    for (const Value* v : n.inputs()) allStatic = allStatic && ctx.isStatic(v);
    const KernelRegistry& kernels = KernelRegistry::global();
    if (allStatic && kernels.hasKernel(n, args.op())) {
      Stack stack;
      for (const Value* v : n.inputs()) stack.push_back(ctx.staticValue(v));
      kernels.operationFor(n, args.op())(stack);
      return ctx.setOutput(n, 0, ctx.initializer(stack.back().toTensor()));
    }
    const Node* list = args[0].value()->node();
    if (list->kind() != prim::ListConstruct && !ctx.isStatic(args[0].value()) &&
        !ctx.isSequence(args[0].value()) && !ctx.hasTensorList(args[0].value())) {
      // numbers computed at run time (appended in a loop): already a 1-d tensor
      const TypePtr& lt = args[0].value()->type();
      ScalarType dt = lt && lt->kind() == TypeKind::ListType &&
                              lt->expect<ListType>().getElementType()->kind() == TypeKind::FloatType
                          ? ScalarType::Float
                          : ScalarType::Long;
      if (!args[1].isNone()) dt = *scalarTypeFromInt(args[1].unwrapToInt());
      return ctx.setOutput(n, 0, ctx.castTo(args[0].unwrapToTensor(), std::nullopt, dt));
    }
    if (list->kind() != prim::ListConstruct)
      args[0].fail("a list literal of numbers", "a list computed at run time");
    ScalarType dt = ScalarType::Long;
    for (const Value* e : list->inputs()) {
      if (e->type() && e->type()->kind() == TypeKind::FloatType) dt = ScalarType::Float;
      if (e->type() && e->type()->kind() == TypeKind::TensorType)
        args[0].fail("a list of numbers", "a list of tensors");
    }
    if (!args[1].isNone()) dt = *scalarTypeFromInt(args[1].unwrapToInt());
    std::vector<std::string> xs;
    for (const Value* e : list->inputs())
      xs.push_back(unsqueeze(ctx, ctx.castTo(ctx.toTensor(e), ctx.dtypeOf(e), dt), {0}));
    ctx.setOutput(n, 0, xs.size() == 1 ? xs[0] : ctx.op("Concat", xs, {attrI("axis", 0)}));
  });
  // ---- facts of a tensor that export knows (torch.onnx's symbolic_opset9 dim, numel, ...) ----
  // dim(x): the rank.
  // dim(x): a constant; Size(Shape(x)) when the rank is known at run time only (a module state
  // whose rank changes between calls, module_state.h).
  r.addOverloads({"aten::dim"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    if (auto r = ctx.rankOf(args[0].value())) return ctx.setStatic(n.output(), IValue(*r));
    ctx.setOutput(n, 0, ctx.op("Size", {ctx.op("Shape", {args[0].unwrapToTensor()})}));
  });
  // numel(x): the product of the sizes; ReduceProd(Shape(x)) when a dim follows a dynamic axis.
  r.addOverloads({"aten::numel"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    auto sizes = ctx.sizesOf(args[0].value());
    if (sizes && !ctx.isDynamic(args[0].value())) {
      int64_t c = 1;
      for (int64_t d : *sizes) c *= d;
      return ctx.setStatic(n.output(), IValue(c));
    }
    ctx.setOutput(n, 0,
                  reduce(ctx, "Prod", ctx.op("Shape", {args[0].unwrapToTensor()}), {}, false));
  });
  r.addOverloads({"aten::is_floating_point"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    auto dt = ctx.dtypeOf(args[0].value());
    if (!dt) args[0].fail("a tensor of known dtype", "an unknown dtype");
    ctx.setStatic(n.output(), IValue(isFloatingType(*dt)));
  });
  // x is None / x is not None where x is a tensor computed at run time (never None) or None.
  r.addOverloads(
      {"aten::__is__", "aten::__isnot__"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
        const bool isnot = n.kind() == Symbol::aten("__isnot__");
        bool same;
        if (args[0].isNone() || args[1].isNone())
          same = args[0].isNone() && args[1].isNone();
        else
          args[1].fail("None (identity of other objects is not exported)", "another value");
        ctx.setStatic(n.output(), IValue(isnot ? !same : same));
      });
  // item(x): the 0-d value (a number computed at run time is a 0-d tensor here).
  r.addOverloads({"aten::item"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    auto r = ctx.rankOf(args[0].value());
    ctx.setOutput(n, 0, r && *r == 0 ? x : ctx.op("Reshape", {x, ctx.constInt64s({})}));
  });
  r.addOverloads({"aten::_shape_as_tensor"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(n, 0, ctx.op("Shape", {args[0].unwrapToTensor()}));
  });
  r.addOverloads({"aten::unsafe_split_with_sizes"}, convertSplit);
  r.addOverloads({"aten::_cast_Half"}, castTo(ScalarType::Half));
  // as_tensor(data, dtype): data cast to dtype (a copy is a value here).
  r.addOverloads({"aten::as_tensor"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    if (args[1].isNone()) return ctx.setOutput(n, 0, x);
    ctx.setOutput(
        n, 0,
        ctx.castTo(x, ctx.dtypeOf(args[0].value()), *scalarTypeFromInt(args[1].unwrapToInt())));
  });
  // nonzero_numpy(x) and where(condition): one 1-d index tensor per dim (NonZero's rows).
  r.addOverloads({"aten::nonzero_numpy", "aten::where"}, [](OnnxCtx& ctx, const Node& n,
                                                            OnnxArgs& args) {
    const int64_t rank = ctx.expectRank(n, args[0].value());
    std::string nz = ctx.op("NonZero", {args[0].unwrapToTensor()});
    std::vector<std::string> xs;
    for (int64_t d = 0; d < rank; ++d)
      xs.push_back(ctx.op("Gather", {nz, ctx.constScalar(static_cast<double>(d), ScalarType::Long)},
                          {attrI("axis", 0)}));
    ctx.setTensorList(n.output(), xs);
    setElementFacts(ctx, n.output(), ScalarType::Long, 1);
  });
  // unfold(dim, size, step): windows along dim as a new last dim -> Gather with the [windows,
  // size] positions (dim's size known), then the size axis moved last (torch.onnx's opset 12
  // unfold takes Slices and a Concat).
  r.addOverloads({"aten::unfold"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    auto sizes = ctx.expectSizes(n, args[0].value());
    const int64_t rank = static_cast<int64_t>(sizes.size());
    const int64_t dim = rank == 0 ? 0 : wrapDim(args[1].unwrapToInt(), rank);
    const int64_t size = args[2].unwrapToInt(), step = args[3].unwrapToInt();
    if (rank == 0) args[0].fail("a tensor of at least 1 dim", "a 0-d tensor");
    if (ctx.isDynamicDim(args[0].value(), dim))
      args[0].fail("a static size along the unfolded dim", "a dynamic axis");
    if (step <= 0) args[3].fail("a positive step", std::to_string(step));
    if (size > sizes[dim])
      args[2].fail(fmt::format("a size of at most {}", sizes[dim]), std::to_string(size));
    const int64_t windows = (sizes[dim] - size) / step + 1;
    Tensor idx = Tensor::empty({windows, size}, ScalarType::Long);
    for (int64_t w = 0; w < windows; ++w)
      for (int64_t k = 0; k < size; ++k) idx.data<int64_t>()[w * size + k] = w * step + k;
    std::string y =
        ctx.op("Gather", {args[0].unwrapToTensor(), ctx.initializer(idx)}, {attrI("axis", dim)});
    // y: [..., windows, size, rest...] -> [..., windows, rest..., size]
    std::vector<int64_t> perm;
    for (int64_t d = 0; d <= dim; ++d) perm.push_back(d);
    for (int64_t d = dim + 2; d <= rank; ++d) perm.push_back(d);
    perm.push_back(dim + 1);
    ctx.setOutput(n, 0, ctx.op("Transpose", {y}, {attrIs("perm", perm)}));
  });
  // diagonal(offset, dim1, dim2): dim1 and dim2 moved last, the rows of the diagonal gathered,
  // then per row its column (GatherElements), the diagonal as the last dim.
  r.addOverloads({"aten::diagonal"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    auto sizes = ctx.expectSizes(n, args[0].value());
    const int64_t rank = static_cast<int64_t>(sizes.size());
    if (rank < 2) args[0].fail("a tensor of at least 2 dims", fmt::format("rank {}", rank));
    const int64_t off = args[1].unwrapToInt(0);
    const int64_t d1 = wrapDim(args[2].unwrapToInt(0), rank),
                  d2 = wrapDim(args[3].unwrapToInt(1), rank);
    if (d1 == d2) args[3].fail("a dim other than dim1", std::to_string(d2));
    if (ctx.isDynamicDim(args[0].value(), d1) || ctx.isDynamicDim(args[0].value(), d2))
      args[0].fail("static sizes along dim1 and dim2", "a dynamic axis");
    const int64_t r0 = std::max<int64_t>(-off, 0), c0 = std::max<int64_t>(off, 0);
    const int64_t len = std::max<int64_t>(0, std::min(sizes[d1] - r0, sizes[d2] - c0));
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < rank; ++d)
      if (d != d1 && d != d2) perm.push_back(d);
    perm.push_back(d1);
    perm.push_back(d2);
    std::string x = ctx.op("Transpose", {args[0].unwrapToTensor()}, {attrIs("perm", perm)});
    std::vector<int64_t> rows(len), cols(len);
    for (int64_t j = 0; j < len; ++j) rows[j] = r0 + j, cols[j] = c0 + j;
    std::string picked =
        ctx.op("Gather", {x, ctx.constInt64s(rows)}, {attrI("axis", rank - 2)});  // [..., len, B]
    std::string shape = ctx.op("Shape", {picked});
    std::string lead = ctx.op(
        "Slice", {shape, ctx.constInt64s({0}), ctx.constInt64s({rank - 1}), ctx.constInt64s({0})});
    std::string target = ctx.op("Concat", {lead, ctx.constInt64s({1})}, {attrI("axis", 0)});
    Tensor colIdx = Tensor::fromVector(cols, {len, 1});
    std::string idx = ctx.op("Expand", {ctx.initializer(colIdx), target});
    std::string y = ctx.op("GatherElements", {picked, idx}, {attrI("axis", rank - 1)});
    ctx.setOutput(n, 0, squeeze(ctx, y, {rank - 1}));
  });
  // empty / empty_like: zeros (any values are right; zeros are reproducible).
  r.addOverloads({"aten::empty.memory_format"}, fillNew(0.0));
  r.addOverloads({"aten::empty_like"}, fillLike(0.0));
}

}  // namespace torchless::onnx_export
