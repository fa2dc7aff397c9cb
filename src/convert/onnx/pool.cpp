// ONNX converters: pooling (src/ops/pool.cpp's family) -> MaxPool, AveragePool,
// GlobalAveragePool (https://onnx.ai/onnx/operators/onnx__MaxPool.html, ...).
#include "convert/onnx/onnx_ctx.h"

namespace torchless::onnx_export {

namespace {

std::vector<int64_t> expand(std::vector<int64_t> v, size_t n) {
  if (v.size() == 1 && n > 1) v.assign(n, v[0]);
  return v;
}

// MaxPool(x, attrs) into n's outputs: the values, and for the *_with_indices forms (a second
// output that is used) PyTorch's indices, which count within each (n, c) plane while ONNX's
// count over the whole tensor: each plane's offset (a 1x1 MaxPool's index of its first
// element, torch.onnx's trick in symbolic_opset10) is subtracted.
void maxPoolOutputs(OnnxCtx& ctx, const Node& n, const std::string& x, size_t k,
                    const std::vector<OnnxAttr>& attrs) {
  if (n.outputs().size() < 2 || !n.output(1)->hasUses())
    return ctx.setOutput(n, 0, ctx.op("MaxPool", {x}, attrs));
  auto ys = ctx.opN("MaxPool", {x}, 2, attrs);
  auto flat = ctx.opN("MaxPool", {x}, 2,
                      {attrIs("kernel_shape", std::vector<int64_t>(k, 1)),
                       attrIs("strides", std::vector<int64_t>(k, 1))});
  std::vector<int64_t> axes;
  for (size_t i = 0; i < k; ++i) axes.push_back(static_cast<int64_t>(2 + i));
  std::string offset =
      ctx.op("Slice", {flat[1], ctx.constInt64s(std::vector<int64_t>(k, 0)),
                       ctx.constInt64s(std::vector<int64_t>(k, 1)), ctx.constInt64s(axes)});
  ctx.setOutput(n, 0, ys[0]);
  ctx.setOutput(n, 1, ctx.op("Sub", {ys[1], offset}));
}

// max_pool{1,2,3}d(self, kernel, stride=[] (= kernel), padding, dilation, ceil_mode), and the
// _with_indices forms.
// With ceil_mode PyTorch drops a last window that would start in the right padding; ONNX's
// ceil_mode does not, so with known sizes we give the exact output size by padding the end
// (padding never wins a max) and leave ceil_mode off.
void convertMaxPool(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  auto kernel = args[1].unwrapToIntList();
  const size_t k = kernel.size();
  auto stride = args[2].unwrapToIntList();
  if (stride.empty()) stride = kernel;
  stride = expand(stride, k);
  auto padding = expand(args[3].unwrapToIntList(), k);
  auto dilation = expand(args[4].unwrapToIntList(), k);
  bool ceil = args[5].unwrapToBool();
  std::vector<int64_t> pads(padding);
  pads.insert(pads.end(), padding.begin(), padding.end());
  auto sizes = ctx.sizesOf(args[0].value());
  bool exact = ceil && sizes && !ctx.isDynamic(args[0].value());
  if (exact) {
    const size_t first = sizes->size() - k;
    for (size_t i = 0; i < k; ++i) {
      int64_t in = (*sizes)[first + i], span = dilation[i] * (kernel[i] - 1) + 1;
      int64_t out = (in + 2 * padding[i] - span + stride[i] - 1) / stride[i] + 1;
      if ((out - 1) * stride[i] >= in + padding[i]) --out;
      int64_t needEnd = (out - 1) * stride[i] + span - in - padding[i];
      pads[k + i] = std::max(padding[i], needEnd);
    }
  }
  std::vector<OnnxAttr> attrs = {attrIs("kernel_shape", kernel), attrIs("strides", stride),
                                 attrIs("pads", pads), attrIs("dilations", dilation),
                                 attrI("ceil_mode", ceil && !exact ? 1 : 0)};
  maxPoolOutputs(ctx, n, args[0].unwrapToTensor(), k, attrs);
}

// Adaptive max pooling without indices, for any static pooled sizes (torch.onnx cannot export
// these): the maximum over a box is the maximum along each axis in turn, so along each pooled
// axis (the last first) output cell o is ReduceMax over input cells floor(o * in / out) ..
// ceil((o + 1) * in / out) - 1 (PyTorch's adaptive windows), the cells concatenated.
std::string adaptiveMaxBySlices(OnnxCtx& ctx, std::string x, const std::vector<int64_t>& sizes,
                                const std::vector<int64_t>& out) {
  const size_t first = sizes.size() - out.size();
  for (size_t k = out.size(); k-- > 0;) {
    const int64_t in = sizes[first + k], o = out[k], axis = static_cast<int64_t>(first + k);
    std::vector<std::string> cells;
    for (int64_t c = 0; c < o; ++c) {
      const int64_t start = (c * in) / o, end = ((c + 1) * in + o - 1) / o;
      std::string cell = ctx.op(
          "Slice", {x, ctx.constInt64s({start}), ctx.constInt64s({end}), ctx.constInt64s({axis})});
      cells.push_back(reduce(ctx, "Max", cell, {axis}, true));
    }
    x = cells.size() == 1 ? cells[0] : ctx.op("Concat", cells, {attrI("axis", axis)});
  }
  return x;
}

// adaptive_max_pool{1,2,3}d(self, output_size) -> (values, indices): GlobalMaxPool for output
// 1 without indices; else, when the pooled sizes divide evenly and are not dynamic, MaxPool
// with kernel = stride = in / out (torch.onnx's symbolic_opset9 exports these cases only);
// other static sizes without the indices by slices (adaptiveMaxBySlices).
void convertAdaptiveMaxPool(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  auto out = args[1].unwrapToIntList();
  std::string x = args[0].unwrapToTensor();
  bool global = true;
  for (int64_t o : out) global &= o == 1;
  if (global && !n.output(1)->hasUses()) return ctx.setOutput(n, 0, ctx.op("GlobalMaxPool", {x}));
  auto sizes = ctx.expectSizes(n, args[0].value());
  const size_t first = sizes.size() - out.size();
  std::vector<int64_t> kernel;
  bool divides = true, dynamic = false;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] <= 0) args[1].fail("positive output sizes", std::to_string(out[i]));
    divides &= sizes[first + i] % out[i] == 0;
    dynamic |= ctx.isDynamicDim(args[0].value(), static_cast<int64_t>(first + i));
  }
  if (!divides && !dynamic && !n.output(1)->hasUses())
    return ctx.setOutput(n, 0, adaptiveMaxBySlices(ctx, x, sizes, out));
  for (size_t i = 0; i < out.size(); ++i) {
    if (sizes[first + i] % out[i] != 0 ||
        ctx.isDynamicDim(args[0].value(), static_cast<int64_t>(first + i)))
      args[1].fail(
          fmt::format("an output size dividing the input size {} along a pooled axis that is not "
                      "dynamic (or, for other sizes, the indices unused)",
                      sizes[first + i]),
          std::to_string(out[i]));
    kernel.push_back(sizes[first + i] / out[i]);
  }
  maxPoolOutputs(ctx, n, x, out.size(),
                 {attrIs("kernel_shape", kernel), attrIs("strides", kernel)});
}

