#pragma once
// Recurrent layers with PyTorch's flat weights (aten::lstm / gru / rnn_tanh / rnn_relu and
// their cells), built from matmul and elementwise kernels, and packed sequences
// (Note [Packed sequences]). runtime/register_rnn.cpp binds them to their schemas.
//
// params holds, for each layer and then each direction, w_ih [G*H, I], w_hh [G*H, H] and,
// with has_biases, b_ih [G*H], b_hh [G*H] (G = 4 for LSTM, 3 for GRU, 1 for RNN). Gate
// order is PyTorch's: LSTM (i, f, g, o), GRU (r, z, n). The input projection of a whole
// sequence is one matmul; each step then does one [B, H] x [H, G*H] matmul.

#include "core/scalar.h"
#include "core/tensor.h"

#include <optional>
#include <tuple>
#include <vector>

namespace torchless::ops {

enum class RnnMode { LSTM, GRU, RNN_TANH, RNN_RELU };

/// One direction of one layer: w_ih [G*H, I], w_hh [G*H, H], optional biases [G*H].
struct RnnCellParams {
  Tensor wIh, wHh;
  std::optional<Tensor> bIh, bHh;
  /// LSTM with proj_size: h' = (o * tanh(c')) W_hr^T, W_hr [P, H] (h is [B, P], c [B, H]).
  std::optional<Tensor> wHr;
};

/// One step of a cell (aten::lstm_cell / gru_cell / rnn_*_cell): `gi` is x W_ih^T + b_ih for
/// this step [B, G*H]; updates h [B, H] (and c [B, H] for LSTM; undefined otherwise).
void rnnCellStep(RnnMode mode, const Tensor& gi, const RnnCellParams& p, Tensor& h, Tensor& c);

/// aten::lstm.input / gru.input / rnn_*.input: input [T, B, I] ([B, T, I] with batch_first),
/// hx [L*D, B, H], cx likewise for LSTM (nullopt otherwise). Returns (output [T, B, D*H]
/// ([B, T, D*H]), h_n[, c_n]). Throws torchless::Error in training mode, for an input that is
/// not 3-D, and for a params count that does not match (proj_size is not supported).
std::vector<Tensor> rnn(RnnMode mode, Tensor input, const Tensor& hx,
                        const std::optional<Tensor>& cx, const std::vector<Tensor>& params,
                        bool hasBiases, int64_t numLayers, bool train, bool bidirectional,
                        bool batchFirst);

/// aten::lstm.data / gru.data / rnn_*.data over a packed sequence: data [N, I], batch_sizes
/// Long [T] (Note [Packed sequences]); hx [L*D, batch_sizes[0], H]. Returns (output [N, D*H],
/// h_n[, c_n]). Throws torchless::Error as rnn() does and for inconsistent batch sizes.
std::vector<Tensor> rnnPacked(RnnMode mode, const Tensor& data, const Tensor& batchSizes,
                              const Tensor& hx, const std::optional<Tensor>& cx,
                              const std::vector<Tensor>& params, bool hasBiases, int64_t numLayers,
                              bool train, bool bidirectional);

/// aten::_pack_padded_sequence(input [T, B, *] (or [B, T, *]), lengths [B] sorted decreasing)
/// -> (data [sum(lengths), *], batch_sizes Long [lengths[0]]), with PyTorch's messages.
std::tuple<Tensor, Tensor> packPaddedSequence(Tensor input, const Tensor& lengths, bool batchFirst);

/// aten::_pad_packed_sequence(data, batch_sizes, batch_first, padding_value, total_length)
/// -> (padded [T, B, *] (a transposed view when batch_first), lengths Long [B]).
std::tuple<Tensor, Tensor> padPackedSequence(const Tensor& data, const Tensor& batchSizes,
                                             bool batchFirst, const Scalar& paddingValue,
                                             int64_t totalLength);

}  // namespace torchless::ops
