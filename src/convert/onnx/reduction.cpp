// ONNX converters: reductions (src/ops/reduction.cpp's family). Axes are inputs from opset 13
// for ReduceSum and from opset 18 for the others (see reduce() in onnx_ctx.cpp).
#include "convert/onnx/onnx_ctx.h"

#include <cmath>

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

// The dims of an int[1]? dim argument, wrapped; all dims for None or [].
// (i past the arguments: all dims).
std::vector<int64_t> dimsOf(OnnxCtx& ctx, const Node& n, const OnnxArgs& args, size_t i) {
  int64_t rank = ctx.expectRank(n, args[0].value());
  std::vector<int64_t> axes;
  if (i < args.size()) axes = args[i].unwrapToIntList(std::vector<int64_t>{});
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  for (auto& a : axes) a = wrapDim(a, rank);
  return axes;
}

// all / any (full, or over one dim): the input as 0/1 int32, ReduceMin / ReduceMax, as bool
// (uint8 inputs give uint8, as PyTorch).
OnnxConverter allAny(std::string kind) {
  return [kind](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string b = ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), ScalarType::Bool);
    std::string x = ctx.castTo(b, ScalarType::Bool, ScalarType::Int);
    std::vector<int64_t> axes;
    bool keep = false;
    if (args.size() > 1) {
      axes = {wrapDim(args[1].unwrapToInt(), ctx.expectRank(n, args[0].value()))};
      keep = args[2].unwrapToBool();
    }
    std::string y = reduce(ctx, kind, x, axes, keep);
    ctx.setOutput(n, 0, ctx.castTo(y, ScalarType::Int, dtypeOr(ctx, n.output(), ScalarType::Bool)));
  };
}

// var / std (unbiased or correction, over dims): ReduceSum((x - mean)^2) / (N - correction),
// N the count of the reduced elements (known sizes); std takes the Sqrt. `withMean` adds the
// mean as a second output (var_mean / std_mean).
OnnxConverter variance(bool isStd, bool withMean) {
  return [isStd, withMean](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = dtypeOr(ctx, n.output(0));
    std::string x = ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), dt);
    const std::string overload = args.op() ? args.op()->schema.overloadName() : "";
    std::vector<int64_t> axes;
    bool keep = false;
    double correction = 1;
    if (overload.empty()) {  // (self, unbiased)
      axes = dimsOf(ctx, n, args, args.size());  // all dims
      correction = args[1].unwrapToBool() ? 1 : 0;
    } else {
      axes = dimsOf(ctx, n, args, 1);
      keep = args[3].unwrapToBool();
      if (overload == "correction") correction = static_cast<double>(args[2].unwrapToInt(1));
      else correction = args[2].unwrapToBool() ? 1 : 0;
    }
    auto sizes = ctx.expectSizes(n, args[0].value());
    double count = 1;
    for (int64_t a : axes) count *= static_cast<double>(sizes[a]);
    std::string mean = reduce(ctx, "Mean", x, axes, true);
    std::string d = ctx.op("Sub", {x, mean});
    std::string ss = reduce(ctx, "Sum", ctx.op("Mul", {d, d}), axes, keep);
    std::string v = ctx.op("Div", {ss, ctx.constScalar(std::max(count - correction, 0.0), dt)});
    ctx.setOutput(n, 0, isStd ? ctx.op("Sqrt", {v}) : v);
    if (withMean) ctx.setOutput(n, 1, keep ? mean : reduce(ctx, "Mean", x, axes, false));
  };
}

// norm(p) / linalg_vector_norm(ord) / frobenius_norm over dims: p = 2 -> ReduceL2, 1 ->
// ReduceL1, inf -> ReduceMax(Abs), -inf -> ReduceMin(Abs), 0 -> count of non-zeros, else
// Pow(ReduceSum(Pow(Abs(x), p)), 1/p).
std::string vectorNorm(OnnxCtx& ctx, const std::string& x, ScalarType dt, double p, const std::vector<int64_t>& axes,
                       bool keep) {
  if (p == 2) return reduce(ctx, "L2", x, axes, keep);
  if (p == 1) return reduce(ctx, "L1", x, axes, keep);
  if (std::isinf(p)) return reduce(ctx, p > 0 ? "Max" : "Min", ctx.op("Abs", {x}), axes, keep);
  if (p == 0) {
    std::string nz = ctx.castTo(ctx.op("Not", {ctx.op("Equal", {x, ctx.constScalar(0, dt)})}), ScalarType::Bool, dt);
    return reduce(ctx, "Sum", nz, axes, keep);
  }
  std::string s = reduce(ctx, "Sum", ctx.op("Pow", {ctx.op("Abs", {x}), ctx.constScalar(p, dt)}), axes, keep);
  return ctx.op("Pow", {s, ctx.constScalar(1.0 / p, dt)});
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
  r.addOverloads({"aten::all", "aten::all.dim"}, allAny("Min"));
  r.addOverloads({"aten::any", "aten::any.dim"}, allAny("Max"));
  r.addOverloads({"aten::logsumexp"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(n, 0, reduce(ctx, "LogSumExp", args[0].unwrapToTensor(), dimsOf(ctx, n, args, 1),
                               args[2].unwrapToBool()));
  });
  r.addOverloads({"aten::var", "aten::var.dim", "aten::var.correction"}, variance(false, false));
  r.addOverloads({"aten::std", "aten::std.dim", "aten::std.correction"}, variance(true, false));
  r.addOverloads({"aten::var_mean.dim"}, variance(false, true));
  r.addOverloads({"aten::std_mean.dim"}, variance(true, true));
  r.addOverloads({"aten::norm.Scalar", "aten::norm.ScalarOpt_dim", "aten::linalg_vector_norm",
                  "aten::frobenius_norm.dim"},
                 [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
                   ScalarType dt = dtypeOr(ctx, n.output());
                   std::string x = ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), dt);
                   const std::string overload = args.op() ? args.op()->schema.overloadName() : "";
                   const bool frobenius = n.kind() == Symbol::aten("frobenius_norm");
                   double p = frobenius ? 2.0 : args[1].unwrapToDouble(2.0);
                   std::vector<int64_t> axes;
                   bool keep = false;
                   if (frobenius) {
                     axes = dimsOf(ctx, n, args, 1), keep = args[2].unwrapToBool();
                   } else if (overload == "ScalarOpt_dim" || n.kind() == Symbol::aten("linalg_vector_norm")) {
                     axes = dimsOf(ctx, n, args, 2), keep = args[3].unwrapToBool();
                   } else {
                     axes = dimsOf(ctx, n, args, args.size());
                   }
                   ctx.setOutput(n, 0, vectorNorm(ctx, x, dt, p, axes, keep));
                 });
  // cumsum(self, dim, dtype) -> CumSum(x, axis) (https://onnx.ai/onnx/operators/onnx__CumSum.html);
  // bool / small int inputs sum in int64, as PyTorch.
  r.addOverloads({"aten::cumsum", "aten::cumsum_"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = withDtype(ctx, args, 2, args[0].unwrapToTensor());
    if (auto out = ctx.dtypeOf(n.output())) x = ctx.castTo(x, ctx.dtypeOf(args[0].value()), *out);
    int64_t dim = wrapDim(args[1].unwrapToInt(), ctx.expectRank(n, args[0].value()));
    ctx.setOutput(n, 0, ctx.op("CumSum", {x, ctx.constScalar(static_cast<double>(dim), ScalarType::Long)}));
  });
}

}  // namespace torchless::onnx_export
