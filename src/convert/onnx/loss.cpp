// ONNX converters: loss functions, as torch.onnx's symbolics export them (models that return
// their loss, distillation and evaluation graphs). `reduction` is PyTorch's enum: 0 none,
// 1 mean, 2 sum.
#include "convert/onnx/onnx_ctx.h"

namespace torchless::onnx_export {

namespace {

const char* reductionName(const convert::ArgValue<std::string>& a) {
  switch (a.unwrapToInt()) {
    case 0: return "none";
    case 1: return "mean";
    case 2: return "sum";
    default: a.fail("0 (none), 1 (mean) or 2 (sum)", std::to_string(a.unwrapToInt()));
  }
}

// Mean / Sum of every element, or x itself for `none`.
std::string reduceLoss(OnnxCtx& ctx, const convert::ArgValue<std::string>& a,
                       const std::string& x) {
  const std::string kind = reductionName(a);
  if (kind == "none") return x;
  return reduce(ctx, kind == "mean" ? "Mean" : "Sum", x, {}, false);
}

// nll_loss / nll_loss2d / nll_loss_nd(self [N, C, d...] or [C], target, weight, reduction,
// ignore_index) -> NegativeLogLikelihoodLoss
// (https://onnx.ai/onnx/operators/onnx__NegativeLogLikelihoodLoss.html): the same weighted mean.
// An unbatched [C] input is viewed [1, C].
void convertNllLoss(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string x = args[0].unwrapToTensor();
  std::string t =
      ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), ScalarType::Long);
  const bool unbatched = ctx.expectRank(n, args[0].value()) == 1;
  if (unbatched) x = unsqueeze(ctx, x, {0}), t = unsqueeze(ctx, t, {0});
  std::vector<std::string> in = {x, t};
  if (auto w = args[2].unwrapToOptionalTensor()) in.push_back(*w);
  const std::string reduction = reductionName(args[3]);
  std::string y =
      ctx.op("NegativeLogLikelihoodLoss", in,
             {attrS("reduction", reduction), attrI("ignore_index", args[4].unwrapToInt())});
  ctx.setOutput(n, 0, unbatched && reduction == "none" ? squeeze(ctx, y, {0}) : y);
}

// cross_entropy_loss(self, target, weight, reduction, ignore_index, label_smoothing): class
// indices -> SoftmaxCrossEntropyLoss
// (https://onnx.ai/onnx/operators/onnx__SoftmaxCrossEntropyLoss.html); class probabilities (a float
// target) -> -sum_c(w_c * target * log_softmax) over the class dim, the mean dividing by the batch
// elements, with label smoothing mixing the target with 1 / C, as PyTorch. Label smoothing of class
// indices is refused (as torch.onnx does).
void convertCrossEntropy(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string x = args[0].unwrapToTensor();
  const double smoothing = args[5].unwrapToDouble(0.0);
  auto targetType = ctx.dtypeOf(args[1].value());
  const int64_t rank = ctx.expectRank(n, args[0].value());
  const bool unbatched = rank == 1;
  if (targetType && isFloatingType(*targetType)) {
    const int64_t classDim = unbatched ? 0 : 1;
    ScalarType dt = dtypeOr(ctx, args[0].value());
    std::string t = args[1].unwrapToTensor();
    if (smoothing != 0) {
      auto sizes = ctx.expectSizes(n, args[0].value());
      const double c = static_cast<double>(sizes[classDim]);
      t = ctx.op("Add", {ctx.op("Mul", {t, ctx.constScalar(1 - smoothing, dt)}),
                         ctx.constScalar(smoothing / c, dt)});
    }
    std::string prod = ctx.op("Mul", {ctx.op("LogSoftmax", {x}, {attrI("axis", classDim)}), t});
    if (auto w = args[2].unwrapToOptionalTensor()) {
      std::vector<int64_t> axes;
      for (int64_t d = classDim + 1; d < rank; ++d) axes.push_back(d - classDim);
      prod = ctx.op("Mul", {prod, axes.empty() ? *w : unsqueeze(ctx, *w, axes)});
    }
    std::string loss = ctx.op("Neg", {reduce(ctx, "Sum", prod, {classDim}, false)});
    return ctx.setOutput(n, 0, reduceLoss(ctx, args[3], loss));
  }
  if (smoothing != 0)
    args[5].fail("0 with class indices (ONNX's SoftmaxCrossEntropyLoss has no smoothing)",
                 std::to_string(smoothing));
  std::string t = ctx.castTo(args[1].unwrapToTensor(), targetType, ScalarType::Long);
  if (unbatched) x = unsqueeze(ctx, x, {0}), t = unsqueeze(ctx, t, {0});
  std::vector<std::string> in = {x, t};
  if (auto w = args[2].unwrapToOptionalTensor()) in.push_back(*w);
  const std::string reduction = reductionName(args[3]);
  std::string y =
      ctx.op("SoftmaxCrossEntropyLoss", in,
             {attrS("reduction", reduction), attrI("ignore_index", args[4].unwrapToInt())});
  ctx.setOutput(n, 0, unbatched && reduction == "none" ? squeeze(ctx, y, {0}) : y);
}

