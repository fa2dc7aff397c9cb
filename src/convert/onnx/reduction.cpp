// ONNX converters: reductions (src/ops/reduction.cpp's family). Axes are inputs from opset 13
// for ReduceSum and from opset 18 for the others (see reduce() in onnx_ctx.cpp).
#include "convert/onnx/onnx_ctx.h"

namespace torchless::onnx_export {

namespace {

// The optional `dtype` argument casts the input first (torch.sum(x, dtype=...)).
std::string withDtype(OnnxCtx& ctx, const OnnxArgs& args, size_t dtypeIndex, std::string x) {
  if (dtypeIndex < args.size() && !args[dtypeIndex].isNone()) {
    auto t = scalarTypeFromInt(args[dtypeIndex].unwrapToInt());
    if (!t) args[dtypeIndex].fail("a ScalarType", "an unknown dtype");
    x = ctx.castTo(x, ctx.dtypeOf(args[0].value()), *t);
  }
  return x;
}

// mean/sum/prod/amax/amin over dims: Reduce<kind>(x, axes, keepdims).
// `dimIndex` < 0: a full reduction (no dims argument). Sums of bool/int promote to int64.
OnnxConverter reduceDims(std::string kind, int dimIndex, int keepIndex, int dtypeIndex) {
  return [=](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = withDtype(ctx, args, dtypeIndex < 0 ? args.size() : static_cast<size_t>(dtypeIndex),
                              args[0].unwrapToTensor());
    if (auto out = ctx.dtypeOf(n.output()); out && kind == "Sum")
      x = ctx.castTo(x, ctx.dtypeOf(args[0].value()), *out);
    std::vector<int64_t> axes;
    bool keep = false;
    if (dimIndex >= 0) {
      axes = args[dimIndex].unwrapToIntList(std::vector<int64_t>{});
      keep = args[keepIndex].unwrapToBool();
      int64_t rank = ctx.expectRank(n, args[0].value());
      for (auto& a : axes) a = wrapDim(a, rank);
    }
    ctx.setOutput(n, 0, reduce(ctx, kind, x, axes, keep));
  };
}

// max.dim / min.dim -> (Reduce{Max,Min}, Arg{Max,Min}) on one axis.
OnnxConverter reduceWithIndex(std::string kind) {
  return [=](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    int64_t dim = wrapDim(args[1].unwrapToInt(), ctx.expectRank(n, args[0].value()));
    bool keep = args[2].unwrapToBool();
    ctx.setOutput(n, 0, reduce(ctx, kind, x, {dim}, keep));
    ctx.setOutput(n, 1, ctx.op("Arg" + kind, {x}, {attrI("axis", dim), attrI("keepdims", keep ? 1 : 0)}));
  };
}

// argmax / argmin (dim=None flattens first) -> ArgMax / ArgMin.
OnnxConverter argReduce(std::string kind) {
  return [=](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    bool keep = args[2].unwrapToBool();
    if (args[1].isNone()) {
      x = ctx.op("Reshape", {x, ctx.constInt64s({-1})});
      ctx.setOutput(n, 0, ctx.op("Arg" + kind, {x}, {attrI("axis", 0), attrI("keepdims", 0)}));
      return;
    }
    int64_t dim = wrapDim(args[1].unwrapToInt(), ctx.expectRank(n, args[0].value()));
    ctx.setOutput(n, 0, ctx.op("Arg" + kind, {x}, {attrI("axis", dim), attrI("keepdims", keep ? 1 : 0)}));
  };
}

}  // namespace

void registerReductionConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"aten::mean"}, reduceDims("Mean", -1, -1, 1));
  r.addOverloads({"aten::mean.dim"}, reduceDims("Mean", 1, 2, 3));
  r.addOverloads({"aten::sum"}, reduceDims("Sum", -1, -1, 1));
  r.addOverloads({"aten::sum.dim_IntList"}, reduceDims("Sum", 1, 2, 3));
  r.addOverloads({"aten::prod"}, reduceDims("Prod", -1, -1, 1));
  r.addOverloads({"aten::prod.dim_int"}, reduceDims("Prod", 1, 2, 3));
  r.addOverloads({"aten::amax"}, reduceDims("Max", 1, 2, -1));
  r.addOverloads({"aten::amin"}, reduceDims("Min", 1, 2, -1));
  r.addOverloads({"aten::max"}, reduceDims("Max", -1, -1, -1));
  r.addOverloads({"aten::min"}, reduceDims("Min", -1, -1, -1));
  r.addOverloads({"aten::max.dim"}, reduceWithIndex("Max"));
  r.addOverloads({"aten::min.dim"}, reduceWithIndex("Min"));
  r.addOverloads({"aten::argmax"}, argReduce("Max"));
  r.addOverloads({"aten::argmin"}, argReduce("Min"));
}

}  // namespace torchless::onnx_export
