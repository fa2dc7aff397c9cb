// torchvision's detection ops (ops/vision.h) -> ONNX NonMaxSuppression and RoiAlign, with the
// semantics of torchvision 0.14's own ONNX symbolics (torchvision/ops/_register_onnx_ops.py).
#include "convert/onnx/onnx_ctx.h"

#include <cstdint>
#include <limits>
#include <string>

namespace torchless::onnx_export {

namespace {

/// Refuses a known dtype other than float32 for input `i`: ONNX Runtime's `onnxOp` kernel
/// takes float32 only, and converting would change the results.
void expectFloat(OnnxCtx& ctx, OnnxArgs& args, size_t i, const char* onnxOp) {
  auto dt = ctx.dtypeOf(args[i].value());
  if (dt && *dt != ScalarType::Float)
    args[i].fail(fmt::format("float32 (ONNX Runtime's {} takes float32 only)", onnxOp),
                 std::string(toString(*dt)));
}

// torchvision::nms(dets [N, 4], scores [N], iou_threshold) -> Long [K]
// NonMaxSuppression (https://onnx.ai/onnx/operators/onnx__NonMaxSuppression.html) of boxes
// [1, N, 4] (corners, center_point_box 0) and scores [1, 1, N], no limit on the boxes kept and
// no score threshold; its selected indices [K, 3] (batch, class, box) give the box column.
// Both keep boxes by decreasing score, the lower index first among equal scores, and drop a
// box whose IoU with a kept one is > iou_threshold (ONNX Runtime compares in float32, as
// torchvision does for float32 boxes).
void convertNms(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  expectFloat(ctx, args, 0, "NonMaxSuppression");
  expectFloat(ctx, args, 1, "NonMaxSuppression");
  const double iou = args[2].unwrapToDouble();
  std::string boxes = unsqueeze(ctx, args[0].unwrapToTensor(), {0});
  std::string scores = unsqueeze(ctx, args[1].unwrapToTensor(), {0, 1});
  std::string maxBoxes = ctx.constInt64s({std::numeric_limits<int64_t>::max()});
  Tensor threshold = Tensor::empty({1}, ScalarType::Float);
  threshold.data<float>()[0] = static_cast<float>(iou);
  std::string selected =
      ctx.op("NonMaxSuppression", {boxes, scores, maxBoxes, ctx.initializer(threshold)},
             {attrI("center_point_box", 0)});
  std::string column = ctx.op("Gather", {selected, ctx.constInt64s({2})}, {attrI("axis", 1)});
  ctx.setOutput(n, 0, squeeze(ctx, column, {1}));
}

// torchvision::roi_align(input [N, C, H, W], rois [K, 5], spatial_scale, pooled_height,
// pooled_width, sampling_ratio, aligned) -> [K, C, ph, pw]
// RoiAlign (https://onnx.ai/onnx/operators/onnx__RoiAlign.html, mode avg) of rois[:, 1:5] with
// batch indices rois[:, 0] as int64. aligned selects coordinate_transformation_mode half_pixel
// (shift by -0.5, no minimum roi size), else output_half_pixel (rois at least 1 x 1), which
// opset 16 introduced; before it, aligned=True is refused rather than approximated (torch.onnx
// shifts the rois but keeps the minimum size). sampling_ratio <= 0 is adaptive in torchvision,
// 0 in ONNX.
void convertRoiAlign(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const double scale = args[2].unwrapToDouble();
  const int64_t ph = args[3].unwrapToInt(), pw = args[4].unwrapToInt();
  const int64_t sampling = args[5].unwrapToInt();
  const bool aligned = args[6].unwrapToBool();
  if (aligned && ctx.opset() < 16)
    args[6].fail(
        fmt::format("false at opset {} (RoiAlign's half_pixel mode needs opset 16)", ctx.opset()),
        "true");
  std::string rois = args[1].unwrapToTensor();
  auto column = [&](int64_t from, int64_t to) {
    return ctx.op("Slice",
                  {rois, ctx.constInt64s({from}), ctx.constInt64s({to}), ctx.constInt64s({1})});
  };
  std::string batch = ctx.op("Cast", {squeeze(ctx, column(0, 1), {1})},
                             {attrI("to", onnxDataType(ScalarType::Long))});
  std::vector<OnnxAttr> attrs = {
      attrS("mode", "avg"), attrI("output_height", ph), attrI("output_width", pw),
      attrI("sampling_ratio", sampling > 0 ? sampling : 0), attrF("spatial_scale", scale)};
  if (ctx.opset() >= 16)
    attrs.push_back(
        attrS("coordinate_transformation_mode", aligned ? "half_pixel" : "output_half_pixel"));
  ctx.setOutput(n, 0, ctx.op("RoiAlign", {args[0].unwrapToTensor(), column(1, 5), batch}, attrs));
}

}  // namespace

void registerVisionConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"torchvision::nms"}, convertNms);
  r.addOverloads({"torchvision::roi_align"}, convertRoiAlign);
}

}  // namespace torchless::onnx_export
