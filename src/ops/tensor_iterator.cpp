#include "ops/tensor_iterator.h"

#include "ops/dispatch.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

namespace torchless::ops {

IntList broadcastShapes(const IntList& a, const IntList& b) {
  const size_t n = std::max(a.size(), b.size());
  IntList out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t ia = static_cast<int64_t>(a.size()) - 1 - static_cast<int64_t>(i);
    const int64_t ib = static_cast<int64_t>(b.size()) - 1 - static_cast<int64_t>(i);
    const int64_t sa = ia >= 0 ? a[static_cast<size_t>(ia)] : 1;
    const int64_t sb = ib >= 0 ? b[static_cast<size_t>(ib)] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      throw Error(fmt::format(
          "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton "
          "dimension {}",
          sa, sb, n - 1 - i));
    out[n - 1 - i] = sa == 1 ? sb : sa;
  }
  return out;
}

bool isNonOverlappingAndDense(const Tensor& t) {
  if (t.numel() == 0) return true;
  // (stride, size) of the dims above size 1, on the stack: elementwise ops ask per call.
  constexpr int64_t kDims = 16;
  if (t.dim() > kDims) {
    return t.isContiguous();  // rare ranks: only the contiguous layout takes the flat path
  }
  std::array<std::pair<int64_t, int64_t>, kDims> dims;
  size_t n = 0;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) != 1) dims[n++] = {t.stride(d), t.size(d)};
  std::sort(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(n));
  int64_t expected = 1;
  for (size_t i = 0; i < n; ++i) {
    if (dims[i].first != expected) return false;
    expected *= dims[i].second;
  }
  return true;
}

IntList broadcastStrides(const Tensor& t, const IntList& shape) {
  const auto& sz = t.sizes();
  const auto& st = t.strides();
  TL_CHECK(sz.size() <= shape.size(),
           "The expanded size of the tensor ({}) must match the existing size ({}) at "
           "non-singleton dimension 0.  Target sizes: {}.  Tensor sizes: {}",
           shape.size(), sz.size(), sizesToString(shape), sizesToString(sz));
  IntList out(shape.size(), 0);
  const size_t off = shape.size() - sz.size();
  for (size_t i = 0; i < sz.size(); ++i) {
    if (sz[i] == shape[i + off]) {
      out[i + off] = sz[i] == 1 ? 0 : st[i];
    } else if (sz[i] == 1) {
      out[i + off] = 0;
    } else {
      throw Error(fmt::format(
          "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton "
          "dimension {}",
          shape[i + off], sz[i], i + off));
    }
  }
  return out;
}

Tensor broadcastTo(const Tensor& t, const IntList& shape) {
  if (t.sizes() == shape) return t;
  return t.asStrided(shape, broadcastStrides(t, shape), t.storageOffset());
}

TensorIter::TensorIter(const std::vector<Tensor>& operands, const IntList& shape) {
  nt_ = static_cast<int>(operands.size());
  TL_INTERNAL_ASSERT(nt_ >= 1 && nt_ <= kMaxOperands, "TensorIter with {} operands", nt_);
  numel_ = checkedNumel(shape);
  TL_INTERNAL_ASSERT(shape.size() < 64, "too many dims");
  std::vector<IntList> st(static_cast<size_t>(nt_));
  for (int t = 0; t < nt_; ++t) {
    const Tensor& op = operands[static_cast<size_t>(t)];
    base_[static_cast<size_t>(t)] = static_cast<char*>(op.rawData());
    st[static_cast<size_t>(t)] = op.sizes() == shape ? op.strides() : broadcastStrides(op, shape);
    for (auto& s : st[static_cast<size_t>(t)]) s *= static_cast<int64_t>(op.itemsize());
  }
  // Innermost first, dropping size-1 dims, merging dims contiguous for every operand.
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    std::array<int64_t, kMaxOperands> s{};
    for (int t = 0; t < nt_; ++t) s[static_cast<size_t>(t)] = st[static_cast<size_t>(t)][i];
    if (!shape_.empty()) {
      bool merge = true;
      const int64_t prevSize = shape_.back();
      for (int t = 0; t < nt_ && merge; ++t)
        merge = s[static_cast<size_t>(t)] == strides_.back()[static_cast<size_t>(t)] * prevSize;
      if (merge) {
        shape_.back() *= shape[i];
        continue;
      }
    }
    shape_.push_back(shape[i]);
    strides_.push_back(s);
  }
}

void copyInto(const Tensor& dst, const Tensor& src) {
  TensorIter it({dst, src}, dst.sizes());
  if (dst.dtype() == src.dtype()) {
    dispatchBySize(dst.itemsize(), [&](auto tag) {
      using T = decltype(tag);
      cpuKernel<T, T>(it, [](T v) { return v; });
    });
    return;
  }
  dispatchAll(dst.dtype(), "copy_", [&](auto dtag) {
    using D = decltype(dtag);
    dispatchAll(src.dtype(), "copy_", [&](auto stag) {
      using S = decltype(stag);
      cpuKernel<D, S>(it, [](S v) { return castTo<D>(v); });
    });
  });
}

}  // namespace torchless::ops
