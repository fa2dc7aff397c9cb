#include "ops/quantized.h"
#include "ops/quantized_dnnl.h"
#include "ops/quantized_util.h"

#include "core/error.h"
#include "ops/dnnl_utils.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/parallel.h"
#include "ops/pool.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "ops/tensor_iterator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>

namespace torchless::ops {
namespace {

using namespace qutil;

using Scheme = QuantizerInfo::Scheme;

bool perChannel(const QuantizerInfo& q) {
  return q.scheme == Scheme::PerChannelAffine || q.scheme == Scheme::PerChannelSymmetric ||
         q.scheme == Scheme::PerChannelAffineFloatQParams;
}

const QuantizerInfo& quantizerOf(const Tensor& q, const char* op) {
  if (!q.defined() || !q.isQuantized())
    throw Error(fmt::format("{}: expected a quantized tensor, got {}", op,
                            q.defined() ? dtypeName(q.dtype()) : "None"));
  return *q.quantizer();
}

const QuantizerInfo& perTensorOf(const Tensor& q, const char* op) {
  const QuantizerInfo& info = quantizerOf(q, op);
  if (perChannel(info))
    throw Error(
        fmt::format("{}: expected a per-tensor quantized tensor (torch.per_tensor_affine), "
                    "got a per-channel one",
                    op));
  return info;
}

/// Per-channel (scale, zero point) of channel c, or the per-tensor ones.
std::vector<double> scalesOf(const QuantizerInfo& q, int64_t channels) {
  std::vector<double> s(static_cast<size_t>(channels));
  if (!perChannel(q)) {
    std::fill(s.begin(), s.end(), q.scale);
    return s;
  }
  Tensor t(q.scales);
  TL_CHECK(t.numel() == channels, "per-channel scales have {} entries, expected {}", t.numel(),
           channels);
  for (int64_t c = 0; c < channels; ++c) s[static_cast<size_t>(c)] = t.doubleAt(c);
  return s;
}
std::vector<int32_t> zeroPointsOf(const QuantizerInfo& q, int64_t channels) {
  std::vector<int32_t> z(static_cast<size_t>(channels));
  if (!perChannel(q)) {
    std::fill(z.begin(), z.end(), static_cast<int32_t>(q.zeroPoint));
    return z;
  }
  Tensor t(q.zeroPoints);
  TL_CHECK(t.numel() == channels, "per-channel zero points have {} entries, expected {}", t.numel(),
           channels);
  for (int64_t c = 0; c < channels; ++c)
    z[static_cast<size_t>(c)] = static_cast<int32_t>(t.intAt(c));
  return z;
}

/// Calls fn(T{}) with the integer type of a quantized dtype.
template <typename Fn>
decltype(auto) dispatchQuant(ScalarType qdtype, Fn&& fn) {
  switch (qdtype) {
    case ScalarType::QUInt8: return fn(uint8_t{});
    case ScalarType::QInt8: return fn(int8_t{});
    case ScalarType::QInt32: return fn(int32_t{});
    default:
      throw Error(fmt::format("quantized dtype {} is not supported (quint8, qint8, qint32 are)",
                              dtypeName(qdtype)));
  }
}

Tensor contiguousFloat(const Tensor& x, const char* op) {
  if (x.isQuantized()) throw Error(fmt::format("{}: input is already quantized", op));
  if (x.dtype() != ScalarType::Float)
    throw Error(fmt::format("{}: expected a float32 tensor, got {}", op, dtypeName(x.dtype())));
  return x.contiguous();
}

/// The quantized tensor's integers widened to int32, contiguous.
std::vector<int32_t> intsOf(const Tensor& q) {
  Tensor c = q.contiguous();
  const int64_t n = c.numel();
  std::vector<int32_t> out(static_cast<size_t>(n));
  dispatchQuant(q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(c.rawData());
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = p[i];
  });
  return out;
}

/// Writes integers (already saturated) into a new per-tensor quantized tensor.
/// `y` (4-d) in `x`'s memory format: channels-last when x is a 4-d channels-last tensor (not
/// also contiguous), as PyTorch's quantized elementwise kernels allocate their outputs
/// (suggest_memory_format); the ops after them pick their kernels by layout.
Tensor inLayoutOf(const Tensor& y, const Tensor& x) {
  if (y.dim() == 4 && x.dim() == 4 && !x.isContiguous() && isChannelsLastContiguous(x))
    return contiguous(y, MemoryFormat::ChannelsLast);
  return y;
}

/// The input whose layout a binary quantized op's result of `sizes` takes: `a` (PyTorch
/// allocates qa.sizes() in qa.suggest_memory_format()), unless a is the broadcast one; then
/// TensorIterator resizes that output and lays it out as the full-size input `b`.
const Tensor& layoutSource(const Tensor& a, const Tensor& b, const IntList& sizes) {
  return a.sizes() != sizes && b.sizes() == sizes ? b : a;
}

Tensor fromInts(const std::vector<int64_t>& v, const IntList& sizes, ScalarType qdtype,
                double scale, int64_t zp) {
  Tensor out = emptyQuantized(sizes, qdtype, scale, zp);
  dispatchQuant(qdtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(out.rawData());
    for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(v[i]);
  });
  return out;
}

/// A new per-tensor quantized tensor with the given (dense) strides.
Tensor emptyQuantizedStrided(const IntList& sizes, const IntList& strides, ScalarType qdtype,
                             double scale, int64_t zp) {
  Tensor out = Tensor::fromStorage(
      Storage::allocate(static_cast<size_t>(checkedNumel(sizes)) * elementSize(qdtype)), 0, sizes,
      strides, qdtype);
  auto q = std::make_shared<QuantizerInfo>();
  q->scale = scale;
  q->zeroPoint = zp;
  out.setQuantizer(std::move(q));
  return out;
}

/// fbgemm's vector dequantize: fma(scale, q, -(scale * zp)) in float.
Tensor dequantizeFma(const Tensor& q) {
  const QuantizerInfo& info = perTensorOf(q, "dequantize");
  const float s = static_cast<float>(info.scale);
  const float premul = -(s * static_cast<float>(info.zeroPoint));
  std::vector<int32_t> ints = intsOf(q);
  Tensor out = Tensor::empty(q.sizes(), ScalarType::Float);
  float* o = out.data<float>();
  if (q.dtype() == ScalarType::QInt32) {
    for (size_t i = 0; i < ints.size(); ++i)
      o[i] = std::fma(s, static_cast<float>(ints[i]), premul);
  } else {
    for (size_t i = 0; i < ints.size(); ++i) o[i] = fma8(s, static_cast<float>(ints[i]), premul);
  }
  return out;
}

void checkZeroPoint(int64_t zp, ScalarType qdtype, const char* op) {
  auto [lo, hi] = quantRange(qdtype);
  if (zp < lo || zp > hi)
    throw Error(fmt::format("{}: zero_point {} is out of range for {} [{}, {}]", op, zp,
                            dtypeName(qdtype), lo, hi));
}
void checkScale(double scale, const char* op) {
  if (!(scale > 0) || !std::isfinite(scale))
    throw Error(fmt::format("{}: scale must be a positive finite number, got {}", op, scale));
}

// ---- int8 GEMM -------------------------------------------------------------------------------

/// acc[m][n] = sum_k A[m][k] * W[n][k] over int16 operands (zero points already removed);
/// emit(m, n, acc) for every pair. Rows of A are split across threads.
template <typename Emit>
void gemmS16(const int16_t* A, const int16_t* W, int64_t M, int64_t N, int64_t K,
             const Emit& emit) {
  parallelFor(M, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, N * K / 64 + 1)),
              [&](int64_t m0, int64_t m1) {
                for (int64_t m = m0; m < m1; ++m) {
                  const int16_t* a = A + m * K;
                  for (int64_t n = 0; n < N; ++n) {
                    const int16_t* w = W + n * K;
                    int32_t s = 0;
#pragma omp simd reduction(+ : s)
                    for (int64_t k = 0; k < K; ++k) s += static_cast<int32_t>(a[k]) * w[k];
                    emit(m, n, s);
                  }
                }
              });
}

/// Requantization of int32 accumulators, per output channel, as PyTorch's x86 engine (onednn,
/// through ideep) computes it with reciprocal scales in float: the bias goes into the
/// accumulator domain as bias * (1/a_scale * 1/w_scale), the output scale is
/// (1/y_scale) / (1/a_scale * 1/w_scale), and the zero point is added before rounding.
/// (fbgemm's ReQuantizeOutput is the same up to float rounding: bias / (a_scale * w_scale),
/// a_scale * w_scale / y_scale, zero point added after rounding; they differ at ties.)
struct Requant {
  std::vector<float> biasRaw;  // bias in accumulator units, or 0
  std::vector<float> mult;     // output scale
  int64_t zp = 0;
  int64_t lo = 0, hi = 255;
  bool hasBias = false;

  Requant(double aScale, const std::vector<double>& wScales, const std::optional<Tensor>& bias,
          double yScale, int64_t yZp, bool relu, int64_t channels) {
    const float invA = static_cast<float>(1.0 / aScale), invY = static_cast<float>(1.0 / yScale);
    mult.resize(static_cast<size_t>(channels));
    biasRaw.assign(static_cast<size_t>(channels), 0.0f);
    Tensor b;
    if (bias) {
      b = bias->contiguous();
      TL_CHECK(b.dtype() == ScalarType::Float, "quantized bias must be float32, got {}",
               dtypeName(b.dtype()));
      TL_CHECK(b.numel() == channels, "bias has {} values for {} output channels", b.numel(),
               channels);
      hasBias = true;
    }
    for (int64_t c = 0; c < channels; ++c) {
      const float invW = static_cast<float>(1.0 / wScales[static_cast<size_t>(c)]);
      const float accScale = invA * invW;
      mult[static_cast<size_t>(c)] = invY / accScale;
      if (hasBias) biasRaw[static_cast<size_t>(c)] = b.data<float>()[c] * accScale;
    }
    zp = yZp;
    lo = relu ? yZp : 0;
  }
  uint8_t operator()(int32_t acc, int64_t c) const {
    float raw = static_cast<float>(acc);
    if (hasBias) raw += biasRaw[static_cast<size_t>(c)];
    const float v = raw * mult[static_cast<size_t>(c)] + static_cast<float>(zp);
    return static_cast<uint8_t>(
        std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(v)), lo, hi));
  }
};

/// Weight integers minus their zero points as int16 [OC][K] (K = the rest of the dims).
std::vector<int16_t> weightS16(const Tensor& w, int64_t oc, int64_t axisChannels,
                               const std::vector<int32_t>& wzp) {
  std::vector<int32_t> ints = intsOf(w);
  const int64_t K = static_cast<int64_t>(ints.size()) / oc;
  std::vector<int16_t> out(ints.size());
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t i = o * K + k;
      const int32_t z = wzp[static_cast<size_t>(axisChannels == oc ? o : 0)];
      out[static_cast<size_t>(i)] = static_cast<int16_t>(ints[static_cast<size_t>(i)] - z);
    }
  return out;
}

