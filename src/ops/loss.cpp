#include "ops/loss.h"

#include "core/error.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "ops/tensor_iterator.h"

#include <cmath>
#include <limits>

namespace torchless::ops {

Tensor applyReduction(const Tensor& loss, int64_t reduction) {
  switch (reduction) {
    case 0: return loss;
    case 1: return mean(loss);
    case 2: return sum(loss);
    default: throw Error(fmt::format("{} is not a valid value for reduction", reduction));
  }
}

Tensor mseLoss(const Tensor& x, const Tensor& y, int64_t reduction) {
  Tensor d = sub(x, y);
  return applyReduction(mul(d, d), reduction);
}

Tensor l1Loss(const Tensor& x, const Tensor& y, int64_t reduction) {
  return applyReduction(abs(sub(x, y)), reduction);
}

Tensor smoothL1Loss(const Tensor& x, const Tensor& y, int64_t reduction, double beta) {
  TL_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  Tensor z = abs(sub(x, y));
  if (beta == 0) return applyReduction(z, reduction);
  Tensor loss = where(lt(z, Scalar(beta)), div(mul(mul(z, z), Scalar(0.5)), Scalar(beta)),
                      sub(z, Scalar(0.5 * beta)));
  return applyReduction(loss, reduction);
}

Tensor huberLoss(const Tensor& x, const Tensor& y, int64_t reduction, double delta) {
  TL_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  Tensor z = abs(sub(x, y));
  Tensor loss = where(lt(z, Scalar(delta)), mul(mul(z, z), Scalar(0.5)),
                      mul(sub(z, Scalar(0.5 * delta)), Scalar(delta)));
  return applyReduction(loss, reduction);
}

Tensor binaryCrossEntropy(const Tensor& x, const Tensor& y, const std::optional<Tensor>& weight,
                          int64_t reduction) {
  TL_CHECK(x.sizes() == y.sizes(),
           "Using a target size ({}) that is different to the input size ({}) is deprecated. "
           "Please ensure they have the same size.",
           sizesToString(y.sizes()), sizesToString(x.sizes()));
  TL_CHECK(isFloatingType(x.dtype()), "\"binary_cross_entropy\" not implemented for '{}'",
           toString(x.dtype()));
  // (NaN is not between 0 and 1 either)
  TL_CHECK(all(logicalAnd(ge(x, Scalar(0.0)), le(x, Scalar(1.0)))).itemBool(),
           "all elements of input should be between 0 and 1");
  Tensor logX = clampMin(log(x), Scalar(-100.0));
  Tensor log1mX = clampMin(log(rsub(x, Scalar(1.0))), Scalar(-100.0));
  // -(y log x + (1 - y) log(1 - x)) = (y - 1) log(1 - x) - y log x
  Tensor loss = sub(mul(sub(y, Scalar(1.0)), log1mX), mul(y, logX));
  if (weight) loss = mul(loss, *weight);
  return applyReduction(loss, reduction);
}

Tensor binaryCrossEntropyWithLogits(const Tensor& x, const Tensor& y,
                                    const std::optional<Tensor>& weight,
                                    const std::optional<Tensor>& posWeight, int64_t reduction) {
  TL_CHECK(x.sizes() == y.sizes(), "Target size ({}) must be the same as input size ({})",
           sizesToString(y.sizes()), sizesToString(x.sizes()));
  Tensor oneMinusY = rsub(y, Scalar(1.0));
  Tensor loss;
  if (posWeight) {
    // log_weight = (pos_weight - 1) y + 1; loss = (1 - y) x + log_weight (log1p(e^-|x|) + max(-x,
    // 0))
    Tensor logWeight = add(mul(sub(*posWeight, Scalar(1.0)), y), Scalar(1.0));
    Tensor softplus = add(log1p(exp(neg(abs(x)))), clampMin(neg(x), Scalar(0.0)));
    loss = add(mul(oneMinusY, x), mul(logWeight, softplus));
  } else {
    // (1 - y) x + m + log(e^-m + e^(-x - m)), m = max(-x, 0)
    Tensor m = clampMin(neg(x), Scalar(0.0));
    loss = add(add(mul(oneMinusY, x), m), log(add(exp(neg(m)), exp(sub(neg(x), m)))));
  }
  if (weight) loss = mul(loss, *weight);
  return applyReduction(loss, reduction);
}

Tensor softMarginLoss(const Tensor& x, const Tensor& y, int64_t reduction) {
  return applyReduction(log1p(exp(neg(mul(y, x)))), reduction);
}

Tensor klDiv(const Tensor& x, const Tensor& y, int64_t reduction, bool logTarget) {
  Tensor loss;
  if (logTarget) {
    loss = mul(exp(y), sub(y, x));
  } else {
    // xlogy(y, y) - y x: 0 where y is 0 (NaN stays NaN)
    Tensor ylogy = where(eq(y, Scalar(0.0)), Scalar(0.0), mul(y, log(y)));
    loss = sub(ylogy, mul(y, x));
  }
  return applyReduction(loss, reduction);
}

Tensor marginRankingLoss(const Tensor& x1, const Tensor& x2, const Tensor& y, double margin,
                         int64_t reduction) {
  Tensor loss = clampMin(add(neg(mul(y, sub(x1, x2))), Scalar(margin)), Scalar(0.0));
  return applyReduction(loss, reduction);
}

Tensor hingeEmbeddingLoss(const Tensor& x, const Tensor& y, double margin, int64_t reduction) {
  Tensor marginClamp = clampMin(rsub(x, Scalar(margin)), Scalar(0.0));
  Tensor outMargin = where(ne(y, Scalar(1)), marginClamp, Scalar(0.0));
  Tensor outSelf = where(ne(y, Scalar(-1)), x, Scalar(0.0));
  return applyReduction(add(outMargin, outSelf), reduction);
}

Tensor nllLoss(const Tensor& x, const Tensor& target, const std::optional<Tensor>& weight,
               int64_t reduction, int64_t ignoreIndex) {
  TL_CHECK(x.dim() >= 1, "input tensor should be 1D or more");
  TL_CHECK(target.dtype() == ScalarType::Long || target.dtype() == ScalarType::Byte,
           "expected scalar type Long but found {}", toString(target.dtype()));
  TL_CHECK(reduction >= 0 && reduction <= 2, "{} is not a valid value for reduction", reduction);
  const bool batched = x.dim() >= 2;
  const int64_t C = batched ? x.size(1) : x.size(0), N = batched ? x.size(0) : 1;
  IntList outShape;  // target's shape: [N, d...] or []
  int64_t inner = 1;
  if (batched) {
    outShape.push_back(N);
    for (int64_t d = 2; d < x.dim(); ++d) {
      outShape.push_back(x.size(d));
      inner *= x.size(d);
    }
  }
  TL_CHECK(target.sizes() == outShape,
           "Expected target size {}, got {} (input {}: [N, C, d...] takes a target [N, d...])",
           sizesToString(outShape), sizesToString(target.sizes()), sizesToString(x.sizes()));
  if (weight)
    TL_CHECK(weight->dim() == 1 && weight->numel() == C,
             "weight tensor should be defined either for all {} classes or no classes but got "
             "weight tensor of shape: {}",
             C, sizesToString(weight->sizes()));
  Tensor xc = x.contiguous();
  Tensor t = target.contiguous().to(ScalarType::Long);
  Tensor w = weight ? weight->contiguous().to(x.dtype()) : Tensor();
  Tensor out = Tensor::empty(outShape, x.dtype());
  double total = 0, weightSum = 0;
  dispatchFloating(x.dtype(), "nll_loss", [&](auto tag) {
    using T = decltype(tag);
    const T* xp = xc.data<T>();
    const int64_t* tp = t.data<int64_t>();
    T* op = out.data<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = n * inner + i, cls = tp[k];
        if (cls == ignoreIndex) {
          op[k] = T(0);
          continue;
        }
        TL_CHECK(cls >= 0 && cls < C, "Target {} is out of bounds.", cls);
        const double wc = weight ? static_cast<double>(w.data<T>()[cls]) : 1.0;
        const double v = -wc * static_cast<double>(xp[(n * C + cls) * inner + i]);
        op[k] = static_cast<T>(v);
        total += v;
        weightSum += wc;
      }
  });
  if (reduction == 0) return out;
  const double r = reduction == 2   ? total
                   : weightSum == 0 ? std::numeric_limits<double>::quiet_NaN()
                                    : total / weightSum;
  return full({}, Scalar(r), x.dtype());
}

