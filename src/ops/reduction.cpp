#include "ops/reduction.h"

#include "ops/dnnl_utils.h"
#include "ops/elementwise.h"
#include "ops/parallel.h"
#include "ops/shape.h"
#include "ops/tensor_iterator.h"
#include "ops/thread_budget.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace torchless::ops {
namespace {

// Reduction layout: the input permuted so that kept dims come first and reduced dims last,
// made contiguous, seen as [outer, inner] rows.
struct ReducePlan {
  Tensor x;  // contiguous [outer * inner]
  int64_t outer = 1, inner = 1;
  IntList outShape;
};

ReducePlan planReduce(const Tensor& x, const IntList& dimsIn, bool keepdim, const char* name) {
  const int64_t nd = x.dim();
  std::vector<bool> reduced(static_cast<size_t>(std::max<int64_t>(nd, 1)), dimsIn.empty());
  for (int64_t d : dimsIn) {
    const int64_t w = wrapDim(d, nd);
    TL_CHECK(!(reduced[w] && !dimsIn.empty() &&
               std::count_if(dimsIn.begin(), dimsIn.end(),
                             [&](int64_t e) { return wrapDim(e, nd) == w; }) > 1),
             "dim {} appears multiple times in the list of dims", w);
    reduced[w] = true;
  }
  ReducePlan p;
  IntList perm, kept, red;
  for (int64_t d = 0; d < nd; ++d)
    if (!reduced[d]) {
      perm.push_back(d);
      p.outer *= x.sizes()[d];
      p.outShape.push_back(x.sizes()[d]);
    } else if (keepdim) {
      p.outShape.push_back(1);
    }
  // keepdim output has reduced dims as 1 in place; rebuild it in order.
  if (keepdim) {
    p.outShape.clear();
    for (int64_t d = 0; d < nd; ++d) p.outShape.push_back(reduced[d] ? 1 : x.sizes()[d]);
  }
  for (int64_t d = 0; d < nd; ++d)
    if (reduced[d]) {
      perm.push_back(d);
      p.inner *= x.sizes()[d];
    }
  (void)name;
  p.x = nd == 0 ? x.contiguous() : permute(x, perm).contiguous();
  return p;
}

ScalarType sumType(ScalarType in, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  return isIntegralType(in, true) ? ScalarType::Long : in;
}

// out[o] = finish(fold(init, row o)) with acc type Acc.
template <typename T, typename Out, typename AccT, typename Fold, typename Finish>
Tensor reduceRows(const ReducePlan& p, ScalarType outT, AccT init, const Fold& fold,
                  const Finish& finish) {
  Tensor out = Tensor::empty(p.outShape, outT);
  const T* in = p.x.data<T>();
  Out* o = out.data<Out>();
  const int64_t inner = p.inner;
  parallelFor(p.outer, std::max<int64_t>(1, 32768 / std::max<int64_t>(inner, 1)),
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) {
                  AccT acc = init;
                  const T* row = in + r * inner;
                  for (int64_t k = 0; k < inner; ++k) acc = fold(acc, row[k]);
                  o[r] = finish(acc);
                }
              });
  return out;
}

// [outer, D, inner] view of a contiguous tensor along dim.
struct DimLayout {
  int64_t outer = 1, size = 1, inner = 1;
};
DimLayout dimLayout(const Tensor& x, int64_t d) {
  DimLayout l;
  if (x.dim() == 0) return l;
  for (int64_t i = 0; i < d; ++i) l.outer *= x.sizes()[i];
  l.size = x.sizes()[d];
  for (int64_t i = d + 1; i < x.dim(); ++i) l.inner *= x.sizes()[i];
  return l;
}

template <typename T>
inline bool isNanV(T v) {
  if constexpr (kIsFloat<T>)
    return static_cast<OpMath<T>>(v) != static_cast<OpMath<T>>(v);
  else
    return false;
}

}  // namespace

