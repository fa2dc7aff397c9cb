// ONNX converters: indexing and scattering (src/ops/scatter.cpp's family): advanced indexing
// (aten::index.Tensor), index_put, and the functional forms of writes through views that
// passes/remove_mutation.cpp makes (slice_scatter, select_scatter, fill), after torch.onnx's
// symbolic_opset11 / 16 (index, index_put, slice_scatter, select_scatter).
#include "convert/onnx/onnx_ctx.h"

#include <algorithm>
#include <limits>

namespace torchless::onnx_export {

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

std::string toLong(OnnxCtx& ctx, const std::string& x, const Value* v) {
  return ctx.castTo(x, ctx.dtypeOf(v), ScalarType::Long);
}

// slice_scatter(self, src, dim, start, end, step) -> ScatterElements(self, indices, src, axis=dim)
// with indices = the positions the slice covers along dim, expanded to src's shape
// (https://onnx.ai/onnx/operators/onnx__ScatterElements.html). A slice covering the whole dim
// is src itself.
// Bounds computed at run time (`out[b, :v.numel()] = v`) come as 1-d int64 tensors in
// `runTimeStart` / `runTimeEnd` and take the computed-positions path.
void scatterSlice(OnnxCtx& ctx, const Node& n, const Value* selfV, const std::string& self,
                  const std::string& src, int64_t dim, std::optional<int64_t> startArg,
                  std::optional<int64_t> endArg, int64_t step,
                  const convert::ArgValue<std::string>& dimArg,
                  const std::string& runTimeStart = "", const std::string& runTimeEnd = "") {
  auto sizes = ctx.sizesOf(selfV);
  const std::optional<int64_t> knownRank =
      sizes ? std::optional<int64_t>(static_cast<int64_t>(sizes->size())) : ctx.rankOf(selfV);
  if (!knownRank) dimArg.fail("a dim of a tensor of known rank", "a tensor of unknown rank");
  const int64_t rank = *knownRank;
  dim = wrapDim(dim, rank);
  if (!sizes || ctx.isDynamicDim(selfV, dim) || !runTimeStart.empty() || !runTimeEnd.empty()) {
    // Along a dynamic axis, or inside a loop body where sizes are known at run time only, the
    // positions are computed: Slice(Range(0, size), start, end, step) clamps and wraps the
    // bounds as PyTorch does.
    if (step <= 0) dimArg.fail("a slice with a positive step", std::to_string(step));
    std::string size =
        ctx.op("Gather", {ctx.op("Shape", {self}), ctx.constInt64s({dim})}, {attrI("axis", 0)});
    std::string all =
        ctx.op("Range", {ctx.constScalar(0, ScalarType::Long), squeeze(ctx, size, {0}),
                         ctx.constScalar(1, ScalarType::Long)});
    std::string positions =
        ctx.op("Slice",
               {all, runTimeStart.empty() ? ctx.constInt64s({startArg.value_or(0)}) : runTimeStart,
                runTimeEnd.empty() ? ctx.constInt64s({endArg.value_or(kInt64Max)}) : runTimeEnd,
                ctx.constInt64s({0}), ctx.constInt64s({step})});
    std::vector<int64_t> shape(rank, 1);
    shape[dim] = -1;
    std::string indices = ctx.op(
        "Expand", {ctx.op("Reshape", {positions, ctx.constInt64s(shape)}), ctx.op("Shape", {src})});
    return ctx.setOutput(n, 0,
                         ctx.op("ScatterElements", {self, indices, src}, {attrI("axis", dim)}));
  }
  const int64_t size = (*sizes)[dim];
  if (step <= 0) dimArg.fail("a slice with a positive step", std::to_string(step));
  int64_t start = startArg.value_or(0), end = endArg.value_or(kInt64Max);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  if (start == 0 && end == size && step == 1) return ctx.setOutput(n, 0, src);
  std::vector<int64_t> positions;
  for (int64_t i = start; i < end; i += step) positions.push_back(i);
  std::vector<int64_t> shape(rank, 1);
  shape[dim] = static_cast<int64_t>(positions.size());
  Tensor idx = Tensor::empty(shape, ScalarType::Long);
  std::copy(positions.begin(), positions.end(), idx.data<int64_t>());
  std::string indices = ctx.op("Expand", {ctx.initializer(idx), ctx.op("Shape", {src})});
  ctx.setOutput(n, 0, ctx.op("ScatterElements", {self, indices, src}, {attrI("axis", dim)}));
}

void convertSliceScatter(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string self = args[0].unwrapToTensor();
  std::string src = ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()),
                               dtypeOr(ctx, args[0].value()));
  std::optional<int64_t> start, end;
  std::string runTimeStart, runTimeEnd;  // bounds computed at run time
  if (!args[3].isNone()) {
    if (args[3].isIValue())
      start = args[3].unwrapToInt();
    else
      runTimeStart = intAsList(ctx, args[3]);
  }
  if (!args[4].isNone()) {
    if (args[4].isIValue())
      end = args[4].unwrapToInt();
    else
      runTimeEnd = intAsList(ctx, args[4]);
  }
  scatterSlice(ctx, n, args[0].value(), self, src, args[2].unwrapToInt(0), start, end,
               args[5].unwrapToInt(1), args[2], runTimeStart, runTimeEnd);
}

