// Quantized normalization and resampling (PyTorch 1.13's integers; Note [Quantized arithmetic]):
//   quantized::layer_norm / group_norm / instance_norm (quantized_normalize_kernel and, for a
//   channels-last input, quantized_groupnorm_nhwc_kernel);
//   aten::upsample_bilinear2d on a quantized tensor (upsample_bilinear2d_quantized_cpu and its
//   channels-last kernel).

#include "core/error.h"
#include "ops/parallel.h"
#include "ops/quantized.h"
#include "ops/quantized_util.h"
#include "ops/shape.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace torchless::ops {
namespace {

using namespace qutil;

/// The integers of a per-tensor quantized tensor as int32 in contiguous (row-major) order,
/// with its scale and zero point. Throws for a per-channel or non-quantized tensor.
struct QInts {
  Tensor ints;  // int32, contiguous
  double scale;
  int64_t zeroPoint;
  const int32_t* data() const { return ints.data<int32_t>(); }
};
QInts qintsOf(const Tensor& x, const char* op) {
  if (!x.defined() || !x.isQuantized())
    throw Error(fmt::format("{}: expected a quantized tensor, got {}", op,
                            x.defined() ? dtypeName(x.dtype()) : "None"));
  const QuantizerInfo& q = *x.quantizer();
  if (q.scheme != QuantizerInfo::Scheme::PerTensorAffine)
    throw Error(
        fmt::format("{}: expected a per-tensor quantized tensor (torch.per_tensor_affine)", op));
  return {intRepr(x).contiguous().to(ScalarType::Int), q.scale, q.zeroPoint};
}

void checkOutQParams(double scale, int64_t zeroPoint, ScalarType qdtype, const char* op) {
  TL_CHECK(scale > 0 && std::isfinite(scale),
           "{}: output_scale must be a positive finite number, got {}", op, scale);
  const std::pair<int64_t, int64_t> range = quantRange(qdtype);
  const int64_t lo = range.first, hi = range.second;
  TL_CHECK(zeroPoint >= lo && zeroPoint <= hi,
           "{}: output_zero_point {} is out of range for {} [{}, {}]", op, zeroPoint,
           dtypeName(qdtype), lo, hi);
}

/// Writes integers (already saturated) into a new contiguous per-tensor quantized tensor.
Tensor fromInts(const std::vector<int64_t>& v, const IntList& sizes, ScalarType qdtype,
                double scale, int64_t zp) {
  Tensor out = emptyQuantized(sizes, qdtype, scale, zp);
  switch (qdtype) {
    case ScalarType::QUInt8:
      std::copy(v.begin(), v.end(), static_cast<uint8_t*>(out.rawData()));
      break;
    case ScalarType::QInt8:
      std::copy(v.begin(), v.end(), static_cast<int8_t*>(out.rawData()));
      break;
    default: std::copy(v.begin(), v.end(), static_cast<int32_t*>(out.rawData())); break;
  }
  return out;
}

bool channelsLastContiguous(const Tensor& x) { return x.dim() == 4 && isChannelsLastContiguous(x); }

/// The statistics of one normalized group of n integers, as quantized_normalize_kernel computes
/// them: mean in units of the input scale (less the zero point) and
/// scale_x / sqrt(var(dqX) + eps), eps in real units (the sum runs in double: eps is a double).
struct GroupStats {
  float mean;   // layer_mean_div_scale_x
  float scale;  // scale_x_div_layer_std
};
GroupStats groupStats(const int32_t* x, int64_t n, int64_t stride, int64_t count, int64_t zp,
                      float xScale, double eps) {
  // `count` runs of `n` integers, `stride` apart (a group of channels in NCHW order)
  int64_t sum = 0, sumSq = 0;
  for (int64_t r = 0; r < count; ++r)
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = x[r * stride + i];
      sum += v;
      sumSq += v * v;
    }
  const float N = static_cast<float>(n * count);
  const float meanShifted = static_cast<float>(sum) / N;
  const float var =
      std::max(std::fma(-meanShifted, meanShifted, static_cast<float>(sumSq) / N), 0.0f);
  const double d = static_cast<double>(var * xScale * xScale) + eps;
  return {meanShifted - static_cast<float>(zp),
          static_cast<float>(static_cast<double>(xScale) / std::sqrt(d))};
}