Tensor sum(const Tensor& x, const IntList& dims, bool keepdim, std::optional<ScalarType> dtype) {
  const ScalarType outT = sumType(x.dtype(), dtype);
  ReducePlan p = planReduce(x.dtype() == outT ? x : x.to(outT), dims, keepdim, "sum");
  return dispatchAll(outT, "sum_cpu", [&](auto tag) {
    using T = decltype(tag);
    using A = Acc<T>;
    return reduceRows<T, T>(
        p, outT, A(0),
        [](A a, T v) { return static_cast<A>(a + static_cast<A>(static_cast<OpMath<T>>(v))); },
        [](A a) { return castTo<T>(a); });
  });
}

Tensor mean(const Tensor& x, const IntList& dims, bool keepdim, std::optional<ScalarType> dtype) {
  const ScalarType outT = dtype.value_or(x.dtype());
  TL_CHECK(isFloatingType(outT),
           "mean(): could not infer output dtype. {} dtype must be either a floating point or "
           "complex dtype. Got: {}",
           dtype ? "Optional" : "Input", toString(outT));
  ReducePlan p = planReduce(x.dtype() == outT ? x : x.to(outT), dims, keepdim, "mean");
  const double n = static_cast<double>(p.inner);
  return dispatchFloating(outT, "mean_cpu", [&](auto tag) {
    using T = decltype(tag);
    return reduceRows<T, T>(
        p, outT, 0.0,
        [](double a, T v) { return a + static_cast<double>(static_cast<OpMath<T>>(v)); },
        [n](double a) { return castTo<T>(a / n); });
  });
}

Tensor prod(const Tensor& x, std::optional<int64_t> dim, bool keepdim,
            std::optional<ScalarType> dtype) {
  const ScalarType outT = sumType(x.dtype(), dtype);
  IntList dims;
  if (dim) dims.push_back(*dim);
  ReducePlan p =
      planReduce(x.dtype() == outT ? x : x.to(outT), dims, dim ? keepdim : false, "prod");
  return dispatchAll(outT, "prod_cpu", [&](auto tag) {
    using T = decltype(tag);
    using A = Acc<T>;
    return reduceRows<T, T>(
        p, outT, A(1),
        [](A a, T v) { return static_cast<A>(a * static_cast<A>(static_cast<OpMath<T>>(v))); },
        [](A a) { return castTo<T>(a); });
  });
}

namespace {

// values + first index of the max (isMax) or min; NaN wins (first NaN).
std::tuple<Tensor, Tensor> extremeDim(const Tensor& x, std::optional<int64_t> dim, bool keepdim,
                                      bool isMax, bool wantValues, const char* name) {
  const int64_t nd = x.dim();
  IntList dims;
  if (dim) dims.push_back(wrapDim(*dim, nd));
  if (dim) {
    const int64_t size = nd == 0 ? 1 : x.sizes()[dims[0]];
    TL_CHECK(size > 0, "{}(): Expected reduction dim {} to have non-zero size.", name, dims[0]);
  } else {
    TL_CHECK(x.numel() > 0,
             "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
             "reduction dim with the 'dim' argument.",
             name);
  }
  ReducePlan p = planReduce(x, dims, keepdim, name);
  Tensor values = wantValues ? Tensor::empty(p.outShape, x.dtype()) : Tensor();
  Tensor indices = Tensor::empty(p.outShape, ScalarType::Long);
  dispatchAll(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    const T* in = p.x.data<T>();
    T* vo = wantValues ? values.data<T>() : nullptr;
    int64_t* io = indices.data<int64_t>();
    const int64_t inner = p.inner;
    parallelFor(p.outer, std::max<int64_t>(1, 32768 / std::max<int64_t>(inner, 1)),
                [&](int64_t b, int64_t e) {
                  for (int64_t r = b; r < e; ++r) {
                    const T* row = in + r * inner;
                    int64_t best = 0;
                    A bv = static_cast<A>(row[0]);
                    if (!isNanV(row[0])) {
                      for (int64_t k = 1; k < inner; ++k) {
                        const A v = static_cast<A>(row[k]);
                        if (isNanV(row[k])) {
                          best = k;
                          bv = v;
                          break;
                        }
                        if (isMax ? (v > bv) : (v < bv)) {
                          best = k;
                          bv = v;
                        }
                      }
                    }
                    if (vo) vo[r] = row[best];
                    io[r] = best;
                  }
                });
  });
  return {values, indices};
}

}  // namespace

