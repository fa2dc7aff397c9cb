// ONNX converters: reductions (src/ops/reduction.cpp's family). Axes are inputs from opset 13
// for ReduceSum and from opset 18 for the others (see reduce() in onnx_ctx.cpp).
#include "convert/onnx/onnx_ctx.h"

#include <cmath>
#include <limits>

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
    std::string x =
        withDtype(ctx, args, dtypeIndex < 0 ? args.size() : static_cast<size_t>(dtypeIndex),
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
    ctx.setOutput(n, 1,
                  ctx.op("Arg" + kind, {x}, {attrI("axis", dim), attrI("keepdims", keep ? 1 : 0)}));
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
    ctx.setOutput(n, 0,
                  ctx.op("Arg" + kind, {x}, {attrI("axis", dim), attrI("keepdims", keep ? 1 : 0)}));
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
    std::string b =
        ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), ScalarType::Bool);
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
    if (overload.empty()) {                      // (self, unbiased)
      axes = dimsOf(ctx, n, args, args.size());  // all dims
      correction = args[1].unwrapToBool() ? 1 : 0;
    } else {
      axes = dimsOf(ctx, n, args, 1);
      keep = args[3].unwrapToBool();
      if (overload == "correction")
        correction = static_cast<double>(args[2].unwrapToInt(1));
      else
        correction = args[2].unwrapToBool() ? 1 : 0;
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
std::string vectorNorm(OnnxCtx& ctx, const std::string& x, ScalarType dt, double p,
                       const std::vector<int64_t>& axes, bool keep) {
  if (p == 2) return reduce(ctx, "L2", x, axes, keep);
  if (p == 1) return reduce(ctx, "L1", x, axes, keep);
  if (std::isinf(p)) return reduce(ctx, p > 0 ? "Max" : "Min", ctx.op("Abs", {x}), axes, keep);
  if (p == 0) {
    std::string nz = ctx.castTo(ctx.op("Not", {ctx.op("Equal", {x, ctx.constScalar(0, dt)})}),
                                ScalarType::Bool, dt);
    return reduce(ctx, "Sum", nz, axes, keep);
  }
  std::string s =
      reduce(ctx, "Sum", ctx.op("Pow", {ctx.op("Abs", {x}), ctx.constScalar(p, dt)}), axes, keep);
  return ctx.op("Pow", {s, ctx.constScalar(1.0 / p, dt)});
}

// A matrix norm over axes (r, c) of `x` (linalg_matrix_norm): "fro" the 2-norm of the
// entries; ord 1 / -1 the largest / smallest column sum of |x|, inf / -inf the largest /
// smallest row sum. "nuc" and ord 2 / -2 need singular values, which ONNX lacks: an error.
std::string matrixNorm(OnnxCtx& ctx, const convert::ArgValue<std::string>& ordArg,
                       const std::string& x, const std::string& ord, int64_t r, int64_t c,
                       bool keep) {
  if (ord == "fro") return reduce(ctx, "L2", x, {r, c}, keep);
  double p = 0;
  if (ord == "1" || ord == "-1")
    p = ord == "1" ? 1 : -1;
  else if (ord == "inf" || ord == "-inf")
    p = ord == "inf" ? 2 : -2;  // 2: rows (see below)
  else
    ordArg.fail("'fro', 1, -1, inf or -inf (the nuclear and spectral norms need an SVD ONNX lacks)",
                ord);
  // ord +-1: sum over rows (axis r), then max / min over columns; +-inf the other way round.
  const bool columns = std::abs(p) == 1;
  std::string sums = reduce(ctx, "Sum", ctx.op("Abs", {x}), {columns ? r : c}, true);
  std::string y = reduce(ctx, p > 0 ? "Max" : "Min", sums, {columns ? c : r}, true);
  if (!keep) y = squeeze(ctx, y, {std::min(r, c), std::max(r, c)});
  return y;
}

// The ord argument of linalg_norm / linalg_matrix_norm as text ("fro", "1", "inf", "2.5").
std::string ordText(const convert::ArgValue<std::string>& a) {
  const IValue& v = a.unwrapToIValue();
  if (v.isString()) return v.toStringRef();
  double p = a.unwrapToScalar().toScalarDouble();
  if (std::isinf(p)) return p > 0 ? "inf" : "-inf";
  if (p == std::floor(p)) return std::to_string(static_cast<int64_t>(p));
  return fmt::format("{}", p);
}

// Sum over `dim` of a product, keepdims off (cosine_similarity's dot products).
std::string sumOver(OnnxCtx& ctx, const std::string& a, const std::string& b, int64_t dim) {
  return reduce(ctx, "Sum", ctx.op("Mul", {a, b}), {dim}, false);
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
    ctx.setOutput(n, 0,
                  reduce(ctx, "LogSumExp", args[0].unwrapToTensor(), dimsOf(ctx, n, args, 1),
                         args[2].unwrapToBool()));
  });
  r.addOverloads({"aten::var", "aten::var.dim", "aten::var.correction"}, variance(false, false));
  r.addOverloads({"aten::std", "aten::std.dim", "aten::std.correction"}, variance(true, false));
  r.addOverloads({"aten::var_mean.dim"}, variance(false, true));
  r.addOverloads({"aten::std_mean.dim"}, variance(true, true));
  r.addOverloads(
      {"aten::norm.Scalar", "aten::norm.ScalarOpt_dim", "aten::linalg_vector_norm",
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
  r.addOverloads({"aten::cumsum", "aten::cumsum_"}, [](OnnxCtx& ctx, const Node& n,
                                                       OnnxArgs& args) {
    std::string x = withDtype(ctx, args, 2, args[0].unwrapToTensor());
    if (auto out = ctx.dtypeOf(n.output())) x = ctx.castTo(x, ctx.dtypeOf(args[0].value()), *out);
    int64_t dim = wrapDim(args[1].unwrapToInt(), ctx.expectRank(n, args[0].value()));
    ctx.setOutput(
        n, 0, ctx.op("CumSum", {x, ctx.constScalar(static_cast<double>(dim), ScalarType::Long)}));
  });
  // nansum(self, dim, keepdim, dtype): ReduceSum with NaN read as 0 (Where(IsNaN)).
  r.addOverloads({"aten::nansum"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    auto in = ctx.dtypeOf(args[0].value());
    if (in && isFloatingType(*in))
      x = ctx.op("Where", {ctx.op("IsNaN", {x}), ctx.constScalar(0, *in), x});
    x = withDtype(ctx, args, 3, x);
    if (auto out = ctx.dtypeOf(n.output())) x = ctx.castTo(x, in, *out);
    std::vector<int64_t> axes =
        args[1].isNone() ? std::vector<int64_t>{} : args[1].unwrapToIntList(std::vector<int64_t>{});
    const int64_t rank = ctx.expectRank(n, args[0].value());
    for (auto& d : axes) d = wrapDim(d, rank);
    ctx.setOutput(n, 0, reduce(ctx, "Sum", x, axes, args[2].unwrapToBool()));
  });
  // diff(self, n, dim, prepend, append): Concat, then n times Slice(1:) - Slice(:-1) along dim
  // (Xor for bool), as torch.diff.
  r.addOverloads({"aten::diff"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const int64_t rank = ctx.expectRank(n, args[0].value());
    const int64_t dim = wrapDim(args[2].unwrapToInt(-1), rank), times = args[1].unwrapToInt(1);
    std::vector<std::string> parts;
    if (auto p = args[3].unwrapToOptionalTensor()) parts.push_back(*p);
    parts.push_back(args[0].unwrapToTensor());
    if (auto a = args[4].unwrapToOptionalTensor()) parts.push_back(*a);
    std::string y = parts.size() == 1 ? parts[0] : ctx.op("Concat", parts, {attrI("axis", dim)});
    const bool isBool = ctx.dtypeOf(args[0].value()) == ScalarType::Bool;
    const std::string axis = ctx.constInt64s({dim});
    for (int64_t i = 0; i < times; ++i) {
      std::string hi = ctx.op(
          "Slice",
          {y, ctx.constInt64s({1}), ctx.constInt64s({std::numeric_limits<int64_t>::max()}), axis});
      std::string lo = ctx.op("Slice", {y, ctx.constInt64s({0}), ctx.constInt64s({-1}), axis});
      y = ctx.op(isBool ? "Xor" : "Sub", {hi, lo});
    }
    ctx.setOutput(n, 0, y);
  });
  // aminmax(self, dim, keepdim) -> (ReduceMin, ReduceMax); dim None reduces everything.
  r.addOverloads({"aten::aminmax"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    std::vector<int64_t> axes;
    if (!args[1].isNone())
      axes = {
          wrapDim(args[1].unwrapToInt(), std::max<int64_t>(ctx.expectRank(n, args[0].value()), 1))};
    const bool keep = args[2].unwrapToBool();
    ctx.setOutput(n, 0, reduce(ctx, "Min", x, axes, keep));
    ctx.setOutput(n, 1, reduce(ctx, "Max", x, axes, keep));
  });
  // linalg_norm(self, ord, dim, keepdim, dtype): a vector norm over one dim (or over all of a
  // flattened tensor when ord and dim are None), a matrix norm over two (see matrixNorm), as
  // torch.linalg.norm decides.
  r.addOverloads({"aten::linalg_norm", "aten::linalg_norm.ord_str"}, [](OnnxCtx& ctx, const Node& n,
                                                                        OnnxArgs& args) {
    ScalarType dt = dtypeOr(ctx, n.output());
    std::string x = ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), dt);
    const int64_t rank = ctx.expectRank(n, args[0].value());
    const bool keep = args[3].unwrapToBool();
    std::vector<int64_t> axes = args[2].unwrapToIntList(std::vector<int64_t>{});
    for (auto& a : axes) a = wrapDim(a, rank);
    if (args[1].isNone()) {
      if (axes.empty())
        for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
      return ctx.setOutput(n, 0, reduce(ctx, "L2", x, axes, keep));
    }
    if (axes.empty())
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    if (axes.size() == 2)
      return ctx.setOutput(n, 0,
                           matrixNorm(ctx, args[1], x, ordText(args[1]), axes[0], axes[1], keep));
    if (axes.size() != 1 || args[1].unwrapToIValue().isString())
      args[2].fail("one dim (a vector norm) or two (a matrix norm)",
                   fmt::format("{} dims", axes.size()));
    ctx.setOutput(n, 0, vectorNorm(ctx, x, dt, args[1].unwrapToDouble(), axes, keep));
  });
  r.addOverloads(
      {"aten::linalg_matrix_norm", "aten::linalg_matrix_norm.str_ord"},
      [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
        std::string x = ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()),
                                   dtypeOr(ctx, n.output()));
        const int64_t rank = ctx.expectRank(n, args[0].value());
        auto dims = args[2].unwrapToIntList(std::vector<int64_t>{-2, -1});
        if (dims.size() != 2) args[2].fail("two dims", fmt::format("{} dims", dims.size()));
        ctx.setOutput(n, 0,
                      matrixNorm(ctx, args[1], x, ordText(args[1]), wrapDim(dims[0], rank),
                                 wrapDim(dims[1], rank), args[3].unwrapToBool()));
      });
  // cosine_similarity(x1, x2, dim, eps) = sum(x1 * x2) / sqrt(max(sum(x1^2) * sum(x2^2), eps^2))
  // over dim (PyTorch's ATen formula; torch.onnx's symbolic_opset9).
  r.addOverloads({"aten::cosine_similarity"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = dtypeOr(ctx, n.output());
    std::string a = ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), dt);
    std::string b = ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), dt);
    const int64_t rank =
        std::max(ctx.expectRank(n, args[0].value()), ctx.expectRank(n, args[1].value()));
    const int64_t dim = wrapDim(args[2].unwrapToInt(), rank);
    const double eps = args[3].unwrapToDouble();
    std::string w = ctx.op("Mul", {sumOver(ctx, a, a, dim), sumOver(ctx, b, b, dim)});
    std::string den = ctx.op("Sqrt", {ctx.op("Max", {w, ctx.constScalar(eps * eps, dt)})});
    ctx.setOutput(n, 0, ctx.op("Div", {sumOver(ctx, a, b, dim), den}));
  });
  // pairwise_distance(x1, x2, p, eps, keepdim) = norm(x1 - x2 + eps, p) over the last dim.
  r.addOverloads({"aten::pairwise_distance"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = dtypeOr(ctx, n.output());
    const int64_t rank =
        std::max(ctx.expectRank(n, args[0].value()), ctx.expectRank(n, args[1].value()));
    std::string d = ctx.op("Sub", {args[0].unwrapToTensor(), args[1].unwrapToTensor()});
    d = ctx.op("Add", {d, ctx.constScalar(args[3].unwrapToDouble(), dt)});
    ctx.setOutput(n, 0,
                  vectorNorm(ctx, d, dt, args[2].unwrapToDouble(), {std::max<int64_t>(rank - 1, 0)},
                             args[4].unwrapToBool()));
  });
  // cdist(x1 [..., P, M], x2 [..., R, M], p) -> [..., P, R]: the p-norm of every difference,
  // through Unsqueeze to [..., P, 1, M] and [..., 1, R, M] (PyTorch's direct form; its matmul
  // form for p = 2 on big inputs differs by rounding only).
  r.addOverloads({"aten::cdist"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = dtypeOr(ctx, n.output());
    std::string d = ctx.op("Sub", {unsqueeze(ctx, args[0].unwrapToTensor(), {-2}),
                                   unsqueeze(ctx, args[1].unwrapToTensor(), {-3})});
    const int64_t rank =
        std::max(ctx.expectRank(n, args[0].value()), ctx.expectRank(n, args[1].value())) + 1;
    ctx.setOutput(n, 0, vectorNorm(ctx, d, dt, args[2].unwrapToDouble(), {rank - 1}, false));
  });
  // _weight_norm(v, g, dim) = v * g / ||v|| (the 2-norm over every dim but `dim`; over all for
  // dim -1), as torch.nn.utils.weight_norm computes the weight.
  r.addOverloads({"aten::_weight_norm"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const int64_t rank = ctx.expectRank(n, args[0].value());
    const int64_t dim = args[2].unwrapToInt();
    std::vector<int64_t> axes;
    for (int64_t d = 0; d < rank; ++d)
      if (dim == -1 || d != wrapDim(dim, rank)) axes.push_back(d);
    std::string v = args[0].unwrapToTensor();
    std::string norm = reduce(ctx, "L2", v, axes, true);
    ctx.setOutput(n, 0, ctx.op("Mul", {v, ctx.op("Div", {args[1].unwrapToTensor(), norm})}));
  });
}

}  // namespace torchless::onnx_export
