// Scatter-style indexing ops (see scatter.h). The kernels walk the index tensor in row-major
// order over contiguous copies; the output is always a fresh clone of self, so nothing relies
// on freshly allocated memory being zeroed.
#include "ops/scatter.h"
#include "ops/elementwise.h"

#include "ops/shape.h"
#include "ops/tensor_iterator.h"

#include <cmath>
#include <limits>
#include <vector>

namespace torchless::ops {

namespace {

template <typename T>
using OM = OpMath<T>;

/// A 0-dim tensor as [1] (PyTorch's ensure_nonempty_dim for these ops).
Tensor atLeast1d(const Tensor& t) { return t.dim() == 0 ? reshape(t, {1}) : t; }

void checkIndexLong(const Tensor& index, const char* op) {
  TL_CHECK(index.dtype() == ScalarType::Long, "{}(): Expected dtype int64 for index", op);
}

/// PyTorch's scatter_shape_check.
void scatterShapeCheck(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src) {
  TL_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(self.dim(), 1),
           "Index tensor must have the same number of dimensions as self tensor");
  if (src)
    TL_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(src->dim(), 1),
             "Index tensor must have the same number of dimensions as src tensor");
  if (index.numel() == 0) return;
  const Tensor s = atLeast1d(self), i = atLeast1d(index);
  bool ok = true;
  for (int64_t k = 0; k < i.dim(); ++k) {
    if (k != dim && i.size(k) > s.size(k)) ok = false;
    if (src && i.size(k) > atLeast1d(*src).size(k)) ok = false;
  }
  if (ok) return;
  if (src)
    throw Error(fmt::format(
        "Expected index {} to be smaller than self {} apart from dimension {} and to be "
        "smaller size than src {}",
        sizesToString(index.sizes()), sizesToString(self.sizes()), dim,
        sizesToString(src->sizes())));
  throw Error(fmt::format("Expected index {} to be smaller than self {} apart from dimension {}",
                          sizesToString(index.sizes()), sizesToString(self.sizes()), dim));
}

/// Calls fn(outOffset, srcOffset) for every element of index (row-major), where outOffset is
/// the element's position in a contiguous tensor of outSizes with coordinate `dim` replaced by
/// the index value, and srcOffset its position in a contiguous tensor of srcSizes.
template <typename Fn>
void forEachScatter(const Tensor& index, int64_t dim, const IntList& outSizes,
                    const IntList& srcSizes, Fn fn) {
  const Tensor idx = atLeast1d(index).contiguous();
  const int64_t n = idx.numel();
  if (n == 0) return;
  const int64_t nd = idx.dim();
  const IntList outStrides = contiguousStrides(outSizes), srcStrides = contiguousStrides(srcSizes);
  const IntList& sizes = idx.sizes();
  const int64_t* iv = idx.data<int64_t>();
  const int64_t dimSize = outSizes[static_cast<size_t>(dim)];
  std::vector<int64_t> coord(static_cast<size_t>(nd), 0);
  for (int64_t e = 0; e < n; ++e) {
    const int64_t v = iv[e];
    TL_CHECK(v >= 0 && v < dimSize, "index {} is out of bounds for dimension {} with size {}", v,
             dim, dimSize);
    int64_t o = 0, s = 0;
    for (int64_t k = 0; k < nd; ++k) {
      const auto kk = static_cast<size_t>(k);
      o += (k == dim ? v : coord[kk]) * outStrides[kk];
      s += coord[kk] * srcStrides[kk];
    }
    fn(o, s);
    for (int64_t k = nd - 1; k >= 0; --k) {
      const auto kk = static_cast<size_t>(k);
      if (++coord[kk] < sizes[kk]) break;
      coord[kk] = 0;
    }
  }
}