// select_scatter(self, src, dim, index): src gets dim back (Unsqueeze), then as slice_scatter;
// an index computed at run time (a loop counter) or a dim of unknown size: ScatterElements
// with the index expanded to the unsqueezed src's shape.
void convertSelectScatter(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  int64_t rank = ctx.expectRank(n, args[0].value());
  int64_t dim = wrapDim(args[2].unwrapToInt(), rank);
  auto known = ctx.sizesOf(args[0].value());
  if (!args[3].isIValue() || !known || ctx.isDynamic(args[0].value())) {
    std::string src = ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()),
                                 dtypeOr(ctx, args[0].value()));
    src = unsqueeze(ctx, src, {dim});
    std::string index =
        args[3].isIValue()
            ? ctx.constInt64s({args[3].unwrapToInt()})
            : ctx.castTo(args[3].unwrapToTensor(), ctx.dtypeOf(args[3].value()), ScalarType::Long);
    index = ctx.op("Reshape", {index, ctx.constInt64s(std::vector<int64_t>(rank, 1))});
    index = ctx.op("Expand", {index, ctx.op("Shape", {src})});
    ctx.setOutput(
        n, 0,
        ctx.op("ScatterElements", {args[0].unwrapToTensor(), index, src}, {attrI("axis", dim)}));
    return;
  }
  int64_t index = args[3].unwrapToInt();
  auto sizes = *known;
  if (index < 0) index += sizes[dim];
  if (index < 0 || index >= sizes[dim])
    args[3].fail(fmt::format("an index into a dim of {}", sizes[dim]), std::to_string(index));
  std::string src = ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()),
                               dtypeOr(ctx, args[0].value()));
  src = unsqueeze(ctx, src, {dim});
  scatterSlice(ctx, n, args[0].value(), args[0].unwrapToTensor(), src, dim, index, index + 1, 1,
               args[2]);
}

// fill.Scalar(self, value) -> Expand(value, Shape(self)).
void convertFill(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ScalarType dt = dtypeOr(ctx, args[0].value());
  std::string v = tensorOrScalar(ctx, args[1], dt);
  ctx.setOutput(n, 0, ctx.op("Expand", {v, ctx.op("Shape", {args[0].unwrapToTensor()})}));
}

// The index tensors of a Tensor?[] argument ("" for None), in order.
std::vector<std::pair<std::string, const Value*>> indexList(
    OnnxCtx& ctx, const convert::ArgValue<std::string>& a) {
  const Node* def = a.value()->node();
  if (def->kind() != prim::ListConstruct)
    a.fail("a list of index tensors built in the model", "a list computed at run time");
  std::vector<std::pair<std::string, const Value*>> out;
  for (const Value* v : def->inputs()) {
    if (ctx.isStatic(v) && ctx.staticValue(v).isNone())
      out.emplace_back("", v);
    else
      out.emplace_back(ctx.toTensor(v), v);
  }
  return out;
}

bool isBoolIndex(OnnxCtx& ctx, const Value* v) {
  auto dt = ctx.dtypeOf(v);
  return dt == ScalarType::Bool || dt == ScalarType::Byte;
}

// Indices for GatherND / ScatterND: [..., k] int64 from k leading index tensors (broadcast),
// or from one boolean mask (NonZero, transposed). Returns the indices and k.
std::pair<std::string, int64_t> ndIndices(
    OnnxCtx& ctx, const Node& n, const convert::ArgValue<std::string>& a,
    const std::vector<std::pair<std::string, const Value*>>& idx) {
  if (idx.size() == 1 && !idx[0].first.empty() && isBoolIndex(ctx, idx[0].second)) {
    int64_t r = ctx.expectRank(n, idx[0].second);
    std::string mask = ctx.castTo(idx[0].first, ctx.dtypeOf(idx[0].second), ScalarType::Bool);
    return {ctx.op("Transpose", {ctx.op("NonZero", {mask})}, {attrIs("perm", {1, 0})}), r};
  }
  std::vector<std::string> parts;
  for (const auto& [t, v] : idx) {
    if (t.empty()) a.fail("index tensors for the leading dims (no None before a tensor)", "None");
    if (isBoolIndex(ctx, v))
      a.fail("integer index tensors (or one boolean mask)", "a boolean mask among others");
    parts.push_back(toLong(ctx, t, v));
  }
  if (parts.size() > 1) {
    // Broadcast the index tensors to one shape: adding zeros of each shape broadcasts them all.
    std::string zero = ctx.op("Mul", {parts[0], ctx.constScalar(0, ScalarType::Long)});
    for (size_t i = 1; i < parts.size(); ++i)
      zero = ctx.op("Add", {zero, ctx.op("Mul", {parts[i], ctx.constScalar(0, ScalarType::Long)})});
    for (auto& p : parts) p = ctx.op("Add", {p, zero});
  }
  for (auto& p : parts) p = unsqueeze(ctx, p, {-1});
  std::string nd = parts.size() == 1 ? parts[0] : ctx.op("Concat", parts, {attrI("axis", -1)});
  return {nd, static_cast<int64_t>(parts.size())};
}