std::vector<float> affineValues(const std::optional<Tensor>& t, int64_t n, const char* op,
                                const char* what) {
  std::vector<float> v;
  if (!t) return v;
  TL_CHECK(t->numel() == n && t->dtype() == ScalarType::Float && !t->isQuantized(),
           "{}: {} must be float32 with {} elements, got {} {}", op, what, n, dtypeName(t->dtype()),
           sizesToString(t->sizes()));
  Tensor c = t->contiguous();
  v.assign(c.data<float>(), c.data<float>() + n);
  return v;
}

/// quantized_group_norm_impl: groups of C / G channels per sample, per-channel affine.
Tensor groupNormImpl(const Tensor& x, int64_t groups, const std::optional<Tensor>& weight,
                     const std::optional<Tensor>& bias, double eps, double scale, int64_t zeroPoint,
                     const char* op) {
  const QInts q = qintsOf(x, op);
  TL_CHECK(x.dim() >= 2, "{}: expected an input of at least 2 dims [N, C, *], got {}", op,
           sizesToString(x.sizes()));
  const int64_t N = x.sizes()[0], C = x.sizes()[1];
  TL_CHECK(groups > 0 && C % groups == 0,
           "{}: the number of channels ({}) must be divisible by num_groups ({})", op, C, groups);
  checkOutQParams(scale, zeroPoint, x.dtype(), op);
  const std::vector<float> gamma = affineValues(weight, C, op, "weight"),
                           beta = affineValues(bias, C, op, "bias");
  int64_t inner = 1;
  for (int64_t d = 2; d < x.dim(); ++d) inner *= x.sizes()[static_cast<size_t>(d)];
  const int64_t perGroup = C / groups;
  // A channels-last input takes PyTorch's NHWC kernel: y = x * scale_c + bias_c with
  // bias_c = -scale_c * mean + beta (same statistics; the NCHW kernel's
  // y = (x - mean) * scale_c + beta rounds differently at ties).
  const bool nhwc = channelsLastContiguous(x);
  const std::pair<int64_t, int64_t> range = quantRange(x.dtype());
  const int64_t lo = range.first, hi = range.second;
  const float yInv = 1.0f / static_cast<float>(scale);
  const float xzp = static_cast<float>(q.zeroPoint);
  std::vector<int64_t> out(static_cast<size_t>(x.numel()));
  const int32_t* xp = q.data();
  parallelFor(N * groups, 1, [&](int64_t g0, int64_t g1) {
    for (int64_t ng = g0; ng < g1; ++ng) {
      const int64_t n = ng / groups, g = ng % groups;
      const int64_t base = (n * C + g * perGroup) * inner;
      const GroupStats st = groupStats(xp + base, inner, inner, perGroup, q.zeroPoint,
                                       static_cast<float>(q.scale), eps);
      for (int64_t k = 0; k < perGroup; ++k) {
        const int64_t c = g * perGroup + k;
        const float sc = st.scale * (gamma.empty() ? 1.0f : gamma[static_cast<size_t>(c)]);
        const float b = beta.empty() ? 0.0f : beta[static_cast<size_t>(c)];
        const float bc = std::fma(-sc, st.mean, b);
        const int32_t* xc = xp + base + k * inner;
        int64_t* yc = out.data() + base + k * inner;
        for (int64_t i = 0; i < inner; ++i) {
          const float dq = static_cast<float>(xc[i]) - xzp;  // fake scale 1: exact
          const float y = nhwc ? std::fma(dq, sc, bc) : std::fma(dq - st.mean, sc, b);
          yc[i] = quantizeOne(y, yInv, zeroPoint, lo, hi);
        }
      }
    }
  });
  return fromInts(out, x.sizes(), x.dtype(), scale, zeroPoint);
}

}  // namespace

