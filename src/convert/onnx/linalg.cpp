// ONNX converters: matrix products (src/ops/linalg.cpp's family).
#include "convert/onnx/onnx_ctx.h"

#include <algorithm>
#include <cstring>
#include <tuple>

namespace torchless::onnx_export {

namespace {

// mm / bmm / matmul -> MatMul (https://onnx.ai/onnx/operators/onnx__MatMul.html).
void convertMatMul(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ctx.setOutput(n, 0, ctx.op("MatMul", {args[0].unwrapToTensor(), args[1].unwrapToTensor()}));
}

// addmm(self, mat1, mat2, beta, alpha) -> Gemm(mat1, mat2, self, alpha, beta).
void convertAddmm(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  double beta = args[3].unwrapToDouble(1.0), alpha = args[4].unwrapToDouble(1.0);
  ctx.setOutput(
      n, 0,
      ctx.op("Gemm", {args[1].unwrapToTensor(), args[2].unwrapToTensor(), args[0].unwrapToTensor()},
             {attrF("alpha", alpha), attrF("beta", beta)}));
}

// linear(x, W, b): Gemm(x, W, b, transB=1) for 2-d x; MatMul(x, W^T) + b otherwise
// (as torch.onnx exports it).
void convertLinear(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string x = args[0].unwrapToTensor();
  auto bias = args[2].unwrapToOptionalTensor();
  auto rank = ctx.rankOf(args[0].value());
  if (rank && *rank == 2) {
    std::vector<std::string> in = {x, args[1].unwrapToTensor()};
    if (bias) in.push_back(*bias);
    ctx.setOutput(
        n, 0, ctx.op("Gemm", in, {attrF("alpha", 1.0), attrF("beta", 1.0), attrI("transB", 1)}));
    return;
  }
  // A constant weight is transposed here, once, into its own initializer (as torch.onnx's
  // constant folding does); a computed one through a Transpose node.
  std::string wt;
  if (args[1].isIValue() && args[1].unwrapToIValue().isTensor() &&
      args[1].unwrapToIValue().toTensor().dim() == 2) {
    convert::Weights wts = args[1].unwrapToWeights();
    Tensor src = wts.tensor.contiguous();
    const int64_t rows = src.sizes()[0], cols = src.sizes()[1];
    const size_t item = src.itemsize();
    Tensor t = Tensor::empty({cols, rows}, src.dtype());
    const auto* in = static_cast<const char*>(src.rawData());
    auto* out = static_cast<char*>(t.rawData());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        std::memcpy(out + (c * rows + r) * item, in + (r * cols + c) * item, item);
    wt = ctx.initializer(t, wts.name.empty() ? std::string() : wts.name + ".T");
  } else {
    wt = ctx.op("Transpose", {args[1].unwrapToTensor()}, {attrIs("perm", {1, 0})});
  }
  std::string y = ctx.op("MatMul", {x, wt});
  if (bias) y = ctx.op("Add", {y, *bias});
  ctx.setOutput(n, 0, y);
}

// cross(self, other, dim) / linalg_cross: a[1, 2, 0] * b[2, 0, 1] - a[2, 0, 1] * b[1, 2, 0]
// along dim (Gather), broadcasting as Mul does. cross's dim None is the first dim of size 3.
void convertCross(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  auto sa = ctx.expectSizes(n, args[0].value()), sb = ctx.expectSizes(n, args[1].value());
  const int64_t rank = static_cast<int64_t>(std::max(sa.size(), sb.size()));
  int64_t dim = -1;
  if (!args[2].isNone()) {
    dim = wrapDim(args[2].unwrapToInt(), rank);
  } else {
    for (int64_t d = 0; d < static_cast<int64_t>(sa.size()) && dim < 0; ++d)
      if (sa[d] == 3) dim = d + rank - static_cast<int64_t>(sa.size());
    if (dim < 0) args[0].fail("a dim of size 3", "none");
  }
  auto pick = [&](const std::string& x, std::vector<int64_t> idx, int64_t xrank) {
    return ctx.op("Gather", {x, ctx.constInt64s(idx)}, {attrI("axis", dim - (rank - xrank))});
  };
  std::string a = args[0].unwrapToTensor(), b = args[1].unwrapToTensor();
  const auto ra = static_cast<int64_t>(sa.size()), rb = static_cast<int64_t>(sb.size());
  std::string l = ctx.op("Mul", {pick(a, {1, 2, 0}, ra), pick(b, {2, 0, 1}, rb)});
  std::string r = ctx.op("Mul", {pick(a, {2, 0, 1}, ra), pick(b, {1, 2, 0}, rb)});
  ctx.setOutput(n, 0, ctx.op("Sub", {l, r}));
}

// tensordot(self, other, dims_self, dims_other): the free dims of self, then its contracted
// ones (Transpose), as a matrix [free, contracted]; other as [contracted, free]; MatMul;
// Reshape to self's free sizes then other's (known sizes).
void convertTensordot(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  auto sa = ctx.expectSizes(n, args[0].value()), sb = ctx.expectSizes(n, args[1].value());
  auto da = args[2].unwrapToIntList(), db = args[3].unwrapToIntList();
  if (da.size() != db.size())
    args[3].fail(fmt::format("{} dims, as dims_self", da.size()), std::to_string(db.size()));
  for (auto& d : da) d = wrapDim(d, static_cast<int64_t>(sa.size()));
  for (auto& d : db) d = wrapDim(d, static_cast<int64_t>(sb.size()));
  auto split = [](const std::vector<int64_t>& sizes, const std::vector<int64_t>& contracted,
                  bool contractedFirst) {
    std::vector<int64_t> freeDims, perm, outSizes;
    int64_t freeCount = 1, inner = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d)
      if (std::find(contracted.begin(), contracted.end(), d) == contracted.end()) {
        freeDims.push_back(d), freeCount *= sizes[d], outSizes.push_back(sizes[d]);
      }
    for (int64_t d : contracted) inner *= sizes[d];
    if (contractedFirst)
      perm = contracted, perm.insert(perm.end(), freeDims.begin(), freeDims.end());
    else
      perm = freeDims, perm.insert(perm.end(), contracted.begin(), contracted.end());
    return std::make_tuple(perm, freeCount, inner, outSizes);
  };
  auto [pa, fa, ia, oa] = split(sa, da, false);
  auto [pb, fb, ib, ob] = split(sb, db, true);
  std::string a =
      ctx.op("Reshape", {ctx.op("Transpose", {args[0].unwrapToTensor()}, {attrIs("perm", pa)}),
                         ctx.constInt64s({fa, ia})});
  std::string b =
      ctx.op("Reshape", {ctx.op("Transpose", {args[1].unwrapToTensor()}, {attrIs("perm", pb)}),
                         ctx.constInt64s({ib, fb})});
  oa.insert(oa.end(), ob.begin(), ob.end());
  ctx.setOutput(n, 0, ctx.op("Reshape", {ctx.op("MatMul", {a, b}), ctx.constInt64s(oa)}));
}

}  // namespace

void registerLinalgConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"aten::mm", "aten::bmm", "aten::matmul"}, convertMatMul);
  r.addOverloads({"aten::addmm"}, convertAddmm);
  // einsum(equation, tensors, path) -> Einsum (https://onnx.ai/onnx/operators/onnx__Einsum.html);
  // the contraction path only orders the work.
  r.addOverloads({"aten::einsum"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string eq = args[0].unwrapToString();
    eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
    ctx.setOutput(n, 0, ctx.op("Einsum", args[1].unwrapToTensorList(), {attrS("equation", eq)}));
  });
  r.addOverloads({"aten::linear"}, convertLinear);
  // dot / mv: MatMul of the 1-d / 2-d operands; outer: a column times a row.
  r.addOverloads({"aten::dot", "aten::mv"}, convertMatMul);
  r.addOverloads({"aten::outer"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(
        n, 0,
        ctx.op("Mul", {unsqueeze(ctx, args[0].unwrapToTensor(), {1}), args[1].unwrapToTensor()}));
  });
  // baddbmm(self, b1, b2, beta, alpha) = beta * self + alpha * (b1 @ b2).
  r.addOverloads(
      {"aten::baddbmm", "aten::baddbmm_"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
        ScalarType dt = dtypeOr(ctx, n.output());
        double beta = args[3].unwrapToDouble(1.0), alpha = args[4].unwrapToDouble(1.0);
        std::string prod = ctx.op("MatMul", {args[1].unwrapToTensor(), args[2].unwrapToTensor()});
        if (alpha != 1.0) prod = ctx.op("Mul", {prod, ctx.constScalar(alpha, dt)});
        if (beta == 0.0) return ctx.setOutput(n, 0, prod);
        std::string self = args[0].unwrapToTensor();
        if (beta != 1.0) self = ctx.op("Mul", {self, ctx.constScalar(beta, dt)});
        ctx.setOutput(n, 0, ctx.op("Add", {self, prod}));
      });
  r.addOverloads({"aten::cross", "aten::linalg_cross"}, convertCross);
  r.addOverloads({"aten::tensordot"}, convertTensordot);
  // linalg_det -> Det (https://onnx.ai/onnx/operators/onnx__Det.html); logdet -> Log(Det):
  // NaN for a negative determinant, as PyTorch.
  r.addOverloads({"aten::linalg_det", "aten::det"},
                 [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
                   ctx.setOutput(n, 0, ctx.op("Det", {args[0].unwrapToTensor()}));
                 });
  r.addOverloads({"aten::logdet"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(n, 0, ctx.op("Log", {ctx.op("Det", {args[0].unwrapToTensor()})}));
  });
}

}  // namespace torchless::onnx_export