void checkWeight(const Tensor& w, const char* op) {
  if (!w.isQuantized() || w.dtype() != ScalarType::QInt8)
    throw Error(
        fmt::format("{}: weight must be a torch.qint8 tensor, got {}", op, dtypeName(w.dtype())));
}
void checkActivation(const Tensor& x, const char* op) {
  if (!x.isQuantized() || x.dtype() != ScalarType::QUInt8)
    throw Error(
        fmt::format("{}: input must be a torch.quint8 tensor (PyTorch's x86 engines take "
                    "quint8 activations), got {}",
                    op, x.defined() ? dtypeName(x.dtype()) : "None"));
  perTensorOf(x, op);
}

}  // namespace

std::pair<int64_t, int64_t> quantRange(ScalarType qdtype) {
  switch (qdtype) {
    case ScalarType::QUInt8: return {0, 255};
    case ScalarType::QInt8: return {-128, 127};
    case ScalarType::QInt32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default:
      throw Error(fmt::format("quantized dtype {} is not supported (quint8, qint8, qint32 are)",
                              dtypeName(qdtype)));
  }
}

ScalarType underlyingType(ScalarType qdtype) {
  switch (qdtype) {
    case ScalarType::QUInt8: return ScalarType::Byte;
    case ScalarType::QInt8: return ScalarType::Char;
    case ScalarType::QInt32: return ScalarType::Int;
    default:
      throw Error(fmt::format("quantized dtype {} is not supported (quint8, qint8, qint32 are)",
                              dtypeName(qdtype)));
  }
}

Tensor emptyQuantized(const IntList& sizes, ScalarType qdtype, double scale, int64_t zeroPoint) {
  Tensor t = Tensor::empty(sizes, qdtype);
  auto info = std::make_shared<QuantizerInfo>();
  info->scheme = Scheme::PerTensorAffine;
  info->scale = scale;
  info->zeroPoint = zeroPoint;
  t.setQuantizer(std::move(info));
  return t;
}

Tensor quantizePerTensor(const Tensor& x, double scale, int64_t zeroPoint, ScalarType qdtype) {
  const char* op = "quantize_per_tensor";
  auto [lo, hi] = quantRange(qdtype);
  checkScale(scale, op);
  checkZeroPoint(zeroPoint, qdtype, op);
  Tensor c = contiguousFloat(x, op);
  Tensor out = emptyQuantized(x.sizes(), qdtype, scale, zeroPoint);
  const float inv = 1.0f / static_cast<float>(scale);
  const float* src = c.data<float>();
  const int64_t n = c.numel();
  dispatchQuant(qdtype, [&, lo = lo, hi = hi](auto tag) {
    using T = decltype(tag);
    T* dst = static_cast<T*>(out.rawData());
    if constexpr (sizeof(T) == 1) {
      // quantizeOne without branches, so that it vectorizes: NaN and |t| >= 2^63 become -2^22
      // (saturating to lo, as in quantizeOne), t is clamped to +-2^22 and rounded with
      // the 1.5 * 2^23 trick (the same integers after saturation).
      const float zpf = static_cast<float>(zeroPoint), lof = static_cast<float>(lo),
                  hif = static_cast<float>(hi);
      parallelFor(n, 1 << 15, [&](int64_t b, int64_t e) {
        const float inv_ = inv, zp_ = zpf, lo_ = lof, hi_ = hif;
        const float* __restrict x = src + b;
        T* __restrict o = dst + b;
        const int64_t m = e - b;
        for (int64_t i = 0; i < m; ++i) {
          float t = x[i] * inv_;
          t = std::fabs(t) < kInt64Range ? t : -4194304.0f;  // NaN too
          t = std::min(std::max(t, -4194304.0f), 4194304.0f);
          const float r = ((t + 12582912.0f) - 12582912.0f) + zp_;
          o[i] = static_cast<T>(static_cast<int32_t>(std::min(std::max(r, lo_), hi_)));
        }
      });
    } else {
      parallelFor(n, 1 << 15, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          dst[i] = static_cast<T>(quantizeOne(src[i], inv, zeroPoint, lo, hi));
      });
    }
  });
  return out;
}

Tensor quantizePerChannel(const Tensor& x, const Tensor& scales, const Tensor& zeroPoints,
                          int64_t axis, ScalarType qdtype) {
  const char* op = "quantize_per_channel";
  auto [lo, hi] = quantRange(qdtype);
  Tensor c = contiguousFloat(x, op);
  if (axis < 0 || axis >= x.dim())
    throw Error(fmt::format("{}: axis {} is out of range for a {}-d tensor", op, axis, x.dim()));
  const int64_t C = x.size(axis);
  if (scales.dim() != 1 || scales.numel() != C || zeroPoints.dim() != 1 || zeroPoints.numel() != C)
    throw Error(fmt::format(
        "{}: scales and zero_points must be 1-d with {} entries (size of axis {})", op, C, axis));
  auto info = std::make_shared<QuantizerInfo>();
  info->scheme = Scheme::PerChannelAffine;
  info->axis = axis;
  Tensor s = scales.to(ScalarType::Double), z = zeroPoints.to(ScalarType::Long);
  for (int64_t i = 0; i < C; ++i) {
    checkScale(s.doubleAt(i), op);
    checkZeroPoint(z.intAt(i), qdtype, op);
  }
  info->scales = s.impl();
  info->zeroPoints = z.impl();
  Tensor out = Tensor::empty(x.sizes(), qdtype);
  out.setQuantizer(info);
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < x.dim(); ++d) inner *= x.size(d);
  const float* src = c.data<float>();
  const int64_t n = c.numel();
  std::vector<float> inv(static_cast<size_t>(C));
  for (int64_t i = 0; i < C; ++i)
    inv[static_cast<size_t>(i)] = 1.0f / static_cast<float>(s.doubleAt(i));
  std::vector<int64_t> zp(static_cast<size_t>(C));
  for (int64_t i = 0; i < C; ++i) zp[static_cast<size_t>(i)] = z.intAt(i);
  dispatchQuant(qdtype, [&, lo = lo, hi = hi](auto tag) {
    using T = decltype(tag);
    T* dst = static_cast<T*>(out.rawData());
    for (int64_t i = 0; i < n; ++i) {
      const size_t ch = static_cast<size_t>((i / inner) % C);
      dst[i] = static_cast<T>(quantizeOne(src[i], inv[ch], zp[ch], lo, hi));
    }
  });
  return out;
}

Tensor dequantize(const Tensor& q) {
  if (!q.isQuantized()) return q;
  const QuantizerInfo& info = *q.quantizer();
  std::vector<int32_t> ints = intsOf(q);
  Tensor out = Tensor::empty(q.sizes(), ScalarType::Float);
  float* o = out.data<float>();
  if (!perChannel(info)) {
    const float s = static_cast<float>(info.scale);
    const int32_t z = static_cast<int32_t>(info.zeroPoint);
    for (size_t i = 0; i < ints.size(); ++i) o[i] = s * static_cast<float>(ints[i] - z);
    return out;
  }
  const int64_t axis = info.axis;
  TL_CHECK(axis >= 0 && axis < q.dim(), "per-channel axis {} out of range for {}-d", axis, q.dim());
  const int64_t C = q.size(axis);
  // Per channel PyTorch multiplies in double: float(scale[c] * (q - zp[c])).
  Tensor sd = Tensor(info.scales).to(ScalarType::Double);
  TL_CHECK(sd.numel() == C, "per-channel scales have {} entries, expected {}", sd.numel(), C);
  std::vector<int32_t> z = zeroPointsOf(info, C);
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < q.dim(); ++d) inner *= q.size(d);
  for (size_t i = 0; i < ints.size(); ++i) {
    const size_t c = static_cast<size_t>((static_cast<int64_t>(i) / inner) % C);
    o[i] = static_cast<float>(sd.data<double>()[c] * static_cast<double>(ints[i] - z[c]));
  }
  return out;
}

Tensor intRepr(const Tensor& q) {
  quantizerOf(q, "int_repr");
  Tensor c = q.clone();
  return Tensor::fromStorage(c.storage(), c.storageOffset(), c.sizes(), c.strides(),
                             underlyingType(q.dtype()));
}

Tensor withQuantizerOf(const Tensor& ints, const Tensor& q) {
  Tensor c = ints.contiguous();
  TL_CHECK(c.dtype() == underlyingType(q.dtype()), "integers of dtype {} cannot hold {}",
           dtypeName(c.dtype()), dtypeName(q.dtype()));
  Tensor out =
      Tensor::fromStorage(c.storage(), c.storageOffset(), c.sizes(), c.strides(), q.dtype());
  out.setQuantizer(q.quantizer());
  return out;
}

double qScale(const Tensor& q) { return perTensorOf(q, "q_scale").scale; }
int64_t qZeroPoint(const Tensor& q) { return perTensorOf(q, "q_zero_point").zeroPoint; }

namespace {
const QuantizerInfo& perChannelOf(const Tensor& q, const char* op) {
  const QuantizerInfo& info = quantizerOf(q, op);
  if (!perChannel(info))
    throw Error(
        fmt::format("{}: expected a per-channel quantized tensor, got a per-tensor one", op));
  return info;
}
}  // namespace

Tensor qPerChannelScales(const Tensor& q) {
  return Tensor(perChannelOf(q, "q_per_channel_scales").scales).to(ScalarType::Double);
}
Tensor qPerChannelZeroPoints(const Tensor& q) {
  return Tensor(perChannelOf(q, "q_per_channel_zero_points").zeroPoints).to(ScalarType::Long);
}
int64_t qPerChannelAxis(const Tensor& q) { return perChannelOf(q, "q_per_channel_axis").axis; }

// ---- conv / linear -----------------------------------------------------------------------------

bool qconvReferenceLoops() {
  static const bool reference = [] {
    const char* e = std::getenv("TORCHLESS_QCONV_REFERENCE");
    return e != nullptr && *e != '\0' && std::string(e) != "0";
  }();
  return reference;
}

