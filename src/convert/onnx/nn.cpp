// ONNX converters: softmax, dropout, embedding, padding, upsampling (src/ops/nn.cpp's family).
#include "ops/nn.h"
#include "convert/onnx/onnx_ctx.h"
#include "convert/onnx/onnx_export.h"

#include <cmath>
#include <limits>

namespace torchless::onnx_export {

namespace {

// softmax / log_softmax(self, dim, dtype) -> Softmax / LogSoftmax(axis) (opset 13 semantics:
// along one axis, https://onnx.ai/onnx/operators/onnx__Softmax.html).
OnnxConverter softmax(std::string opType) {
  return [opType](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    if (!args[2].isNone())
      if (auto t = scalarTypeFromInt(args[2].unwrapToInt()))
        x = ctx.castTo(x, ctx.dtypeOf(args[0].value()), *t);
    int64_t rank = ctx.expectRank(n, args[0].value());
    ctx.setOutput(n, 0, ctx.op(opType, {x}, {attrI("axis", wrapDim(args[1].unwrapToInt(), rank))}));
  };
}

// dropout family in inference: the input itself. train=True cannot be exported.
void convertDropout(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  if (args[2].unwrapToBool() && args[1].unwrapToDouble() > 0)
    args[2].fail("False (export runs in inference mode; call eval() first)", "True");
  ctx.setOutput(n, 0, args[0].unwrapToTensor());
}

// embedding(weight, indices, ...) -> Gather(weight, indices).
void convertEmbedding(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string idx =
      ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), ScalarType::Long);
  ctx.setOutput(n, 0, ctx.op("Gather", {args[0].unwrapToTensor(), idx}, {attrI("axis", 0)}));
}

// embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
// include_last_offset[, padding_idx]) -> output 0 only (offset2bag, bag_size and max_indices
// are training outputs; a use of them is refused). torch.onnx writes a Loop over the bags; here
// a [bags, n] membership mask M (offsets[b] <= i < offsets[b + 1], not padding_idx) drives
// sum = MatMul(M, Gather(weight, indices) * per_sample_weights), mean = sum / max(count, 1) and
// max = ReduceMax(Where(M, rows, -inf)) with empty bags 0, as PyTorch's kernel.
void convertEmbeddingBag(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  for (size_t i = 1; i < n.outputs().size(); ++i)
    if (n.output(i)->hasUses())
      throw Error(fmt::format(
          "embedding_bag: output {} (offset2bag, bag_size, max_indices) is used; only the bags "
          "(output 0) are exported",
          i));
  const ScalarType dt = dtypeOr(ctx, args[0].value());
  const int64_t mode = args[4].unwrapToInt();
  if (mode < 0 || mode > 2) args[4].fail("0 (sum), 1 (mean) or 2 (max)", std::to_string(mode));
  if (ctx.expectRank(n, args[1].value()) != 1) args[1].fail("1-d indices", "another rank");
  const bool lastOffset = args[7].unwrapToBool(false);
  std::string w = args[0].unwrapToTensor();
  std::string idx =
      ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), ScalarType::Long);
  std::string offsets =
      ctx.castTo(args[2].unwrapToTensor(), ctx.dtypeOf(args[2].value()), ScalarType::Long);
  std::string count = ctx.op("Shape", {idx});  // [n]
  auto slice1 = [&](const std::string& x, int64_t lo, int64_t hi) {
    return ctx.op("Slice", {x, ctx.constInt64s({lo}), ctx.constInt64s({hi}), ctx.constInt64s({0})});
  };
  std::string starts = lastOffset ? slice1(offsets, 0, -1) : offsets;
  std::string ends =
      lastOffset
          ? slice1(offsets, 1, std::numeric_limits<int64_t>::max())
          : ctx.op("Concat", {slice1(offsets, 1, std::numeric_limits<int64_t>::max()), count},
                   {attrI("axis", 0)});
  std::string pos =
      unsqueeze(ctx,
                ctx.op("Range", {ctx.constScalar(0, ScalarType::Long), squeeze(ctx, count, {0}),
                                 ctx.constScalar(1, ScalarType::Long)}),
                {0});  // [1, n]
  std::string m = ctx.op("And", {ctx.op("GreaterOrEqual", {pos, unsqueeze(ctx, starts, {1})}),
                                 ctx.op("Less", {pos, unsqueeze(ctx, ends, {1})})});  // [bags, n]
  if (args.size() > 8 && !args[8].isNone()) {
    int64_t pad = args[8].unwrapToInt();
    if (pad < 0) {
      auto ws = ctx.expectSizes(n, args[0].value());
      pad += ws[0];
    }
    std::string keep = ctx.op(
        "Not",
        {ctx.op("Equal", {idx, ctx.constScalar(static_cast<double>(pad), ScalarType::Long)})});
    m = ctx.op("And", {m, unsqueeze(ctx, keep, {0})});
  }
  std::string rows = ctx.op("Gather", {w, idx}, {attrI("axis", 0)});  // [n, D]
  if (!args[6].isNone()) {
    if (mode != 0) args[6].fail("None (per_sample_weights needs mode='sum')", "a tensor");
    std::string psw = ctx.castTo(args[6].unwrapToTensor(), ctx.dtypeOf(args[6].value()), dt);
    rows = ctx.op("Mul", {rows, unsqueeze(ctx, psw, {1})});
  }
  std::string mf = ctx.op("Cast", {m}, {attrI("to", onnxDataType(dt))});
  std::string bagSize = reduce(ctx, "Sum", mf, {1}, true);  // [bags, 1]
  std::string y;
  if (mode == 2) {
    std::string low = ctx.constScalar(-std::numeric_limits<double>::infinity(), dt);
    y = reduce(ctx, "Max",
               ctx.op("Where", {unsqueeze(ctx, m, {2}), unsqueeze(ctx, rows, {0}), low}), {1},
               false);
    y = ctx.op("Where",
               {ctx.op("Greater", {bagSize, ctx.constScalar(0, dt)}), y, ctx.constScalar(0, dt)});
  } else {
    y = ctx.op("MatMul", {mf, rows});
    if (mode == 1) y = ctx.op("Div", {y, ctx.op("Max", {bagSize, ctx.constScalar(1, dt)})});
  }
  ctx.setOutput(n, 0, y);
}

// grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners) -> GridSample
// (opset 16, 4-d input; https://onnx.ai/onnx/operators/onnx__GridSample.html), as torch.onnx's
// symbolic_opset16.
void convertGridSampler(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  static const char* const kModes[] = {"bilinear", "nearest", "bicubic"};
  static const char* const kPadding[] = {"zeros", "border", "reflection"};
  const int64_t mode = args[2].unwrapToInt(), padding = args[3].unwrapToInt();
  if (mode < 0 || mode > 2)
    args[2].fail("0 (bilinear), 1 (nearest) or 2 (bicubic)", std::to_string(mode));
  if (padding < 0 || padding > 2)
    args[3].fail("0 (zeros), 1 (border) or 2 (reflection)", std::to_string(padding));
  if (auto r = ctx.rankOf(args[0].value()); r && *r != 4)
    args[0].fail("a 4-d input (GridSample samples 2-d grids up to opset 19)",
                 fmt::format("rank {}", *r));
  ctx.setOutput(n, 0,
                ctx.op("GridSample", {args[0].unwrapToTensor(), args[1].unwrapToTensor()},
                       {attrS("mode", kModes[mode]), attrS("padding_mode", kPadding[padding]),
                        attrI("align_corners", args[4].unwrapToBool() ? 1 : 0)}));
}

// constant_pad_nd(self, pad, value) -> Pad(constant). torch's pad lists (begin, end) pairs
// from the last dim backwards; ONNX wants all begins, then all ends, from the first dim.
std::vector<int64_t> onnxPads(const std::vector<int64_t>& pad, int64_t rank) {
  std::vector<int64_t> pads(2 * rank, 0);
  for (size_t i = 0; i + 1 < pad.size(); i += 2) {
    int64_t dim = rank - 1 - static_cast<int64_t>(i / 2);
    pads[dim] = pad[i];
    pads[rank + dim] = pad[i + 1];
  }
  return pads;
}

// The pads input of ONNX's Pad for torch's pad list `pad` of a rank-`rank` input: constants
// when the list is known now; for amounts computed at run time (Swin's and U-Nets' pads to a
// multiple of the window, with dynamic sizes) the same reordering on the 1-d list: its
// (begin, end) pairs as rows [k, 2], last dim first, reversed, transposed to [begins; ends],
// zeros in front for the dims the list leaves alone, flattened.
std::string onnxPadsInput(OnnxCtx& ctx, const convert::ArgValue<std::string>& pad, int64_t rank) {
  if (pad.isIValue()) return ctx.constInt64s(onnxPads(pad.unwrapToIntList(), rank));
  std::string p = ctx.castTo(pad.unwrapToTensor(), ctx.dtypeOf(pad.value()), ScalarType::Long);
  p = ctx.op("Reshape", {p, ctx.constInt64s({-1, 2})});
  p = ctx.op("Slice",
             {p, ctx.constInt64s({-1}), ctx.constInt64s({std::numeric_limits<int64_t>::min()}),
              ctx.constInt64s({0}), ctx.constInt64s({-1})});
  p = ctx.op("Transpose", {p}, {attrIs("perm", {1, 0})});
  // [2, rank - k] zeros in front (k pairs, known only at run time when the list comes out of
  // an if).
  std::string k =
      ctx.op("Slice", {ctx.op("Shape", {p}), ctx.constInt64s({1}), ctx.constInt64s({2})});
  std::string zeros = ctx.op(
      "ConstantOfShape",
      {ctx.op("Concat", {ctx.constInt64s({2}), ctx.op("Sub", {ctx.constInt64s({rank}), k})},
              {attrI("axis", 0)})},
      {attrT("value", toTensorProto(Tensor::fromVector(std::vector<int64_t>{0}, {1}), "value"))});
  p = ctx.op("Concat", {zeros, p}, {attrI("axis", 1)});
  return ctx.op("Reshape", {p, ctx.constInt64s({2 * rank})});
}