// index.Tensor(self, indices): one tensor index (after leading Nones) -> Gather on its dim;
// one boolean mask or several leading index tensors -> GatherND
// (https://onnx.ai/onnx/operators/onnx__GatherND.html).
void convertIndex(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string self = args[0].unwrapToTensor();
  auto idx = indexList(ctx, args[1]);
  size_t lead = 0;
  while (lead < idx.size() && idx[lead].first.empty()) ++lead;
  size_t tensors = 0;
  for (const auto& [t, v] : idx) tensors += !t.empty();
  if (tensors == 1 && lead < idx.size() && !isBoolIndex(ctx, idx[lead].second)) {
    std::string i = toLong(ctx, idx[lead].first, idx[lead].second);
    return ctx.setOutput(n, 0,
                         ctx.op("Gather", {self, i}, {attrI("axis", static_cast<int64_t>(lead))}));
  }
  // Several index tensors, or a mask, after full slices or with slices between them
  // (`z[:, i, j]`, `x[i, :, j]`, `x[:, mask]`), as PyTorch's advanced indexing: the indexed
  // dims go first (Transpose), GatherND gives B + the other dims in order, and when the
  // indexed dims were adjacent B moves back to where they started.
  const int64_t rank = ctx.expectRank(n, args[0].value());
  std::vector<int64_t> indexed;
  std::vector<std::pair<std::string, const Value*>> given;
  int64_t bRank = 0;
  for (int64_t d = 0; const auto& [t, v] : idx) {
    if (t.empty()) {
      ++d;
      continue;
    }
    const bool mask = isBoolIndex(ctx, v);
    const int64_t span = mask ? ctx.expectRank(n, v) : 1;
    for (int64_t j = 0; j < span; ++j) indexed.push_back(d + j);
    d += span;
    bRank = std::max(bRank, mask ? int64_t{1} : ctx.expectRank(n, v));
    given.emplace_back(t, v);
  }
  if (indexed.empty() || indexed.back() >= rank)
    args[1].fail(fmt::format("indices for at most the {} dims of self", rank),
                 fmt::format("{} indexed dims", indexed.size()));
  std::vector<int64_t> perm = indexed;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(indexed.begin(), indexed.end(), d) == indexed.end()) perm.push_back(d);
  bool moved = false;
  for (int64_t d = 0; d < rank; ++d) moved = moved || perm[static_cast<size_t>(d)] != d;
  std::string src = moved ? ctx.op("Transpose", {self}, {attrIs("perm", perm)}) : self;
  auto [nd, k] = ndIndices(ctx, n, args[1], given);
  (void)k;
  std::string y = ctx.op("GatherND", {src, nd});
  bool adjacent = true;
  for (size_t j = 1; j < indexed.size(); ++j)
    adjacent = adjacent && indexed[j] == indexed[0] + int64_t(j);
  const int64_t lead0 = indexed.front();
  if (adjacent && lead0 > 0) {
    const int64_t outRank = bRank + rank - static_cast<int64_t>(indexed.size());
    std::vector<int64_t> back;
    for (int64_t d = 0; d < lead0; ++d) back.push_back(bRank + d);
    for (int64_t d = 0; d < bRank; ++d) back.push_back(d);
    for (int64_t d = bRank + lead0; d < outRank; ++d) back.push_back(d);
    y = ctx.op("Transpose", {y}, {attrIs("perm", back)});
  }
  ctx.setOutput(n, 0, y);
}

// ScatterND(x, nd, updates), with reduction "add" when accumulating (opset 16), else into zeros
// added to x (torch.onnx's opset 11 form).
std::string scatterNd(OnnxCtx& ctx, const std::string& x, const std::string& nd,
                      const std::string& updates, bool accumulate, ScalarType dt) {
  if (!accumulate) return ctx.op("ScatterND", {x, nd, updates});
  if (ctx.opset() >= 16) return ctx.op("ScatterND", {x, nd, updates}, {attrS("reduction", "add")});
  Tensor zero = Tensor::fromVector(std::vector<float>{0.0f}, {1}).to(dt);
  std::string zeros = ctx.op("ConstantOfShape", {ctx.op("Shape", {x})},
                             {attrT("value", toTensorProto(zero, "value"))});
  return ctx.op("Add", {x, ctx.op("ScatterND", {zeros, nd, updates})});
}

