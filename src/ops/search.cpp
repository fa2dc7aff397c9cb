// searchsorted / bucketize / unique (see search.h).
#include "ops/search.h"

#include "ops/shape.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace torchless::ops {

namespace {

/// The values of a real tensor as doubles (row-major). Comparisons in double keep PyTorch's
/// order for every dtype searchsorted promotes to.
std::vector<double> asDoubles(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<double> out(static_cast<size_t>(c.numel()));
  dispatchAll(c.dtype(), "searchsorted", [&](auto tag) {
    using T = TagT<decltype(tag)>;
    const T* p = c.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  });
  return out;
}

}  // namespace

Tensor searchsorted(const Tensor& seq, const Tensor& values, bool outInt32, bool right,
                    const std::optional<std::string>& side, const std::optional<Tensor>& sorter) {
  if (side) {
    TL_CHECK(*side == "left" || *side == "right",
             "torch.searchsorted(): side can only be 'left' or 'right' but got {}", *side);
    TL_CHECK(!right || *side == "right",
             "torch.searchsorted(): side and right can't be set to opposites, got side of {} while "
             "right was True",
             *side);
  }
  const bool isRight = side ? *side == "right" : right;
  TL_CHECK(seq.dim() >= 1,
           "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
           "dimension");
  if (seq.dim() != 1) {
    bool ok = seq.dim() == values.dim();
    for (int64_t k = 0; ok && k + 1 < seq.dim(); ++k) ok = seq.size(k) == values.size(k);
    TL_CHECK(ok,
             "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
             "dimensions of "
             "boundaries tensor and input value tensor must match, but we got boundaries tensor {} "
             "and input "
             "value tensor {}",
             sizesToString(seq.sizes()), sizesToString(values.sizes()));
  }
  std::vector<int64_t> sortIdx;
  if (sorter) {
    TL_CHECK(sorter->dtype() == ScalarType::Long,
             "torch.searchsorted(): sorter must be a tensor of long dtype but got {}",
             toString(sorter->dtype()));
    TL_CHECK(sorter->sizes() == seq.sizes(),
             "torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
             "tensor {}and got "
             "sorter tensor {}",
             sizesToString(seq.sizes()), sizesToString(sorter->sizes()));
    const Tensor s = sorter->contiguous();
    const int64_t inner = seq.size(-1);
    sortIdx.assign(s.data<int64_t>(), s.data<int64_t>() + s.numel());
    for (int64_t v : sortIdx)
      TL_CHECK(v >= 0 && v < inner, "torch.searchsorted(): sorter index out of range");
  }
  const std::vector<double> sv = asDoubles(seq), vv = asDoubles(values);
  const int64_t inner = seq.size(-1);
  const int64_t valInner = values.dim() == 0 ? 1 : values.size(-1);
  Tensor out = Tensor::empty(values.sizes(), outInt32 ? ScalarType::Int : ScalarType::Long);
  for (size_t i = 0; i < vv.size(); ++i) {
    const int64_t row = seq.dim() == 1 ? 0 : static_cast<int64_t>(i) / valInner;
    const double v = vv[i];
    const int64_t base = row * inner;
    int64_t start = 0, end = inner;
    while (start < end) {
      const int64_t mid = start + ((end - start) >> 1);
      const int64_t at = base + (sortIdx.empty() ? mid : sortIdx[static_cast<size_t>(base + mid)]);
      const double m = sv[static_cast<size_t>(at)];
      const bool goRight = isRight ? !(m > v) : !(m >= v);
      if (goRight)
        start = mid + 1;
      else
        end = mid;
    }
    if (outInt32)
      out.data<int32_t>()[i] = static_cast<int32_t>(start);
    else
      out.data<int64_t>()[i] = start;
  }
  return out;
}

Tensor bucketize(const Tensor& values, const Tensor& boundaries, bool outInt32, bool right) {
  TL_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim({})",
           boundaries.dim());
  return searchsorted(boundaries, values, outInt32, right);
}