Tensor qlayerNorm(const Tensor& x, const IntList& normalizedShape,
                  const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  double eps, double scale, int64_t zeroPoint) {
  const char* op = "quantized::layer_norm";
  const QInts q = qintsOf(x, op);
  const int64_t nd = x.dim(), k = static_cast<int64_t>(normalizedShape.size());
  TL_CHECK(k >= 1 && k <= nd, "{}: normalized_shape {} does not fit input {}", op,
           sizesToString(normalizedShape), sizesToString(x.sizes()));
  int64_t N = 1;
  for (int64_t i = 0; i < k; ++i) {
    TL_CHECK(x.sizes()[static_cast<size_t>(nd - k + i)] == normalizedShape[static_cast<size_t>(i)],
             "{}: normalized_shape {} does not match input {}", op, sizesToString(normalizedShape),
             sizesToString(x.sizes()));
    N *= normalizedShape[static_cast<size_t>(i)];
  }
  checkOutQParams(scale, zeroPoint, x.dtype(), op);
  const int64_t M = N == 0 ? 0 : x.numel() / N;
  const std::vector<float> gamma = affineValues(weight, N, op, "weight"),
                           beta = affineValues(bias, N, op, "bias");
  const std::pair<int64_t, int64_t> range = quantRange(x.dtype());
  const int64_t lo = range.first, hi = range.second;
  const float yInv = 1.0f / static_cast<float>(scale);
  const float xzp = static_cast<float>(q.zeroPoint);
  std::vector<int64_t> out(static_cast<size_t>(x.numel()));
  const int32_t* xp = q.data();
  parallelFor(M, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int32_t* xr = xp + r * N;
      const GroupStats st = groupStats(xr, N, N, 1, q.zeroPoint, static_cast<float>(q.scale), eps);
      for (int64_t i = 0; i < N; ++i) {
        // ((q - zp) - mean) * scale_x_div_std * gamma + beta, the last two fused (FMA builds)
        const float t = (static_cast<float>(xr[i]) - xzp) - st.mean;
        const float g = gamma.empty() ? 1.0f : gamma[static_cast<size_t>(i)];
        const float b = beta.empty() ? 0.0f : beta[static_cast<size_t>(i)];
        out[static_cast<size_t>(r * N + i)] =
            quantizeOne(std::fma(t * st.scale, g, b), yInv, zeroPoint, lo, hi);
      }
    }
  });
  return fromInts(out, x.sizes(), x.dtype(), scale, zeroPoint);
}

Tensor qgroupNorm(const Tensor& x, int64_t numGroups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps, double scale, int64_t zeroPoint) {
  return groupNormImpl(x, numGroups, weight, bias, eps, scale, zeroPoint, "quantized::group_norm");
}

Tensor qinstanceNorm(const Tensor& x, const std::optional<Tensor>& weight,
                     const std::optional<Tensor>& bias, double eps, double scale,
                     int64_t zeroPoint) {
  TL_CHECK(x.dim() >= 2,
           "quantized::instance_norm: expected an input of at least 2 dims [N, C, *], got {}",
           sizesToString(x.sizes()));
  return groupNormImpl(x, x.sizes()[1], weight, bias, eps, scale, zeroPoint,
                       "quantized::instance_norm");
}