// index_put whose indices mix full slices (None) with index tensors or masks, as x[:, idx] = v,
// x[i, :, j] += u, x[:, mask] = v. Following PyTorch's advanced indexing: a boolean mask of k
// dims stands for its k nonzero() columns; the index tensors broadcast to one shape B; the
// indexed view's shape is self.shape[:p] + B + the rest when the indexed dims are adjacent
// (starting at p), else B + the unindexed dims. The indexed dims are transposed to the front,
// the values (broadcast to the view's shape, B moved to the front) scattered by ScatterND, and
// the result transposed back.
void indexPutMixed(OnnxCtx& ctx, const Node& n, OnnxArgs& args, const std::string& self,
                   const std::string& values, bool accumulate,
                   const std::vector<std::pair<std::string, const Value*>>& idx, int64_t rank) {
  const ScalarType dt = dtypeOr(ctx, args[0].value());
  std::vector<std::pair<int64_t, std::string>> adv;  // (dim of self, int64 index tensor)
  int64_t bRank = 0, dim = 0;
  for (const auto& [t, v] : idx) {
    if (t.empty()) {
      ++dim;
      continue;
    }
    if (isBoolIndex(ctx, v)) {
      const int64_t mr = ctx.expectRank(n, v);
      std::string nz =
          ctx.op("NonZero", {ctx.castTo(t, ctx.dtypeOf(v), ScalarType::Bool)});  // [mr, count]
      for (int64_t j = 0; j < mr; ++j)
        adv.emplace_back(
            dim + j,
            ctx.op("Gather", {nz, ctx.constScalar(static_cast<double>(j), ScalarType::Long)},
                   {attrI("axis", 0)}));
      bRank = std::max<int64_t>(bRank, 1);
      dim += mr;
    } else {
      adv.emplace_back(dim, toLong(ctx, t, v));
      bRank = std::max(bRank, ctx.expectRank(n, v));
      ++dim;
    }
  }
  if (dim > rank) args[1].fail(fmt::format("at most {} indices", rank), std::to_string(dim));
  bool adjacent = true;
  for (size_t i = 1; i < adv.size(); ++i)
    adjacent = adjacent && adv[i].first == adv[i - 1].first + 1;
  const int64_t first = adv.front().first, m = static_cast<int64_t>(adv.size());
  // Broadcast the index tensors to one shape (adding zeros of each shape), stack them on a last
  // axis.
  std::string zero = ctx.op("Mul", {adv[0].second, ctx.constScalar(0, ScalarType::Long)});
  for (size_t i = 1; i < adv.size(); ++i)
    zero =
        ctx.op("Add", {zero, ctx.op("Mul", {adv[i].second, ctx.constScalar(0, ScalarType::Long)})});
  std::vector<std::string> parts;
  for (const auto& a : adv) parts.push_back(unsqueeze(ctx, ctx.op("Add", {a.second, zero}), {-1}));
  std::string nd = parts.size() == 1 ? parts[0] : ctx.op("Concat", parts, {attrI("axis", -1)});
  // self with the indexed dims first.
  std::vector<int64_t> perm, rest;
  std::vector<bool> isAdv(rank, false);
  for (const auto& a : adv) {
    perm.push_back(a.first);
    isAdv[a.first] = true;
  }
  for (int64_t d = 0; d < rank; ++d)
    if (!isAdv[d]) rest.push_back(d);
  perm.insert(perm.end(), rest.begin(), rest.end());
  std::string xt = ctx.op("Transpose", {self}, {attrIs("perm", perm)});
  // The indexed view's shape, and the values broadcast to it.
  std::string selfShape = ctx.op("Shape", {self});
  auto dims = [&](int64_t lo, int64_t hi) {
    return ctx.op("Slice",
                  {selfShape, ctx.constInt64s({lo}), ctx.constInt64s({hi}), ctx.constInt64s({0})});
  };
  std::string bShape = ctx.op("Shape", {zero});
  std::vector<std::string> viewParts;
  if (adjacent && first > 0) viewParts.push_back(dims(0, first));
  viewParts.push_back(bShape);
  if (adjacent) {
    if (first + m < rank) viewParts.push_back(dims(first + m, rank));
  } else {
    for (int64_t d : rest) viewParts.push_back(dims(d, d + 1));
  }
  std::string view =
      viewParts.size() == 1 ? viewParts[0] : ctx.op("Concat", viewParts, {attrI("axis", 0)});
  std::string updates = ctx.op("Expand", {values, view});
  if (adjacent && first > 0) {
    // pre + B + post -> B + pre + post
    std::vector<int64_t> up;
    for (int64_t j = 0; j < bRank; ++j) up.push_back(first + j);
    for (int64_t j = 0; j < first; ++j) up.push_back(j);
    const int64_t viewRank = first + bRank + (rank - first - m);
    for (int64_t j = first + bRank; j < viewRank; ++j) up.push_back(j);
    updates = ctx.op("Transpose", {updates}, {attrIs("perm", up)});
  }
  std::string y = scatterNd(ctx, xt, nd, updates, accumulate, dt);
  std::vector<int64_t> inv(rank);
  for (int64_t i = 0; i < rank; ++i) inv[perm[i]] = i;
  ctx.setOutput(n, 0, ctx.op("Transpose", {y}, {attrIs("perm", inv)}));
}