std::optional<dnnl::convolution_forward::primitive_desc> int8ConvPrimitiveDesc(
    const dnnl::memory::desc& src, const dnnl::memory::desc& weights, const dnnl::memory::desc& dst,
    const dnnl::memory::dims& strides, const dnnl::memory::dims& dilation,
    const dnnl::memory::dims& pads, const Int8ConvAttrs& attrs) {
  using namespace dnnl;
  using cf = convolution_forward;
  primitive_attr attr;
  if (attrs.userScratchpad) attr.set_scratchpad_mode(scratchpad_mode::user);
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  const bool requant = attrs.mult != nullptr;
  if (requant) {
    attr.set_output_scales(1 << 1, *attrs.mult);
    attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    if (attrs.relu) {
      post_ops po;
      po.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(po);
    }
  }
  try {
    const memory::desc bias({dst.dims()[1]}, memory::data_type::f32, memory::format_tag::x);
    const cf::desc d = requant && attrs.hasBias
                           ? cf::desc(prop_kind::forward_inference, algorithm::convolution_direct,
                                      src, weights, bias, dst, strides, dilation, pads, pads)
                           : cf::desc(prop_kind::forward_inference, algorithm::convolution_direct,
                                      src, weights, dst, strides, dilation, pads, pads);
    cf::primitive_desc pd(d, attr, dnnl_utils::engine());
    if (std::string(pd.impl_info_str()).find("ref") != std::string::npos) return std::nullopt;
    return pd;
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

namespace {
// Note [oneDNN int8 accumulators]
// The fast path of quantized conv is oneDNN's u8 x s8 convolution with the input's zero point
// (DNNL_ARG_ATTR_ZERO_POINTS; padding counts as the zero point, i.e. 0), in one of two forms:
// - with `rq`: oneDNN requantizes itself, u8 out: bias in accumulator units (Requant::biasRaw),
//   per-channel output scales (Requant::mult), relu as an eltwise post-op, the output zero point
//   (DNNL_ARG_DST). That is the computation PyTorch's onednn engine asks oneDNN for; the
//   api.quantized cases (static convs, resnet18, d2go's detector) match PyTorch bit for bit;
// - without: s32 out, the exact sums sum (a - a_zp) * w, requantized by Requant afterwards
//   (when oneDNN refuses the first form).
// Taken for non-transposed convs with weight zero points 0 (PyTorch's qint8 weights are
// symmetric) and 1-3 spatial dims; `acc` is [N, OC, P] (P = output spatial volume), `y` the
// u8 output [N, OC, P]. Returns false (nothing written) when oneDNN has only its reference
// implementation for the shape (our loops are faster) or none.
bool dnnlInt8ConvAcc(const Tensor& x, const Tensor& weight, int64_t S, int64_t OC, const IntList& k,
                     const IntList& in, const IntList& out, const IntList& st, const IntList& pd,
                     const IntList& dl, int64_t groups, int32_t azp, std::vector<int32_t>& acc,
                     const Requant* rq = nullptr, bool relu = false, uint8_t* y = nullptr,
                     int64_t batch = -1, int64_t channels = -1) {
  using namespace dnnl;
  using dt = memory::data_type;
  using tag = memory::format_tag;
  // `batch` / `channels` override x's first two sizes (a linear's [*, K] input as [M, K, 1, 1]).
  const int64_t N = batch >= 0 ? batch : x.size(0), C = channels >= 0 ? channels : x.size(1);
  // 1-d convs run as 2-d over a height of 1; 2-d and 3-d as themselves (in/out/k are padded to 3).
  const int64_t D = S == 3 ? 3 : 2;
  auto spatial = [&](const IntList& v) {
    memory::dims d;
    for (int64_t i = 3 - D; i < 3; ++i) d.push_back(v[static_cast<size_t>(i)]);
    return d;
  };
  memory::dims srcDims{N, C}, dstDims{N, OC}, wDims;
  for (auto v : spatial(in)) srcDims.push_back(v);
  for (auto v : spatial(out)) dstDims.push_back(v);
  if (groups > 1)
    wDims = {groups, OC / groups, C / groups};
  else
    wDims = {OC, C};
  for (auto v : spatial(k)) wDims.push_back(v);
  memory::dims strides = spatial(st), pads = spatial(pd), dil = spatial(dl);
  for (auto& d : dil) d -= 1;  // oneDNN counts dilation from 0
  const tag plainSrc = D == 3 ? tag::ncdhw : tag::nchw;
  const tag plainW =
      groups > 1 ? (D == 3 ? tag::goidhw : tag::goihw) : (D == 3 ? tag::oidhw : tag::oihw);
  try {
    engine& eng = dnnl_utils::engine();
    stream& strm = dnnl_utils::stream();
    const bool requant = rq != nullptr && y != nullptr;
    memory::desc biasDesc({OC}, dt::f32, tag::x);
    Tensor wc = weight.contiguous();  // qint8: its storage holds the int8 values
    // Primitives (and their reordered weights) are cached per weight tensor, shape and
    // requantization; an entry keeps its weight tensor alive, so the address is not reused
    // while cached. Bounded: cleared past 4096 entries.
    struct Cached {
      convolution_forward::primitive_desc pd;
      convolution_forward prim;
      memory weights;
      Tensor keep;
      bool usable = false;
    };
    using Key = std::tuple<const void*, std::vector<int64_t>, std::vector<float>>;
    static std::mutex mu;
    static std::map<Key, std::shared_ptr<Cached>> cache;
    std::vector<int64_t> shapeKey(srcDims.begin(), srcDims.end());
    shapeKey.insert(shapeKey.end(), wDims.begin(), wDims.end());
    shapeKey.insert(shapeKey.end(), strides.begin(), strides.end());
    shapeKey.insert(shapeKey.end(), pads.begin(), pads.end());
    shapeKey.insert(shapeKey.end(), dil.begin(), dil.end());
    shapeKey.insert(shapeKey.end(),
                    {groups, OC, requant ? 1 : 0, relu ? 1 : 0, requant && rq->hasBias ? 1 : 0});
    Key key(static_cast<const void*>(wc.rawData()), std::move(shapeKey),
            requant ? rq->mult : std::vector<float>{});
    std::shared_ptr<Cached> entry;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = cache.find(key);
      if (it != cache.end()) entry = it->second;
    }
    if (!entry) {
      memory::desc srcAny(srcDims, dt::u8, tag::any), wAny(wDims, dt::s8, tag::any),
          dstAny(dstDims, requant ? dt::u8 : dt::s32, tag::any);
      Int8ConvAttrs attrs;
      attrs.userScratchpad = true;  // Note [Scratchpads of shared primitives] in dnnl_utils.h
      if (requant) {
        attrs.mult = &rq->mult;
        attrs.hasBias = rq->hasBias;
        attrs.relu = relu;
      }
      std::optional<convolution_forward::primitive_desc> pd =
          int8ConvPrimitiveDesc(srcAny, wAny, dstAny, strides, dil, pads, attrs);
      entry = std::make_shared<Cached>();
      // none, or only the reference implementation: remembered as unusable
      entry->usable = pd.has_value();
      if (entry->usable) {
        entry->pd = *pd;
        entry->prim = convolution_forward(entry->pd);
        memory wPlain({wDims, dt::s8, plainW}, eng, wc.rawData());
        if (entry->pd.weights_desc() != wPlain.get_desc()) {
          entry->weights = memory(entry->pd.weights_desc(), eng);
          reorder(wPlain, entry->weights).execute(strm, wPlain, entry->weights);
          strm.wait();
          entry->keep = wc;
        } else {
          entry->weights = wPlain;
          entry->keep = wc;
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      if (cache.size() > 4096) cache.clear();
      cache.emplace(key, entry);
    }
    if (!entry->usable) return false;
    const convolution_forward::primitive_desc& pd_ = entry->pd;
    Tensor xc = x.contiguous();
    memory srcPlain({srcDims, dt::u8, plainSrc}, eng, xc.rawData());
    if (!requant) acc.assign(static_cast<size_t>(N * OC * out[0] * out[1] * out[2]), 0);
    memory dstPlain({dstDims, requant ? dt::u8 : dt::s32, plainSrc}, eng,
                    requant ? static_cast<void*>(y) : static_cast<void*>(acc.data()));
    memory src = srcPlain, w = entry->weights, dst = dstPlain;
    if (pd_.src_desc() != srcPlain.get_desc()) {
      src = memory(pd_.src_desc(), eng);
      reorder(srcPlain, src).execute(strm, srcPlain, src);
    }
    if (pd_.dst_desc() != dstPlain.get_desc()) dst = memory(pd_.dst_desc(), eng);
    int32_t zp = azp, dzp = requant ? static_cast<int32_t>(rq->zp) : 0;
    memory zpMem({{1}, dt::s32, tag::x}, eng, &zp);
    memory dzpMem({{1}, dt::s32, tag::x}, eng, &dzp);
    std::unordered_map<int, memory> margs = {{DNNL_ARG_SRC, src},
                                             {DNNL_ARG_WEIGHTS, w},
                                             {DNNL_ARG_DST, dst},
                                             {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zpMem}};
    std::vector<float> biasCopy;
    if (requant) {
      margs.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, dzpMem);
      if (rq->hasBias) {
        biasCopy = rq->biasRaw;
        margs.emplace(DNNL_ARG_BIAS, memory(biasDesc, eng, biasCopy.data()));
      }
    }
    dnnl_utils::execute(entry->prim, margs);
    if (dst != dstPlain) reorder(dst, dstPlain).execute(strm, dst, dstPlain);
    strm.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}
}  // namespace

namespace {
Tensor qconvImpl(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                 const IntList& stride, const IntList& padding, const IntList& dilation,
                 int64_t groups, bool transposed, const IntList& outputPadding, double outScale,
                 int64_t outZp, bool relu) {
  const char* op = transposed ? "quantized::conv_transpose" : "quantized::conv";
  checkActivation(x, op);
  checkWeight(weight, op);
  checkScale(outScale, op);
  checkZeroPoint(outZp, ScalarType::QUInt8, op);
  const int64_t S = static_cast<int64_t>(stride.size());
  if (S < 1 || S > 3 || x.dim() != S + 2 || weight.dim() != S + 2 ||
      static_cast<int64_t>(padding.size()) != S || static_cast<int64_t>(dilation.size()) != S)
    throw Error(fmt::format("{}: expected a {}-d input and weight, got input {} and weight {}", op,
                            S + 2, sizesToString(x.sizes()), sizesToString(weight.sizes())));
  if (groups < 1) throw Error(fmt::format("{}: groups must be positive, got {}", op, groups));
  const int64_t N = x.size(0), C = x.size(1);
  // Pad the spatial dims to 3 (D, H, W) with size 1.
  IntList in(3, 1), k(3, 1), st(3, 1), pd(3, 0), dl(3, 1), op3(3, 0);
  for (int64_t i = 0; i < S; ++i) {
    const size_t j = static_cast<size_t>(3 - S + i);
    in[j] = x.size(2 + i);
    k[j] = weight.size(2 + i);
    st[j] = stride[static_cast<size_t>(i)];
    pd[j] = padding[static_cast<size_t>(i)];
    dl[j] = dilation[static_cast<size_t>(i)];
    if (transposed && static_cast<int64_t>(outputPadding.size()) == S)
      op3[j] = outputPadding[static_cast<size_t>(i)];
    if (st[j] < 1 || dl[j] < 1 || pd[j] < 0)
      throw Error(
          fmt::format("{}: stride and dilation must be positive, padding non-negative", op));
  }
  const int64_t OC = transposed ? weight.size(1) * groups : weight.size(0);
  const int64_t Cg = C / groups;
  if (C % groups != 0 || (transposed ? weight.size(0) != C : weight.size(1) * groups != C) ||
      OC % groups != 0)
    throw Error(fmt::format("{}: input has {} channels but the weight {} with groups={} expects {}",
                            op, C, sizesToString(weight.sizes()), groups,
                            transposed ? weight.size(0) : weight.size(1) * groups));
  const int64_t OCg = OC / groups;
  IntList out(3);
  for (size_t j = 0; j < 3; ++j) {
    out[j] = transposed ? (in[j] - 1) * st[j] - 2 * pd[j] + dl[j] * (k[j] - 1) + op3[j] + 1
                        : (in[j] + 2 * pd[j] - dl[j] * (k[j] - 1) - 1) / st[j] + 1;
    if (out[j] <= 0)
      throw Error(fmt::format("{}: input {} is too small for the kernel {}", op,
                              sizesToString(x.sizes()), sizesToString(weight.sizes())));
  }
  const QuantizerInfo& xq = *x.quantizer();
  const QuantizerInfo& wq = *weight.quantizer();
  const int64_t wAxis = perChannel(wq) ? wq.axis : -1;
  if (perChannel(wq) && wAxis != (transposed ? 1 : 0))
    throw Error(fmt::format("{}: per-channel weights must be quantized along axis {}, got axis {}",
                            op, transposed ? 1 : 0, wAxis));
  // Scales and zero points per output channel.
  std::vector<double> wsc(static_cast<size_t>(OC));
  std::vector<int32_t> wzp(static_cast<size_t>(OC));
  {
    const int64_t nch = perChannel(wq) ? weight.size(wAxis) : 1;
    std::vector<double> s = scalesOf(wq, nch);
    std::vector<int32_t> z = zeroPointsOf(wq, nch);
    for (int64_t o = 0; o < OC; ++o) {
      const size_t src = static_cast<size_t>(perChannel(wq) ? (transposed ? o % OCg : o) : 0);
      wsc[static_cast<size_t>(o)] = s[src];
      wzp[static_cast<size_t>(o)] = z[src];
    }
  }
  const Requant rq(xq.scale, wsc, bias, outScale, outZp, relu, OC);
  const int32_t azp = static_cast<int32_t>(xq.zeroPoint);
  const int64_t kvol = k[0] * k[1] * k[2];
  const int64_t K = Cg * kvol;
  const int64_t inVol = in[0] * in[1] * in[2];
  const int64_t P = out[0] * out[1] * out[2];
  IntList outSizes{N, OC};
  for (int64_t i = 0; i < S; ++i) outSizes.push_back(out[static_cast<size_t>(3 - S + i)]);
  Tensor y = emptyQuantized(outSizes, ScalarType::QUInt8, outScale, outZp);
  uint8_t* yp = static_cast<uint8_t*>(y.rawData());

  if (!transposed) {
    // The oneDNN path (Note [oneDNN int8 accumulators]), unless TORCHLESS_QCONV_REFERENCE is set.
    const bool reference = qconvReferenceLoops();
    const bool symmetric = std::all_of(wzp.begin(), wzp.end(), [](int32_t z) { return z == 0; });
    std::vector<int32_t> dacc;
    if (!reference && symmetric && rq.hi == 255 &&
        dnnlInt8ConvAcc(x, weight, S, OC, k, in, out, st, pd, dl, groups, azp, dacc, &rq, relu, yp))
      return y;
    if (!reference && symmetric &&
        dnnlInt8ConvAcc(x, weight, S, OC, k, in, out, st, pd, dl, groups, azp, dacc)) {
      parallelFor(N * OC, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b)
          for (int64_t p = 0; p < P; ++p)
            yp[b * P + p] = rq(dacc[static_cast<size_t>(b * P + p)], b % OC);
      });
      return y;
    }
  }
  std::vector<int32_t> xi = intsOf(x);
  std::vector<int32_t> wi = intsOf(weight);
  if (!transposed) {
    // Weight [OC][K] minus zero points; im2col per image and group: col [P][K].
    std::vector<int16_t> w16(wi.size());
    for (int64_t o = 0; o < OC; ++o)
      for (int64_t kk = 0; kk < K; ++kk)
        w16[static_cast<size_t>(o * K + kk)] =
            static_cast<int16_t>(wi[static_cast<size_t>(o * K + kk)] - wzp[static_cast<size_t>(o)]);
    if (Cg <= 4) {
      // Depthwise-like convs (few input channels per group): a direct loop per output channel,
      // no im2col; the same exact int32 sums.
      parallelFor(N * OC, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t n = b / OC, oc = b % OC, g = oc / OCg;
          const int16_t* wk = w16.data() + oc * K;
          uint8_t* yo = yp + b * P;
          for (int64_t od = 0; od < out[0]; ++od)
            for (int64_t oh = 0; oh < out[1]; ++oh)
              for (int64_t ow = 0; ow < out[2]; ++ow) {
                int32_t acc = 0;
                for (int64_t c = 0; c < Cg; ++c) {
                  const int32_t* xc = xi.data() + (n * C + g * Cg + c) * inVol;
                  const int16_t* wc = wk + c * kvol;
                  for (int64_t kd = 0; kd < k[0]; ++kd) {
                    const int64_t id = od * st[0] - pd[0] + kd * dl[0];
                    if (id < 0 || id >= in[0]) continue;
                    for (int64_t kh = 0; kh < k[1]; ++kh) {
                      const int64_t ih = oh * st[1] - pd[1] + kh * dl[1];
                      if (ih < 0 || ih >= in[1]) continue;
                      const int32_t* row = xc + (id * in[1] + ih) * in[2];
                      const int16_t* wr = wc + (kd * k[1] + kh) * k[2];
                      for (int64_t kw = 0; kw < k[2]; ++kw) {
                        const int64_t iw = ow * st[2] - pd[2] + kw * dl[2];
                        if (iw >= 0 && iw < in[2]) acc += (row[iw] - azp) * wr[kw];
                      }
                    }
                  }
                }
                yo[(od * out[1] + oh) * out[2] + ow] = rq(acc, oc);
              }
        }
      });
      return y;
    }
    std::vector<int16_t> col(static_cast<size_t>(P * K));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t g = 0; g < groups; ++g) {
        parallelFor(P, 64, [&](int64_t p0, int64_t p1) {
          for (int64_t p = p0; p < p1; ++p) {
            const int64_t od = p / (out[1] * out[2]), oh = (p / out[2]) % out[1], ow = p % out[2];
            int16_t* cp = col.data() + p * K;
            for (int64_t c = 0; c < Cg; ++c) {
              const int32_t* xc = xi.data() + ((n * C) + g * Cg + c) * inVol;
              for (int64_t kd = 0; kd < k[0]; ++kd) {
                const int64_t id = od * st[0] - pd[0] + kd * dl[0];
                for (int64_t kh = 0; kh < k[1]; ++kh) {
                  const int64_t ih = oh * st[1] - pd[1] + kh * dl[1];
                  for (int64_t kw = 0; kw < k[2]; ++kw) {
                    const int64_t iw = ow * st[2] - pd[2] + kw * dl[2];
                    const bool inside =
                        id >= 0 && id < in[0] && ih >= 0 && ih < in[1] && iw >= 0 && iw < in[2];
                    *cp++ =
                        inside ? static_cast<int16_t>(xc[(id * in[1] + ih) * in[2] + iw] - azp) : 0;
                  }
                }
              }
            }
          }
        });
        uint8_t* yg = yp + (n * OC + g * OCg) * P;
        gemmS16(col.data(), w16.data() + g * OCg * K, P, OCg, K,
                [&](int64_t p, int64_t o, int32_t acc) { yg[o * P + p] = rq(acc, g * OCg + o); });
      }
    }
    return y;
  }

  // Transposed: scatter (a - a_zp) * (w - w_zp) into int32 accumulators. Weight [C][OCg][k].
  std::vector<int32_t> acc(static_cast<size_t>(OC * P));
  for (int64_t n = 0; n < N; ++n) {
    std::fill(acc.begin(), acc.end(), 0);
    parallelFor(OC, 1, [&](int64_t o0, int64_t o1) {
      for (int64_t oc = o0; oc < o1; ++oc) {
        const int64_t g = oc / OCg, ocg = oc % OCg;
        int32_t* ao = acc.data() + oc * P;
        for (int64_t c = 0; c < Cg; ++c) {
          const int64_t ic = g * Cg + c;
          const int32_t* xc = xi.data() + (n * C + ic) * inVol;
          const int32_t* wk = wi.data() + (ic * OCg + ocg) * kvol;
          for (int64_t id = 0; id < in[0]; ++id)
            for (int64_t ih = 0; ih < in[1]; ++ih)
              for (int64_t iw = 0; iw < in[2]; ++iw) {
                const int32_t a = xc[(id * in[1] + ih) * in[2] + iw] - azp;
                if (a == 0) continue;
                for (int64_t kd = 0; kd < k[0]; ++kd) {
                  const int64_t od = id * st[0] - pd[0] + kd * dl[0];
                  if (od < 0 || od >= out[0]) continue;
                  for (int64_t kh = 0; kh < k[1]; ++kh) {
                    const int64_t oh = ih * st[1] - pd[1] + kh * dl[1];
                    if (oh < 0 || oh >= out[1]) continue;
                    for (int64_t kw = 0; kw < k[2]; ++kw) {
                      const int64_t ow = iw * st[2] - pd[2] + kw * dl[2];
                      if (ow < 0 || ow >= out[2]) continue;
                      ao[(od * out[1] + oh) * out[2] + ow] +=
                          a * (wk[(kd * k[1] + kh) * k[2] + kw] - wzp[static_cast<size_t>(oc)]);
                    }
                  }
                }
              }
        }
      }
    });
    for (int64_t oc = 0; oc < OC; ++oc)
      for (int64_t p = 0; p < P; ++p)
        yp[(n * OC + oc) * P + p] = rq(acc[static_cast<size_t>(oc * P + p)], oc);
  }
  return y;
}

}  // namespace

