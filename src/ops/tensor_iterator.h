#pragma once
// The one strided N-d loop of the operator library (ATen's TensorIterator, reduced).
//
// A TensorIter holds n operands of one common shape (inputs are broadcast with stride 0;
// operand 0 is by convention the output). It drops size-1 dims, merges dims that are
// contiguous for every operand and calls a row loop
//
//     loop(char** data, const int64_t* strides, int64_t n)
//
// with one data pointer and one byte stride per operand for each row of the innermost
// (merged) dim; rows are split across OpenMP threads when the tensor is large. cpuKernel
// wraps a typed per-element functor in a row loop with a contiguous fast path.

#include "core/tensor.h"
#include "ops/parallel.h"

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace torchless::ops {

/// The broadcast shape of two shapes (torch.broadcast_shapes). Throws "The size of tensor a
/// (3) must match the size of tensor b (4) at non-singleton dimension 1".
IntList broadcastShapes(const IntList& a, const IntList& b);

/// Strides (in elements) that view `t` as `shape` by broadcasting (0 for new or size-1 dims).
/// Throws as broadcastShapes when t cannot broadcast to shape.
IntList broadcastStrides(const Tensor& t, const IntList& shape);

/// A view of t expanded to shape (torch.expand semantics without -1).
Tensor broadcastTo(const Tensor& t, const IntList& shape);

/// PyTorch's is_non_overlapping_and_dense: t's elements fill its storage span exactly once
/// (contiguous, or a permutation of it such as channels-last; size-1 dims may have any
/// stride), so an elementwise map may run over rawData() in memory order. True when empty.
bool isNonOverlappingAndDense(const Tensor& t);

class TensorIter {
 public:
  static constexpr int kMaxOperands = 8;

  /// Operands broadcast to `shape` (operand 0, the output, must have exactly `shape`).
  TensorIter(const std::vector<Tensor>& operands, const IntList& shape);
  /// Convenience: shape is operands[0]'s.
  explicit TensorIter(const std::vector<Tensor>& operands)
      : TensorIter(operands, operands.at(0).sizes()) {}

  int64_t numel() const { return numel_; }
  int ntensors() const { return nt_; }
  /// Number of dims after merging (0 for a single element).
  int ndim() const { return static_cast<int>(shape_.size()); }

  /// Runs loop over every row; in parallel when numel >= 2 * grain.
  template <typename Loop>
  void forEach(Loop&& loop, int64_t grain = 32768) const {
    if (numel_ == 0) return;
    parallelFor(numel_, grain, [&](int64_t b, int64_t e) { runRange(b, e, loop); });
  }
  /// Serial variant (for loops that keep state across rows).
  template <typename Loop>
  void forEachSerial(Loop&& loop) const {
    if (numel_ > 0) runRange(0, numel_, loop);
  }

 private:
  template <typename Loop>
  void runRange(int64_t begin, int64_t end, Loop& loop) const {
    const int nd = ndim();
    std::array<char*, kMaxOperands> ptrs;
    std::array<int64_t, kMaxOperands> inner{};
    // idx over dims, dim 0 innermost.
    int64_t idx[64];
    int64_t rem = begin;
    for (int t = 0; t < nt_; ++t) ptrs[t] = base_[t];
    for (int d = 0; d < nd; ++d) {
      idx[d] = rem % shape_[d];
      rem /= shape_[d];
      for (int t = 0; t < nt_; ++t) ptrs[t] += idx[d] * strides_[d][t];
    }
    if (nd == 0) {
      loop(ptrs.data(), inner.data(), int64_t{1});
      return;
    }
    for (int t = 0; t < nt_; ++t) inner[t] = strides_[0][t];
    while (begin < end) {
      const int64_t n = std::min(shape_[0] - idx[0], end - begin);
      loop(ptrs.data(), inner.data(), n);
      begin += n;
      if (begin >= end) break;
      // advance by n along dim 0, carrying into outer dims
      for (int t = 0; t < nt_; ++t) ptrs[t] += n * strides_[0][t];
      idx[0] += n;
      for (int d = 0; d < nd && idx[d] == shape_[d]; ++d) {
        for (int t = 0; t < nt_; ++t) ptrs[t] -= shape_[d] * strides_[d][t];
        idx[d] = 0;
        if (d + 1 < nd) {
          ++idx[d + 1];
          for (int t = 0; t < nt_; ++t) ptrs[t] += strides_[d + 1][t];
        }
      }
    }
  }

  int nt_ = 0;
  int64_t numel_ = 0;
  std::array<char*, kMaxOperands> base_{};
  IntList shape_;                                           // innermost first
  std::vector<std::array<int64_t, kMaxOperands>> strides_;  // [dim][operand], bytes
};

namespace detail {
template <typename Out, typename... In, typename F, size_t... I>
inline void basicLoop(char** data, const int64_t* strides, int64_t n, const F& f,
                      std::index_sequence<I...>) {
  if (((strides[0] == static_cast<int64_t>(sizeof(Out))) && ... &&
       (strides[I + 1] == static_cast<int64_t>(sizeof(In))))) {
    Out* o = reinterpret_cast<Out*>(data[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = f(reinterpret_cast<const In*>(data[I + 1])[i]...);
  } else if (((strides[0] == static_cast<int64_t>(sizeof(Out))) && ... &&
              (strides[I + 1] == static_cast<int64_t>(sizeof(In)) || strides[I + 1] == 0))) {
    // contiguous output, inputs contiguous or broadcast scalars
    Out* o = reinterpret_cast<Out*>(data[0]);
    for (int64_t i = 0; i < n; ++i)
      o[i] = f(*reinterpret_cast<const In*>(
          data[I + 1] + (strides[I + 1] ? i * static_cast<int64_t>(sizeof(In)) : 0))...);
  } else {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<Out*>(data[0] + i * strides[0]) =
          f(*reinterpret_cast<const In*>(data[I + 1] + i * strides[I + 1])...);
  }
}
}  // namespace detail

/// Runs out = f(in...) elementwise over it (operand 0 is Out, then In...).
template <typename Out, typename... In, typename F>
void cpuKernel(const TensorIter& it, const F& f, int64_t grain = 32768) {
  it.forEach(
      [&](char** data, const int64_t* strides, int64_t n) {
        detail::basicLoop<Out, In...>(data, strides, n, f, std::index_sequence_for<In...>{});
      },
      grain);
}

/// Copies src into dst (same shape after broadcasting src), converting dtypes.
void copyInto(const Tensor& dst, const Tensor& src);

}  // namespace torchless::ops