void convertConstantPad(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string pads = onnxPadsInput(ctx, args[1], ctx.expectRank(n, args[0].value()));
  ScalarType dt = dtypeOr(ctx, args[0].value());
  double value = args[2].unwrapToDouble(0.0);
  ctx.setOutput(n, 0,
                ctx.op("Pad", {args[0].unwrapToTensor(), pads, ctx.constScalar(value, dt)},
                       {attrS("mode", "constant")}));
}

/// PyTorch's CPU upsample_bilinear2d of a float channels-first input [N, C, IH, IW] to
/// [N, C, OH, OW], step by step (Note [bilinear arithmetic], ops/nn.cpp), for static sizes:
/// the taps (source indices and weights, ops::linearTaps) as constants, the rows interpolated
/// along the width, then across rows, each as t = fma(x0, l0, float(x1 * l1)). ONNX has no
/// fma: it is Cast(double(x0) * double(l0) + double(x1 * l1), float), whose product is exact
/// and whose sum is rounded twice (to double, then to float), which differs from fma's one
/// rounding only where the double sum lands on a float's halfway point. Resize interpolates in
/// another order, an ulp or so apart from PyTorch at most values: a quantized model that
/// quantizes the resized image moves integers (../shared/wild/d2go_detector).
std::string bilinearAsPyTorch(OnnxCtx& ctx, const std::string& x, const std::vector<int64_t>& in,
                              const std::vector<int64_t>& out, bool alignCorners,
                              std::optional<double> scaleH, std::optional<double> scaleW) {
  auto fmaLike = [&](const std::string& a, const std::vector<float>& w0, const std::string& p,
                     const IntList& shape) {
    auto toDouble = [&](const std::string& v) {
      return ctx.op("Cast", {v}, {attrI("to", onnxDataType(ScalarType::Double))});
    };
    std::string s = ctx.op(
        "Mul",
        {toDouble(a), ctx.initializer(Tensor::fromVector(w0, shape).to(ScalarType::Double))});
    s = ctx.op("Add", {s, toDouble(p)});
    return ctx.op("Cast", {s}, {attrI("to", onnxDataType(ScalarType::Float))});
  };
  // along dim `axis` (3: width, 2: height): fma(x[i0], l0, x[i1] * l1)
  auto along = [&](const std::string& v, int64_t axis,
                   const std::vector<ops::LinearTap<float>>& t) {
    const auto n = static_cast<int64_t>(t.size());
    std::vector<int64_t> i0, i1;
    std::vector<float> l0, l1;
    for (const auto& tap : t) {
      i0.push_back(tap.i0);
      i1.push_back(tap.i1);
      l0.push_back(tap.l0);
      l1.push_back(tap.l1);
    }
    const IntList shape = axis == 3 ? IntList{n} : IntList{n, 1};
    const std::string x0 = ctx.op("Gather", {v, ctx.constInt64s(i0)}, {attrI("axis", axis)});
    const std::string x1 = ctx.op("Gather", {v, ctx.constInt64s(i1)}, {attrI("axis", axis)});
    return fmaLike(x0, l0, ctx.op("Mul", {x1, ctx.initializer(Tensor::fromVector(l1, shape))}),
                   shape);
  };
  const std::string rows = along(x, 3, ops::linearTaps<float>(in[3], out[3], alignCorners, scaleW));
  return along(rows, 2, ops::linearTaps<float>(in[2], out[2], alignCorners, scaleH));
}