Tensor max(const Tensor& x) {
  return std::get<0>(extremeDim(x, std::nullopt, false, true, true, "max"));
}
Tensor min(const Tensor& x) {
  return std::get<0>(extremeDim(x, std::nullopt, false, false, true, "min"));
}
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return extremeDim(x, dim, keepdim, true, true, "max");
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return extremeDim(x, dim, keepdim, false, true, "min");
}

namespace {
Tensor amaxmin(const Tensor& x, const IntList& dims, bool keepdim, bool isMax) {
  const char* name = isMax ? "amax" : "amin";
  for (int64_t d : dims) {
    const int64_t w = wrapDim(d, x.dim());
    TL_CHECK(x.dim() == 0 || x.sizes()[w] > 0,
             "{}(): Expected reduction dim {} to have non-zero size.", name, w);
  }
  TL_CHECK(!dims.empty() || x.numel() > 0,
           "{}(): Expected reduction dim to be specified for input.numel() == 0.", name);
  ReducePlan p = planReduce(x, dims, keepdim, name);
  return dispatchAll(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    const A init =
        isMax
            ? (kIsFloat<T> ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest())
            : (kIsFloat<T> ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max());
    return reduceRows<T, T>(
        p, x.dtype(), init,
        [isMax](A a, T t) {
          const A v = static_cast<A>(t);
          if (isNanV(a) || isNanV(t)) return isNanV(a) ? a : v;
          return isMax ? (v > a ? v : a) : (v < a ? v : a);
        },
        [](A a) { return castTo<T>(a); });
  });
}
}  // namespace

Tensor amax(const Tensor& x, const IntList& dims, bool keepdim) {
  return amaxmin(x, dims, keepdim, true);
}
Tensor amin(const Tensor& x, const IntList& dims, bool keepdim) {
  return amaxmin(x, dims, keepdim, false);
}

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  if (x.dtype() == ScalarType::Bool) notImplemented("argmax_cpu", x.dtype());
  if (!dim) return std::get<1>(extremeDim(reshape(x, {-1}), 0, false, true, false, "argmax"));
  return std::get<1>(extremeDim(x, dim, keepdim, true, false, "argmax"));
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  if (x.dtype() == ScalarType::Bool) notImplemented("argmin_cpu", x.dtype());
  if (!dim) return std::get<1>(extremeDim(reshape(x, {-1}), 0, false, false, false, "argmin"));
  return std::get<1>(extremeDim(x, dim, keepdim, false, false, "argmin"));
}

Tensor var(const Tensor& x, const std::optional<IntList>& dims, std::optional<double> correction,
           bool keepdim) {
  TL_CHECK(isFloatingType(x.dtype()), "std and var only support floating point and complex dtypes");
  ReducePlan p = planReduce(x, dims.value_or(IntList{}), keepdim, "var");
  const double c = correction.value_or(1.0);
  Tensor out = Tensor::empty(p.outShape, x.dtype());
  dispatchFloating(x.dtype(), "var", [&](auto tag) {
    using T = decltype(tag);
    const T* in = p.x.data<T>();
    T* o = out.data<T>();
    const int64_t n = p.inner;
    parallelFor(p.outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)),
                [&](int64_t b, int64_t e) {
                  for (int64_t r = b; r < e; ++r) {
                    const T* row = in + r * n;
                    double mean = 0;
                    for (int64_t k = 0; k < n; ++k)
                      mean += static_cast<double>(static_cast<OpMath<T>>(row[k]));
                    mean /= static_cast<double>(n);
                    double ss = 0;
                    for (int64_t k = 0; k < n; ++k) {
                      const double d = static_cast<double>(static_cast<OpMath<T>>(row[k])) - mean;
                      ss += d * d;
                    }
                    o[r] = castTo<T>(ss / std::max(0.0, static_cast<double>(n) - c));
                  }
                });
  });
  return out;
}