template <typename T>
T combine(ScatterReduce r, T a, T b) {
  switch (r) {
    case ScatterReduce::Sum:
    case ScatterReduce::Mean: return castTo<T>(static_cast<OM<T>>(a) + static_cast<OM<T>>(b));
    case ScatterReduce::Prod: return castTo<T>(static_cast<OM<T>>(a) * static_cast<OM<T>>(b));
    case ScatterReduce::Max: {
      if constexpr (kIsFloat<T>) {
        if (std::isnan(static_cast<double>(b))) return b;
      }
      return static_cast<OM<T>>(a) < static_cast<OM<T>>(b) ? b : a;
    }
    case ScatterReduce::Min: {
      if constexpr (kIsFloat<T>) {
        if (std::isnan(static_cast<double>(b))) return b;
      }
      return static_cast<OM<T>>(b) < static_cast<OM<T>>(a) ? b : a;
    }
    case ScatterReduce::None: return b;
  }
  return b;
}

/// The common scatter: `value` (when src is undefined) or src's elements into a clone of self.
Tensor scatterImpl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                   const Scalar* value, ScatterReduce reduce, const char* op) {
  checkIndexLong(index, op);
  const int64_t d = wrapDim(dim, self.dim());
  scatterShapeCheck(self, d, index, src.defined() ? &src : nullptr);
  if (src.defined())
    TL_CHECK(src.dtype() == self.dtype(), "{}(): Expected self.dtype to be equal to src.dtype", op);
  Tensor out = clone(self);  // contiguous, every element written
  const IntList outSizes = atLeast1d(out).sizes();
  const Tensor s = src.defined() ? atLeast1d(src).contiguous() : Tensor();
  const IntList srcSizes = s.defined() ? s.sizes() : atLeast1d(index).sizes();
  dispatchAll(self.dtype(), op, [&](auto tag) {
    using T = TagT<decltype(tag)>;
    T* o = out.data<T>();
    const T* sp = s.defined() ? s.data<T>() : nullptr;
    const T v = value ? value->to<T>() : T{};
    forEachScatter(index, d, outSizes, srcSizes, [&](int64_t oo, int64_t so) {
      o[oo] = combine<T>(reduce, o[oo], sp ? sp[so] : v);
    });
  });
  return out;
}

}  // namespace

ScatterReduce scatterReduceFromString(const std::string& reduce, bool twoOverload) {
  if (twoOverload) {
    if (reduce == "sum") return ScatterReduce::Sum;
    if (reduce == "prod") return ScatterReduce::Prod;
    if (reduce == "mean") return ScatterReduce::Mean;
    if (reduce == "amax") return ScatterReduce::Max;
    if (reduce == "amin") return ScatterReduce::Min;
    throw Error("reduce argument must be either sum, prod, mean, amax or amin.");
  }
  if (reduce == "add") return ScatterReduce::Sum;
  if (reduce == "multiply") return ScatterReduce::Prod;
  throw Error("reduce argument must be either add or multiply.");
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
               ScatterReduce reduce) {
  return scatterImpl(self, dim, index, src, nullptr, reduce,
                     reduce == ScatterReduce::Sum ? "scatter_add" : "scatter");
}

Tensor scatterValue(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                    ScatterReduce reduce) {
  return scatterImpl(self, dim, index, Tensor(), &value, reduce, "scatter");
}

