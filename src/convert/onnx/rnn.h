#pragma once
// The part of the recurrent-layer converters that does not depend on how a layer is computed,
// shared by rnn.cpp (aten::lstm / gru / rnn_* -> one ONNX LSTM / GRU / RNN per layer) and
// quantized.cpp (aten::quantized_lstm / quantized_gru -> one ONNX Loop per layer and direction).

#include "convert/onnx/onnx_ctx.h"

#include <functional>
#include <string>

namespace torchless::onnx_export {

/// The arguments every recurrent op of PyTorch takes, as convertRecurrent parsed them.
struct RecurrentArgs {
  bool lstm = false;
  /// A .data overload (a PackedSequence): `lengths` holds the sequence lengths, int64 [B], and
  /// the data is the padded input, time-major (Note [Packed sequences] in rnn.cpp).
  bool packed = false;
  bool hasBiases = true;
  int64_t layers = 1;
  bool bidirectional = false;
  bool batchFirst = false;
  /// The index of the params argument (2 for .input, 3 for .data).
  size_t paramsArg = 2;
  std::string lengths;
  int64_t dirs() const { return bidirectional ? 2 : 1; }
};

/// What one layer computes: y [T, B, dirs * H] (time-major; directions concatenated on the
/// last axis, as PyTorch's output), h_n and, for an LSTM, c_n [dirs, B, H].
struct RecurrentLayerOut {
  std::string y, hn, cn;
};

/// Builds layer `l` from its input x [T, B, in] (time-major) and its initial states h0 (and c0
/// for an LSTM, else "") [dirs, B, H].
using RecurrentLayerFn = std::function<RecurrentLayerOut(
    int64_t l, const std::string& x, const std::string& h0, const std::string& c0)>;

/// Converts a recurrent op of PyTorch's form, .input (input, hx, params, has_biases,
/// num_layers, dropout, train, bidirectional, batch_first) or .data (data, batch_sizes, hx,
/// params, has_biases, num_layers, dropout, train, bidirectional): hx is (h_0, c_0) for an
/// LSTM. Parses the shared arguments (train with dropout is an error: export runs in inference
/// mode), makes the input time-major, builds each layer with the function `makeLayer` returns
/// for them on the previous layer's output and its slice of the initial states, and maps the
/// node's outputs: output (batch-first again when asked), h_n, and c_n for an LSTM.
void convertRecurrent(OnnxCtx& ctx, const Node& n, OnnxArgs& args, bool lstm, bool packed,
                      const std::function<RecurrentLayerFn(const RecurrentArgs&)>& makeLayer);

}  // namespace torchless::onnx_export