Tensor std(const Tensor& x, const std::optional<IntList>& dims, std::optional<double> correction,
           bool keepdim) {
  return sqrt(var(x, dims, correction, keepdim));
}

Tensor norm(const Tensor& x, std::optional<double> pOpt, const IntList& dims, bool keepdim) {
  TL_CHECK(isFloatingType(x.dtype()),
           "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
           toString(x.dtype()));
  const double p = pOpt.value_or(2.0);
  ReducePlan plan = planReduce(x, dims, keepdim, "norm");
  return dispatchFloating(x.dtype(), "norm_cpu", [&](auto tag) {
    using T = decltype(tag);
    auto absv = [](T v) { return std::fabs(static_cast<double>(static_cast<OpMath<T>>(v))); };
    if (std::isinf(p)) {
      const bool big = p > 0;
      return reduceRows<T, T>(
          plan, x.dtype(), big ? 0.0 : std::numeric_limits<double>::infinity(),
          [=](double a, T v) {
            const double m = absv(v);
            if (a != a || m != m) return std::numeric_limits<double>::quiet_NaN();
            return big ? std::max(a, m) : std::min(a, m);
          },
          [](double a) { return castTo<T>(a); });
    }
    if (p == 0)
      return reduceRows<T, T>(
          plan, x.dtype(), 0.0, [=](double a, T v) { return a + (absv(v) != 0 ? 1.0 : 0.0); },
          [](double a) { return castTo<T>(a); });
    if (p == 1)
      return reduceRows<T, T>(
          plan, x.dtype(), 0.0, [=](double a, T v) { return a + absv(v); },
          [](double a) { return castTo<T>(a); });
    if (p == 2)
      return reduceRows<T, T>(
          plan, x.dtype(), 0.0, [=](double a, T v) { return a + absv(v) * absv(v); },
          [](double a) { return castTo<T>(std::sqrt(a)); });
    return reduceRows<T, T>(
        plan, x.dtype(), 0.0, [=](double a, T v) { return a + std::pow(absv(v), p); },
        [=](double a) { return castTo<T>(std::pow(a, 1.0 / p)); });
  });
}

namespace {
Tensor allAny(const Tensor& x, std::optional<int64_t> dim, bool keepdim, bool isAll) {
  const ScalarType outT = x.dtype() == ScalarType::Byte ? ScalarType::Byte : ScalarType::Bool;
  IntList dims;
  if (dim) dims.push_back(*dim);
  ReducePlan p = planReduce(x, dims, dim ? keepdim : false, isAll ? "all" : "any");
  return dispatchAll(x.dtype(), isAll ? "all" : "any", [&](auto tag) {
    using T = decltype(tag);
    if (outT == ScalarType::Byte)
      return reduceRows<T, uint8_t>(
          p, outT, isAll,
          [isAll](bool a, T v) { return isAll ? (a && castTo<bool>(v)) : (a || castTo<bool>(v)); },
          [](bool a) { return static_cast<uint8_t>(a); });
    return reduceRows<T, bool>(
        p, outT, isAll,
        [isAll](bool a, T v) { return isAll ? (a && castTo<bool>(v)) : (a || castTo<bool>(v)); },
        [](bool a) { return a; });
  });
}
}  // namespace

Tensor all(const Tensor& x) { return allAny(x, std::nullopt, false, true); }
Tensor all(const Tensor& x, int64_t dim, bool keepdim) { return allAny(x, dim, keepdim, true); }
Tensor any(const Tensor& x) { return allAny(x, std::nullopt, false, false); }
Tensor any(const Tensor& x, int64_t dim, bool keepdim) { return allAny(x, dim, keepdim, false); }

