#pragma once
// Scatter-style indexing ops: values written (or reduced) into a copy of `self` at positions
// an index tensor names. Each follows PyTorch 1.13's CPU kernel: the same checks and messages,
// the same order of accumulation (index elements in row-major order), results in self's dtype.
// Every function returns a new contiguous tensor; the registration layer writes it back for
// the in-place overloads.

#include "core/tensor.h"
#include "ops/dispatch.h"

#include <optional>
#include <string>

namespace torchless::ops {

/// How scatter combines a written value with the one already there.
enum class ScatterReduce { None, Sum, Prod, Mean, Max, Min };

/// aten::scatter.reduce's "add" / "multiply" (reduceSrc = true) or scatter_reduce.two's
/// "sum" / "prod" / "mean" / "amax" / "amin". Throws PyTorch's message for other names.
ScatterReduce scatterReduceFromString(const std::string& reduce, bool twoOverload);

/// torch.scatter(self, dim, index, src[, reduce]): out = self.clone(); for every position p of
/// index (a Long tensor with self's number of dims, no larger than src anywhere and than self
/// outside `dim`), out[p with p[dim] = index[p]] = src[p] (or combined per `reduce`). Indices
/// must lie in [0, self.size(dim)) ("index 3 is out of bounds for dimension 0 with size 3");
/// src must have self's dtype.
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
               ScatterReduce reduce = ScatterReduce::None);
/// torch.scatter(self, dim, index, value[, reduce]): a Scalar value cast to self's dtype.
Tensor scatterValue(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                    ScatterReduce reduce = ScatterReduce::None);
/// torch.scatter_reduce(self, dim, index, src, reduce, include_self): sum/prod/mean/amax/amin
/// over self (when include_self) and every src value scattered to a position; mean divides by
/// the count (floor division for integers); positions nothing is scattered to keep self.
Tensor scatterReduceTwo(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                        ScatterReduce reduce, bool includeSelf);

/// torch.index_add(self, dim, index, source, alpha): out.select(dim, index[i]) +=
/// alpha * source.select(dim, i). index is a 0/1-d Long or Int tensor with values in
/// [0, self.size(dim)) ("index out of range in self").
Tensor indexAdd(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                const Scalar& alpha = 1);
/// torch.index_copy(self, dim, index, source): out.select(dim, index[i]) = source.select(dim, i).
Tensor indexCopy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source);
/// torch.index_fill(self, dim, index, value): out.select(dim, index[i]) = value (negative
/// indices wrap).
Tensor indexFill(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);

/// torch.masked_scatter(self, mask, source): where the mask (Bool or Byte, broadcast with self)
/// is true, self's elements are replaced in row-major order by source's first elements.
Tensor maskedScatter(const Tensor& self, const Tensor& mask, const Tensor& source);
/// torch.masked_select(self, mask): the 1-d tensor of self's elements (self and mask broadcast)
/// where mask is true.
Tensor maskedSelect(const Tensor& self, const Tensor& mask);

}  // namespace torchless::ops
