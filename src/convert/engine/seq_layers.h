#pragma once
// Fused executors for the plugin layers of sequence models (issue 13): PyTorch's transformer
// fast paths and recurrent layers, prepared once per input signature (Note [Engine plans] in
// engine.h) instead of running their composite CPU kernels op by op.
//
// Note [Fused sequence layers]
//   aten::_transformer_encoder_layer_fwd (nn.TransformerEncoderLayer's fast path; post- or
//   pre-norm, relu or gelu) and aten::_native_multi_head_attention (nn.MultiheadAttention's,
//   self-attention: query, key and value the same value, need_weights false) run as
//     - one packed QKV product [B*L, E] x [E, 3E] with its bias (oneDNN matmul, weights reordered
//       once per engine);
//     - scaled dot-product attention per (batch, head): scores = q k^T / sqrt(D) and the
//       context = softmax(scores) v, both products read q, k and v in place inside the QKV
//       buffer and the context is written in [B, L, H, D] order (no transposes, no copies),
//       the softmax row-wise with a vectorized exp (Note [Attention softmax] in the .cpp);
//       a key padding mask (mask_type 1, [B, L], bool or float as PyTorch's conversion to
//       bool) sets the masked keys' scores to -inf;
//     - the output projection with the residual as a oneDNN binary-add post-op (read in
//       place, not copied), then layer_norm (oneDNN layer normalization), and the
//       feed-forward products with bias + relu / gelu as post-ops, the second with the
//       residual added the same way;
//   into buffers allocated once per plan; the layer's output is planned in the engine's arena.
//   Anything else (an attention mask, need_weights, cross-attention, another dtype) runs the
//   node's kernel (runtime/register_nn.cpp), which computes the same ops one by one.
//
//   aten::lstm.input with static weights runs per layer as one batched input projection of all
//   time steps (oneDNN matmul) and a recurrence whose hidden units are split over the threads,
//   one barrier per step (Note [LSTM recurrence] in the .cpp); proj_size and dropout between
//   layers (training) are not taken.

#include "convert/engine/layer_exec.h"

#include <memory>
#include <vector>

namespace torchless::engine {

/// A fused executor for `layer` (a Plugin layer whose node is one of those in Note [Fused
/// sequence layers]) prepared for the values its inputs have now in `slots`; null when the
/// node is not one of them or its arguments are not a form the fused path takes (the node's
/// kernel then runs). Needs layer.packed.
std::unique_ptr<LayerExec> makeSequenceLayerExec(const Layer& layer,
                                                 const std::vector<IValue>& slots);

}  // namespace torchless::engine
