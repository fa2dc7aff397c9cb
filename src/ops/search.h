#pragma once
// Sorted-sequence searches and unique values: torch.searchsorted / bucketize, torch.unique
// (aten::_unique2, unique_dim) and unique_consecutive, following PyTorch 1.13's CPU kernels
// (the same binary searches, so NaN sorts past every number; results in Long or Int).

#include "core/tensor.h"
#include "ops/dispatch.h"

#include <optional>
#include <string>
#include <tuple>

namespace torchless::ops {

/// torch.searchsorted(sorted_sequence, values, out_int32, right, side, sorter): for each value
/// the first index i with seq[i] >= v (left) or seq[i] > v (right). sorted_sequence is 1-d, or
/// has values' leading dims (one search row per leading index); sorter (Long, same shape) reads
/// seq through it. Long result (Int with out_int32), values' shape. Throws PyTorch's messages
/// for mismatched shapes, a bad side, side/right opposites and out-of-range sorter indices.
Tensor searchsorted(const Tensor& sortedSequence, const Tensor& values, bool outInt32 = false,
                    bool right = false, const std::optional<std::string>& side = std::nullopt,
                    const std::optional<Tensor>& sorter = std::nullopt);
/// torch.bucketize(values, boundaries, out_int32, right): searchsorted over 1-d boundaries.
Tensor bucketize(const Tensor& values, const Tensor& boundaries, bool outInt32 = false,
                 bool right = false);

/// aten::_unique2(self, sorted, return_inverse, return_counts) -> (values 1-d ascending,
/// inverse Long of self's shape or [0], counts Long or [0]). sorted=False gives the sorted
/// order too (PyTorch's order then comes from a hash set and is unspecified).
std::tuple<Tensor, Tensor, Tensor> unique2(const Tensor& self, bool sorted = true,
                                           bool returnInverse = false, bool returnCounts = false);
/// aten::unique_dim(self, dim, sorted, return_inverse, return_counts): unique slices along dim,
/// in lexicographic order; inverse [self.size(dim)] and counts per slice (always returned).
std::tuple<Tensor, Tensor, Tensor> uniqueDim(const Tensor& self, int64_t dim,
                                             bool returnInverse = false, bool returnCounts = false);
/// aten::unique_consecutive(self, return_inverse, return_counts, dim=None): drops consecutive
/// repeats (of elements of the flattened tensor, or of slices along dim: then inverse and
/// counts are returned whether asked or not, as PyTorch 1.13 does).
std::tuple<Tensor, Tensor, Tensor> uniqueConsecutive(const Tensor& self, bool returnInverse = false,
                                                     bool returnCounts = false,
                                                     std::optional<int64_t> dim = std::nullopt);

}  // namespace torchless::ops