// upsample_{nearest,linear,bilinear,bicubic,trilinear}{1,2,3}d (and .vec) -> Resize with sizes
// (https://onnx.ai/onnx/operators/onnx__Resize.html): nearest uses asymmetric coordinates
// and floor rounding, as PyTorch's "nearest"; linear and cubic use align_corners or
// pytorch_half_pixel, cubic with PyTorch's coefficient -0.75.
OnnxConverter upsample(std::string mode) {
  return [mode](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x = args[0].unwrapToTensor();
    std::vector<int64_t> outSizes = ctx.expectSizes(n, n.output());
    const bool vecForm = args.op() && args.op()->schema.overloadName() == "vec";
    const auto inSizes = ctx.sizesOf(n.input(0));
    if (mode == "linear" && outSizes.size() == 4 && inSizes && !ctx.isDynamic(n.output()) &&
        ctx.dtypeOf(n.input(0)) == ScalarType::Float && args[1].isIValue()) {
      std::optional<double> sh, sw;  // the scale factors, when given
      if (vecForm && args.size() > 3 && !args[3].isNone()) {
        const auto sf = args[3].unwrapToDoubleList();
        sh = sf.at(0);
        sw = sf.size() == 1 ? sf[0] : sf.at(1);
      } else if (!vecForm && args.size() > 4) {
        if (!args[3].isNone()) sh = args[3].unwrapToDouble();
        if (!args[4].isNone()) sw = args[4].unwrapToDouble();
      }
      return ctx.setOutput(
          n, 0, bilinearAsPyTorch(ctx, x, *inSizes, outSizes, args[2].unwrapToBool(), sh, sw));
    }
    std::vector<OnnxAttr> attrs;
    if (mode == "nearest-exact") {
      // PyTorch's src = floor((dst + 0.5) * in / out) is half_pixel's (dst + 0.5) * in / out -
      // 0.5 rounded half up.
      attrs.push_back(attrS("mode", "nearest"));
      attrs.push_back(attrS("coordinate_transformation_mode", "half_pixel"));
      attrs.push_back(attrS("nearest_mode", "round_prefer_ceil"));
    } else if (mode != "nearest") {
      bool alignCorners = args[2].unwrapToBool();
      attrs.push_back(attrS("mode", mode));
      attrs.push_back(attrS("coordinate_transformation_mode",
                            alignCorners ? "align_corners" : "pytorch_half_pixel"));
      if (mode == "cubic") attrs.push_back(attrF("cubic_coeff_a", -0.75));
    } else {
      attrs.push_back(attrS("mode", "nearest"));
      attrs.push_back(attrS("coordinate_transformation_mode", "asymmetric"));
      attrs.push_back(attrS("nearest_mode", "floor"));
    }
    // Scale factors given (the .vec overloads' third-last argument; F.interpolate without
    // recompute_scale_factor): PyTorch maps coordinates by them, not by the size ratio, as
    // Resize does with scales.
    // The other overloads take one optional scale per spatial dim (scales_h, scales_w ...),
    // given all or none by F.interpolate.
    const bool nearest = mode == "nearest" || mode == "nearest-exact";
    const size_t scalesIndex = nearest ? 2 : 3;
    const size_t k = outSizes.size() - 2;
    bool scalesGiven = scalesIndex < args.size() && !args[scalesIndex].isNone();
    if (!vecForm) {
      scalesGiven = scalesGiven && scalesIndex + k <= args.size();
      for (size_t i = 0; scalesGiven && i < k; ++i) scalesGiven = !args[scalesIndex + i].isNone();
    }
    if (scalesGiven) {
      std::vector<double> sf;
      if (vecForm) {
        sf = args[scalesIndex].unwrapToDoubleList();
      } else {
        for (size_t i = 0; i < k; ++i) sf.push_back(args[scalesIndex + i].unwrapToDouble());
      }
      std::vector<float> scales = {1.0f, 1.0f};
      for (size_t i = 0; i < k; ++i)
        scales.push_back(static_cast<float>(sf.size() == 1 ? sf[0] : sf.at(i)));
      Tensor t = Tensor::empty({static_cast<int64_t>(scales.size())}, ScalarType::Float);
      std::copy(scales.begin(), scales.end(), t.data<float>());
      return ctx.setOutput(n, 0, ctx.op("Resize", {x, "", ctx.initializer(t)}, attrs));
    }
    // An output following a dynamic axis: sizes computed, the input's batch and channels
    // (Shape) then the output size, constant or computed (fcn's x.shape[-2:]).
    bool dynamic = ctx.isDynamic(n.output()) || !args[1].isIValue();
    if (dynamic && !args[1].isNone()) {
      std::string lead =
          ctx.op("Slice", {ctx.op("Shape", {x}), ctx.constInt64s({0}), ctx.constInt64s({2})});
      std::string spatial = args[1].isIValue()
                                ? ctx.constInt64s(args[1].unwrapToIntList())
                                : ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()),
                                             ScalarType::Long);
      std::string sizes = ctx.op("Concat", {lead, spatial}, {attrI("axis", 0)});
      return ctx.setOutput(n, 0, ctx.op("Resize", {x, "", "", sizes}, attrs));
    }
    ctx.setOutput(n, 0, ctx.op("Resize", {x, "", "", ctx.constInt64s(outSizes)}, attrs));
  };
}