Tensor scatterReduceTwo(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                        ScatterReduce reduce, bool includeSelf) {
  checkIndexLong(index, "scatter_reduce");
  const int64_t d = wrapDim(dim, self.dim());
  scatterShapeCheck(self, d, index, &src);
  TL_CHECK(src.dtype() == self.dtype(),
           "scatter_reduce(): Expected self.dtype to be equal to src.dtype");
  Tensor out = clone(self);
  const IntList outSizes = atLeast1d(out).sizes();
  const Tensor s = atLeast1d(src).contiguous();
  const int64_t n = out.numel();
  dispatchAll(self.dtype(), "scatter_reduce", [&](auto tag) {
    using T = TagT<decltype(tag)>;
    T* o = out.data<T>();
    const T* sp = s.data<T>();
    if (!includeSelf) {
      // Scattered-to positions start from the reduction's identity.
      T identity{};
      switch (reduce) {
        case ScatterReduce::Prod: identity = castTo<T>(1); break;
        case ScatterReduce::Max:
          identity = kIsFloat<T> ? castTo<T>(-std::numeric_limits<double>::infinity())
                                 : castTo<T>(std::numeric_limits<T>::lowest());
          break;
        case ScatterReduce::Min:
          identity = kIsFloat<T> ? castTo<T>(std::numeric_limits<double>::infinity())
                                 : castTo<T>(std::numeric_limits<T>::max());
          break;
        default: identity = castTo<T>(0); break;
      }
      forEachScatter(index, d, outSizes, s.sizes(), [&](int64_t oo, int64_t) { o[oo] = identity; });
    }
    std::vector<int64_t> count;
    if (reduce == ScatterReduce::Mean) count.assign(static_cast<size_t>(n), includeSelf ? 1 : 0);
    forEachScatter(index, d, outSizes, s.sizes(), [&](int64_t oo, int64_t so) {
      o[oo] = combine<T>(reduce, o[oo], sp[so]);
      if (!count.empty()) ++count[static_cast<size_t>(oo)];
    });
    if (reduce == ScatterReduce::Mean) {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t c = std::max<int64_t>(count[static_cast<size_t>(i)], 1);
        if constexpr (kIsFloat<T>) {
          o[i] = castTo<T>(static_cast<OM<T>>(o[i]) / static_cast<OM<T>>(castTo<T>(c)));
        } else if constexpr (std::is_same_v<T, bool>) {
          o[i] = o[i];
        } else {
          const int64_t a = static_cast<int64_t>(o[i]);
          int64_t q = a / c;
          if ((a % c != 0) && ((a < 0) != (c < 0))) --q;
          o[i] = static_cast<T>(q);
        }
      }
    }
  });
  return out;
}

namespace {

/// index_add / index_copy / index_fill: index values (0/1-d Long or Int) checked against size.
std::vector<int64_t> indexList(const Tensor& index, int64_t size, const char* op, bool wrap) {
  TL_CHECK(index.dtype() == ScalarType::Long || index.dtype() == ScalarType::Int,
           "{}(): Expected dtype int32/int64 for index but got: {}", op, toString(index.dtype()));
  TL_CHECK(index.dim() <= 1, "{}(): Index is supposed to be a vector", op);
  std::vector<int64_t> out(static_cast<size_t>(index.numel()));
  for (int64_t i = 0; i < index.numel(); ++i) {
    int64_t v = index.intAt(i);
    if (wrap && v < 0) v += size;
    TL_CHECK(v >= 0 && v < size, "index out of range in self");
    out[static_cast<size_t>(i)] = v;
  }
  return out;
}

}  // namespace

Tensor indexAdd(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                const Scalar& alpha) {
  const int64_t d = wrapDim(dim, self.dim());
  const Tensor s1 = atLeast1d(self), src1 = atLeast1d(source);
  TL_CHECK(source.dtype() == self.dtype(),
           "index_add_(): self ({}) and source ({}) must have the same scalar type",
           toString(self.dtype()), toString(source.dtype()));
  const std::vector<int64_t> idx = indexList(index, s1.size(d), "index_add_", false);
  TL_CHECK(src1.dim() == s1.dim() || source.dim() == 0,
           "index_add_(): Source and self must have the same number of dimensions");
  TL_CHECK(static_cast<int64_t>(idx.size()) == src1.size(d),
           "index_add_(): Number of indices ({}) should be equal to source.size(dim) ({})",
           idx.size(), src1.size(d));
  for (int64_t k = 0; k < s1.dim(); ++k)
    TL_CHECK(
        k == d || s1.size(k) == src1.size(k),
        "index_add_(): self and source must have the same size at dimension {}; self has size {}, "
        "source has size {}",
        k, s1.size(k), src1.size(k));
  Tensor out = clone(self);
  Tensor o1 = atLeast1d(out);
  for (size_t i = 0; i < idx.size(); ++i) {
    Tensor dst = select(o1, d, idx[i]);
    Tensor res = add(dst, select(src1, d, static_cast<int64_t>(i)), alpha);
    copy_(dst, res);
  }
  return out;
}