// binary_cross_entropy_with_logits(self, target, weight, pos_weight, reduction), PyTorch's
// stable form: m = max(-x, 0); with pos_weight, l = (1 - t) * x + (1 + (pw - 1) * t) *
// (log(exp(-m) + exp(-x - m)) + m); without, l = (1 - t) * x + m + log(exp(-m) + exp(-x - m));
// times weight.
void convertBceWithLogits(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ScalarType dt = dtypeOr(ctx, n.output());
  std::string x = args[0].unwrapToTensor(),
              t = ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), dt);
  std::string one = ctx.constScalar(1, dt);
  std::string m = ctx.op("Max", {ctx.op("Neg", {x}), ctx.constScalar(0, dt)});
  std::string lse =
      ctx.op("Log", {ctx.op("Add", {ctx.op("Exp", {ctx.op("Neg", {m})}),
                                    ctx.op("Exp", {ctx.op("Sub", {ctx.op("Neg", {x}), m})})})});
  std::string loss = ctx.op("Mul", {ctx.op("Sub", {one, t}), x});
  if (auto pw = args[3].unwrapToOptionalTensor()) {
    std::string logWeight = ctx.op("Add", {ctx.op("Mul", {ctx.op("Sub", {*pw, one}), t}), one});
    loss = ctx.op("Add", {loss, ctx.op("Mul", {logWeight, ctx.op("Add", {lse, m})})});
  } else {
    loss = ctx.op("Add", {ctx.op("Add", {loss, m}), lse});
  }
  if (auto w = args[2].unwrapToOptionalTensor()) loss = ctx.op("Mul", {loss, *w});
  ctx.setOutput(n, 0, reduceLoss(ctx, args[4], loss));
}

// kl_div(self, target, reduction, log_target): target * (log(target) - self) with 0 where the
// target is 0 (xlogy), or exp(target) * (target - self) for a log target.
void convertKlDiv(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ScalarType dt = dtypeOr(ctx, n.output());
  std::string x = args[0].unwrapToTensor(), t = args[1].unwrapToTensor();
  std::string loss;
  if (args[3].unwrapToBool(false)) {
    loss = ctx.op("Mul", {ctx.op("Exp", {t}), ctx.op("Sub", {t, x})});
  } else {
    std::string zero = ctx.constScalar(0, dt);
    std::string xlogy =
        ctx.op("Where", {ctx.op("Equal", {t, zero}), zero, ctx.op("Mul", {t, ctx.op("Log", {t})})});
    loss = ctx.op("Sub", {xlogy, ctx.op("Mul", {t, x})});
  }
  ctx.setOutput(n, 0, reduceLoss(ctx, args[2], loss));
}

// The elementwise losses of (self, target): fn(x, t, dt) then the reduction at `reduction`.
OnnxConverter pointwiseLoss(size_t reductionArg,
                            std::function<std::string(OnnxCtx&, OnnxArgs&, const std::string&,
                                                      const std::string&, ScalarType)>
                                fn) {
  return [reductionArg, fn](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = dtypeOr(ctx, n.output());
    std::string x = ctx.castTo(args[0].unwrapToTensor(), ctx.dtypeOf(args[0].value()), dt),
                t = ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), dt);
    ctx.setOutput(n, 0, reduceLoss(ctx, args[reductionArg], fn(ctx, args, x, t, dt)));
  };
}

// |x - t| below `limit` squared (smooth_l1: 0.5 z^2 / beta, else z - 0.5 beta; huber:
// 0.5 z^2, else delta (z - 0.5 delta)), as ATen's kernels.
std::string piecewiseLoss(OnnxCtx& ctx, const std::string& x, const std::string& t, ScalarType dt,
                          double limit, bool huber) {
  std::string z = ctx.op("Abs", {ctx.op("Sub", {x, t})});
  if (limit == 0) return z;
  std::string sq = ctx.op("Mul", {ctx.op("Mul", {z, z}), ctx.constScalar(0.5, dt)});
  std::string lin = ctx.op("Sub", {z, ctx.constScalar(0.5 * limit, dt)});
  if (huber)
    lin = ctx.op("Mul", {lin, ctx.constScalar(limit, dt)});
  else
    sq = ctx.op("Div", {sq, ctx.constScalar(limit, dt)});
  return ctx.op("Where", {ctx.op("Less", {z, ctx.constScalar(limit, dt)}), sq, lin});
}

}  // namespace

