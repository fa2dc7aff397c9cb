#include "ops/norm.h"

#include "ops/dispatch.h"
#include "ops/dnnl_utils.h"
#include "ops/parallel.h"
#include "ops/shape.h"
#include "ops/thread_budget.h"

#include <cmath>
#include <cstring>
#include <unordered_map>

namespace torchless::ops {
namespace {

std::vector<double> toDoubles(const OptTensor& t, int64_t n, double dflt, const char* name) {
  if (!t || !t->defined()) return std::vector<double>(static_cast<size_t>(n), dflt);
  TL_CHECK(t->numel() == n, "{} should contain {} elements not {}", name, n, t->numel());
  Tensor c = t->to(ScalarType::Double);
  const double* p = c.data<double>();
  return std::vector<double>(p, p + n);
}

// x viewed as [outer, C, inner] contiguous; y = (x - mean[o,c]) * invstd[o,c] * w[c] + b[c].
// Statistics are per (o, c) group given by statIndex(o, c).
template <typename Stat>
Tensor normalize(const Tensor& x, int64_t outer, int64_t C, int64_t inner,
                 const std::vector<double>& w, const std::vector<double>& b, const Stat& stat,
                 const char* name) {
  if (!isFloatingType(x.dtype())) notImplemented(name, x.dtype());
  Tensor c = x.contiguous();
  Tensor out = Tensor::empty(x.sizes(), x.dtype());
  dispatchFloating(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T* ip = c.data<T>();
    T* op = out.data<T>();
    parallelFor(outer * C, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)),
                [&](int64_t lo, int64_t hi) {
                  for (int64_t oc = lo; oc < hi; ++oc) {
                    const int64_t o = oc / C, ch = oc % C;
                    const auto [mean, invstd] = stat(o, ch);
                    const double scale = invstd * w[static_cast<size_t>(ch)];
                    const double shift = b[static_cast<size_t>(ch)] - mean * scale;
                    const T* in = ip + oc * inner;
                    T* dst = op + oc * inner;
                    for (int64_t i = 0; i < inner; ++i)
                      dst[i] = castTo<T>(
                          static_cast<double>(static_cast<OpMath<T>>(in[i])) * scale + shift);
                  }
                });
  });
  return out;
}

// Mean and biased variance of each group of `len` contiguous values (after permuting so the
// group is contiguous).
std::vector<std::pair<double, double>> groupStats(const Tensor& rows, int64_t groups, int64_t len) {
  std::vector<std::pair<double, double>> st(static_cast<size_t>(groups));
  dispatchFloating(rows.dtype(), "norm_stats", [&](auto tag) {
    using T = decltype(tag);
    const T* p = rows.data<T>();
    parallelFor(groups, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t gi = lo; gi < hi; ++gi) {
        const T* r = p + gi * len;
        double m = 0;
        for (int64_t i = 0; i < len; ++i) m += static_cast<double>(static_cast<OpMath<T>>(r[i]));
        m /= static_cast<double>(std::max<int64_t>(len, 1));
        double v = 0;
        for (int64_t i = 0; i < len; ++i) {
          const double d = static_cast<double>(static_cast<OpMath<T>>(r[i])) - m;
          v += d * d;
        }
        st[static_cast<size_t>(gi)] = {m, v / static_cast<double>(std::max<int64_t>(len, 1))};
      }
    });
  });
  return st;
}