Tensor indexCopy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  const int64_t d = wrapDim(dim, self.dim());
  const Tensor s1 = atLeast1d(self), src1 = atLeast1d(source);
  TL_CHECK(index.dtype() == ScalarType::Long,
           "index_copy_(): Expected a long tensor for index, but got {}", toString(index.dtype()));
  TL_CHECK(source.dtype() == self.dtype(),
           "index_copy_(): self and source expected to have the same dtype, "
           "but got (self) {} and (source) {}",
           toString(self.dtype()), toString(source.dtype()));
  const std::vector<int64_t> idx = indexList(index, s1.size(d), "index_copy_", false);
  TL_CHECK(static_cast<int64_t>(idx.size()) == src1.size(d),
           "index_copy_(): Number of indices ({}) should be equal to source.size(dim) ({})",
           idx.size(), src1.size(d));
  Tensor out = clone(self);
  Tensor o1 = atLeast1d(out);
  for (size_t i = 0; i < idx.size(); ++i) {
    Tensor dst = select(o1, d, idx[i]);
    copy_(dst, select(src1, d, static_cast<int64_t>(i)));
  }
  return out;
}

Tensor indexFill(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  const int64_t d = wrapDim(dim, self.dim());
  TL_CHECK(index.dtype() == ScalarType::Long, "index_fill_(): Expected dtype int64 for index.");
  const Tensor s1 = atLeast1d(self);
  const std::vector<int64_t> idx = indexList(index, s1.size(d), "index_fill_", true);
  Tensor out = clone(self);
  Tensor o1 = atLeast1d(out);
  for (int64_t v : idx) {
    Tensor dst = select(o1, d, v);
    fill_(dst, value);
  }
  return out;
}

namespace {

Tensor maskAsBool(const Tensor& mask, const char* op) {
  TL_CHECK(mask.dtype() == ScalarType::Bool || mask.dtype() == ScalarType::Byte,
           "{}: expected BoolTensor or ByteTensor for mask", op);
  return mask.dtype() == ScalarType::Bool ? mask : mask.to(ScalarType::Bool);
}

}  // namespace

Tensor maskedScatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  TL_CHECK(self.dtype() == source.dtype(),
           "masked_scatter: expected self and source to have same dtypes but got{} and {}",
           toString(self.dtype()), toString(source.dtype()));
  const Tensor m = maskAsBool(mask, "masked_scatter_");
  // In-place semantics: the mask broadcasts to self's shape.
  const Tensor mb = expand(m, self.sizes()).contiguous();
  Tensor out = clone(self);
  const Tensor src = source.contiguous();
  const int64_t n = out.numel(), avail = src.numel();
  const bool* mp = mb.data<bool>();
  dispatchAll(self.dtype(), "masked_scatter", [&](auto tag) {
    using T = TagT<decltype(tag)>;
    T* o = out.data<T>();
    const T* sp = src.data<T>();
    int64_t k = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (!mp[i]) continue;
      TL_CHECK(k < avail, "Number of elements of source < number of ones in mask");
      o[i] = sp[k++];
    }
  });
  return out;
}

Tensor maskedSelect(const Tensor& self, const Tensor& mask) {
  const Tensor m = maskAsBool(mask, "masked_select");
  const IntList shape = broadcastShapes(self.sizes(), m.sizes());
  const Tensor x = expand(self, shape).contiguous(), mb = expand(m, shape).contiguous();
  const bool* mp = mb.data<bool>();
  int64_t count = 0;
  for (int64_t i = 0; i < mb.numel(); ++i) count += mp[i] ? 1 : 0;
  Tensor out = Tensor::empty({count}, self.dtype());
  dispatchBySize(self.itemsize(), [&](auto tag) {
    using U = decltype(tag);
    const U* xp = x.data<U>();
    U* o = out.data<U>();
    int64_t k = 0;
    for (int64_t i = 0; i < mb.numel(); ++i)
      if (mp[i]) o[k++] = xp[i];
  });
  return out;
}

}  // namespace torchless::ops