// index_put(self, indices, values, accumulate): a boolean mask with one value -> Where; else
// ScatterND with values expanded to indices.shape[:-1] + self.shape[k:]
// (https://onnx.ai/onnx/operators/onnx__ScatterND.html); accumulate adds (reduction "add" from
// opset 16; before, values are scattered into zeros and added, as torch.onnx's opset 11 does).
void convertIndexPut(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string self = args[0].unwrapToTensor();
  const ScalarType dt = dtypeOr(ctx, args[0].value());
  std::string values = ctx.castTo(args[2].unwrapToTensor(), ctx.dtypeOf(args[2].value()), dt);
  const bool accumulate = args[3].unwrapToBool(false);
  auto idx = indexList(ctx, args[1]);
  const int64_t rank = ctx.expectRank(n, args[0].value());
  auto vsizes = ctx.sizesOf(args[2].value());
  const bool single = vsizes && [&] {
    int64_t c = 1;
    for (int64_t s : *vsizes) c *= s;
    return c == 1;
  }();
  if (idx.size() == 1 && !idx[0].first.empty() && isBoolIndex(ctx, idx[0].second) && single &&
      !accumulate) {
    int64_t mr = ctx.expectRank(n, idx[0].second);
    std::string mask = ctx.castTo(idx[0].first, ctx.dtypeOf(idx[0].second), ScalarType::Bool);
    std::vector<int64_t> trailing;
    for (int64_t d = mr; d < rank; ++d) trailing.push_back(d);
    if (!trailing.empty()) mask = unsqueeze(ctx, mask, trailing);
    std::string v = vsizes->empty() ? values : ctx.op("Reshape", {values, ctx.constInt64s({})});
    return ctx.setOutput(n, 0, ctx.op("Where", {mask, v, self}));
  }
  bool mixed = false;  // a None before a tensor index, or a mask among other indices
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i].first.empty()) {
      for (size_t j = i + 1; j < idx.size(); ++j) mixed = mixed || !idx[j].first.empty();
    } else if (isBoolIndex(ctx, idx[i].second) && idx.size() > 1) {
      mixed = true;
    }
  }
  if (mixed) return indexPutMixed(ctx, n, args, self, values, accumulate, idx, rank);
  auto [nd, k] = ndIndices(ctx, n, args[1], idx);
  // values broadcast to indices.shape[:-1] + self.shape[k:].
  std::string ndShape = ctx.op("Shape", {nd});
  std::string lead =
      ctx.op("Slice", {ndShape, ctx.constInt64s({0}), ctx.constInt64s({-1}), ctx.constInt64s({0})});
  std::string rest = ctx.op("Slice", {ctx.op("Shape", {self}), ctx.constInt64s({k}),
                                      ctx.constInt64s({kInt64Max}), ctx.constInt64s({0})});
  std::string target = ctx.op("Concat", {lead, rest}, {attrI("axis", 0)});
  std::string updates = ctx.op("Expand", {values, target});
  if (!accumulate) return ctx.setOutput(n, 0, ctx.op("ScatterND", {self, nd, updates}));
  if (ctx.opset() >= 16)
    return ctx.setOutput(n, 0,
                         ctx.op("ScatterND", {self, nd, updates}, {attrS("reduction", "add")}));
  Tensor zero = Tensor::fromVector(std::vector<float>{0.0f}, {1}).to(dt);
  std::string zeros = ctx.op("ConstantOfShape", {ctx.op("Shape", {self})},
                             {attrT("value", toTensorProto(zero, "value"))});
  ctx.setOutput(n, 0, ctx.op("Add", {self, ctx.op("ScatterND", {zeros, nd, updates})}));
}

// gather(self, dim, index) -> GatherElements(x, index, axis)
// (https://onnx.ai/onnx/operators/onnx__GatherElements.html).
void convertGather(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  int64_t dim =
      wrapDim(args[1].unwrapToInt(), std::max<int64_t>(ctx.expectRank(n, args[0].value()), 1));
  std::string idx = toLong(ctx, args[2].unwrapToTensor(), args[2].value());
  ctx.setOutput(n, 0,
                ctx.op("GatherElements", {args[0].unwrapToTensor(), idx}, {attrI("axis", dim)}));
}