Tensor qupsampleBilinear2d(const Tensor& x, const IntList& outputSize, bool alignCorners,
                           std::optional<double> scalesH, std::optional<double> scalesW) {
  const char* op = "upsample_bilinear2d";
  TL_CHECK(outputSize.size() == 2, "{}: It is expected output_size equals to 2, but got size {}",
           op, outputSize.size());
  TL_CHECK(x.dim() == 4 && x.sizes()[1] > 0,
           "{}: Non-empty 4D data tensor expected but got a tensor with sizes {}", op,
           sizesToString(x.sizes()));
  const QInts q = qintsOf(x, op);
  const int64_t N = x.sizes()[0], C = x.sizes()[1], IH = x.sizes()[2], IW = x.sizes()[3];
  const int64_t OH = outputSize[0], OW = outputSize[1];
  TL_CHECK(IH > 0 && IW > 0 && OH > 0 && OW > 0,
           "{}: Input and output sizes should be greater than 0, but got input (H: {}, W: {}) "
           "output (H: {}, W: {})",
           op, IH, IW, OH, OW);
  // PyTorch's quantized kernel works in float throughout (area_pixel_compute_scale<float>,
  // area_pixel_compute_source_index<float>: the source index is rounded to float), unlike the
  // float kernel's double source index (Note [bilinear arithmetic], ops/nn.cpp).
  struct Tap {
    int64_t i0, step;  // step: 1 when a right/lower neighbour exists
    float l0, l1;
  };
  auto taps = [&](int64_t in, int64_t out, std::optional<double> sc) {
    float ratio;
    if (alignCorners)
      ratio = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
    else if (sc && *sc > 0)
      ratio = static_cast<float>(1.0 / *sc);
    else
      ratio = static_cast<float>(in) / static_cast<float>(out);
    std::vector<Tap> t;
    for (int64_t o = 0; o < out; ++o) {
      float src = alignCorners
                      ? ratio * static_cast<float>(o)
                      : static_cast<float>(
                            static_cast<double>(ratio) * (static_cast<double>(o) + 0.5) - 0.5);
      if (!alignCorners && src < 0) src = 0;
      const auto i0 = static_cast<int64_t>(src);
      const float l1 = src - static_cast<float>(i0);
      t.push_back({i0, i0 < in - 1 ? 1 : 0, 1.0f - l1, l1});
    }
    return t;
  };
  const std::vector<Tap> th = taps(IH, OH, scalesH), tw = taps(IW, OW, scalesW);
  // PyTorch's NCHW kernel copies when the sizes are equal, and fuses no multiply-add. Its NHWC
  // kernel (channels-last inputs) interpolates even at equal sizes, and x86 builds compile it
  // with FMA contraction in two shapes (Note [Fused bilinear on channels-last]).
  const bool nhwc = channelsLastContiguous(x);
  const bool copy = !nhwc && IH == OH && IW == OW;
  // Note [Fused bilinear on channels-last]
  // qupsample_bilinear2d_nhwc_kernel runs 8 channels at a time for 8-bit types (its AVX2 vector
  // body) and the rest one by one (its scalar tail, qint32 entirely). GCC contracts
  //   h0 * (w0 * p0 + w1 * p1) + h1 * (w0 * p2 + w1 * p3) - zp
  // differently in each: the vector body as fma(h1, fma(w1, p3, w0 * p2), h0 * fma(w1, p1, w0 *
  // p0)), the scalar tail as fma(h0, fma(w0, p0, w1 * p1), h1 * fma(w0, p2, w1 * p3)). Both were
  // checked against the installed PyTorch on 190k random outputs (0 differ); the unfused form
  // differs at ties by 1 quantum.
  const int64_t vectorChannels = nhwc && x.dtype() != ScalarType::QInt32 ? C - C % 8 : 0;
  const std::pair<int64_t, int64_t> range = quantRange(x.dtype());
  const int64_t lo = range.first, hi = range.second;
  const float zp = static_cast<float>(q.zeroPoint);
  std::vector<int64_t> out(static_cast<size_t>(N * C * OH * OW));
  const int32_t* xp = q.data();
  parallelFor(N * C, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int32_t* plane = xp + p * IH * IW;
      int64_t* op = out.data() + p * OH * OW;
      const int64_t c = p % C;
      const bool vectorBody = c < vectorChannels;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const Tap& a = th[static_cast<size_t>(oh)];
        const int32_t* r0 = plane + a.i0 * IW;
        const int32_t* r1 = r0 + a.step * IW;
        for (int64_t ow = 0; ow < OW; ++ow) {
          if (copy) {
            op[oh * OW + ow] = plane[oh * IW + ow];
            continue;
          }
          const Tap& b = tw[static_cast<size_t>(ow)];
          const auto v = [](const int32_t* r, int64_t i) { return static_cast<float>(r[i]); };
          const float p0 = v(r0, b.i0), p1 = v(r0, b.i0 + b.step), p2 = v(r1, b.i0),
                      p3 = v(r1, b.i0 + b.step);
          float res;
          if (!nhwc) {
            const float t0 = b.l0 * p0 + b.l1 * p1;
            const float t1 = b.l0 * p2 + b.l1 * p3;
            res = a.l0 * t0 + a.l1 * t1 - zp;
          } else if (vectorBody) {
            const float t0 = std::fma(b.l1, p1, b.l0 * p0);
            const float t1 = std::fma(b.l1, p3, b.l0 * p2);
            res = std::fma(a.l1, t1, a.l0 * t0) - zp;
          } else {
            const float t0 = std::fma(b.l0, p0, b.l1 * p1);
            const float t1 = std::fma(b.l0, p2, b.l1 * p3);
            res = std::fma(a.l0, t0, a.l1 * t1) - zp;
          }
          // quantize_val with scale out/in = 1: zp + nearbyint(res), saturated
          op[oh * OW + ow] =
              std::clamp<int64_t>(static_cast<int64_t>(roundHalfEven(res)) + q.zeroPoint, lo, hi);
        }
      }
    }
  });
  return fromInts(out, {N, C, OH, OW}, x.dtype(), q.scale, q.zeroPoint);
}

}  // namespace torchless::ops