Tensor qconv(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
             const IntList& stride, const IntList& padding, const IntList& dilation, int64_t groups,
             bool transposed, const IntList& outputPadding, double outScale, int64_t outZp,
             bool relu) {
  Tensor y = qconvImpl(x, weight, bias, stride, padding, dilation, groups, transposed,
                       outputPadding, outScale, outZp, relu);
  // PyTorch's quantized conv2d returns channels-last; the ops after it pick their kernels by
  // layout (a mean over H and W of a channels-last tensor goes through float, of a contiguous
  // one through integer sums: shufflenet_v2's pooling differs by one quantum between them).
  if (!transposed && y.dim() == 4) return contiguous(y, MemoryFormat::ChannelsLast);
  return y;
}

QConvScales qconvScales(double inScale, const Tensor& weight, const std::optional<Tensor>& bias,
                        double outScale) {
  const char* op = "quantized::conv";
  checkWeight(weight, op);
  checkScale(outScale, op);
  checkScale(inScale, op);
  TL_CHECK(weight.dim() >= 2, "{}: weight must have at least 2 dims, got {}", op, weight.dim());
  const int64_t OC = weight.size(0);
  const QuantizerInfo& wq = *weight.quantizer();
  if (perChannel(wq) && wq.axis != 0)
    throw Error(fmt::format("{}: per-channel weights must be quantized along axis 0, got axis {}",
                            op, wq.axis));
  std::vector<double> wsc = scalesOf(wq, perChannel(wq) ? OC : 1);
  std::vector<int32_t> wzp = zeroPointsOf(wq, perChannel(wq) ? OC : 1);
  if (!perChannel(wq)) wsc.assign(static_cast<size_t>(OC), wsc[0]);
  const Requant rq(inScale, wsc, bias, outScale, 0, false, OC);
  QConvScales s;
  s.mult = rq.mult;
  s.bias = rq.biasRaw;
  s.hasBias = rq.hasBias;
  s.symmetric = std::all_of(wzp.begin(), wzp.end(), [](int32_t z) { return z == 0; });
  return s;
}