// scatter's src (args[3]) in self's dtype, cut to index's (args[2]) shape: PyTorch reads only
// src's leading part of index's shape; ScatterElements wants the same shape.
std::string srcAsIndexShape(OnnxCtx& ctx, const Node& n, OnnxArgs& args, ScalarType dt) {
  std::string updates = ctx.castTo(args[3].unwrapToTensor(), ctx.dtypeOf(args[3].value()), dt);
  auto srcSizes = ctx.sizesOf(args[3].value());
  auto idxSizes = ctx.expectSizes(n, args[2].value());
  if (srcSizes && *srcSizes != idxSizes && srcSizes->size() == idxSizes.size()) {
    std::vector<int64_t> zeros(idxSizes.size(), 0), axes;
    for (size_t i = 0; i < idxSizes.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    updates = ctx.op("Slice", {updates, ctx.constInt64s(zeros), ctx.constInt64s(idxSizes),
                               ctx.constInt64s(axes)});
  }
  return updates;
}

// scatter_reduce.two(self, dim, index, src, reduce, *, include_self=True), as ATen's
// scatter_reduce: ScatterElements with reduction "add" (sum, mean), "mul" (prod) from opset 16,
// "max" (amax) and "min" (amin) from opset 18. Without include_self the indexed positions are
// first set to the reduction's identity (0, 1, -inf, +inf); mean divides by the number of
// values each position took (1 more with include_self; positions no index names keep self).
void convertScatterReduce(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const ScalarType dt = dtypeOr(ctx, args[0].value());
  const int64_t dim =
      wrapDim(args[1].unwrapToInt(), std::max<int64_t>(ctx.expectRank(n, args[0].value()), 1));
  const std::string reduce = args[4].unwrapToString();
  const bool includeSelf = args.size() > 5 ? args[5].unwrapToBool() : true;
  const bool floating = isFloatingType(dt);
  std::string reduction;
  double identity = 0;
  int minOpset = 16;
  if (reduce == "sum" || reduce == "mean") {
    reduction = "add";
  } else if (reduce == "prod") {
    reduction = "mul", identity = 1;
  } else if (reduce == "amax" || reduce == "amin") {
    reduction = reduce == "amax" ? "max" : "min", minOpset = 18;
    identity = (reduce == "amax" ? -1 : 1) * std::numeric_limits<double>::infinity();
    if (!includeSelf && !floating)
      args[0].fail("a floating tensor (amax/amin without include_self)", toString(dt));
  } else {
    args[4].fail("'sum', 'prod', 'mean', 'amax' or 'amin'", "'" + reduce + "'");
  }
  if (reduce == "mean" && !floating) args[0].fail("a floating tensor (mean)", toString(dt));
  if (ctx.opset() < minOpset)
    throw Error(fmt::format(
        "{} with reduce='{}' is exported from opset {} (ScatterElements' reduction '{}'); this "
        "export writes opset {}",
        n.kind().toQualString(), reduce, minOpset, reduction, ctx.opset()));
  const std::string idx = toLong(ctx, args[2].unwrapToTensor(), args[2].value());
  const std::string updates = srcAsIndexShape(ctx, n, args, dt);
  const std::vector<OnnxAttr> axis = {attrI("axis", dim)};
  auto filled = [&](const std::string& like, double v) {
    return ctx.op("Expand", {ctx.constScalar(v, dt), ctx.op("Shape", {like})});
  };
  std::string base = args[0].unwrapToTensor();
  if (!includeSelf) base = ctx.op("ScatterElements", {base, idx, filled(idx, identity)}, axis);
  std::vector<OnnxAttr> attrs = axis;
  attrs.push_back(attrS("reduction", reduction));
  std::string y = ctx.op("ScatterElements", {base, idx, updates}, attrs);
  if (reduce == "mean") {
    std::string self = args[0].unwrapToTensor();
    std::vector<OnnxAttr> add = axis;
    add.push_back(attrS("reduction", "add"));
    std::string count = ctx.op("ScatterElements",
                               {filled(self, includeSelf ? 1.0 : 0.0), idx, filled(idx, 1.0)}, add);
    y = ctx.op("Div", {y, ctx.op("Max", {count, ctx.constScalar(1, dt)})});
  }
  ctx.setOutput(n, 0, y);
}

// scatter(self, dim, index, src | value[, reduce]) / scatter_add -> ScatterElements(self,
// index, updates, axis[, reduction]); a scalar value is expanded to index's shape. Reductions
// ("add", "multiply", scatter_add) need opset 16, where ScatterElements gained them: before,
// repeated indices could not be summed.
OnnxConverter scatter(std::optional<std::string> fixedReduce) {
  return [fixedReduce](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = dtypeOr(ctx, args[0].value());
    int64_t dim =
        wrapDim(args[1].unwrapToInt(), std::max<int64_t>(ctx.expectRank(n, args[0].value()), 1));
    std::string idx = toLong(ctx, args[2].unwrapToTensor(), args[2].value());
    std::string updates;
    if (args[3].isIValue() && !args[3].unwrapToIValue().isTensor())
      updates =
          ctx.op("Expand", {ctx.constScalar(args[3].unwrapToDouble(), dt), ctx.op("Shape", {idx})});
    else
      updates = srcAsIndexShape(ctx, n, args, dt);
    std::optional<std::string> reduction = fixedReduce;
    if (!reduction && args.size() > 4) {
      std::string r = args[4].unwrapToString();
      if (r == "add")
        reduction = "add";
      else if (r == "multiply")
        reduction = "mul";
      else
        args[4].fail("'add' or 'multiply'", "'" + r + "'");
    }
    std::vector<OnnxAttr> attrs = {attrI("axis", dim)};
    if (reduction) {
      if (ctx.opset() < 16)
        throw Error(fmt::format(
            "{} with a reduction is exported from opset 16 (ScatterElements' reduction); this "
            "export writes opset {}",
            n.kind().toQualString(), ctx.opset()));
      attrs.push_back(attrS("reduction", *reduction));
    }
    ctx.setOutput(n, 0, ctx.op("ScatterElements", {args[0].unwrapToTensor(), idx, updates}, attrs));
  };
}

// index_copy(self, dim, index, source) / index_add(self, dim, index, source, alpha) /
// index_fill(self, dim, index, value): ScatterElements along dim with index reshaped to lie
// along dim and expanded to the updates' shape (index_fill's value expanded to self's shape
// with dim of index's length), as torch.onnx's symbolic_opset9/11 (index_fill, index_copy)
// and scatter_add (index_add: repeated indices sum, ScatterElements' reduction "add" from
// opset 16).
enum class IndexWrite { Copy, Add, Fill };

OnnxConverter indexWrite(IndexWrite kind) {
  return [kind](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const int64_t rank = std::max<int64_t>(ctx.expectRank(n, args[0].value()), 1);
    const int64_t dim = wrapDim(args[1].unwrapToInt(), rank);
    const ScalarType dt = dtypeOr(ctx, args[0].value());
    std::string self = args[0].unwrapToTensor();
    if (ctx.expectRank(n, args[0].value()) == 0)
      self = ctx.op("Reshape", {self, ctx.constInt64s({1})});
    std::vector<int64_t> along(rank, 1);
    along[dim] = -1;
    std::string index = ctx.op("Reshape", {toLong(ctx, args[2].unwrapToTensor(), args[2].value()),
                                           ctx.constInt64s(along)});
    std::string updates;
    if (kind == IndexWrite::Fill) {
      std::string shape = ctx.op("Shape", {self});
      std::vector<std::string> parts;
      if (dim > 0)
        parts.push_back(ctx.op("Slice", {shape, ctx.constInt64s({0}), ctx.constInt64s({dim})}));
      parts.push_back(ctx.op("Shape", {ctx.op("Reshape", {index, ctx.constInt64s({-1})})}));
      if (dim + 1 < rank)
        parts.push_back(
            ctx.op("Slice", {shape, ctx.constInt64s({dim + 1}), ctx.constInt64s({kInt64Max})}));
      std::string target =
          parts.size() == 1 ? parts[0] : ctx.op("Concat", parts, {attrI("axis", 0)});
      updates = ctx.op("Expand", {tensorOrScalar(ctx, args[3], dt), target});
    } else {
      updates = ctx.castTo(args[3].unwrapToTensor(), ctx.dtypeOf(args[3].value()), dt);
      if (ctx.expectRank(n, args[3].value()) == 0)
        updates = ctx.op("Reshape", {updates, ctx.constInt64s({1})});
      if (kind == IndexWrite::Add && args.size() > 4 &&
          !(args[4].isIValue() && args[4].unwrapToDouble() == 1.0))
        updates = ctx.op("Mul", {updates, tensorOrScalar(ctx, args[4], dt)});
    }
    index = ctx.op("Expand", {index, ctx.op("Shape", {updates})});
    std::vector<OnnxAttr> attrs = {attrI("axis", dim)};
    if (kind == IndexWrite::Add) {
      if (ctx.opset() < 16)
        throw Error(fmt::format(
            "{} is exported from opset 16 (ScatterElements' reduction sums repeated indices); "
            "this export writes opset {}",
            n.kind().toQualString(), ctx.opset()));
      attrs.push_back(attrS("reduction", "add"));
    }
    std::string out = ctx.op("ScatterElements", {self, index, updates}, attrs);
    if (ctx.expectRank(n, args[0].value()) == 0)
      out = ctx.op("Reshape", {out, ctx.constInt64s({})});
    ctx.setOutput(n, 0, out);
  };
}

// masked_select(self, mask) -> Compress of both flattened after broadcasting to one shape: a
// 1-d tensor of the selected elements in row-major order.
void convertMaskedSelect(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  auto xs = ctx.expectSizes(n, args[0].value());
  auto ms = ctx.expectSizes(n, args[1].value());
  size_t rank = std::max(xs.size(), ms.size());
  std::vector<int64_t> shape(rank, 1);
  for (const auto* s : {&xs, &ms})
    for (size_t i = 0; i < s->size(); ++i)
      if ((*s)[i] != 1) shape[rank - s->size() + i] = (*s)[i];
  std::string x = ctx.op("Expand", {args[0].unwrapToTensor(), ctx.constInt64s(shape)});
  std::string m =
      ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), ScalarType::Bool);
  m = ctx.op("Expand", {m, ctx.constInt64s(shape)});
  ctx.setOutput(n, 0,
                ctx.op("Compress",
                       {ctx.op("Reshape", {x, ctx.constInt64s({-1})}),
                        ctx.op("Reshape", {m, ctx.constInt64s({-1})})},
                       {attrI("axis", 0)}));
}

}  // namespace

