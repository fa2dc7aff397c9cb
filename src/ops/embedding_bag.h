#pragma once
// torch.nn.functional.embedding_bag's kernel (aten::embedding_bag / _embedding_bag).

#include "core/tensor.h"

#include <optional>
#include <tuple>

namespace torchless::ops {

/// aten::embedding_bag(weight [V, D], indices [N] (Long or Int), offsets [B] (or [B + 1] with
/// include_last_offset), mode 0 sum / 1 mean / 2 max, per_sample_weights [N] (sum only),
/// padding_idx (entries equal to it are skipped; negative wraps)) -> (output [B, D],
/// offset2bag, bag_size, max_indices) shaped as PyTorch 1.13's CPU kernel returns them:
/// sum gives an empty offset2bag and zero bag_size / max_indices [B]; mean gives offset2bag
/// [N], bag_size [B] and max_indices = bag_size; max gives max_indices [B, D]. Empty bags give
/// zero rows. Throws PyTorch's messages for bad offsets, modes and padding_idx.
std::tuple<Tensor, Tensor, Tensor, Tensor> embeddingBag(
    const Tensor& weight, const Tensor& indices, const Tensor& offsets, int64_t mode,
    const std::optional<Tensor>& perSampleWeights, bool includeLastOffset,
    std::optional<int64_t> paddingIdx);

}  // namespace torchless::ops