namespace {
Tensor scan(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype, bool isSum) {
  const ScalarType outT = sumType(x.dtype(), dtype);
  const int64_t d = wrapDim(dim, x.dim());
  Tensor c = toDtype(x, outT).contiguous();
  Tensor out = Tensor::empty(x.sizes(), outT);
  const DimLayout l = dimLayout(c, d);
  dispatchAll(outT, isSum ? "cumsum_cpu" : "cumprod_cpu", [&](auto tag) {
    using T = decltype(tag);
    using A = Acc<T>;
    const T* in = c.data<T>();
    T* o = out.data<T>();
    parallelFor(l.outer * l.inner, 1024, [&](int64_t b, int64_t e) {
      for (int64_t oi = b; oi < e; ++oi) {
        const int64_t base = (oi / l.inner) * l.size * l.inner + oi % l.inner;
        A acc = isSum ? A(0) : A(1);
        for (int64_t k = 0; k < l.size; ++k) {
          const A v = static_cast<A>(static_cast<OpMath<T>>(in[base + k * l.inner]));
          acc = isSum ? static_cast<A>(acc + v) : static_cast<A>(acc * v);
          o[base + k * l.inner] = castTo<T>(acc);
        }
      }
    });
  });
  return out;
}

// One softmax row as PyTorch defines it (NaN and infinities included), accumulated in double.
template <class T>
void softmaxRow(const T* in, T* o, int64_t base, int64_t size, int64_t inner, bool isLog) {
  using A = OpMath<T>;
  A mx = -std::numeric_limits<A>::infinity();
  for (int64_t k = 0; k < size; ++k) {
    const A v = static_cast<A>(in[base + k * inner]);
    if (v != v || v > mx) mx = (v != v || mx != mx) ? std::numeric_limits<A>::quiet_NaN() : v;
  }
  double s = 0;
  for (int64_t k = 0; k < size; ++k)
    s += std::exp(static_cast<double>(static_cast<A>(in[base + k * inner]) - mx));
  if (isLog) {
    const double ls = std::log(s);
    for (int64_t k = 0; k < size; ++k)
      o[base + k * inner] =
          castTo<T>(static_cast<double>(static_cast<A>(in[base + k * inner]) - mx) - ls);
  } else {
    for (int64_t k = 0; k < size; ++k)
      o[base + k * inner] =
          castTo<T>(std::exp(static_cast<double>(static_cast<A>(in[base + k * inner]) - mx)) / s);
  }
}

// Float softmax over the last dim of contiguous [outer, n] rows with oneDNN's softmax (a
// cached primitive, Note [oneDNN primitive cache]): what PyTorch's vectorized float kernel
// computes, in float. Rows where oneDNN's clamped exp could differ from PyTorch's NaN and
// infinity rules (a NaN or +inf, or no element above -inf) are recomputed by softmaxRow.
void softmaxLastDimDnnl(const Tensor& c, const Tensor& out, int64_t outer, int64_t n, bool isLog) {
  namespace du = dnnl_utils;
  const dnnl::memory::desc md({outer, n}, dnnl::memory::data_type::f32,
                              dnnl::memory::format_tag::ab);
  // Note [Thread budget]: threads by the work (an exp is some 20 flops), for the primitive and
  // the check of the rows after it; the key takes the limited count.
  ThreadLimit limit(threadsForWork(24.0 * static_cast<double>(outer) * static_cast<double>(n)));
  const du::PrimitiveKey key{1, outer, n, isLog ? 1 : 0, omp_get_max_threads()};
  auto prim = du::cachedPrimitive(key, [&] {
    dnnl::softmax_v2_forward::desc d(
        dnnl::prop_kind::forward_inference,
        isLog ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate, md, md, 1);
    return dnnl::softmax_v2_forward(
        dnnl::softmax_v2_forward::primitive_desc(d, du::userScratchpad(), du::engine()));
  });
  auto& eng = du::engine();
  dnnl::memory src(md, eng, c.rawData()), dst(md, eng, out.rawData());
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
  du::execute(*prim, args);  // Note [Scratchpads of shared primitives]
  const float* in = c.data<float>();
  float* o = out.data<float>();
  const float inf = std::numeric_limits<float>::infinity();
  parallelFor(outer, std::max<int64_t>(1, 16384 / n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* row = in + r * n;
      bool special = false, above = false;
      for (int64_t k = 0; k < n; ++k) {
        special |= !(row[k] < inf);
        above |= row[k] > -inf;
      }
      if (special || !above) softmaxRow<float>(in, o, r * n, n, 1, isLog);
    }
  });
}