// _upsample_{bilinear,bicubic}2d_aa (F.interpolate antialias=True), [N, C, H, W] float or
// double:
// - from opset 18 with align_corners False: Resize(antialias=1) with half_pixel coordinates,
//   cubic_coeff_a -0.5 (Pillow's and ATen's filter) and exclude_outside (ATen drops the taps
//   past a border and renormalizes the rest), sizes or scales as upsample's;
// - otherwise, for static sizes, the filter itself: two MatMuls with the taps of ops::antialiasTaps
//   as constant [W, OW] and [OH, H] matrices (along W, then along H, as ATen's kernel), which
//   follow PyTorch's weights exactly and need no opset. ONNX's align_corners coordinates are not
//   ATen's for this filter (its centres stay at (i + 0.5) * scale), so align_corners True always
//   takes this way.
OnnxConverter upsampleAntialias(bool cubic) {
  return [cubic](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const bool alignCorners = args[2].unwrapToBool();
    const bool vecForm = args.op() && args.op()->schema.overloadName() == "vec";
    std::optional<double> sh, sw;  // the scale factors, when given
    if (vecForm && !args[3].isNone()) {
      const auto sf = args[3].unwrapToDoubleList();
      sh = sf.at(0);
      sw = sf.size() == 1 ? sf[0] : sf.at(1);
    } else if (!vecForm && args.size() > 4 && !args[3].isNone() && !args[4].isNone()) {
      sh = args[3].unwrapToDouble();
      sw = args[4].unwrapToDouble();
    }
    const std::string x = args[0].unwrapToTensor();
    const ScalarType dt = dtypeOr(ctx, args[0].value());
    if (dt != ScalarType::Float && dt != ScalarType::Double)
      args[0].fail("a float or double tensor (PyTorch's antialiased resize)", toString(dt));
    if (ctx.opset() >= 18 && !alignCorners) {
      std::vector<OnnxAttr> attrs = {attrS("mode", cubic ? "cubic" : "linear"),
                                     attrS("coordinate_transformation_mode", "half_pixel"),
                                     attrI("antialias", 1), attrI("exclude_outside", 1)};
      if (cubic) attrs.push_back(attrF("cubic_coeff_a", -0.5));
      if (sh && sw) {
        Tensor t = Tensor::fromVector(
            std::vector<float>{1.0f, 1.0f, static_cast<float>(*sh), static_cast<float>(*sw)}, {4});
        return ctx.setOutput(n, 0, ctx.op("Resize", {x, "", ctx.initializer(t)}, attrs));
      }
      if (ctx.isDynamic(n.output()) || !args[1].isIValue()) {
        std::string lead =
            ctx.op("Slice", {ctx.op("Shape", {x}), ctx.constInt64s({0}), ctx.constInt64s({2})});
        std::string spatial = args[1].isIValue()
                                  ? ctx.constInt64s(args[1].unwrapToIntList())
                                  : ctx.castTo(args[1].unwrapToTensor(),
                                               ctx.dtypeOf(args[1].value()), ScalarType::Long);
        std::string sizes = ctx.op("Concat", {lead, spatial}, {attrI("axis", 0)});
        return ctx.setOutput(n, 0, ctx.op("Resize", {x, "", "", sizes}, attrs));
      }
      return ctx.setOutput(
          n, 0,
          ctx.op("Resize", {x, "", "", ctx.constInt64s(ctx.expectSizes(n, n.output()))}, attrs));
    }
    const auto in = ctx.sizesOf(n.input(0));
    if (!in || in->size() != 4 || ctx.isDynamic(n.output()))
      throw Error(
          alignCorners
              ? fmt::format("{}: an antialiased resize with align_corners needs static input and "
                            "output sizes (ONNX's Resize has no antialiased align_corners mode)",
                            n.kind().toQualString())
              : fmt::format("{}: an antialiased resize of a dynamic shape needs opset 18 or "
                            "later (Resize's antialias), or static input and output sizes",
                            n.kind().toQualString()));
    const std::vector<int64_t> out = ctx.expectSizes(n, n.output());
    // taps -> a dense [in, out] matrix, column o holding output o's weights
    auto matrix = [&](int64_t inN, int64_t outN, std::optional<double> scale, bool transposed) {
      Tensor m = Tensor::empty(transposed ? IntList{outN, inN} : IntList{inN, outN}, dt);
      ops::dispatchFloating(dt, "antialias", [&](auto tag) {
        using T = ops::TagT<decltype(tag)>;
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          const auto t = ops::antialiasTaps<T>(inN, outN, alignCorners, scale, cubic);
          T* p = m.data<T>();
          std::fill(p, p + m.numel(), T(0));
          for (int64_t o = 0; o < outN; ++o)
            for (int64_t j = 0; j < t.count[static_cast<size_t>(o)]; ++j) {
              const int64_t i = t.first[static_cast<size_t>(o)] + j;
              p[transposed ? o * inN + i : i * outN + o] =
                  t.w[static_cast<size_t>(o * t.width + j)];
            }
        }
      });
      return ctx.initializer(m);
    };
    const std::string rows = ctx.op("MatMul", {x, matrix((*in)[3], out[3], sw, false)});
    ctx.setOutput(n, 0, ctx.op("MatMul", {matrix((*in)[2], out[2], sh, true), rows}));
  };
}

// Circular padding (F.pad's mode="circular", aten::_pad_circular): per padded dim (pairs from
// the last dim backwards), the last `before` elements, the tensor, and the first `after`
// elements, concatenated (wrap-around).
std::string padCircular(OnnxCtx& ctx, const convert::ArgValue<std::string>& padArg, std::string x,
                        int64_t rank) {
  auto pad = padArg.unwrapToIntList();
  for (size_t i = 0; i + 1 < pad.size(); i += 2) {
    const int64_t dim = rank - 1 - static_cast<int64_t>(i / 2), before = pad[i], after = pad[i + 1];
    if (before < 0 || after < 0)
      padArg.fail("pads of at least 0", fmt::format("[{}, {}]", before, after));
    auto slice = [&](int64_t from, int64_t to) {
      return ctx.op("Slice",
                    {x, ctx.constInt64s({from}), ctx.constInt64s({to}), ctx.constInt64s({dim})});
    };
    std::vector<std::string> parts;
    if (before > 0) parts.push_back(slice(-before, std::numeric_limits<int64_t>::max()));
    parts.push_back(x);
    if (after > 0) parts.push_back(slice(0, after));
    if (parts.size() > 1) x = ctx.op("Concat", parts, {attrI("axis", dim)});
  }
  return x;
}

