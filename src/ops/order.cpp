#include "ops/order.h"

#include "core/error.h"
#include "ops/dispatch.h"
#include "ops/reduction.h"
#include "ops/shape.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace torchless::ops {
namespace {

// x with dim d moved last (a view), and the permutation back.
Tensor dimLast(const Tensor& x, int64_t d) {
  IntList perm;
  for (int64_t i = 0; i < x.dim(); ++i)
    if (i != d) perm.push_back(i);
  perm.push_back(d);
  return permute(x, perm);
}
Tensor lastToDim(const Tensor& x, int64_t d) {
  IntList perm;
  for (int64_t j = 0; j < x.dim(); ++j) perm.push_back(j < d ? j : j == d ? x.dim() - 1 : j - 1);
  return permute(x, perm);
}

template <typename T>
bool isNan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else if constexpr (std::is_integral_v<T>)
    return false;
  else
    return std::isnan(static_cast<float>(v));
}

// Runs fn(row, n, outValue, outIndex) for each row of x along dim; results shaped as x
// reduced over dim (kept as 1 with keepdim).
template <typename Fn>
std::tuple<Tensor, Tensor> reduceRows(const Tensor& x, int64_t dim, bool keepdim, const char* name,
                                      const Fn& fn) {
  const int64_t d = wrapDim(dim, std::max<int64_t>(x.dim(), 1));
  Tensor rows = x.dim() == 0 ? reshape(x, {1}) : dimLast(x, d).contiguous();
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  IntList shape = x.sizes();
  if (x.dim() > 0) {
    if (keepdim)
      shape[static_cast<size_t>(d)] = 1;
    else
      shape.erase(shape.begin() + d);
  }
  Tensor values = Tensor::empty(shape, x.dtype());
  Tensor indices = Tensor::empty(shape, ScalarType::Long);
  const int64_t count = n == 0 ? 0 : rows.numel() / n;
  dispatchAll(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T* in = rows.data<T>();
    T* vo = values.data<T>();
    int64_t* io = indices.data<int64_t>();
    for (int64_t r = 0; r < count; ++r) fn(in + r * n, n, vo + r, io + r);
  });
  return {values, indices};
}

// The stable order of a row with NaN last (the k-th order statistic's sort).
template <typename T>
std::vector<int64_t> order(const T* row, int64_t n) {
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [row](int64_t a, int64_t b) {
    const bool na = isNan(row[a]), nb = isNan(row[b]);
    if (na || nb) return !na && nb;
    return row[a] < row[b];
  });
  return idx;
}

template <bool Max>
std::tuple<Tensor, Tensor> cumExtreme(const Tensor& x, int64_t dim, const char* name) {
  if (x.dim() == 0) return {x.clone(), zeros({}, ScalarType::Long)};
  const int64_t d = wrapDim(dim, x.dim());
  Tensor rows = dimLast(x, d).contiguous();
  Tensor values = Tensor::empty(rows.sizes(), x.dtype());
  Tensor indices = Tensor::empty(rows.sizes(), ScalarType::Long);
  const int64_t n = x.size(d), count = n == 0 ? 0 : rows.numel() / n;
  dispatchAll(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T* in = rows.data<T>();
    T* vo = values.data<T>();
    int64_t* io = indices.data<int64_t>();
    for (int64_t r = 0; r < count; ++r) {
      const T* row = in + r * n;
      T best = row[0];
      int64_t at = 0;
      for (int64_t i = 0; i < n; ++i) {
        const T v = row[i];
        const bool better = Max ? !(v < best) : !(best < v);  // ties take the later index
        if (isNan(v) || (!isNan(best) && better)) {
          best = v;
          at = i;
        }
        vo[r * n + i] = best;
        io[r * n + i] = at;
      }
    }
  });
  return {lastToDim(values, d).contiguous(), lastToDim(indices, d).contiguous()};
}

// The lower median of each row along dim. NaN sorts last: median() answers NaN (at the first
// NaN) for a row holding one; nanmedian() takes the median of the numbers before it (of the
// whole row when all are NaN, as PyTorch indexes it).
std::tuple<Tensor, Tensor> medianRows(const Tensor& x, int64_t dim, bool keepdim, bool skipNaN) {
  const int64_t d = wrapDim(dim, std::max<int64_t>(x.dim(), 1));
  TL_CHECK(x.dim() == 0 || x.size(d) > 0, "{}(): Expected reduction dim {} to have non-zero size.",
           skipNaN ? "nanmedian" : "median", d);
  return reduceRows(x, dim, keepdim, skipNaN ? "nanmedian_cpu" : "median_out",
                    [skipNaN](const auto* row, int64_t n, auto* v, int64_t* i) {
                      int64_t numbers = 0;
                      for (int64_t j = 0; j < n; ++j) {
                        if (!isNan(row[j])) {
                          ++numbers;
                        } else if (!skipNaN) {
                          *v = row[j];
                          *i = j;
                          return;
                        }
                      }
                      const auto idx = order(row, n);
                      *i = idx[static_cast<size_t>(((numbers > 0 ? numbers : n) - 1) / 2)];
                      *v = row[*i];
                    });
}