// avg_pool{1,2,3}d(self, kernel, stride, padding, ceil_mode, count_include_pad[, divisor]).
void convertAvgPool(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  auto kernel = args[1].unwrapToIntList();
  const size_t k = kernel.size();
  auto stride = args[2].unwrapToIntList();
  if (stride.empty()) stride = kernel;
  stride = expand(stride, k);
  auto padding = expand(args[3].unwrapToIntList(), k);
  bool ceil = args[4].unwrapToBool();
  bool countPad = args[5].unwrapToBool();
  if (args.size() > 6 && !args[6].isNone())
    args[6].fail("None (ONNX AveragePool has no divisor_override)", "a divisor");
  std::vector<int64_t> pads(padding);
  pads.insert(pads.end(), padding.begin(), padding.end());
  ctx.setOutput(
      n, 0,
      ctx.op("AveragePool", {args[0].unwrapToTensor()},
             {attrIs("kernel_shape", kernel), attrIs("strides", stride), attrIs("pads", pads),
              attrI("ceil_mode", ceil ? 1 : 0), attrI("count_include_pad", countPad ? 1 : 0)}));
}

// The [in, out] matrix of adaptive average pooling along one axis: column o averages input
// cells floor(o * in / out) .. ceil((o + 1) * in / out) - 1, as PyTorch's kernel.
Tensor adaptiveMatrix(int64_t in, int64_t out) {
  Tensor m = Tensor::empty({in, out}, ScalarType::Float);
  float* p = m.data<float>();
  for (int64_t i = 0; i < in * out; ++i) p[i] = 0.0f;  // Storage::allocate does not zero-fill
  for (int64_t o = 0; o < out; ++o) {
    int64_t start = (o * in) / out, end = ((o + 1) * in + out - 1) / out;
    for (int64_t i = start; i < end; ++i) p[i * out + o] = 1.0f / static_cast<float>(end - start);
  }
  return m;
}