Tensor softmaxImpl(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype, bool isLog) {
  const char* name = isLog ? "log_softmax_lastdim_kernel_impl" : "softmax_lastdim_kernel_impl";
  const ScalarType dt = dtype.value_or(x.dtype());
  if (!isFloatingType(dt)) notImplemented(name, dt);
  const int64_t d = wrapDim(dim, x.dim());
  Tensor c = toDtype(x, dt).contiguous();
  Tensor out = Tensor::empty(x.sizes(), dt);
  const DimLayout l = dimLayout(c, d);
  // log_softmax stays on the reference rows: oneDNN's softmax_log is off by ~1e-6 near 0.
  if (!isLog && dt == ScalarType::Float && l.inner == 1 && l.size > 1 && l.outer > 0) {
    softmaxLastDimDnnl(c, out, l.outer, l.size, isLog);
    return out;
  }
  dispatchFloating(dt, name, [&](auto tag) {
    using T = decltype(tag);
    const T* in = c.data<T>();
    T* o = out.data<T>();
    parallelFor(l.outer * l.inner, std::max<int64_t>(1, 8192 / std::max<int64_t>(l.size, 1)),
                [&](int64_t b, int64_t e) {
                  for (int64_t oi = b; oi < e; ++oi)
                    softmaxRow<T>(in, o, (oi / l.inner) * l.size * l.inner + oi % l.inner, l.size,
                                  l.inner, isLog);
                });
  });
  return out;
}
}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  return scan(x, dim, dtype, true);
}
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  return scan(x, dim, dtype, false);
}
Tensor softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  return softmaxImpl(x, dim, dtype, false);
}
Tensor logSoftmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  return softmaxImpl(x, dim, dtype, true);
}

Tensor logsumexp(const Tensor& x, const IntList& dims, bool keepdim) {
  const ScalarType dt = isFloatingType(x.dtype()) ? x.dtype() : kDefaultFloat;
  ReducePlan p = planReduce(toDtype(x, dt), dims, keepdim, "logsumexp");
  Tensor out = Tensor::empty(p.outShape, dt);
  dispatchFloating(dt, "logsumexp", [&](auto tag) {
    using T = decltype(tag);
    const T* in = p.x.data<T>();
    T* o = out.data<T>();
    const int64_t n = p.inner;
    parallelFor(p.outer, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)),
                [&](int64_t b, int64_t e) {
                  for (int64_t r = b; r < e; ++r) {
                    const T* row = in + r * n;
                    double mx = -std::numeric_limits<double>::infinity();
                    for (int64_t k = 0; k < n; ++k)
                      mx = std::max(mx, static_cast<double>(static_cast<OpMath<T>>(row[k])));
                    const double shift = std::isinf(mx) ? 0.0 : mx;
                    double s = 0;
                    for (int64_t k = 0; k < n; ++k)
                      s += std::exp(static_cast<double>(static_cast<OpMath<T>>(row[k])) - shift);
                    o[r] = castTo<T>(std::log(s) + shift);
                  }
                });
  });
  return out;
}