void registerLossConverters(OnnxConverterRegistry& r) {
  // mse_loss / l1_loss / smooth_l1_loss / huber_loss / soft_margin_loss (self, target, reduction,
  // [beta | delta]); binary_cross_entropy (self, target, weight, reduction) with each log
  // clamped at -100 as ATen's; margin_ranking_loss (x1, x2, y, margin, reduction) and
  // hinge_embedding_loss (self, target, margin, reduction).
  r.addOverloads({"aten::mse_loss"},
                 pointwiseLoss(2, [](OnnxCtx& ctx, OnnxArgs&, const std::string& x,
                                     const std::string& t, ScalarType) {
                   std::string d = ctx.op("Sub", {x, t});
                   return ctx.op("Mul", {d, d});
                 }));
  r.addOverloads({"aten::l1_loss"},
                 pointwiseLoss(2, [](OnnxCtx& ctx, OnnxArgs&, const std::string& x,
                                     const std::string& t, ScalarType) {
                   return ctx.op("Abs", {ctx.op("Sub", {x, t})});
                 }));
  r.addOverloads({"aten::smooth_l1_loss"},
                 pointwiseLoss(2, [](OnnxCtx& ctx, OnnxArgs& args, const std::string& x,
                                     const std::string& t, ScalarType dt) {
                   return piecewiseLoss(ctx, x, t, dt, args[3].unwrapToDouble(1.0), false);
                 }));
  r.addOverloads({"aten::huber_loss"},
                 pointwiseLoss(2, [](OnnxCtx& ctx, OnnxArgs& args, const std::string& x,
                                     const std::string& t, ScalarType dt) {
                   return piecewiseLoss(ctx, x, t, dt, args[3].unwrapToDouble(1.0), true);
                 }));
  r.addOverloads({"aten::soft_margin_loss"},
                 pointwiseLoss(2, [](OnnxCtx& ctx, OnnxArgs&, const std::string& x,
                                     const std::string& t, ScalarType dt) {
                   std::string e = ctx.op("Exp", {ctx.op("Neg", {ctx.op("Mul", {t, x})})});
                   return ctx.op("Log", {ctx.op("Add", {e, ctx.constScalar(1, dt)})});
                 }));
  r.addOverloads(
      {"aten::binary_cross_entropy"},
      pointwiseLoss(3, [](OnnxCtx& ctx, OnnxArgs& args, const std::string& x, const std::string& t,
                          ScalarType dt) {
        std::string one = ctx.constScalar(1, dt), floor = ctx.constScalar(-100, dt);
        std::string logX = ctx.op("Max", {ctx.op("Log", {x}), floor});
        std::string log1mX = ctx.op("Max", {ctx.op("Log", {ctx.op("Sub", {one, x})}), floor});
        // (t - 1) log(1 - x) - t log x
        std::string loss = ctx.op(
            "Sub", {ctx.op("Mul", {ctx.op("Sub", {t, one}), log1mX}), ctx.op("Mul", {t, logX})});
        if (auto w = args[2].unwrapToOptionalTensor()) loss = ctx.op("Mul", {loss, *w});
        return loss;
      }));
  r.addOverloads(
      {"aten::hinge_embedding_loss"},
      pointwiseLoss(3, [](OnnxCtx& ctx, OnnxArgs& args, const std::string& x, const std::string& t,
                          ScalarType dt) {
        std::string zero = ctx.constScalar(0, dt);
        std::string clamp = ctx.op(
            "Max", {ctx.op("Sub", {ctx.constScalar(args[2].unwrapToDouble(1.0), dt), x}), zero});
        std::string m =
            ctx.op("Where", {ctx.op("Equal", {t, ctx.constScalar(1, dt)}), zero, clamp});
        std::string self =
            ctx.op("Where", {ctx.op("Equal", {t, ctx.constScalar(-1, dt)}), zero, x});
        return ctx.op("Add", {m, self});
      }));
  r.addOverloads({"aten::margin_ranking_loss"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ScalarType dt = dtypeOr(ctx, n.output());
    std::string x1 = args[0].unwrapToTensor(), x2 = args[1].unwrapToTensor(),
                y = ctx.castTo(args[2].unwrapToTensor(), ctx.dtypeOf(args[2].value()), dt);
    std::string v = ctx.op("Add", {ctx.op("Neg", {ctx.op("Mul", {y, ctx.op("Sub", {x1, x2})})}),
                                   ctx.constScalar(args[3].unwrapToDouble(0.0), dt)});
    ctx.setOutput(n, 0, reduceLoss(ctx, args[4], ctx.op("Max", {v, ctx.constScalar(0, dt)})));
  });
  r.addOverloads({"aten::nll_loss", "aten::nll_loss2d", "aten::nll_loss_nd"}, convertNllLoss);
  r.addOverloads({"aten::cross_entropy_loss"}, convertCrossEntropy);
  r.addOverloads({"aten::binary_cross_entropy_with_logits"}, convertBceWithLogits);
  r.addOverloads({"aten::kl_div"}, convertKlDiv);
}

}  // namespace torchless::onnx_export
