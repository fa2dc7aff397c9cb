#pragma once
// Normalization layers (floating dtypes). Statistics accumulate in double; variance is the
// biased one, as PyTorch's normalization uses.

#include "core/tensor.h"

#include <optional>

namespace torchless::ops {

using OptTensor = std::optional<Tensor>;

/// F.batch_norm(x [N, C, *], running_mean, running_var, weight, bias, training, momentum, eps):
/// training=false uses the running stats; training=true (or no running stats) normalizes with
/// the batch's statistics (running stats are not updated).
Tensor batchNorm(const Tensor& x, const OptTensor& runningMean, const OptTensor& runningVar,
                 const OptTensor& weight, const OptTensor& bias, bool training = false,
                 double momentum = 0.1, double eps = 1e-5);
/// F.layer_norm(x, normalized_shape, weight, bias, eps): over the last len(normalized_shape) dims.
Tensor layerNorm(const Tensor& x, const IntList& normalizedShape,
                 const OptTensor& weight = std::nullopt, const OptTensor& bias = std::nullopt,
                 double eps = 1e-5);
/// F.group_norm(x [N, C, *], num_groups, weight [C], bias [C], eps).
Tensor groupNorm(const Tensor& x, int64_t numGroups, const OptTensor& weight = std::nullopt,
                 const OptTensor& bias = std::nullopt, double eps = 1e-5);
/// F.instance_norm(x [N, C, *], running_mean, running_var, weight, bias, use_input_stats, momentum,
/// eps).
Tensor instanceNorm(const Tensor& x, const OptTensor& runningMean = std::nullopt,
                    const OptTensor& runningVar = std::nullopt,
                    const OptTensor& weight = std::nullopt, const OptTensor& bias = std::nullopt,
                    bool useInputStats = true, double momentum = 0.1, double eps = 1e-5);

}  // namespace torchless::ops
