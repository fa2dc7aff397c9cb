#include "ops/norm.h"

#include "ops/dispatch.h"
#include "ops/parallel.h"
#include "ops/shape.h"

#include <cmath>

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
Tensor normalize(const Tensor& x, int64_t outer, int64_t C, int64_t inner, const std::vector<double>& w,
                 const std::vector<double>& b, const Stat& stat, const char* name) {
  if (!isFloatingType(x.dtype())) notImplemented(name, x.dtype());
  Tensor c = x.contiguous();
  Tensor out = Tensor::empty(x.sizes(), x.dtype());
  dispatchFloating(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T* ip = c.data<T>();
    T* op = out.data<T>();
    parallelFor(outer * C, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), [&](int64_t lo, int64_t hi) {
      for (int64_t oc = lo; oc < hi; ++oc) {
        const int64_t o = oc / C, ch = oc % C;
        const auto [mean, invstd] = stat(o, ch);
        const double scale = invstd * w[static_cast<size_t>(ch)];
        const double shift = b[static_cast<size_t>(ch)] - mean * scale;
        const T* in = ip + oc * inner;
        T* dst = op + oc * inner;
        for (int64_t i = 0; i < inner; ++i)
          dst[i] = castTo<T>(static_cast<double>(static_cast<OpMath<T>>(in[i])) * scale + shift);
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

}  // namespace

Tensor batchNorm(const Tensor& x, const OptTensor& runningMean, const OptTensor& runningVar,
                 const OptTensor& weight, const OptTensor& bias, bool training, double momentum, double eps) {
  TL_CHECK(x.dim() >= 2, "batch_norm: expected at least 2D input (got {}D input)", x.dim());
  const int64_t N = x.sizes()[0], C = x.sizes()[1];
  const int64_t inner = x.numel() / std::max<int64_t>(N * C, 1);
  const auto w = toDoubles(weight, C, 1.0, "weight");
  const auto b = toDoubles(bias, C, 0.0, "bias");
  const bool haveRunning = runningMean && runningMean->defined() && runningVar && runningVar->defined();
  std::vector<std::pair<double, double>> st(static_cast<size_t>(C));
  if (training || !haveRunning) {
    TL_CHECK(N * inner > 1 || !training,
             "Expected more than 1 value per channel when training, got input size {}", sizesToString(x.sizes()));
    // channel-major contiguous copy: [C, N * inner]
    Tensor rows = reshape(transpose(reshape(x, {N, C, inner}), 0, 1), {C, N * inner}).contiguous();
    st = groupStats(rows, C, N * inner);
  } else {
    const auto m = toDoubles(runningMean, C, 0.0, "running_mean");
    const auto v = toDoubles(runningVar, C, 1.0, "running_var");
    for (int64_t c = 0; c < C; ++c) st[static_cast<size_t>(c)] = {m[static_cast<size_t>(c)], v[static_cast<size_t>(c)]};
  }
  return normalize(x, N, C, inner, w, b,
                   [&](int64_t, int64_t c) {
                     const auto& s = st[static_cast<size_t>(c)];
                     return std::pair<double, double>(s.first, 1.0 / std::sqrt(s.second + eps));
                   },
                   "batch_norm");
}

Tensor layerNorm(const Tensor& x, const IntList& normalizedShape, const OptTensor& weight,
                 const OptTensor& bias, double eps) {
  const int64_t k = static_cast<int64_t>(normalizedShape.size());
  TL_CHECK(k >= 1 && k <= x.dim() && IntList(x.sizes().end() - k, x.sizes().end()) == normalizedShape,
           "Given normalized_shape={}, expected input with shape [*, {}], but got input of size{}",
           sizesToString(normalizedShape), fmt::join(normalizedShape, ", "), sizesToString(x.sizes()));
  const int64_t len = checkedNumel(normalizedShape);
  const int64_t outer = len == 0 ? 0 : x.numel() / len;
  Tensor c = x.contiguous();
  const auto st = groupStats(c, outer, len);
  // normalize with C = 1, then apply the elementwise affine over the normalized block.
  Tensor y = normalize(c, outer, 1, len, {1.0}, {0.0},
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
      parallelFor(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(len, 1)), [&](int64_t lo, int64_t hi) {
        for (int64_t o = lo; o < hi; ++o)
          for (int64_t i = 0; i < len; ++i) {
            T& v = p[o * len + i];
            v = castTo<T>(static_cast<double>(static_cast<OpMath<T>>(v)) * w[static_cast<size_t>(i)] + b[static_cast<size_t>(i)]);
          }
      });
    });
  }
  return y;
}

Tensor groupNorm(const Tensor& x, int64_t numGroups, const OptTensor& weight, const OptTensor& bias, double eps) {
  TL_CHECK(x.dim() >= 2, "Expected at least 2 dimensions for input tensor but received {}", x.dim());
  const int64_t N = x.sizes()[0], C = x.sizes()[1];
  TL_CHECK(numGroups > 0 && C % numGroups == 0,
           "Expected number of channels in input to be divisible by num_groups, but got input of shape {} and num_groups={}",
           sizesToString(x.sizes()), numGroups);
  const int64_t inner = x.numel() / std::max<int64_t>(N * C, 1);
  Tensor c = x.contiguous();
  const auto st = groupStats(c, N * numGroups, (C / numGroups) * inner);
  const auto w = toDoubles(weight, C, 1.0, "weight");
  const auto b = toDoubles(bias, C, 0.0, "bias");
  const int64_t cpg = C / numGroups;
  return normalize(c, N, C, inner, w, b,
                   [&](int64_t n, int64_t ch) {
                     const auto& s = st[static_cast<size_t>(n * numGroups + ch / cpg)];
                     return std::pair<double, double>(s.first, 1.0 / std::sqrt(s.second + eps));
                   },
                   "group_norm");
}

Tensor instanceNorm(const Tensor& x, const OptTensor& runningMean, const OptTensor& runningVar,
                    const OptTensor& weight, const OptTensor& bias, bool useInputStats, double momentum, double eps) {
  TL_CHECK(x.dim() >= 2, "instance_norm: expected at least 2D input");
  const int64_t N = x.sizes()[0], C = x.sizes()[1];
  if (!useInputStats) return batchNorm(x, runningMean, runningVar, weight, bias, false, momentum, eps);
  const int64_t inner = x.numel() / std::max<int64_t>(N * C, 1);
  Tensor c = x.contiguous();
  const auto st = groupStats(c, N * C, inner);
  const auto w = toDoubles(weight, C, 1.0, "weight");
  const auto b = toDoubles(bias, C, 0.0, "bias");
  return normalize(c, N, C, inner, w, b,
                   [&](int64_t n, int64_t ch) {
                     const auto& s = st[static_cast<size_t>(n * C + ch)];
                     return std::pair<double, double>(s.first, 1.0 / std::sqrt(s.second + eps));
                   },
                   "instance_norm");
}

}  // namespace torchless::ops