Tensor qlinear(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
               double outScale, int64_t outZp, bool relu) {
  const char* op = "quantized::linear";
  checkActivation(x, op);
  checkWeight(weight, op);
  checkScale(outScale, op);
  checkZeroPoint(outZp, ScalarType::QUInt8, op);
  if (weight.dim() != 2)
    throw Error(fmt::format("{}: weight must be 2-d, got {}-d", op, weight.dim()));
  const int64_t N = weight.size(0), K = weight.size(1);
  if (x.dim() < 1 || x.size(-1) != K)
    throw Error(fmt::format("{}: input {} does not match the weight {} (in_features {})", op,
                            sizesToString(x.sizes()), sizesToString(weight.sizes()), K));
  const int64_t M = x.numel() / K;
  const QuantizerInfo& wq = *weight.quantizer();
  if (perChannel(wq) && wq.axis != 0)
    throw Error(fmt::format("{}: per-channel weights must be quantized along axis 0", op));
  std::vector<double> wsc = scalesOf(wq, perChannel(wq) ? N : 1);
  std::vector<int32_t> wzp = zeroPointsOf(wq, perChannel(wq) ? N : 1);
  if (!perChannel(wq)) {
    wsc.assign(static_cast<size_t>(N), wsc[0]);
    wzp.assign(static_cast<size_t>(N), wzp[0]);
  }
  const Requant rq(x.quantizer()->scale, wsc, bias, outScale, outZp, relu, N);
  const int32_t azp = static_cast<int32_t>(x.quantizer()->zeroPoint);
  IntList outSizes = x.sizes();
  outSizes.back() = N;
  Tensor y = emptyQuantized(outSizes, ScalarType::QUInt8, outScale, outZp);
  uint8_t* yp = static_cast<uint8_t*>(y.rawData());
  // oneDNN: a 1x1 convolution over [M, K, 1, 1] (Note [oneDNN int8 accumulators]).
  if (!qconvReferenceLoops() && M > 0 &&
      std::all_of(wzp.begin(), wzp.end(), [](int32_t z) { return z == 0; })) {
    Tensor x2 = x.contiguous();
    std::vector<int32_t> unused;
    const IntList one{1, 1, 1}, zero{0, 0, 0};
    if (dnnlInt8ConvAcc(x2, weight, 2, N, one, one, one, one, zero, one, 1, azp, unused, &rq, relu,
                        yp, M, K))
      return y;
  }
  std::vector<int16_t> w16 = weightS16(weight, N, N, wzp);
  std::vector<int32_t> xi = intsOf(x);
  std::vector<int16_t> a16(xi.size());
  for (size_t i = 0; i < xi.size(); ++i) a16[i] = static_cast<int16_t>(xi[i] - azp);
  gemmS16(a16.data(), w16.data(), M, N, K,
          [&](int64_t m, int64_t n, int32_t acc) { yp[m * N + n] = rq(acc, n); });
  return y;
}

namespace {
/// fbgemm's / PyTorch's ChooseQuantizationParams (preserve_sparsity and power-of-two off).
std::pair<float, int32_t> chooseQParams(float mn, float mx, int32_t qmin, int32_t qmax,
                                        bool reduceRange) {
  if (reduceRange) {
    qmin = qmin / 2;
    qmax = qmax / 2;
  }
  mn = std::min(mn, 0.0f);
  mx = std::max(mx, 0.0f);
  double scale = (static_cast<double>(mx) - mn) / (qmax - qmin);
  if (static_cast<float>(scale) == 0.0f || std::isinf(1.0f / static_cast<float>(scale)))
    scale = 0.1;
  constexpr float kSmallScale = 6.1e-5f;
  if (scale < kSmallScale) {
    const float orgScale = static_cast<float>(scale);
    scale = kSmallScale;
    if (mn == 0.0f)
      mx = kSmallScale * (qmax - qmin);
    else if (mx == 0.0f)
      mn = -kSmallScale * (qmax - qmin);
    else {
      const float amplifier = kSmallScale / orgScale;
      mn *= amplifier;
      mx *= amplifier;
    }
  }
  const double zFromMin = qmin - mn / scale;
  const double zFromMax = qmax - mx / scale;
  const double eMin = std::abs(qmin) + std::abs(mn / scale);
  const double eMax = std::abs(qmax) + std::abs(mx / scale);
  const double z0 = eMin < eMax ? zFromMin : zFromMax;
  int32_t z;
  if (z0 < qmin)
    z = qmin;
  else if (z0 > qmax)
    z = qmax;
  else
    z = static_cast<int32_t>(std::nearbyint(z0));
  return {static_cast<float>(scale), z};
}
}  // namespace

Tensor qlinearDynamic(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                      bool reduceRange, bool relu) {
  const char* op = "quantized::linear_dynamic";
  checkWeight(weight, op);
  Tensor xc = contiguousFloat(x, op);
  if (weight.dim() != 2)
    throw Error(fmt::format("{}: weight must be 2-d, got {}-d", op, weight.dim()));
  const int64_t N = weight.size(0), K = weight.size(1);
  if (x.dim() < 1 || x.size(-1) != K)
    throw Error(fmt::format("{}: input {} does not match the weight {} (in_features {})", op,
                            sizesToString(x.sizes()), sizesToString(weight.sizes()), K));
  const int64_t M = x.numel() / K;
  const float* xp = xc.data<float>();
  float mn = 0, mx = 0;
  if (xc.numel() > 0) {
    mn = mx = xp[0];
    for (int64_t i = 1; i < xc.numel(); ++i) {
      mn = std::min(mn, xp[i]);
      mx = std::max(mx, xp[i]);
    }
  }
  auto [aScale, aZp] = chooseQParams(mn, mx, 0, 255, reduceRange);
  const float inv = 1.0f / aScale;
  std::vector<int16_t> a16(static_cast<size_t>(xc.numel()));
  for (size_t i = 0; i < a16.size(); ++i)
    a16[i] = static_cast<int16_t>(quantizeOneLegacy(xp[i], inv, aZp, 0, 255) - aZp);
  const QuantizerInfo& wq = *weight.quantizer();
  std::vector<double> wsc = scalesOf(wq, perChannel(wq) ? N : 1);
  std::vector<int32_t> wzp = zeroPointsOf(wq, perChannel(wq) ? N : 1);
  if (!perChannel(wq)) {
    wsc.assign(static_cast<size_t>(N), wsc[0]);
    wzp.assign(static_cast<size_t>(N), wzp[0]);
  }
  std::vector<int16_t> w16 = weightS16(weight, N, N, wzp);
  std::vector<float> mult(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n)
    mult[static_cast<size_t>(n)] = aScale * static_cast<float>(wsc[static_cast<size_t>(n)]);
  Tensor b;
  if (bias) {
    b = bias->contiguous();
    TL_CHECK(b.dtype() == ScalarType::Float && b.numel() == N, "{}: bias must be float32 [{}]", op,
             N);
  }
  const float* bp = bias ? b.data<float>() : nullptr;
  IntList outSizes = x.sizes();
  outSizes.back() = N;
  Tensor y = Tensor::empty(outSizes, ScalarType::Float);
  float* yp = y.data<float>();
  gemmS16(a16.data(), w16.data(), M, N, K, [&](int64_t m, int64_t n, int32_t acc) {
    float v = static_cast<float>(acc) * mult[static_cast<size_t>(n)];
    if (bp) v += bp[n];
    if (relu) v = std::max(v, 0.0f);
    yp[m * N + n] = v;
  });
  return y;
}

Tensor qlinearDynamicFp16(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                          bool relu) {
  Tensor y = linear(x, weight, bias);
  return relu ? ops::relu(y) : y;
}

// ---- elementwise -----------------------------------------------------------------------------

Tensor qadd(const Tensor& a, const Tensor& b, double scale, int64_t zeroPoint, bool relu) {
  const char* op = relu ? "quantized::add_relu" : "quantized::add";
  perTensorOf(a, op);
  perTensorOf(b, op);
  if (a.dtype() != b.dtype())
    throw Error(fmt::format("{}: both inputs must have the same dtype, got {} and {}", op,
                            dtypeName(a.dtype()), dtypeName(b.dtype())));
  checkScale(scale, op);
  checkZeroPoint(zeroPoint, a.dtype(), op);
  if (a.sizes() == b.sizes() && a.strides() == b.strides() && isNonOverlappingAndDense(a) &&
      a.dtype() != ScalarType::QInt32) {
    // Same shapes and layout (contiguous or channels-last): one pass over the integers in
    // memory order with the same float steps as below (fma dequantize, add, relu, quantize),
    // no intermediate tensors; the result has the inputs' layout.
    const QuantizerInfo& qa = *a.quantizer();
    const QuantizerInfo& qb = *b.quantizer();
    const float sa = static_cast<float>(qa.scale), sb = static_cast<float>(qb.scale);
    const float pa = -(sa * static_cast<float>(qa.zeroPoint)),
                pb = -(sb * static_cast<float>(qb.zeroPoint));
    const float inv = 1.0f / static_cast<float>(scale);
    auto [lo, hi] = quantRange(a.dtype());
    Tensor y = emptyQuantizedStrided(a.sizes(), a.strides(), a.dtype(), scale, zeroPoint);
    // quantizeOne without branches (the inputs are integers: no NaN), so that it vectorizes:
    // t clamped to +-2^22 first rounds as nearbyint does and saturates to the same integers.
    const float zpf = static_cast<float>(zeroPoint), lof = static_cast<float>(lo),
                hif = static_cast<float>(hi);
    const float floor = relu ? 0.0f : -std::numeric_limits<float>::infinity();
    dispatchQuant(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* ap = static_cast<const T*>(a.rawData());
      const T* bp = static_cast<const T*>(b.rawData());
      T* yp = static_cast<T*>(y.rawData());
      // The dequantized values of the 256 integers of each input, once (fbgemm's fma).
      std::array<float, 256> da{}, db{};
      const int off = std::is_signed_v<T> ? 128 : 0;
      for (int q = 0; q < 256; ++q) {
        da[static_cast<size_t>(q)] = std::fma(sa, static_cast<float>(q - off), pa);
        db[static_cast<size_t>(q)] = std::fma(sb, static_cast<float>(q - off), pb);
      }
      parallelFor(a.numel(), 4096, [&](int64_t i0, int64_t i1) {
        // Locals and restrict pointers: a uint8 store may alias anything, which would reload
        // every captured value per element.
        const float inv_ = inv, zp_ = zpf, lo_ = lof, hi_ = hif, fl_ = floor;
        const float* __restrict ta = da.data();
        const float* __restrict tb = db.data();
        const T* __restrict x = ap + i0;
        const T* __restrict z = bp + i0;
        T* __restrict o = yp + i0;
        const int64_t n = i1 - i0;
        for (int64_t i = 0; i < n; ++i) {
          const float c =
              std::max(ta[static_cast<int>(x[i]) + off] + tb[static_cast<int>(z[i]) + off], fl_);
          const float t = std::min(std::max(c * inv_, -4194304.0f), 4194304.0f);
          const float r = ((t + 12582912.0f) - 12582912.0f) + zp_;
          o[i] = static_cast<T>(static_cast<int32_t>(std::min(std::max(r, lo_), hi_)));
        }
      });
    });
    return y;
  }
  Tensor c = add(dequantizeFma(a), dequantizeFma(b));
  if (relu) c = ops::relu(c);
  return inLayoutOf(quantizePerTensor(c, scale, zeroPoint, a.dtype()),
                    layoutSource(a, b, c.sizes()));
}

