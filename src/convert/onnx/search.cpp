// ONNX converters: sorting and searching (src/ops/search.cpp's family): topk, sort, argsort,
// nonzero, after torch.onnx's symbolic_opset11 forms.
#include "convert/onnx/onnx_ctx.h"

namespace torchless::onnx_export {

namespace {

// topk(self, k, dim, largest, sorted) -> TopK(x, [k], axis, largest, sorted)
// (https://onnx.ai/onnx/operators/onnx__TopK.html): values and int64 indices.
void convertTopk(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  int64_t rank = ctx.expectRank(n, args[0].value());
  int64_t dim = wrapDim(args[2].unwrapToInt(-1), std::max<int64_t>(rank, 1));
  std::string k = args[1].isIValue()
                      ? ctx.constInt64s({args[1].unwrapToInt()})
                      : unsqueeze(ctx,
                                  ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()),
                                             ScalarType::Long),
                                  {0});
  auto outs = ctx.opN("TopK", {args[0].unwrapToTensor(), k}, 2,
                      {attrI("axis", dim), attrI("largest", args[3].unwrapToBool(true) ? 1 : 0),
                       attrI("sorted", args[4].unwrapToBool(true) ? 1 : 0)});
  ctx.setOutput(n, 0, outs[0]);
  ctx.setOutput(n, 1, outs[1]);
}

// sort(self, [stable,] dim, descending) / argsort: TopK over the whole dim, largest when
// descending. Equal values come out in index order (ONNX Runtime's TopK), which is what
// PyTorch's stable sort gives.
void convertSort(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const bool stableForm = args.op() && args.op()->schema.overloadName() == "stable";
  const size_t dimIndex = stableForm ? 2 : 1;
  // Sizes unknown (inside a branch no example run took: batched_nms's per-class loop): k from
  // Shape, as for a dynamic input.
  const auto sizes = ctx.sizesOf(args[0].value());
  const int64_t rank = ctx.expectRank(n, args[0].value());
  std::string x = args[0].unwrapToTensor();
  if (rank == 0) {
    ctx.setOutput(n, 0, n.outputs().size() == 2 ? x : ctx.constScalar(0, ScalarType::Long));
    if (n.outputs().size() == 2) ctx.setOutput(n, 1, ctx.constScalar(0, ScalarType::Long));
    return;
  }
  int64_t dim = wrapDim(args[dimIndex].unwrapToInt(-1), rank);
  bool descending = args[dimIndex + 1].unwrapToBool(false);
  std::string k = ctx.isDynamic(args[0].value()) || !sizes
                      ? ctx.op("Slice", {ctx.op("Shape", {x}), ctx.constInt64s({dim}),
                                         ctx.constInt64s({dim + 1})})
                      : ctx.constInt64s({(*sizes)[dim]});
  auto outs =
      ctx.opN("TopK", {x, k}, 2,
              {attrI("axis", dim), attrI("largest", descending ? 1 : 0), attrI("sorted", 1)});
  if (n.kind() == Symbol::aten("argsort")) return ctx.setOutput(n, 0, outs[1]);
  ctx.setOutput(n, 0, outs[0]);
  ctx.setOutput(n, 1, outs[1]);
}

// nonzero(self) -> Transpose(NonZero(x)): [N, rank] int64 coordinates in row-major order.
void convertNonzero(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ctx.setOutput(n, 0,
                ctx.op("Transpose", {ctx.op("NonZero", {args[0].unwrapToTensor()})},
                       {attrIs("perm", {1, 0})}));
}

// bucketize(self, boundaries, out_int32, right): the number of boundaries below each value (at or
// below it with right=True), as ReduceSum over a comparison with the 1-d sorted boundaries
// (torch.onnx has no bucketize symbolic of its own; this is searchsorted's definition).
void convertBucketize(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  if (ctx.expectRank(n, args[1].value()) != 1) args[1].fail("1-d boundaries", "another rank");
  const bool right = args[3].unwrapToBool(false);
  ScalarType dt = promoteTypes(dtypeOr(ctx, args[0].value()), dtypeOr(ctx, args[1].value()));
  std::string x = tensorOrScalar(ctx, args[0], dt);
  std::string b = ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), dt);
  std::string cmp = ctx.op(right ? "GreaterOrEqual" : "Greater", {unsqueeze(ctx, x, {-1}), b});
  std::string count =
      reduce(ctx, "Sum", ctx.op("Cast", {cmp}, {attrI("to", onnxDataType(ScalarType::Long))}), {-1},
             false);
  ctx.setOutput(n, 0,
                args[2].unwrapToBool(false)
                    ? ctx.op("Cast", {count}, {attrI("to", onnxDataType(ScalarType::Int))})
                    : count);
}

// _unique / _unique2 (flattened) and unique_dim -> Unique(sorted=1[, axis])
// (https://onnx.ai/onnx/operators/onnx__Unique.html), as torch.onnx's symbolic_opset11:
// values, inverse (reshaped to self's shape when flattened) and counts. An output not
// requested is PyTorch's empty tensor. sorted=False is refused: PyTorch's CPU kernel then
// returns a hash-set order that ONNX cannot reproduce.
void convertUnique(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const bool byDim = n.kind() == Symbol::aten("unique_dim");
  const size_t base = byDim ? 2 : 1;
  if (!args[base].unwrapToBool(true))
    args[base].fail("True (an unsorted unique has no ONNX order)", "False");
  const bool inverse = args[base + 1].unwrapToBool(false);
  const bool counts = args.size() > base + 2 && args[base + 2].unwrapToBool(false);
  std::string x = args[0].unwrapToTensor();
  std::vector<OnnxAttr> attrs = {attrI("sorted", 1)};
  if (byDim)
    attrs.push_back(
        attrI("axis", wrapDim(args[1].unwrapToInt(), ctx.expectRank(n, args[0].value()))));
  auto outs = ctx.opN("Unique", {x}, 4, attrs);
  ctx.setOutput(n, 0, outs[0]);
  std::string empty = ctx.initializer(Tensor::empty({0}, ScalarType::Long));
  if (n.outputs().size() > 1 && n.output(1)->hasUses())
    ctx.setOutput(n, 1,
                  !inverse ? empty
                  : byDim  ? outs[2]
                           : ctx.op("Reshape", {outs[2], ctx.op("Shape", {x})}));
  if (n.outputs().size() > 2 && n.output(2)->hasUses())
    ctx.setOutput(n, 2, counts ? outs[3] : empty);
}

}  // namespace

void registerSearchConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"aten::_unique", "aten::_unique2", "aten::unique_dim"}, convertUnique);
  r.addOverloads({"aten::bucketize.Tensor", "aten::bucketize.Scalar"}, convertBucketize);
  r.addOverloads({"aten::topk"}, convertTopk);
  r.addOverloads({"aten::sort", "aten::sort.stable", "aten::argsort", "aten::argsort.stable"},
                 convertSort);
  r.addOverloads({"aten::nonzero"}, convertNonzero);
}

}  // namespace torchless::onnx_export