// reflection_pad / replication_pad{1,2,3}d and pad(mode) -> Pad(reflect / edge / constant),
// pads reordered as constant_pad_nd's; mode circular by padCircular.
OnnxConverter padMode(std::optional<std::string> fixed) {
  return [fixed](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string mode = fixed ? *fixed : args[2].unwrapToString();
    if (mode == "constant") {
      std::string pads = onnxPadsInput(ctx, args[1], ctx.expectRank(n, args[0].value()));
      ScalarType dt = dtypeOr(ctx, args[0].value());
      double value = args.size() > 3 ? args[3].unwrapToDouble(0.0) : 0.0;
      return ctx.setOutput(
          n, 0,
          ctx.op("Pad", {args[0].unwrapToTensor(), pads, ctx.constScalar(value, dt)},
                 {attrS("mode", "constant")}));
    }
    if (mode == "circular")
      return ctx.setOutput(
          n, 0,
          padCircular(ctx, args[1], args[0].unwrapToTensor(), ctx.expectRank(n, args[0].value())));
    std::string onnxMode = mode == "reflect" ? "reflect" : mode == "replicate" ? "edge" : "";
    if (onnxMode.empty())
      args[2].fail("'constant', 'reflect', 'replicate' or 'circular'", "'" + mode + "'");
    std::string pads = onnxPadsInput(ctx, args[1], ctx.expectRank(n, args[0].value()));
    ctx.setOutput(n, 0, ctx.op("Pad", {args[0].unwrapToTensor(), pads}, {attrS("mode", onnxMode)}));
  };
}

// pixel_unshuffle(x, r): (N, C, H*r, W*r) -> Reshape (N, C, H, r, W, r) -> Transpose
// (0, 1, 3, 5, 2, 4) -> Reshape (N, C*r*r, H, W): channel c*r*r + i*r + j, PyTorch's order.
void convertPixelUnshuffle(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  auto s = ctx.expectSizes(n, args[0].value());
  if (s.size() != 4) args[0].fail("a 4-d tensor", fmt::format("rank {}", s.size()));
  int64_t r = args[1].unwrapToInt();
  std::string y = ctx.op("Reshape", {args[0].unwrapToTensor(),
                                     ctx.constInt64s({s[0], s[1], s[2] / r, r, s[3] / r, r})});
  y = ctx.op("Transpose", {y}, {attrIs("perm", {0, 1, 3, 5, 2, 4})});
  ctx.setOutput(n, 0,
                ctx.op("Reshape", {y, ctx.constInt64s({s[0], s[1] * r * r, s[2] / r, s[3] / r})}));
}

// pixel_shuffle(x, r) -> DepthToSpace(blocksize=r, mode=CRD): channel c*r*r + i*r + j goes to
// (c, h*r + i, w*r + j), PyTorch's order (https://onnx.ai/onnx/operators/onnx__DepthToSpace.html).
void convertPixelShuffle(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  int64_t rank = ctx.expectRank(n, args[0].value());
  if (rank != 4) args[0].fail("a 4-d tensor (DepthToSpace is 4-d)", fmt::format("rank {}", rank));
  ctx.setOutput(n, 0,
                ctx.op("DepthToSpace", {args[0].unwrapToTensor()},
                       {attrI("blocksize", args[1].unwrapToInt()), attrS("mode", "CRD")}));
}

// im2col(self [N, C, H, W] or [C, H, W], kernel, dilation, padding, stride) (F.unfold): a
// grouped Conv whose kernel picks one input pixel per output channel (channel c * kh * kw +
// i * kw + j reads (c, i, j), PyTorch's order), Reshape to [N, C * kh * kw, L]. The products
// are with 1 and 0, so the values are exact.
void convertIm2col(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  auto sizes = ctx.expectSizes(n, args[0].value());
  if (sizes.size() != 3 && sizes.size() != 4)
    args[0].fail("a 3-d or 4-d tensor", fmt::format("rank {}", sizes.size()));
  const bool unbatched = sizes.size() == 3;
  const int64_t c = sizes[unbatched ? 0 : 1];
  auto k = args[1].unwrapToIntList(), dil = args[2].unwrapToIntList(),
       pad = args[3].unwrapToIntList(), stride = args[4].unwrapToIntList();
  auto two = [](std::vector<int64_t> v) {
    return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
  };
  k = two(k), dil = two(dil), pad = two(pad), stride = two(stride);
  ScalarType dt = dtypeOr(ctx, args[0].value());
  const int64_t taps = k[0] * k[1];
  std::vector<float> pick(static_cast<size_t>(c * taps * taps), 0.0f);
  for (int64_t o = 0; o < c * taps; ++o) pick[static_cast<size_t>(o * taps + o % taps)] = 1.0f;
  Tensor w = Tensor::fromVector(pick, {c * taps, 1, k[0], k[1]});
  std::string x = args[0].unwrapToTensor();
  if (unbatched) x = unsqueeze(ctx, x, {0});
  std::string y =
      ctx.op("Conv", {x, ctx.initializer(dt == ScalarType::Float ? w : w.to(dt))},
             {attrIs("kernel_shape", k), attrIs("dilations", dil), attrIs("strides", stride),
              attrIs("pads", {pad[0], pad[1], pad[0], pad[1]}), attrI("group", c)});
  y = ctx.op("Reshape", {y, ctx.constInt64s({0, c * taps, -1})});
  ctx.setOutput(n, 0, unbatched ? squeeze(ctx, y, {0}) : y);
}