Tensor crossEntropyLoss(const Tensor& x, const Tensor& target, const std::optional<Tensor>& weight,
                        int64_t reduction, int64_t ignoreIndex, double labelSmoothing) {
  TL_CHECK(labelSmoothing >= 0 && labelSmoothing <= 1,
           "label_smoothing must be between 0.0 and 1.0. Got: {}", labelSmoothing);
  TL_CHECK(x.dim() >= 1, "input tensor should be 1D or more");
  const int64_t classDim = x.dim() == 1 ? 0 : 1, C = x.size(classDim);
  Tensor logp = logSoftmax(x, classDim);
  IntList wShape(static_cast<size_t>(x.dim()), 1);
  wShape[static_cast<size_t>(classDim)] = C;
  if (isFloatingType(target.dtype())) {  // class probabilities
    TL_CHECK(target.sizes() == x.sizes(),
             "Expected input batch_size ({}) to match target batch_size ({}).", x.size(0),
             target.dim() ? target.size(0) : 0);
    Tensor p = labelSmoothing > 0
                   ? add(mul(target, Scalar(1 - labelSmoothing)), Scalar(labelSmoothing / C))
                   : target;
    Tensor prod = mul(logp, p);
    if (weight) prod = mul(prod, reshape(*weight, wShape));
    switch (reduction) {
      case 0: return neg(sum(prod, {classDim}));
      case 1:
        return div(neg(sum(prod)),
                   Scalar(static_cast<double>(x.numel() / std::max<int64_t>(C, 1))));
      case 2: return neg(sum(prod));
      default: throw Error(fmt::format("{} is not a valid value for reduction", reduction));
    }
  }
  Tensor nll = nllLoss(logp, target, weight, reduction, ignoreIndex);
  if (labelSmoothing == 0) return nll;
  Tensor smooth = weight ? neg(sum(mul(logp, reshape(*weight, wShape)), {classDim}))
                         : neg(sum(logp, {classDim}));
  Tensor ignored = eq(target, Scalar(ignoreIndex));
  smooth = maskedFill(smooth, ignored, Scalar(0.0));
  Tensor ret;
  switch (reduction) {
    case 0: ret = smooth; break;
    case 2: ret = sum(smooth); break;
    default: {
      // the mean over what is not ignored, weighted as nll_loss weighs it
      Tensor kept = logicalNot(ignored);
      Tensor denom = sum(kept, {}, false, x.dtype());
      if (weight) {
        Tensor classes = reshape(where(kept, target, Scalar(int64_t{0})), {-1});
        denom = sum(where(reshape(kept, {-1}), indexSelect(*weight, 0, classes), Scalar(0.0)));
      }
      ret = div(sum(smooth), denom);
    }
  }
  return add(mul(nll, Scalar(1 - labelSmoothing)), mul(ret, Scalar(labelSmoothing / C)));
}

Tensor cosineSimilarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  TL_CHECK(isFloatingType(x1.dtype()) && isFloatingType(x2.dtype()),
           "expected common dtype to be floating point, yet common dtype is {}",
           toString(resultType(x1, x2)));
  const IntList shape = broadcastShapes(x1.sizes(), x2.sizes());
  Tensor a = expand(x1, shape), b = expand(x2, shape);
  const int64_t d = wrapDim(dim, static_cast<int64_t>(shape.size()));
  // each input over its norm clamped at eps, then the dot product (PyTorch 1.13's order: a
  // norm that overflows makes the similarity 0, not NaN)
  Tensor na = div(a, clampMin(norm(a, 2.0, {d}, true), Scalar(eps)));
  Tensor nb = div(b, clampMin(norm(b, 2.0, {d}, true), Scalar(eps)));
  return sum(mul(na, nb), {d});
}

}  // namespace torchless::ops