// adaptive_avg_pool{1,2,3}d: GlobalAveragePool for output 1; AveragePool when the input
// divides evenly (kernel = stride = in / out). Otherwise (1-d and 2-d, known sizes; torch.onnx
// cannot export these) pooling is linear along each axis: MatMul with an [in, out] averaging
// matrix over the last axis, then (2-d) over the one before it through a transpose.
void convertAdaptiveAvgPool(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  auto out = args[1].unwrapToIntList();
  std::string x = args[0].unwrapToTensor();
  bool global = true;
  for (int64_t o : out) global &= o == 1;
  if (global) return ctx.setOutput(n, 0, ctx.op("GlobalAveragePool", {x}));
  auto sizes = ctx.expectSizes(n, args[0].value());
  std::vector<int64_t> kernel;
  bool divides = true, dynamic = false;
  const size_t first = sizes.size() - out.size();
  for (size_t i = 0; i < out.size(); ++i) {
    divides &= sizes[first + i] % out[i] == 0;
    kernel.push_back(sizes[first + i] / std::max<int64_t>(out[i], 1));
    // Kernels and matrices come from the pooled axes' sizes: those must not be dynamic (a
    // dynamic batch is fine).
    dynamic |= ctx.isDynamicDim(args[0].value(), static_cast<int64_t>(first + i));
  }
  if (divides && !dynamic)
    return ctx.setOutput(
        n, 0,
        ctx.op("AveragePool", {x}, {attrIs("kernel_shape", kernel), attrIs("strides", kernel)}));
  if (out.size() > 2 || dynamic || dtypeOr(ctx, args[0].value()) != ScalarType::Float)
    args[1].fail(
        fmt::format("an output size dividing the input size {} (3-d, non-float input or a dynamic "
                    "pooled axis)",
                    sizes[first]),
        std::to_string(out[0]));
  const int64_t rank = static_cast<int64_t>(sizes.size());
  std::string y =
      ctx.op("MatMul", {x, ctx.initializer(adaptiveMatrix(sizes[rank - 1], out.back()))});
  if (out.size() == 2) {
    std::vector<int64_t> perm(rank);
    for (int64_t i = 0; i < rank; ++i) perm[i] = i;
    std::swap(perm[rank - 1], perm[rank - 2]);
    y = ctx.op("Transpose", {y}, {attrIs("perm", perm)});
    y = ctx.op("MatMul", {y, ctx.initializer(adaptiveMatrix(sizes[rank - 2], out[0]))});
    y = ctx.op("Transpose", {y}, {attrIs("perm", perm)});
  }
  ctx.setOutput(n, 0, y);
}

}  // namespace

void registerPoolConverters(OnnxConverterRegistry& r) {
  r.addOverloads(
      {"aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d", "aten::max_pool1d_with_indices",
       "aten::max_pool2d_with_indices", "aten::max_pool3d_with_indices"},
      convertMaxPool);
  r.addOverloads(
      {"aten::adaptive_max_pool1d", "aten::adaptive_max_pool2d", "aten::adaptive_max_pool3d"},
      convertAdaptiveMaxPool);
  r.addOverloads({"aten::avg_pool1d", "aten::avg_pool2d", "aten::avg_pool3d"}, convertAvgPool);
  r.addOverloads(
      {"aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d", "aten::adaptive_avg_pool3d"},
      convertAdaptiveAvgPool);
}

}  // namespace torchless::onnx_export
