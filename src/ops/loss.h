#pragma once
// Loss functions as ATen computes them (torch.nn.functional's losses reach these aten ops in
// TorchScript). `reduction` is ATen's enum: 0 none (the elementwise loss), 1 mean, 2 sum.
// Inputs and targets broadcast where PyTorch's do; mismatched shapes, class targets out of
// range and probabilities outside [0, 1] throw torchless::Error worded as PyTorch's.

#include "core/tensor.h"

#include <optional>

namespace torchless::ops {

/// Reduction::None / Mean / Sum applied to an elementwise loss. Throws for another value.
Tensor applyReduction(const Tensor& loss, int64_t reduction);

/// F.mse_loss / l1_loss: (x - y)^2, |x - y|.
Tensor mseLoss(const Tensor& x, const Tensor& y, int64_t reduction);
Tensor l1Loss(const Tensor& x, const Tensor& y, int64_t reduction);
/// F.smooth_l1_loss: 0.5 z^2 / beta where z = |x - y| < beta, else z - 0.5 beta (beta 0: L1).
Tensor smoothL1Loss(const Tensor& x, const Tensor& y, int64_t reduction, double beta);
/// F.huber_loss: 0.5 z^2 where z < delta, else delta (z - 0.5 delta).
Tensor huberLoss(const Tensor& x, const Tensor& y, int64_t reduction, double delta);
/// F.binary_cross_entropy: -(y log x + (1 - y) log(1 - x)), each log clamped at -100, times
/// weight. Throws "all elements of input should be between 0 and 1".
Tensor binaryCrossEntropy(const Tensor& x, const Tensor& y, const std::optional<Tensor>& weight,
                          int64_t reduction);
/// F.binary_cross_entropy_with_logits on logits x: the stable form (1 - y) x + log(1 + e^-x),
/// pos_weight [C] weighting the positive term, weight multiplying the result.
Tensor binaryCrossEntropyWithLogits(const Tensor& x, const Tensor& y,
                                    const std::optional<Tensor>& weight,
                                    const std::optional<Tensor>& posWeight, int64_t reduction);
/// F.soft_margin_loss: log(1 + exp(-y x)).
Tensor softMarginLoss(const Tensor& x, const Tensor& y, int64_t reduction);
/// F.kl_div on log-probabilities x: y (log y - x) (0 where y is 0), or e^y (y - x) with
/// log_target. Mean averages every element (batchmean is the caller's sum / N).
Tensor klDiv(const Tensor& x, const Tensor& y, int64_t reduction, bool logTarget);
/// F.margin_ranking_loss: max(0, -y (x1 - x2) + margin).
Tensor marginRankingLoss(const Tensor& x1, const Tensor& x2, const Tensor& y, double margin,
                         int64_t reduction);
/// F.hinge_embedding_loss: x where y is 1, max(0, margin - x) where y is -1.
Tensor hingeEmbeddingLoss(const Tensor& x, const Tensor& y, double margin, int64_t reduction);
/// F.nll_loss on log-probabilities x [N, C, d...] (or [C]) and class indices target [N, d...]
/// (Long): -weight[t] x[n, t, d...]; entries equal to ignoreIndex count 0 and are left out of
/// the mean, which divides by the summed weights of the rest (NaN when all are ignored).
/// Throws "Target K is out of bounds." and for mismatched shapes.
Tensor nllLoss(const Tensor& x, const Tensor& target, const std::optional<Tensor>& weight,
               int64_t reduction, int64_t ignoreIndex);
/// F.cross_entropy on logits x [N, C, d...] (or [C]): log_softmax over the class dim, then
/// nll_loss for index targets or -sum(weight * target * log p) for probability targets (x's
/// shape, floating), with label smoothing mixed in as PyTorch 1.13 does.
Tensor crossEntropyLoss(const Tensor& x, const Tensor& target, const std::optional<Tensor>& weight,
                        int64_t reduction, int64_t ignoreIndex, double labelSmoothing);
/// F.cosine_similarity: sum((x1 / max(|x1|, eps)) (x2 / max(|x2|, eps))) along dim, the inputs
/// broadcast first (PyTorch 1.13's form). Throws for integer inputs, as PyTorch.
Tensor cosineSimilarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps);

}  // namespace torchless::ops
