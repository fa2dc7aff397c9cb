// ONNX converters: matrix products (src/ops/linalg.cpp's family).
#include "convert/onnx/onnx_ctx.h"

namespace torchless::onnx {

namespace {

// mm / bmm / matmul -> MatMul (https://onnx.ai/onnx/operators/onnx__MatMul.html).
void convertMatMul(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ctx.setOutput(n, 0, ctx.op("MatMul", {args[0].unwrapToTensor(), args[1].unwrapToTensor()}));
}

// addmm(self, mat1, mat2, beta, alpha) -> Gemm(mat1, mat2, self, alpha, beta).
void convertAddmm(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  double beta = args[3].unwrapToDouble(1.0), alpha = args[4].unwrapToDouble(1.0);
  ctx.setOutput(n, 0, ctx.op("Gemm", {args[1].unwrapToTensor(), args[2].unwrapToTensor(), args[0].unwrapToTensor()},
                             {attrF("alpha", alpha), attrF("beta", beta)}));
}

// linear(x, W, b): Gemm(x, W, b, transB=1) for 2-d x; MatMul(x, Transpose(W)) + b otherwise
// (as torch.onnx exports it).
void convertLinear(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string x = args[0].unwrapToTensor();
  std::string w = args[1].unwrapToTensor();
  auto bias = args[2].unwrapToOptionalTensor();
  auto rank = ctx.rankOf(args[0].value());
  if (rank && *rank == 2) {
    std::vector<std::string> in = {x, w};
    if (bias) in.push_back(*bias);
    ctx.setOutput(n, 0, ctx.op("Gemm", in, {attrF("alpha", 1.0), attrF("beta", 1.0), attrI("transB", 1)}));
    return;
  }
  std::string y = ctx.op("MatMul", {x, ctx.op("Transpose", {w}, {attrIs("perm", {1, 0})})});
  if (bias) y = ctx.op("Add", {y, *bias});
  ctx.setOutput(n, 0, y);
}

}  // namespace

void registerLinalgConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"aten::mm", "aten::bmm", "aten::matmul"}, convertMatMul);
  r.addOverloads({"aten::addmm"}, convertAddmm);
  r.addOverloads({"aten::linear"}, convertLinear);
}

}  // namespace torchless::onnx