// Float layer_norm of contiguous [outer, len] rows with oneDNN's layer normalization (a cached
// primitive, Note [oneDNN primitive cache]), in float as PyTorch's CPU kernel computes it.
// weight / bias: float, `len` contiguous elements, or undefined. Returns false when oneDNN
// does not take the problem.
bool layerNormDnnl(const Tensor& c, const Tensor& out, int64_t outer, int64_t len, const Tensor& w,
                   const Tensor& b, double eps) {
  namespace du = dnnl_utils;
  using dnnl::normalization_flags;
  const float epsF = static_cast<float>(eps);
  int32_t epsBits = 0;
  std::memcpy(&epsBits, &epsF, sizeof epsBits);
  auto flags = normalization_flags::none;
  if (w.defined()) flags = flags | normalization_flags::use_scale;
  if (b.defined()) flags = flags | normalization_flags::use_shift;
  const dnnl::memory::desc md({outer, len}, dnnl::memory::data_type::f32,
                              dnnl::memory::format_tag::ab);
  // Note [Thread budget]: threads by the work (about 8 flops an element), when the primitive is
  // made and when it runs; the key takes the limited count.
  ThreadLimit limit(threadsForWork(8.0 * static_cast<double>(outer) * static_cast<double>(len)));
  const du::PrimitiveKey key{
      2, outer, len, static_cast<int64_t>(flags), epsBits, omp_get_max_threads()};
  std::shared_ptr<dnnl::primitive> prim;
  try {
    prim = du::cachedPrimitive(key, [&] {
      dnnl::layer_normalization_forward::desc d(dnnl::prop_kind::forward_inference, md, epsF,
                                                flags);
      return dnnl::layer_normalization_forward(
          dnnl::layer_normalization_forward::primitive_desc(d, du::userScratchpad(), du::engine()));
    });
  } catch (const dnnl::error&) {
    return false;
  }
  auto& eng = du::engine();
  const dnnl::memory::desc vd({len}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnnl::memory(md, eng, c.rawData())},
                                             {DNNL_ARG_DST, dnnl::memory(md, eng, out.rawData())}};
  if (w.defined()) args.emplace(DNNL_ARG_SCALE, dnnl::memory(vd, eng, w.rawData()));
  if (b.defined()) args.emplace(DNNL_ARG_SHIFT, dnnl::memory(vd, eng, b.rawData()));
  du::execute(*prim, args);  // Note [Scratchpads of shared primitives]
  return true;
}

}  // namespace

Tensor batchNorm(const Tensor& x, const OptTensor& runningMean, const OptTensor& runningVar,
                 const OptTensor& weight, const OptTensor& bias, bool training, double momentum,
                 double eps) {
  TL_CHECK(x.dim() >= 2, "batch_norm: expected at least 2D input (got {}D input)", x.dim());
  const int64_t N = x.sizes()[0], C = x.sizes()[1];
  const int64_t inner = x.numel() / std::max<int64_t>(N * C, 1);
  const auto w = toDoubles(weight, C, 1.0, "weight");
  const auto b = toDoubles(bias, C, 0.0, "bias");
  const bool haveRunning =
      runningMean && runningMean->defined() && runningVar && runningVar->defined();
  std::vector<std::pair<double, double>> st(static_cast<size_t>(C));
  if (training || !haveRunning) {
    TL_CHECK(N * inner > 1 || !training,
             "Expected more than 1 value per channel when training, got input size {}",
             sizesToString(x.sizes()));
    // channel-major contiguous copy: [C, N * inner]
    Tensor rows = reshape(transpose(reshape(x, {N, C, inner}), 0, 1), {C, N * inner}).contiguous();
    st = groupStats(rows, C, N * inner);
  } else {
    const auto m = toDoubles(runningMean, C, 0.0, "running_mean");
    const auto v = toDoubles(runningVar, C, 1.0, "running_var");
    for (int64_t c = 0; c < C; ++c)
      st[static_cast<size_t>(c)] = {m[static_cast<size_t>(c)], v[static_cast<size_t>(c)]};
  }
  return normalize(
      x, N, C, inner, w, b,
      [&](int64_t, int64_t c) {
        const auto& s = st[static_cast<size_t>(c)];
        return std::pair<double, double>(s.first, 1.0 / std::sqrt(s.second + eps));
      },
      "batch_norm");
}