namespace {
// Sorts every row along dim; writes the first k of each sorted row.
// Note [Sort and topk orders]
// Ties come out of torch.sort and torch.topk in the order of the C++ library algorithm that
// ATen runs on the row's (value, index) pairs, and scripted detection models depend on it (the
// RPN's topk over anchors of equal objectness in an image's padding decides which proposals
// exist). So the rows go through the same algorithms with the same comparisons: ATen's CPU
// sort_kernel (aten/src/ATen/native/cpu/SortingKernel.cpp) runs std::stable_sort when asked
// for a stable sort and std::sort otherwise; topk_impl_loop (ATen/native/TopKImpl.h) runs
// std::partial_sort when k * 64 <= n, else std::nth_element at k - 1 and, when sorted,
// std::sort of the first k - 1. Both are built with the same libstdc++ as Debian's PyTorch, so
// the permutations are the same. NaN is the largest value in both directions.
enum class RowOrder { kStableSort, kSort, kTopK, kTopKUnsorted };

std::tuple<Tensor, Tensor> sortRows(const Tensor& x, int64_t dim, bool descending, int64_t k,
                                    const char* name, RowOrder how) {
  const int64_t d = wrapDim(dim, x.dim());
  Tensor c = x.contiguous();
  const DimLayout l = dimLayout(c, d);
  IntList outShape = x.sizes();
  if (x.dim() > 0) outShape[d] = k;
  Tensor values = Tensor::empty(outShape, x.dtype());
  Tensor indices = Tensor::empty(outShape, ScalarType::Long);
  dispatchAll(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    using Elem = std::pair<A, int64_t>;
    const T* in = c.data<T>();
    T* vo = values.data<T>();
    int64_t* io = indices.data<int64_t>();
    auto nan = [](A v) {
      if constexpr (std::is_floating_point_v<A>)
        return std::isnan(v);
      else
        return false;
    };
    auto desc = [&](const Elem& a, const Elem& b) {
      return (nan(a.first) && !nan(b.first)) || a.first > b.first;
    };
    auto asc = [&](const Elem& a, const Elem& b) {
      return (!nan(a.first) && nan(b.first)) || a.first < b.first;
    };
    parallelFor(l.outer * l.inner, 64, [&](int64_t b, int64_t e) {
      std::vector<Elem> q(static_cast<size_t>(l.size));
      for (int64_t oi = b; oi < e; ++oi) {
        const int64_t base = (oi / l.inner) * l.size * l.inner + oi % l.inner;
        const int64_t obase = (oi / l.inner) * k * l.inner + oi % l.inner;
        for (int64_t i = 0; i < l.size; ++i)
          q[static_cast<size_t>(i)] = {static_cast<A>(in[base + i * l.inner]), i};
        auto order = [&](auto cmp) {
          const auto kth = q.begin() + std::max<int64_t>(k - 1, 0);
          switch (how) {
            case RowOrder::kStableSort: std::stable_sort(q.begin(), q.end(), cmp); break;
            case RowOrder::kSort: std::sort(q.begin(), q.end(), cmp); break;
            case RowOrder::kTopK:
            case RowOrder::kTopKUnsorted:
              if (k == 0) break;
              if (k * 64 <= l.size) {
                std::partial_sort(q.begin(), q.begin() + k, q.end(), cmp);
              } else {
                std::nth_element(q.begin(), kth, q.end(), cmp);
                if (how == RowOrder::kTopK) std::sort(q.begin(), kth, cmp);
              }
              break;
          }
        };
        if (descending)
          order(desc);
        else
          order(asc);
        for (int64_t j = 0; j < k; ++j) {
          const int64_t src = q[static_cast<size_t>(j)].second;
          vo[obase + j * l.inner] = in[base + src * l.inner];
          io[obase + j * l.inner] = src;
        }
      }
    });
  });
  return {values, indices};
}
}  // namespace

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  const int64_t d = wrapDim(dim, x.dim());
  const int64_t size = x.dim() == 0 ? 1 : x.sizes()[d];
  TL_CHECK(x.dtype() != ScalarType::Bool && x.dtype() != ScalarType::Half,
           "\"topk_cpu\" not implemented for '{}'", toString(x.dtype()));
  TL_CHECK(k >= 0 && k <= size, "selected index k out of range");
  return sortRows(x, d, largest, k, "topk_cpu", sorted ? RowOrder::kTopK : RowOrder::kTopKUnsorted);
}

std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  const int64_t d = wrapDim(dim, x.dim());
  return sortRows(x, d, descending, x.dim() == 0 ? 1 : x.sizes()[d], "sort",
                  stable ? RowOrder::kStableSort : RowOrder::kSort);
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending) {
  return std::get<1>(sort(x, dim, descending));
}

}  // namespace torchless::ops