Tensor qmul(const Tensor& a, const Tensor& b, double scale, int64_t zeroPoint, bool relu) {
  const char* op = relu ? "quantized::mul_relu" : "quantized::mul";
  const QuantizerInfo& qa = perTensorOf(a, op);
  const QuantizerInfo& qb = perTensorOf(b, op);
  if (a.dtype() != b.dtype())
    throw Error(fmt::format("{}: both inputs must have the same dtype", op));
  checkScale(scale, op);
  checkZeroPoint(zeroPoint, a.dtype(), op);
  // Broadcast through float: integers minus zero points are exact in float.
  Tensor ia = sub(intRepr(a).to(ScalarType::Float), Scalar(static_cast<double>(qa.zeroPoint)));
  Tensor ib = sub(intRepr(b).to(ScalarType::Float), Scalar(static_cast<double>(qb.zeroPoint)));
  Tensor prod = mul(ia.to(ScalarType::Long), ib.to(ScalarType::Long));
  const float m = static_cast<float>(qa.scale) * static_cast<float>(qb.scale) *
                  (1.0f / static_cast<float>(scale));
  auto [lo, hi] = quantRange(a.dtype());
  if (relu) lo = std::max(lo, zeroPoint);
  std::vector<int64_t> v(static_cast<size_t>(prod.numel()));
  const int64_t* pp = prod.data<int64_t>();
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::clamp<int64_t>(
        zeroPoint + std::lrintf(static_cast<float>(static_cast<int32_t>(pp[i])) * m), lo, hi);
  return inLayoutOf(fromInts(v, prod.sizes(), a.dtype(), scale, zeroPoint),
                    layoutSource(a, b, prod.sizes()));
}

Tensor qaddScalar(const Tensor& a, double b, bool relu) {
  // PyTorch's qadd_scalar (qadd.cpp _add_scalar_out): c = round(b / scale); while a's integers
  // plus c stay in range, the result is a's integers with the zero point moved by -c; else the
  // result is requantized over the whole range (zero point at the end the sum overflows) with
  // requantize_from_int's lrintf.
  const QuantizerInfo& qa = perTensorOf(a, "quantized::add_scalar");
  auto [lo, hi] = quantRange(a.dtype());
  const auto c = static_cast<int64_t>(std::nearbyint(static_cast<float>(b / qa.scale)));
  const int64_t z = qa.zeroPoint;
  std::vector<int32_t> ints = intsOf(a);
  std::vector<int64_t> v(ints.size());
  double outScale = qa.scale;
  int64_t outZp = z - c;
  if (c > hi - z || c < lo - z) {
    const bool over = c > hi - z;
    outScale = (over ? static_cast<double>(hi - (z - c)) : static_cast<double>(z - (lo + c))) /
               static_cast<double>(hi - lo) * qa.scale;
    outZp = over ? lo : hi;
    const float mult = static_cast<float>(qa.scale) * (1.0f / static_cast<float>(outScale));
    for (size_t i = 0; i < ints.size(); ++i) {
      const auto sum = static_cast<int32_t>(ints[i] - z + c);
      v[i] = std::clamp<int64_t>(outZp + std::lrintf(static_cast<float>(sum) * mult), lo, hi);
    }
  } else {
    for (size_t i = 0; i < ints.size(); ++i) v[i] = ints[i];
  }
  if (relu)
    for (auto& x : v) x = std::max(x, outZp);
  return inLayoutOf(fromInts(v, a.sizes(), a.dtype(), outScale, outZp), a);
}

Tensor qmulScalar(const Tensor& a, double b) {
  // PyTorch's qmul_scalar (qmul.cpp _mul_scalar_out): b > 0 scales the scale (same integers);
  // b == 0 gives zeros at scale 1, zero point 0; b < 0 mirrors the integers (qmax + qmin - q)
  // at scale |b| * scale, zero point qmax - (zp - qmin).
  const QuantizerInfo& qa = perTensorOf(a, "quantized::mul_scalar");
  auto [lo, hi] = quantRange(a.dtype());
  std::vector<int32_t> ints = intsOf(a);
  std::vector<int64_t> v(ints.size());
  double outScale = qa.scale * b;
  int64_t outZp = qa.zeroPoint;
  if (b == 0.0) {
    outScale = 1.0;
    outZp = 0;
  } else if (b < 0.0) {
    outScale = std::abs(b) * qa.scale;
    outZp = hi - (qa.zeroPoint - lo);
  }
  for (size_t i = 0; i < ints.size(); ++i)
    v[i] = b > 0.0 ? ints[i] : b == 0.0 ? 0 : hi + lo - ints[i];
  return inLayoutOf(fromInts(v, a.sizes(), a.dtype(), outScale, outZp), a);
}

Tensor qcat(const std::vector<Tensor>& xs, int64_t dim, std::optional<double> scale,
            std::optional<int64_t> zeroPoint, bool relu) {
  const char* op = "quantized::cat";
  if (xs.empty()) throw Error(fmt::format("{}: expected a non-empty list of tensors", op));
  const QuantizerInfo& q0 = perTensorOf(xs[0], op);
  const double s = scale.value_or(q0.scale);
  const int64_t z = zeroPoint.value_or(q0.zeroPoint);
  bool same = !relu;
  for (const Tensor& t : xs) {
    const QuantizerInfo& q = perTensorOf(t, op);
    if (t.dtype() != xs[0].dtype())
      throw Error(fmt::format("{}: all inputs must have the same dtype", op));
    same = same && q.scale == s && q.zeroPoint == z;
  }
  if (same) {
    std::vector<Tensor> ints;
    for (const Tensor& t : xs) ints.push_back(intRepr(t));
    Tensor r = cat(ints, dim);
    Tensor out = emptyQuantized(r.sizes(), xs[0].dtype(), s, z);
    std::memcpy(out.rawData(), r.contiguous().rawData(), r.nbytes());
    return inLayoutOf(out, xs[0]);
  }
  std::vector<Tensor> fs;
  for (const Tensor& t : xs) fs.push_back(dequantize(t));
  Tensor c = cat(fs, dim);
  if (relu) c = ops::relu(c);
  return inLayoutOf(quantizePerTensor(c, s, z, xs[0].dtype()), xs[0]);
}

Tensor qrelu(const Tensor& x) {
  const QuantizerInfo& q = perTensorOf(x, "relu");
  std::vector<int32_t> ints = intsOf(x);
  std::vector<int64_t> v(ints.size());
  for (size_t i = 0; i < ints.size(); ++i) v[i] = std::max<int64_t>(ints[i], q.zeroPoint);
  return inLayoutOf(fromInts(v, x.sizes(), x.dtype(), q.scale, q.zeroPoint), x);
}

Tensor qhardswish(const Tensor& x, double scale, int64_t zeroPoint) {
  // PyTorch's qhardswish_kernel (vector body): fma dequantize, x * min(max(x + 3, 0), 6) / 6 in
  // float (a division, not a multiply by 1/6), quantize with float(1.0 / scale) computed in double.
  const QuantizerInfo& q = perTensorOf(x, "hardswish");
  checkScale(scale, "hardswish");
  checkZeroPoint(zeroPoint, x.dtype(), "hardswish");
  auto [lo, hi] = quantRange(x.dtype());
  const float s = static_cast<float>(q.scale), premul = -(s * static_cast<float>(q.zeroPoint));
  const auto inv = static_cast<float>(1.0 / scale);
  std::vector<int32_t> ints = intsOf(x);
  std::vector<int64_t> out(ints.size());
  for (size_t i = 0; i < ints.size(); ++i) {
    const float d = std::fma(s, static_cast<float>(ints[i]), premul);
    out[i] =
        quantizeOne(d * std::min(std::max(d + 3.0f, 0.0f), 6.0f) / 6.0f, inv, zeroPoint, lo, hi);
  }
  return inLayoutOf(fromInts(out, x.sizes(), x.dtype(), scale, zeroPoint), x);
}
Tensor qhardsigmoid(const Tensor& x) {
  const QuantizerInfo& q = perTensorOf(x, "hardsigmoid");
  // PyTorch's fixed output qparams for [0, 1]: scale 2^-8 (2^-32 for qint32), zero point 0
  // (-128 for qint8)
  const double outScale = x.dtype() == ScalarType::QInt32 ? 2.3283064365386963e-10 : 0.00390625;
  const int64_t outZp = x.dtype() == ScalarType::QInt8 ? -128 : 0;
  auto [lo, hi] = quantRange(x.dtype());
  const float s = static_cast<float>(q.scale), premul = -(s * static_cast<float>(q.zeroPoint));
  const float inv = 1.0f / static_cast<float>(outScale);
  std::vector<int32_t> ints = intsOf(x);
  std::vector<int64_t> out(ints.size());
  for (size_t i = 0; i < ints.size(); ++i) {
    const float d = std::fma(s, static_cast<float>(ints[i]), premul);
    out[i] = quantizeOne(std::min(std::max(d + 3.0f, 0.0f), 6.0f) / 6.0f, inv, outZp, lo, hi);
  }
  return inLayoutOf(fromInts(out, x.sizes(), x.dtype(), outScale, outZp), x);
}
Tensor qsigmoid(const Tensor& x, double scale, int64_t zeroPoint) {
  return inLayoutOf(quantizePerTensor(sigmoid(dequantizeFma(x)), scale, zeroPoint, x.dtype()), x);
}
Tensor qtanh(const Tensor& x) {
  // PyTorch's fixed output qparams for tanh: [-1, 1] over the dtype's range.
  const bool u8 = x.dtype() == ScalarType::QUInt8;
  return inLayoutOf(quantizePerTensor(tanh(dequantizeFma(x)), 2.0 / 256.0, u8 ? 128 : 0, x.dtype()),
                    x);
}
Tensor qleakyRelu(const Tensor& x, double slope, double scale, int64_t zeroPoint) {
  return inLayoutOf(
      quantizePerTensor(leakyRelu(dequantizeFma(x), Scalar(slope)), scale, zeroPoint, x.dtype()),
      x);
}
Tensor qthreshold(const Tensor& x, double threshold, double value) {
  const QuantizerInfo& q = perTensorOf(x, "threshold");
  auto [lo, hi] = quantRange(x.dtype());
  const float s = static_cast<float>(q.scale), premul = -(s * static_cast<float>(q.zeroPoint));
  const float th = static_cast<float>(threshold), v = static_cast<float>(value);
  const float inv = 1.0f / s;
  std::vector<int32_t> ints = intsOf(x);
  std::vector<int64_t> out(ints.size());
  for (size_t i = 0; i < ints.size(); ++i) {
    const float d = std::fma(s, static_cast<float>(ints[i]), premul);
    out[i] = quantizeOne(d > th ? d : v, inv, q.zeroPoint, lo, hi);
  }
  return inLayoutOf(fromInts(out, x.sizes(), x.dtype(), q.scale, q.zeroPoint), x);
}