Tensor layerNorm(const Tensor& x, const IntList& normalizedShape, const OptTensor& weight,
                 const OptTensor& bias, double eps) {
  const int64_t k = static_cast<int64_t>(normalizedShape.size());
  TL_CHECK(
      k >= 1 && k <= x.dim() && IntList(x.sizes().end() - k, x.sizes().end()) == normalizedShape,
      "Given normalized_shape={}, expected input with shape [*, {}], but got input of size{}",
      sizesToString(normalizedShape), fmt::join(normalizedShape, ", "), sizesToString(x.sizes()));
  const int64_t len = checkedNumel(normalizedShape);
  const int64_t outer = len == 0 ? 0 : x.numel() / len;
  Tensor c = x.contiguous();
  auto floatVector = [&](const OptTensor& t) {
    return !t || !t->defined() || (t->dtype() == ScalarType::Float && t->numel() == len);
  };
  if (x.dtype() == ScalarType::Float && outer > 0 && len > 0 && floatVector(weight) &&
      floatVector(bias)) {
    const Tensor w = weight && weight->defined() ? weight->contiguous() : Tensor();
    const Tensor b = bias && bias->defined() ? bias->contiguous() : Tensor();
    Tensor y = Tensor::empty(x.sizes(), ScalarType::Float);
    if (layerNormDnnl(c, y, outer, len, w, b, eps)) return y;
  }
  const auto st = groupStats(c, outer, len);
  // normalize with C = 1, then apply the elementwise affine over the normalized block.
  Tensor y = normalize(
      c, outer, 1, len, {1.0}, {0.0},
      [&](int64_t o, int64_t) {
        const auto& s = st[static_cast<size_t>(o)];
        return std::pair<double, double>(s.first, 1.0 / std::sqrt(s.second + eps));
      },
      "layer_norm");
  if ((weight && weight->defined()) || (bias && bias->defined())) {
    const auto w = toDoubles(weight, len, 1.0, "weight");
    const auto b = toDoubles(bias, len, 0.0, "bias");
    dispatchFloating(y.dtype(), "layer_norm", [&](auto tag) {
      using T = decltype(tag);
      T* p = y.data<T>();
      parallelFor(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(len, 1)),
                  [&](int64_t lo, int64_t hi) {
                    for (int64_t o = lo; o < hi; ++o)
                      for (int64_t i = 0; i < len; ++i) {
                        T& v = p[o * len + i];
                        v = castTo<T>(static_cast<double>(static_cast<OpMath<T>>(v)) *
                                          w[static_cast<size_t>(i)] +
                                      b[static_cast<size_t>(i)]);
                      }
                  });
    });
  }
  return y;
}

Tensor groupNorm(const Tensor& x, int64_t numGroups, const OptTensor& weight, const OptTensor& bias,
                 double eps) {
  TL_CHECK(x.dim() >= 2, "Expected at least 2 dimensions for input tensor but received {}",
           x.dim());
  const int64_t N = x.sizes()[0], C = x.sizes()[1];
  TL_CHECK(numGroups > 0 && C % numGroups == 0,
           "Expected number of channels in input to be divisible by num_groups, but got input of "
           "shape {} and num_groups={}",
           sizesToString(x.sizes()), numGroups);
  const int64_t inner = x.numel() / std::max<int64_t>(N * C, 1);
  Tensor c = x.contiguous();
  const auto st = groupStats(c, N * numGroups, (C / numGroups) * inner);
  const auto w = toDoubles(weight, C, 1.0, "weight");
  const auto b = toDoubles(bias, C, 0.0, "bias");
  const int64_t cpg = C / numGroups;
  return normalize(
      c, N, C, inner, w, b,
      [&](int64_t n, int64_t ch) {
        const auto& s = st[static_cast<size_t>(n * numGroups + ch / cpg)];
        return std::pair<double, double>(s.first, 1.0 / std::sqrt(s.second + eps));
      },
      "group_norm");
}

Tensor instanceNorm(const Tensor& x, const OptTensor& runningMean, const OptTensor& runningVar,
                    const OptTensor& weight, const OptTensor& bias, bool useInputStats,
                    double momentum, double eps) {
  TL_CHECK(x.dim() >= 2, "instance_norm: expected at least 2D input");
  const int64_t N = x.sizes()[0], C = x.sizes()[1];
  if (!useInputStats)
    return batchNorm(x, runningMean, runningVar, weight, bias, false, momentum, eps);
  const int64_t inner = x.numel() / std::max<int64_t>(N * C, 1);
  Tensor c = x.contiguous();
  const auto st = groupStats(c, N * C, inner);
  const auto w = toDoubles(weight, C, 1.0, "weight");
  const auto b = toDoubles(bias, C, 0.0, "bias");
  return normalize(
      c, N, C, inner, w, b,
      [&](int64_t n, int64_t ch) {
        const auto& s = st[static_cast<size_t>(n * C + ch)];
        return std::pair<double, double>(s.first, 1.0 / std::sqrt(s.second + eps));
      },
      "instance_norm");
}

}  // namespace torchless::ops