// take(self, index): Gather from self flattened.
void convertTake(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string flat = ctx.op("Reshape", {args[0].unwrapToTensor(), ctx.constInt64s({-1})});
  ctx.setOutput(n, 0,
                ctx.op("Gather", {flat, toLong(ctx, args[1].unwrapToTensor(), args[1].value())},
                       {attrI("axis", 0)}));
}

// masked_scatter(self, mask, source): the positions where mask (broadcast to self) is true, in
// C order, take source's first elements in order -> ScatterND with NonZero's positions and
// source flattened and cut to their count (torch.onnx's symbolic_opset11 masked_scatter).
void convertMaskedScatter(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string self = args[0].unwrapToTensor();
  const ScalarType dt = dtypeOr(ctx, args[0].value());
  std::string mask =
      ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), ScalarType::Bool);
  mask = ctx.op("Expand", {mask, ctx.op("Shape", {self})});
  std::string idx =
      ctx.op("Transpose", {ctx.op("NonZero", {mask})}, {attrIs("perm", {1, 0})});  // [k, rank]
  std::string count = ctx.op("Slice", {ctx.op("Shape", {idx}), ctx.constInt64s({0}),
                                       ctx.constInt64s({1}), ctx.constInt64s({0})});
  std::string src =
      ctx.op("Reshape", {ctx.castTo(args[2].unwrapToTensor(), ctx.dtypeOf(args[2].value()), dt),
                         ctx.constInt64s({-1})});
  src = ctx.op("Slice", {src, ctx.constInt64s({0}), count, ctx.constInt64s({0})});
  ctx.setOutput(n, 0, ctx.op("ScatterND", {self, idx, src}));
}

void registerScatterConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"aten::take"}, convertTake);
  r.addOverloads({"aten::masked_scatter", "aten::masked_scatter_"}, convertMaskedScatter);
  r.addOverloads({"aten::slice_scatter"}, convertSliceScatter);
  r.addOverloads({"aten::select_scatter"}, convertSelectScatter);
  r.addOverloads({"aten::fill.Scalar"}, convertFill);
  r.addOverloads({"aten::index.Tensor", "aten::index.Tensor_hacked_twin"}, convertIndex);
  r.addOverloads({"aten::index_put", "aten::index_put.hacked_twin"}, convertIndexPut);
  r.addOverloads({"aten::gather"}, convertGather);
  r.addOverloads({"aten::scatter.src", "aten::scatter.value", "aten::scatter_.src",
                  "aten::scatter_.value", "aten::scatter.reduce", "aten::scatter.value_reduce",
                  "aten::scatter_.reduce", "aten::scatter_.value_reduce"},
                 scatter(std::nullopt));
  r.addOverloads({"aten::scatter_add", "aten::scatter_add_"}, scatter(std::string("add")));
  r.addOverloads({"aten::scatter_reduce.two", "aten::scatter_reduce_.two"}, convertScatterReduce);
  r.addOverloads({"aten::masked_select"}, convertMaskedSelect);
  r.addOverloads({"aten::index_copy", "aten::index_copy_"}, indexWrite(IndexWrite::Copy));
  r.addOverloads({"aten::index_add", "aten::index_add_"}, indexWrite(IndexWrite::Add));
  r.addOverloads({"aten::index_fill.int_Scalar", "aten::index_fill.int_Tensor",
                  "aten::index_fill_.int_Scalar", "aten::index_fill_.int_Tensor"},
                 indexWrite(IndexWrite::Fill));
}

}  // namespace torchless::onnx_export