Tensor medianAll(const Tensor& x, bool skipNaN) {
  if (x.numel() == 0) return full({}, Scalar(std::nan("")), x.dtype());
  return std::get<0>(medianRows(reshape(x.contiguous(), {-1}), 0, false, skipNaN));
}

}  // namespace

Tensor median(const Tensor& x) { return medianAll(x, false); }
std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim) {
  return medianRows(x, dim, keepdim, false);
}
Tensor nanmedian(const Tensor& x) { return medianAll(x, true); }
std::tuple<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim) {
  return medianRows(x, dim, keepdim, true);
}

namespace {

// ATen's quick_select_template (aten/src/ATen/native/SortingUtils.h), which kthvalue runs on a
// copy of the row and its indices: median-of-three pivots, Hoare partitions, NaN greater than
// everything. Which of several equal values ends at position k is this algorithm's choice, so
// it is reproduced step by step for kthvalue's index to be PyTorch's.
template <typename T>
void quickSelect(std::vector<T>& arr, std::vector<int64_t>& idx, int64_t k) {
  auto gtOrNan = [](const T& a, const T& b) { return (isNan(a) && !isNan(b)) || a > b; };
  auto swap = [&](int64_t i, int64_t j) {
    std::swap(arr[static_cast<size_t>(i)], arr[static_cast<size_t>(j)]);
    std::swap(idx[static_cast<size_t>(i)], idx[static_cast<size_t>(j)]);
  };
  auto at = [&](int64_t i) -> const T& { return arr[static_cast<size_t>(i)]; };
  int64_t L = 0, R = static_cast<int64_t>(arr.size()) - 1;
  while (true) {
    if (R <= L) return;
    if (R == L + 1) {
      if (gtOrNan(at(L), at(R))) swap(L, R);
      return;
    }
    const int64_t P = L + (R - L) / 2;
    swap(P, L + 1);
    if (gtOrNan(at(L + 1), at(R))) swap(L + 1, R);
    if (gtOrNan(at(L), at(R))) swap(L, R);
    if (gtOrNan(at(L + 1), at(L))) swap(L + 1, L);
    int64_t i = L + 1, j = R;
    const T piv = at(L);
    while (true) {
      do ++i;
      while (gtOrNan(piv, at(i)));
      do --j;
      while (gtOrNan(at(j), piv));
      if (j < i) break;
      swap(i, j);
    }
    swap(L, j);
    if (j <= k) L = i;
    if (j >= k) R = j - 1;
  }
}

}  // namespace

std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  const int64_t d = wrapDim(dim, std::max<int64_t>(x.dim(), 1));
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  TL_CHECK(k >= 1 && k <= n, "kthvalue(): selected number k out of range for dimension {}", d);
  return reduceRows(x, dim, keepdim, "kthvalue_cpu",
                    [k](const auto* row, int64_t len, auto* v, int64_t* i) {
                      using T = std::remove_const_t<std::remove_pointer_t<decltype(row)>>;
                      // (bools as bytes: std::vector<bool> has no element to swap)
                      using S = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
                      std::vector<S> vals(row, row + len);
                      std::vector<int64_t> idx(static_cast<size_t>(len));
                      std::iota(idx.begin(), idx.end(), int64_t{0});
                      quickSelect(vals, idx, k - 1);
                      *i = idx[static_cast<size_t>(k - 1)];
                      *v = static_cast<T>(vals[static_cast<size_t>(k - 1)]);
                    });
}

std::tuple<Tensor, Tensor> mode(const Tensor& x, int64_t dim, bool keepdim) {
  const int64_t d = wrapDim(dim, std::max<int64_t>(x.dim(), 1));
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  TL_CHECK(x.numel() == 0 || n > 0, "mode(): Expected reduction dim {} to have non-zero size.", d);
  return reduceRows(x, dim, keepdim, "mode_cpu",
                    [](const auto* row, int64_t len, auto* v, int64_t* i) {
                      using T = std::remove_const_t<std::remove_pointer_t<decltype(row)>>;
                      std::vector<std::pair<T, int64_t>> e(static_cast<size_t>(len));
                      for (int64_t k = 0; k < len; ++k) e[static_cast<size_t>(k)] = {row[k], k};
                      std::sort(e.begin(), e.end(),
                                [](const auto& a, const auto& b) { return a.first < b.first; });
                      int64_t run = 0, best = 0;
                      for (size_t k = 0; k < e.size(); ++k) {
                        ++run;
                        if (k + 1 == e.size() || e[k].first != e[k + 1].first) {
                          if (run > best) {
                            *v = e[k].first;
                            *i = e[k].second;
                            best = run;
                          }
                          run = 0;
                        }
                      }
                    });
}

Tensor msort(const Tensor& x) { return std::get<0>(sort(x, 0, false, false)); }

std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim) {
  return cumExtreme<true>(x, dim, "cummax_cpu");
}
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim) {
  return cumExtreme<false>(x, dim, "cummin_cpu");
}

}  // namespace torchless::ops