Tensor qclamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  const QuantizerInfo& q = perTensorOf(x, "clamp");
  auto [qlo, qhi] = quantRange(x.dtype());
  const float inv = 1.0f / static_cast<float>(q.scale);
  const int64_t l = lo ? quantizeOne(static_cast<float>(*lo), inv, q.zeroPoint, qlo, qhi) : qlo;
  const int64_t h = hi ? quantizeOne(static_cast<float>(*hi), inv, q.zeroPoint, qlo, qhi) : qhi;
  std::vector<int32_t> ints = intsOf(x);
  std::vector<int64_t> v(ints.size());
  for (size_t i = 0; i < ints.size(); ++i)
    v[i] = std::min<int64_t>(std::max<int64_t>(ints[i], l), h);
  return inLayoutOf(fromInts(v, x.sizes(), x.dtype(), q.scale, q.zeroPoint), x);
}

Tensor qbatchNorm(const Tensor& x, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, const Tensor& mean, const Tensor& var,
                  double eps, double scale, int64_t zeroPoint, bool relu) {
  const char* op = "quantized::batch_norm";
  const QuantizerInfo& q = perTensorOf(x, op);
  if (x.dim() < 2) throw Error(fmt::format("{}: input must have at least 2 dims", op));
  const int64_t C = x.size(1);
  Tensor mc = mean.to(ScalarType::Float), vc = var.to(ScalarType::Float);
  Tensor wc = weight ? weight->to(ScalarType::Float) : Tensor();
  Tensor bc = bias ? bias->to(ScalarType::Float) : Tensor();
  TL_CHECK(mc.numel() == C && vc.numel() == C, "{}: mean and var must have {} values", op, C);
  std::vector<float> alpha(static_cast<size_t>(C)), beta(static_cast<size_t>(C));
  const float inScale = static_cast<float>(q.scale), outScale = static_cast<float>(scale);
  for (int64_t c = 0; c < C; ++c) {
    const float invSigma = 1.0f / std::sqrt(vc.data<float>()[c] + static_cast<float>(eps));
    const float w = weight ? wc.data<float>()[c] : 1.0f;
    const float b = bias ? bc.data<float>()[c] : 0.0f;
    alpha[static_cast<size_t>(c)] = invSigma * w * (inScale / outScale);
    beta[static_cast<size_t>(c)] = (b - mc.data<float>()[c] * invSigma * w) * (1.0f / outScale) +
                                   static_cast<float>(zeroPoint);
  }
  auto [lo, hi] = quantRange(x.dtype());
  if (relu) lo = std::max(lo, zeroPoint);
  std::vector<int32_t> ints = intsOf(x);
  int64_t inner = 1;
  for (int64_t d = 2; d < x.dim(); ++d) inner *= x.size(d);
  std::vector<int64_t> v(ints.size());
  for (size_t i = 0; i < ints.size(); ++i) {
    const size_t c = static_cast<size_t>((static_cast<int64_t>(i) / inner) % C);
    const float xf = static_cast<float>(ints[i] - static_cast<int32_t>(q.zeroPoint));
    v[i] = std::clamp<int64_t>(std::lrintf(std::fma(xf, alpha[c], beta[c])), lo, hi);
  }
  return fromInts(v, x.sizes(), x.dtype(), scale, zeroPoint);
}

// ---- pooling ---------------------------------------------------------------------------------

namespace {
// PyTorch's pooling_output_shape.
int64_t poolOut(int64_t in, int64_t k, int64_t pad, int64_t st, int64_t dil, bool ceil) {
  const int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? st - 1 : 0);
  int64_t out = (num >= 0 ? num / st : -((-num + st - 1) / st)) + 1;
  if (ceil && (out - 1) * st >= in + pad) --out;
  return out;
}
}  // namespace

Tensor qmaxPool(const Tensor& x, int64_t spatialDims, const IntList& kernel, const IntList& stride,
                const IntList& padding, const IntList& dilation, bool ceilMode) {
  perTensorOf(x, "max_pool");
  // 2-d over a contiguous 4-d uint8 / int8 tensor: the max of the integers, in place (the
  // general path below converts to float and back).
  const bool channelsLast = x.dim() == 4 && !x.isContiguous() && x.strides()[1] == 1 &&
                            isNonOverlappingAndDense(x) && x.strides()[3] == x.size(1) &&
                            x.strides()[2] == x.size(1) * x.size(3);
  if (spatialDims == 2 && x.dim() == 4 && (x.isContiguous() || channelsLast) &&
      kernel.size() == 2 && padding.size() == 2 && dilation.size() == 2 &&
      (stride.size() == 2 || stride.empty()) && x.dtype() != ScalarType::QInt32) {
    const IntList st = stride.empty() ? kernel : stride;
    bool valid = true;
    for (size_t i = 0; i < 2; ++i)
      valid = valid && kernel[i] > 0 && st[i] > 0 && dilation[i] > 0 && padding[i] >= 0 &&
              padding[i] * 2 <= kernel[i];
    const int64_t H = x.size(2), W = x.size(3);
    const int64_t OH = valid ? poolOut(H, kernel[0], padding[0], st[0], dilation[0], ceilMode) : 0;
    const int64_t OW = valid ? poolOut(W, kernel[1], padding[1], st[1], dilation[1], ceilMode) : 0;
    if (valid && OH > 0 && OW > 0) {
      const QuantizerInfo& q = *x.quantizer();
      const int64_t N = x.size(0), C = x.size(1);
      if (channelsLast) {
        // NHWC in, NHWC out (as PyTorch's quantized max_pool2d keeps the memory format): the
        // channels of one output pixel are one vectorizable row.
        Tensor y = emptyQuantizedStrided({N, C, OH, OW}, {OH * OW * C, 1, OW * C, C}, x.dtype(),
                                         q.scale, q.zeroPoint);
        dispatchQuant(x.dtype(), [&](auto tag) {
          using T = decltype(tag);
          const T* xp = static_cast<const T*>(x.rawData());
          T* yp = static_cast<T*>(y.rawData());
          parallelFor(N * OH, 1, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) {
              const int64_t n = r / OH, oh = r % OH;
              for (int64_t ow = 0; ow < OW; ++ow) {
                T* out = yp + (r * OW + ow) * C;
                std::fill(out, out + C, std::numeric_limits<T>::lowest());
                for (int64_t kh = 0; kh < kernel[0]; ++kh) {
                  const int64_t ih = oh * st[0] - padding[0] + kh * dilation[0];
                  if (ih < 0 || ih >= H) continue;
                  for (int64_t kw = 0; kw < kernel[1]; ++kw) {
                    const int64_t iw = ow * st[1] - padding[1] + kw * dilation[1];
                    if (iw < 0 || iw >= W) continue;
                    const T* in = xp + ((n * H + ih) * W + iw) * C;
                    for (int64_t c = 0; c < C; ++c) out[c] = std::max(out[c], in[c]);
                  }
                }
              }
            }
          });
        });
        return y;
      }
      Tensor y = emptyQuantized({x.size(0), x.size(1), OH, OW}, x.dtype(), q.scale, q.zeroPoint);
      dispatchQuant(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* xp = static_cast<const T*>(x.rawData());
        T* yp = static_cast<T*>(y.rawData());
        parallelFor(x.size(0) * x.size(1), 1, [&](int64_t p0, int64_t p1) {
          for (int64_t p = p0; p < p1; ++p)
            for (int64_t oh = 0; oh < OH; ++oh)
              for (int64_t ow = 0; ow < OW; ++ow) {
                T m = std::numeric_limits<T>::lowest();
                for (int64_t kh = 0; kh < kernel[0]; ++kh) {
                  const int64_t ih = oh * st[0] - padding[0] + kh * dilation[0];
                  if (ih < 0 || ih >= H) continue;
                  for (int64_t kw = 0; kw < kernel[1]; ++kw) {
                    const int64_t iw = ow * st[1] - padding[1] + kw * dilation[1];
                    if (iw >= 0 && iw < W) m = std::max(m, xp[(p * H + ih) * W + iw]);
                  }
                }
                yp[(p * OH + oh) * OW + ow] = m;
              }
        });
      });
      return y;
    }
  }
  return onIntegers(x, [&](const Tensor& f) {
    return maxPool(f, spatialDims, kernel, stride, padding, dilation, ceilMode);
  });
}

Tensor qavgPool(const Tensor& x, int64_t spatialDims, const IntList& kernel, const IntList& stride,
                const IntList& padding, bool ceilMode, bool countIncludePad,
                std::optional<int64_t> divisorOverride) {
  const char* op = "avg_pool";
  const QuantizerInfo& q = perTensorOf(x, op);
  const int64_t S = spatialDims;
  if (x.dim() != S + 1 && x.dim() != S + 2)
    throw Error(
        fmt::format("{}: expected a {}-d or {}-d input, got {}-d", op, S + 1, S + 2, x.dim()));
  auto at = [](const IntList& v, int64_t i, int64_t dflt) {
    if (v.empty()) return dflt;
    return v.size() == 1 ? v[0] : v[static_cast<size_t>(i)];
  };
  // Spatial dims padded to 3 (D, H, W) with size 1.
  IntList in(3, 1), k(3, 1), st(3, 1), pd(3, 0), out(3, 1);
  for (int64_t i = 0; i < S; ++i) {
    const size_t j = static_cast<size_t>(3 - S + i);
    in[j] = x.size(x.dim() - S + i);
    k[j] = at(kernel, i, 1);
    st[j] = stride.empty() ? k[j] : at(stride, i, k[j]);
    pd[j] = at(padding, i, 0);
    out[j] = poolingOutputSize(in[j], k[j], pd[j], st[j], 1, ceilMode);
    if (out[j] <= 0) throw Error(fmt::format("{}: output size is too small", op));
  }
  const int64_t planes = x.numel() / (in[0] * in[1] * in[2]);
  std::vector<int32_t> ints = intsOf(x);
  auto [lo, hi] = quantRange(x.dtype());
  const int32_t zp = static_cast<int32_t>(q.zeroPoint);
  IntList outSizes(x.sizes().begin(), x.sizes().end() - S);
  for (int64_t i = 0; i < S; ++i) outSizes.push_back(out[static_cast<size_t>(3 - S + i)]);
  std::vector<int64_t> v(static_cast<size_t>(planes * out[0] * out[1] * out[2]));
  size_t o = 0;
  for (int64_t p = 0; p < planes; ++p) {
    const int32_t* xp = ints.data() + p * in[0] * in[1] * in[2];
    for (int64_t od = 0; od < out[0]; ++od)
      for (int64_t oh = 0; oh < out[1]; ++oh)
        for (int64_t ow = 0; ow < out[2]; ++ow) {
          int64_t s[3] = {od * st[0] - pd[0], oh * st[1] - pd[1], ow * st[2] - pd[2]};
          int64_t e[3];
          int64_t poolSize = 1, size = 1;
          for (size_t j = 0; j < 3; ++j) {
            e[j] = std::min(s[j] + k[j], in[j] + pd[j]);
            poolSize *= e[j] - s[j];
            s[j] = std::max<int64_t>(s[j], 0);
            e[j] = std::min(e[j], in[j]);
            size *= std::max<int64_t>(e[j] - s[j], 0);
          }
          int64_t acc = 0;
          for (int64_t d = s[0]; d < e[0]; ++d)
            for (int64_t h = s[1]; h < e[1]; ++h)
              for (int64_t w = s[2]; w < e[2]; ++w) acc += xp[(d * in[1] + h) * in[2] + w] - zp;
          const int64_t div = divisorOverride   ? *divisorOverride
                              : countIncludePad ? poolSize
                                                : size;
          if (div == 0) throw Error(fmt::format("{}: division by zero", op));
          // PyTorch adds the zero point before rounding: nearbyint(acc / div + zp).
          const float r = std::nearbyint(static_cast<float>(acc) / static_cast<float>(div) +
                                         static_cast<float>(zp));
          v[o++] = std::clamp<int64_t>(static_cast<int64_t>(r), lo, hi);
        }
  }
  return fromInts(v, outSizes, x.dtype(), q.scale, q.zeroPoint);
}