namespace {

Tensor longVector(const std::vector<int64_t>& v, IntList shape) {
  Tensor t = Tensor::empty(shape, ScalarType::Long);
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

Tensor emptyLong() { return Tensor::empty({0}, ScalarType::Long); }

/// Rows of self along dim: [self.size(dim), rest] as a contiguous tensor (moved dim first).
Tensor rowsAlong(const Tensor& self, int64_t d) {
  Tensor moved = d == 0 ? self : transpose(self, 0, d);
  return reshape(moved.contiguous(),
                 {self.size(d), self.size(d) == 0 ? 0 : self.numel() / self.size(d)});
}

template <typename T>
OpMath<T> om(T v) {
  return static_cast<OpMath<T>>(v);
}

/// Compares rows a and b of a contiguous [R, C] tensor: -1, 0, 1.
template <typename T>
int compareRows(const T* p, int64_t cols, int64_t a, int64_t b) {
  for (int64_t c = 0; c < cols; ++c) {
    const auto x = om(p[a * cols + c]), y = om(p[b * cols + c]);
    if (x < y) return -1;
    if (y < x) return 1;
  }
  return 0;
}

/// The slices of self along d picked by `rows` (indices into dim d), as a tensor.
Tensor pickRows(const Tensor& self, int64_t d, const std::vector<int64_t>& rows) {
  return indexSelect(self, d, longVector(rows, {static_cast<int64_t>(rows.size())}));
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> unique2(const Tensor& self, bool /*sorted*/, bool returnInverse,
                                           bool returnCounts) {
  const Tensor c = self.contiguous();
  const int64_t n = c.numel();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  Tensor values;
  std::vector<int64_t> inverse(static_cast<size_t>(n)), counts;
  dispatchAll(c.dtype(), "unique", [&](auto tag) {
    using T = TagT<decltype(tag)>;
    const T* p = c.data<T>();
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return om(p[a]) < om(p[b]); });
    std::vector<T> uniq;
    for (size_t i = 0; i < order.size(); ++i) {
      const T v = p[order[i]];
      if (uniq.empty() || om(uniq.back()) < om(v) || om(v) < om(uniq.back())) {
        uniq.push_back(v);
        counts.push_back(0);
      }
      ++counts.back();
      inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(uniq.size()) - 1;
    }
    values = Tensor::empty({static_cast<int64_t>(uniq.size())}, c.dtype());
    std::copy(uniq.begin(), uniq.end(), values.data<T>());
  });
  return {values, returnInverse ? longVector(inverse, self.sizes()) : emptyLong(),
          returnCounts ? longVector(counts, {static_cast<int64_t>(counts.size())}) : emptyLong()};
}

std::tuple<Tensor, Tensor, Tensor> uniqueDim(const Tensor& self, int64_t dim, bool returnInverse,
                                             bool returnCounts) {
  const int64_t d = wrapDim(dim, self.dim());
  const Tensor rows = rowsAlong(self, d);
  const int64_t R = rows.size(0), C = rows.size(1);
  std::vector<int64_t> order(static_cast<size_t>(R)), inverse(static_cast<size_t>(R)), counts, keep;
  std::iota(order.begin(), order.end(), 0);
  dispatchAll(rows.dtype(), "unique_dim", [&](auto tag) {
    using T = TagT<decltype(tag)>;
    const T* p = rows.data<T>();
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return compareRows(p, C, a, b) < 0; });
    for (size_t i = 0; i < order.size(); ++i) {
      if (keep.empty() || compareRows(p, C, keep.back(), order[i]) != 0) {
        keep.push_back(order[i]);
        counts.push_back(0);
      }
      ++counts.back();
      inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(keep.size()) - 1;
    }
  });
  (void)returnInverse;  // along a dim PyTorch 1.13 returns inverse and counts always
  (void)returnCounts;
  return {pickRows(self, d, keep), longVector(inverse, {R}),
          longVector(counts, {static_cast<int64_t>(counts.size())})};
}

std::tuple<Tensor, Tensor, Tensor> uniqueConsecutive(const Tensor& self, bool returnInverse,
                                                     bool returnCounts,
                                                     std::optional<int64_t> dim) {
  if (dim) {
    const int64_t d = wrapDim(*dim, self.dim());
    const Tensor rows = rowsAlong(self, d);
    const int64_t R = rows.size(0), C = rows.size(1);
    std::vector<int64_t> inverse(static_cast<size_t>(R)), counts, keep;
    dispatchAll(rows.dtype(), "unique_consecutive", [&](auto tag) {
      using T = TagT<decltype(tag)>;
      const T* p = rows.data<T>();
      for (int64_t r = 0; r < R; ++r) {
        if (keep.empty() || compareRows(p, C, keep.back(), r) != 0) {
          keep.push_back(r);
          counts.push_back(0);
        }
        ++counts.back();
        inverse[static_cast<size_t>(r)] = static_cast<int64_t>(keep.size()) - 1;
      }
    });
    (void)returnInverse;  // along a dim PyTorch 1.13 returns inverse and counts always
    (void)returnCounts;
    return {pickRows(self, d, keep), longVector(inverse, {R}),
            longVector(counts, {static_cast<int64_t>(counts.size())})};
  }
  const Tensor c = self.contiguous();
  const int64_t n = c.numel();
  std::vector<int64_t> inverse(static_cast<size_t>(n)), counts, keep;
  dispatchAll(c.dtype(), "unique_consecutive", [&](auto tag) {
    using T = TagT<decltype(tag)>;
    const T* p = c.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if (keep.empty() || om(p[keep.back()]) != om(p[i])) {
        keep.push_back(i);
        counts.push_back(0);
      }
      ++counts.back();
      inverse[static_cast<size_t>(i)] = static_cast<int64_t>(keep.size()) - 1;
    }
  });
  const Tensor flat = reshape(c, {n});
  return {indexSelect(flat, 0, longVector(keep, {static_cast<int64_t>(keep.size())})),
          returnInverse ? longVector(inverse, self.sizes()) : emptyLong(),
          returnCounts ? longVector(counts, {static_cast<int64_t>(counts.size())}) : emptyLong()};
}

}  // namespace torchless::ops
