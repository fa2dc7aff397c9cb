// embedding_bag (see embedding_bag.h): per bag, rows of weight summed, averaged or maxed in
// the weight's dtype, in index order.
#include "ops/embedding_bag.h"

#include "ops/dispatch.h"
#include "ops/shape.h"

#include <vector>

namespace torchless::ops {

std::tuple<Tensor, Tensor, Tensor, Tensor> embeddingBag(const Tensor& weight, const Tensor& indices,
                                                        const Tensor& offsets, int64_t mode,
                                                        const std::optional<Tensor>& psw,
                                                        bool includeLastOffset,
                                                        std::optional<int64_t> paddingIdxOpt) {
  TL_CHECK(weight.dim() == 2,
           "embedding_bag: weight has to be a 2D Tensor, but got Tensor of dimension {}",
           weight.dim());
  TL_CHECK(indices.dim() == 1, "input has to be a 1D or 2D Tensor, but got Tensor of dimension {}",
           indices.dim());
  TL_CHECK(offsets.dim() == 1, "offsets has to be a 1D Tensor, but got Tensor of dimension {}",
           offsets.dim());
  TL_CHECK(indices.dtype() == ScalarType::Long || indices.dtype() == ScalarType::Int,
           "embedding_bag: Expected tensor for argument #2 'indices' to have one of the following "
           "scalar types: "
           "Long, Int; but got {} instead",
           toString(indices.dtype()));
  TL_CHECK(offsets.dtype() == indices.dtype(),
           "embedding_bag: Expected tensor for argument #3 'offsets' to have the same type as "
           "tensor for "
           "argument #2 'indices'; but type {} does not equal {}",
           toString(offsets.dtype()), toString(indices.dtype()));
  TL_CHECK(mode >= 0 && mode <= 2, "embedding_bag: unknown mode {}", mode);
  if (psw) {
    TL_CHECK(mode == 0, "embedding_bag: per_sample_weights only supported with mode='sum'");
    TL_CHECK(psw->dtype() == weight.dtype(),
             "embedding_bag: per_sample_weights must have the weight's dtype");
    TL_CHECK(psw->dim() == 1 && psw->size(0) == indices.size(0),
             "embedding_bag: expected per_sample_weights to be 1D tensor with the same number of "
             "elements as input");
  }
  const int64_t V = weight.size(0), D = weight.size(1), N = indices.size(0);
  int64_t paddingIdx = -1;
  if (paddingIdxOpt) {
    paddingIdx = *paddingIdxOpt;
    TL_CHECK(paddingIdx >= -V && paddingIdx < V,
             "padding_idx must be within the number of embeddings, -{} through {}, but got {}", V,
             V - 1, paddingIdx);
    if (paddingIdx < 0) paddingIdx += V;
  }
  std::vector<int64_t> off(static_cast<size_t>(offsets.numel()));
  for (size_t i = 0; i < off.size(); ++i) off[i] = offsets.intAt(static_cast<int64_t>(i));
  int64_t B = static_cast<int64_t>(off.size());
  if (includeLastOffset) {
    TL_CHECK(B >= 1, "include_last_offset: number of offset should be at least 1");
    --B;
  }
  if (!off.empty()) {
    TL_CHECK(off[0] == 0,
             "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
             "position 0. "
             "However, got {}",
             off[0]);
    TL_CHECK(off.back() <= N, "offsets[-1] can not be greater than input's length {}, but got {}",
             N, off.back());
  }
  std::vector<int64_t> idx(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) {
    idx[static_cast<size_t>(i)] = indices.intAt(i);
    TL_CHECK(idx[static_cast<size_t>(i)] >= 0 && idx[static_cast<size_t>(i)] < V,
             "index out of range in self");
  }
  auto bagEnd = [&](int64_t b) {
    return b + 1 < static_cast<int64_t>(off.size()) ? off[static_cast<size_t>(b + 1)] : N;
  };
  Tensor out = Tensor::empty({B, D}, weight.dtype());
  std::vector<int64_t> offset2bag(static_cast<size_t>(N), 0), bagSize(static_cast<size_t>(B), 0);
  std::vector<int64_t> maxIdx(mode == 2 ? static_cast<size_t>(B * D) : 0, -1);
  const Tensor w = weight.contiguous();
  const Tensor ps = psw ? psw->contiguous() : Tensor();
  dispatchFloating(w.dtype(), "embedding_bag", [&](auto tag) {
    using T = TagT<decltype(tag)>;
    using F = OpMath<T>;
    const T* wp = w.data<T>();
    const T* pp = ps.defined() ? ps.data<T>() : nullptr;
    T* o = out.data<T>();
    std::vector<F> acc(static_cast<size_t>(D));
    for (int64_t b = 0; b < B; ++b) {
      const int64_t begin = off[static_cast<size_t>(b)], end = std::max(bagEnd(b), begin);
      std::fill(acc.begin(), acc.end(), F(0));
      int64_t count = 0;
      for (int64_t i = begin; i < end; ++i) {
        offset2bag[static_cast<size_t>(i)] = b;
        const int64_t row = idx[static_cast<size_t>(i)];
        if (row == paddingIdx) continue;
        const T* wr = wp + row * D;
        if (mode == 2) {
          for (int64_t d = 0; d < D; ++d) {
            const F v = static_cast<F>(wr[d]);
            if (count == 0 || v > acc[static_cast<size_t>(d)]) {
              acc[static_cast<size_t>(d)] = v;
              maxIdx[static_cast<size_t>(b * D + d)] = row;
            }
          }
        } else {
          const F scale = pp ? static_cast<F>(pp[i]) : F(1);
          for (int64_t d = 0; d < D; ++d)
            acc[static_cast<size_t>(d)] = static_cast<F>(
                castTo<T>(acc[static_cast<size_t>(d)] +
                          (pp ? static_cast<F>(castTo<T>(static_cast<F>(wr[d]) * scale))
                              : static_cast<F>(wr[d]))));
        }
        ++count;
      }
      bagSize[static_cast<size_t>(b)] = count;
      for (int64_t d = 0; d < D; ++d) {
        F v = acc[static_cast<size_t>(d)];
        if (mode == 1 && count > 0) v = v / static_cast<F>(count);
        o[b * D + d] = castTo<T>(v);
      }
      if (mode == 2 && count == 0)
        for (int64_t d = 0; d < D; ++d) maxIdx[static_cast<size_t>(b * D + d)] = 0;
    }
  });
  auto longTensor = [](const std::vector<int64_t>& v, IntList shape) {
    Tensor t = Tensor::empty(shape, ScalarType::Long);
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    return t;
  };
  if (mode == 0)
    return {out, Tensor::empty({0}, ScalarType::Long), zeros({B}, ScalarType::Long),
            zeros({B}, ScalarType::Long)};
  Tensor o2b = longTensor(offset2bag, {N}), bs = longTensor(bagSize, {B});
  if (mode == 1) return {out, o2b, bs, bs.clone()};
  return {out, o2b, bs, longTensor(maxIdx, {B, D})};
}

}  // namespace torchless::ops