Tensor qadaptiveAvgPool(const Tensor& x, int64_t spatialDims, const IntList& outputSize) {
  const QuantizerInfo& q = perTensorOf(x, "adaptive_avg_pool");
  // PyTorch's channels-last qadaptive_avg_pool kernel: acc = (window sum of the integers) -
  // zp * size in int32, y = nearbyint(float(acc) * float(in_scale / out_scale / size)) + zp;
  // the zero point comes off before rounding, so with an odd zp a tie rounds the other way than
  // sum / size would. Its contiguous (NCHW) kernel rounds float(sum / size) instead; the
  // quantized ops here do not keep PyTorch's memory formats, so the channels-last rule (what
  // follows quantized convs, e.g. mobilenet_v3's squeeze-excite) is taken for every input: one
  // quantum at such ties for a contiguous input (api.quantized's static_pooling says so).
  // The window sums come from the float adaptive pool in double (exact), times the window size.
  Tensor f = intRepr(x).to(ScalarType::Double);
  Tensor means = adaptiveAvgPool(f, spatialDims, outputSize);
  Tensor mc = means.contiguous();
  const int64_t nd = mc.dim();
  std::vector<std::vector<int64_t>> lens(
      static_cast<size_t>(spatialDims));  // window lengths per dim
  for (int64_t d = 0; d < spatialDims; ++d) {
    const int64_t in = x.sizes()[static_cast<size_t>(nd - spatialDims + d)];
    const int64_t out = mc.sizes()[static_cast<size_t>(nd - spatialDims + d)];
    for (int64_t o = 0; o < out; ++o) {
      const int64_t start = (o * in) / out, end = ((o + 1) * in + out - 1) / out;
      lens[static_cast<size_t>(d)].push_back(end - start);
    }
  }
  auto [lo, hi] = quantRange(x.dtype());
  const double ratio = q.scale / q.scale;
  std::vector<int64_t> v(static_cast<size_t>(mc.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t size = 1, rest = static_cast<int64_t>(i);
    for (int64_t d = spatialDims - 1; d >= 0; --d) {
      const auto& l = lens[static_cast<size_t>(d)];
      const auto n = static_cast<int64_t>(l.size());
      size *= l[static_cast<size_t>(rest % n)];
      rest /= n;
    }
    const auto sum =
        static_cast<int64_t>(std::llround(mc.data<double>()[i] * static_cast<double>(size)));
    const int64_t acc = sum - q.zeroPoint * size;
    const auto mult = static_cast<float>(ratio / static_cast<double>(size));
    const auto r = static_cast<int64_t>(roundHalfEven(static_cast<float>(acc) * mult));
    v[i] = std::clamp<int64_t>(r + q.zeroPoint, lo, hi);
  }
  return fromInts(v, mc.sizes(), x.dtype(), q.scale, q.zeroPoint);
}

Tensor qmean(const Tensor& x, const IntList& dims, bool keepdim) {
  const QuantizerInfo& q = perTensorOf(x, "mean");
  const int64_t nd = x.dim();
  std::vector<int64_t> ds;
  for (int64_t d : dims) ds.push_back(wrapDim(d, nd));
  std::sort(ds.begin(), ds.end(), std::greater<int64_t>());
  bool inner = ds.empty() || ds[0] == nd - 1;
  for (size_t i = 1; i < ds.size(); ++i) inner = inner && ds[i] == ds[i - 1] - 1;
  if (ds.empty())
    for (int64_t i = nd - 1; i >= 0; --i) ds.push_back(i);
  const int64_t k = static_cast<int64_t>(ds.size());
  IntList outSizes;
  if (!(x.isContiguous() && inner)) {
    // Dequantize ((q - zp) * scale), sum the reduced elements in order in float (PyTorch's
    // reduction over outer dims accumulates sequentially), divide by the count in float.
    IntList perm, kept;
    for (int64_t i = 0; i < nd; ++i)
      if (std::find(ds.begin(), ds.end(), i) == ds.end()) perm.push_back(i);
    for (auto it = ds.rbegin(); it != ds.rend(); ++it) perm.push_back(*it);
    Tensor f = permute(dequantize(x), perm).contiguous();
    int64_t count = 1;
    for (int64_t i = 0; i < nd; ++i) {
      const bool reduced = std::find(ds.begin(), ds.end(), i) != ds.end();
      if (reduced) count *= x.sizes()[i];
      if (!reduced)
        outSizes.push_back(x.sizes()[i]);
      else if (keepdim)
        outSizes.push_back(1);
    }
    Tensor m = Tensor::empty(outSizes, ScalarType::Float);
    const int64_t groups = m.numel();
    const float* fp = f.data<float>();
    for (int64_t g = 0; g < groups; ++g) {
      float acc = 0.0f;
      for (int64_t i = 0; i < count; ++i) acc += fp[g * count + i];
      m.data<float>()[g] = acc / static_cast<float>(count);
    }
    return quantizePerTensor(m, q.scale, q.zeroPoint, x.dtype());
  }
  int64_t groups = 1, count = 1;
  for (int64_t i = 0; i < nd; ++i) {
    if (i < nd - k) {
      groups *= x.sizes()[i];
      outSizes.push_back(x.sizes()[i]);
    } else {
      count *= x.sizes()[i];
      if (keepdim) outSizes.push_back(1);
    }
  }
  std::vector<int32_t> ints = intsOf(x);
  std::vector<int64_t> v(static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g) {
    int64_t sum = 0;
    for (int64_t i = 0; i < count; ++i) sum += ints[static_cast<size_t>(g * count + i)];
    // float(sum) / N, then nearbyint (no saturation: a mean of in-range integers is in range)
    v[static_cast<size_t>(g)] =
        static_cast<int64_t>(std::nearbyint(static_cast<float>(sum) / static_cast<float>(count)));
  }
  return fromInts(v, outSizes, x.dtype(), q.scale, q.zeroPoint);
}

Tensor qsoftmax(const Tensor& x, int64_t dim, double scale, int64_t zeroPoint) {
  perTensorOf(x, "quantized::softmax");
  return quantizePerTensor(softmax(dequantizeFma(x), dim), scale, zeroPoint, x.dtype());
}

Tensor qelu(const Tensor& x, double scale, int64_t zeroPoint, double alpha, double outScale,
            double inputScale) {
  return quantizePerTensor(
      elu(dequantizeFma(x), Scalar(alpha), Scalar(outScale), Scalar(inputScale)), scale, zeroPoint,
      x.dtype());
}

Tensor qmatmul(const Tensor& a, const Tensor& b, double scale, int64_t zeroPoint) {
  TL_CHECK(a.dtype() == b.dtype(),
           "quantized::matmul: both inputs must have the same quantized dtype");
  return quantizePerTensor(matmul(dequantize(a), dequantize(b)), scale, zeroPoint, a.dtype());
}

Tensor qembeddingBag(const Tensor& weight, const Tensor& indices,
                     const std::optional<Tensor>& offsets, int64_t bits, int64_t mode,
                     const std::optional<Tensor>& perSampleWeights, bool includeLastOffset) {
  const char* op = bits == 8 ? "quantized::embedding_bag_byte" : "quantized::embedding_bag_4bit";
  if (weight.dim() != 2 || weight.dtype() != ScalarType::Byte)
    throw Error(fmt::format("{}: weight must be a 2-d uint8 tensor of packed rows", op));
  if (mode != 0 && mode != 1)
    throw Error(fmt::format("{}: only mode sum (0) and mean (1) are supported", op));
  Tensor w = weight.contiguous();
  const int64_t rows = w.size(0), rowBytes = w.size(1);
  const int64_t tail = bits == 8 ? 8 : 4;  // float32 scale+bias, or fp16 scale+bias
  const int64_t D = bits == 8 ? rowBytes - tail : (rowBytes - tail) * 2;
  if (D <= 0) throw Error(fmt::format("{}: packed rows of {} bytes hold no values", op, rowBytes));
  Tensor idx = indices.to(ScalarType::Long).contiguous();
  const int64_t nIdx = idx.numel();
  std::vector<int64_t> offs;
  if (offsets) {
    Tensor o = offsets->to(ScalarType::Long).contiguous();
    for (int64_t i = 0; i < o.numel(); ++i) offs.push_back(o.data<int64_t>()[i]);
  } else {
    if (idx.dim() != 2) throw Error(fmt::format("{}: offsets are required for 1-d indices", op));
    for (int64_t i = 0; i < idx.size(0); ++i) offs.push_back(i * idx.size(1));
  }
  if (!includeLastOffset || offs.empty()) offs.push_back(nIdx);
  const int64_t bags = static_cast<int64_t>(offs.size()) - 1;
  Tensor psw = perSampleWeights ? perSampleWeights->to(ScalarType::Float).contiguous() : Tensor();
  Tensor out = zeros({bags, D}, ScalarType::Float);
  float* o = out.data<float>();
  const uint8_t* wp = w.data<uint8_t>();
  const int64_t* ip = idx.data<int64_t>();
  for (int64_t b = 0; b < bags; ++b) {
    const int64_t s = offs[static_cast<size_t>(b)],
                  e = std::min(offs[static_cast<size_t>(b) + 1], nIdx);
    if (s < 0 || s > e)
      throw Error(fmt::format("{}: offsets must be non-decreasing and start at 0", op));
    for (int64_t i = s; i < e; ++i) {
      const int64_t r = ip[i];
      if (r < 0 || r >= rows)
        throw Error(fmt::format("{}: index {} is out of range for {} rows", op, r, rows));
      const uint8_t* row = wp + r * rowBytes;
      float scale, bias;
      if (bits == 8) {
        std::memcpy(&scale, row + D, 4);
        std::memcpy(&bias, row + D + 4, 4);
      } else {
        Half hs, hb;
        std::memcpy(&hs, row + rowBytes - 4, 2);
        std::memcpy(&hb, row + rowBytes - 2, 2);
        scale = static_cast<float>(hs);
        bias = static_cast<float>(hb);
      }
      const float wgt = perSampleWeights ? psw.data<float>()[i] : 1.0f;
      for (int64_t d = 0; d < D; ++d) {
        const int q = bits == 8 ? row[d] : (row[d / 2] >> ((d % 2) * 4)) & 0xF;
        o[b * D + d] += wgt * std::fma(scale, static_cast<float>(q), bias);
      }
    }
  }
  return out;
}

}  // namespace torchless::ops