// col2im(cols, output_size, kernel_size, dilation, padding, stride) -> Col2Im (opset 18,
// https://onnx.ai/onnx/operators/onnx__Col2Im.html), whose input is batched: an unbatched
// [C * kh * kw, L] gets a batch of 1 and loses it again.
void convertCol2im(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const int64_t rank = ctx.expectRank(n, args[0].value());
  if (rank != 2 && rank != 3) args[0].fail("a 2-d or 3-d tensor", fmt::format("rank {}", rank));
  auto two = [](std::vector<int64_t> v) {
    return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
  };
  auto pad = two(args[4].unwrapToIntList());
  std::string x = args[0].unwrapToTensor();
  if (rank == 2) x = unsqueeze(ctx, x, {0});
  std::string y = ctx.op("Col2Im",
                         {x, ctx.constInt64s(two(args[1].unwrapToIntList())),
                          ctx.constInt64s(two(args[2].unwrapToIntList()))},
                         {attrIs("dilations", two(args[3].unwrapToIntList())),
                          attrIs("pads", {pad[0], pad[1], pad[0], pad[1]}),
                          attrIs("strides", two(args[5].unwrapToIntList()))});
  ctx.setOutput(n, 0, rank == 2 ? squeeze(ctx, y, {0}) : y);
}

// conv_tbc(self [T, B, C], weight [K, C, O], bias [O], pad): Conv over time on [B, C, T] with
// the weight as [O, C, K], back to [T', B, O].
void convertConvTbc(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const int64_t pad = args[3].unwrapToInt(0);
  std::string x = ctx.op("Transpose", {args[0].unwrapToTensor()}, {attrIs("perm", {1, 2, 0})});
  std::string w = ctx.op("Transpose", {args[1].unwrapToTensor()}, {attrIs("perm", {2, 1, 0})});
  std::string y = ctx.op("Conv", {x, w, args[2].unwrapToTensor()}, {attrIs("pads", {pad, pad})});
  ctx.setOutput(n, 0, ctx.op("Transpose", {y}, {attrIs("perm", {2, 0, 1})}));
}

// hann_window(length, periodic=True, dtype): 0.5 - 0.5 cos(2 pi i / (M - 1)) with M = length + 1
// when periodic (the last point dropped), as an initializer (the length is a constant).
void convertHannWindow(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const bool periodicForm = args.op() && args.op()->schema.overloadName() == "periodic";
  const int64_t len = args[0].unwrapToInt();
  const bool periodic = periodicForm ? args[1].unwrapToBool() : true;
  ScalarType dt = dtypeOr(ctx, n.output());
  if (len < 0) args[0].fail("a length of at least 0", std::to_string(len));
  Tensor t = Tensor::empty({len}, ScalarType::Double);
  const double m = static_cast<double>(periodic ? len + 1 : len);
  for (int64_t i = 0; i < len; ++i)
    t.data<double>()[i] =
        len == 1 ? 1.0 : 0.5 - 0.5 * std::cos(2 * M_PI * static_cast<double>(i) / (m - 1));
  ctx.setOutput(n, 0, ctx.initializer(t.to(dt)));
}

}  // namespace

void registerNnConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"aten::pixel_shuffle"}, convertPixelShuffle);
  // warnings.warn in scripted code (googlenet, inception_v3 when scripted): nothing to compute.
  r.addOverloads({"aten::warn"}, [](OnnxCtx&, const Node&, OnnxArgs&) {});
  // A raise in a branch decided at run time (input checks): ONNX has no exceptions; nothing is
  // computed (the If around it is dropped when it has no outputs, see export.cpp).
  r.addNode(prim::RaiseException, [](OnnxCtx&, const Node&, OnnxArgs&) {});
  r.addOverloads({"aten::softmax.int"}, softmax("Softmax"));
  r.addOverloads({"aten::log_softmax.int"}, softmax("LogSoftmax"));
  r.addOverloads({"aten::dropout", "aten::dropout_", "aten::feature_dropout",
                  "aten::feature_dropout_", "aten::alpha_dropout", "aten::alpha_dropout_",
                  "aten::feature_alpha_dropout", "aten::feature_alpha_dropout_"},
                 convertDropout);
  r.addOverloads({"aten::embedding"}, convertEmbedding);
  r.addOverloads({"aten::embedding_bag", "aten::embedding_bag.padding_idx"}, convertEmbeddingBag);
  for (const char* name : {"aten::grid_sampler", "aten::grid_sampler_2d"}) {
    r.addOverloads({name}, convertGridSampler);
    setConverterMinOpset(OperatorRegistry::global().findOverload(name)->key, 16);
  }
  // one_hot(self, num_classes) -> OneHot(self, depth, [0, 1]) in int64
  // (https://onnx.ai/onnx/operators/onnx__OneHot.html); num_classes -1 is max(self) + 1.
  r.addOverloads({"aten::one_hot"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string x =
        ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), ScalarType::Long);
    int64_t classes = args[1].unwrapToInt(-1);
    std::string depth = classes >= 0 ? ctx.constInt64s({classes})
                                     : ctx.op("Add", {reduce(ctx, "Max", x, {}, false),
                                                      ctx.constScalar(1, ScalarType::Long)});
    ctx.setOutput(n, 0, ctx.op("OneHot", {x, depth, ctx.constInt64s({0, 1})}, {attrI("axis", -1)}));
  });
  r.addOverloads({"aten::constant_pad_nd"}, convertConstantPad);
  r.addOverloads({"aten::im2col"}, convertIm2col);
  r.addOverloads({"aten::col2im"}, convertCol2im);
  setConverterMinOpset(OperatorRegistry::global().findOverload("aten::col2im")->key, 18);
  r.addOverloads({"aten::_pad_circular"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(
        n, 0,
        padCircular(ctx, args[1], args[0].unwrapToTensor(), ctx.expectRank(n, args[0].value())));
  });
  r.addOverloads({"aten::conv_tbc"}, convertConvTbc);
  r.addOverloads({"aten::hann_window", "aten::hann_window.periodic"}, convertHannWindow);
  r.addOverloads(
      {"aten::upsample_nearest1d", "aten::upsample_nearest1d.vec", "aten::upsample_nearest2d",
       "aten::upsample_nearest2d.vec", "aten::upsample_nearest3d", "aten::upsample_nearest3d.vec"},
      upsample("nearest"));
  r.addOverloads({"aten::_upsample_nearest_exact1d", "aten::_upsample_nearest_exact1d.vec",
                  "aten::_upsample_nearest_exact2d", "aten::_upsample_nearest_exact2d.vec",
                  "aten::_upsample_nearest_exact3d", "aten::_upsample_nearest_exact3d.vec"},
                 upsample("nearest-exact"));
  r.addOverloads({"aten::upsample_linear1d", "aten::upsample_linear1d.vec",
                  "aten::upsample_bilinear2d", "aten::upsample_bilinear2d.vec",
                  "aten::upsample_trilinear3d", "aten::upsample_trilinear3d.vec"},
                 upsample("linear"));
  r.addOverloads({"aten::upsample_bicubic2d", "aten::upsample_bicubic2d.vec"}, upsample("cubic"));
  r.addOverloads({"aten::_upsample_bilinear2d_aa", "aten::_upsample_bilinear2d_aa.vec"},
                 upsampleAntialias(false));
  r.addOverloads({"aten::_upsample_bicubic2d_aa", "aten::_upsample_bicubic2d_aa.vec"},
                 upsampleAntialias(true));
  r.addOverloads({"aten::reflection_pad1d", "aten::reflection_pad2d", "aten::reflection_pad3d"},
                 padMode(std::string("reflect")));
  r.addOverloads({"aten::replication_pad1d", "aten::replication_pad2d", "aten::replication_pad3d"},
                 padMode(std::string("replicate")));
  // native_dropout(input, p, train) in inference: (input, a mask of ones); train=True is refused.
  r.addOverloads({"aten::native_dropout"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    if (!args[2].isNone() && args[2].unwrapToBool() && args[1].unwrapToDouble() > 0)
      args[2].fail("False (export runs in inference mode; call eval() first)", "True");
    std::string x = args[0].unwrapToTensor();
    ctx.setOutput(n, 0, x);
    if (n.output(1)->hasUses()) {
      Tensor one = Tensor::fromVector(std::vector<float>{1.0f}, {1}).to(ScalarType::Bool);
      ctx.setOutput(n, 1,
                    ctx.op("ConstantOfShape", {ctx.op("Shape", {x})},
                           {attrT("value", toTensorProto(one, "value"))}));
    }
  });
  r.addOverloads({"aten::pad"}, padMode(std::nullopt));
  r.addOverloads({"aten::pixel_unshuffle"}, convertPixelUnshuffle);
  r.addOverloads({"aten::_log_softmax"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    int64_t rank = ctx.expectRank(n, args[0].value());
    ctx.setOutput(n, 0,
                  ctx.op("LogSoftmax", {args[0].unwrapToTensor()},
                         {attrI("axis", wrapDim(args[1].unwrapToInt(), rank))}));
  });
}

}  // namespace torchless::onnx_export
