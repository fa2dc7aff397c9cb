// Bindings of the recurrent layers (ops/rnn.h) to their schemas: aten::lstm / gru / rnn_tanh
// / rnn_relu (.input overloads, what scripted nn.LSTM/GRU/RNN call, and the .data overloads
// over packed sequences), the single-step cells, aten::_pack_padded_sequence and
// _pad_packed_sequence.

#include "ops/linalg.h"
#include "ops/rnn.h"
#include "runtime/register_utils.h"

namespace torchless {
namespace {

using namespace kreg;
using ops::RnnCellParams;
using ops::RnnMode;

// Training mode changes a recurrent layer only through the dropout between its layers: with
// dropout 0 or one layer it computes what eval does (ATen's _rnn_impl), so only training with
// dropout between layers is passed on as training (and refused, as random).
bool randomTraining(const IValue& dropout, const IValue& train, const IValue& layers) {
  return train.toBool() && dropout.toDouble() > 0 && layers.toInt() > 1;
}

Operation hiddenRnnPacked(RnnMode mode) {
  // (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)
  return kernel<9>([mode](const IValue* a) {
    auto r = ops::rnnPacked(mode, a[0].toTensor(), a[1].toTensor(), a[2].toTensor(), std::nullopt,
                            a[3].toTensorVector(), a[4].toBool(), a[5].toInt(),
                            randomTraining(a[6], a[7], a[5]), a[8].toBool());
    return std::make_tuple(r[0], r[1]);
  });
}

Operation hiddenRnn(RnnMode mode) {
  // (input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
  return kernel<9>([mode](const IValue* a) {
    auto r = ops::rnn(mode, a[0].toTensor(), a[1].toTensor(), std::nullopt, a[2].toTensorVector(),
                      a[3].toBool(), a[4].toInt(), randomTraining(a[5], a[6], a[4]), a[7].toBool(),
                      a[8].toBool());
    return std::make_tuple(r[0], r[1]);
  });
}

RnnCellParams cellParams(const IValue* a) {
  return {a[2].toTensor(), a[3].toTensor(), toOptTensor(a[4]), toOptTensor(a[5]), std::nullopt};
}

}  // namespace

void registerRnnKernels(KernelRegistry& r) {
  defN<9>(r, "aten::lstm.input", [](const IValue* a) {
    auto hx = a[1].toTensorVector();
    if (hx.size() != 2) throw Error("lstm expects hx to hold (h_0, c_0)");
    auto res =
        ops::rnn(RnnMode::LSTM, a[0].toTensor(), hx[0], hx[1], a[2].toTensorVector(), a[3].toBool(),
                 a[4].toInt(), randomTraining(a[5], a[6], a[4]), a[7].toBool(), a[8].toBool());
    return std::make_tuple(res[0], res[1], res[2]);
  });
  def(r, "aten::gru.input", hiddenRnn(RnnMode::GRU));
  def(r, "aten::rnn_tanh.input", hiddenRnn(RnnMode::RNN_TANH));
  def(r, "aten::rnn_relu.input", hiddenRnn(RnnMode::RNN_RELU));

  // Packed sequences (Note [Packed sequences]).
  defN<9>(r, "aten::lstm.data", [](const IValue* a) {
    auto hx = a[2].toTensorVector();
    if (hx.size() != 2) throw Error("lstm expects hx to hold (h_0, c_0)");
    auto res = ops::rnnPacked(RnnMode::LSTM, a[0].toTensor(), a[1].toTensor(), hx[0], hx[1],
                              a[3].toTensorVector(), a[4].toBool(), a[5].toInt(),
                              randomTraining(a[6], a[7], a[5]), a[8].toBool());
    return std::make_tuple(res[0], res[1], res[2]);
  });
  def(r, "aten::gru.data", hiddenRnnPacked(RnnMode::GRU));
  def(r, "aten::rnn_tanh.data", hiddenRnnPacked(RnnMode::RNN_TANH));
  def(r, "aten::rnn_relu.data", hiddenRnnPacked(RnnMode::RNN_RELU));
  defN<3>(r, "aten::_pack_padded_sequence", [](const IValue* a) {
    return ops::packPaddedSequence(a[0].toTensor(), a[1].toTensor(), a[2].toBool());
  });
  defN<5>(r, "aten::_pad_packed_sequence", [](const IValue* a) {
    return ops::padPackedSequence(a[0].toTensor(), a[1].toTensor(), a[2].toBool(), toScalar(a[3]),
                                  a[4].toInt());
  });

  // Cells: (input [B, I], hx, w_ih, w_hh, b_ih, b_hh).
  defN<6>(r, "aten::lstm_cell", [](const IValue* a) {
    auto hx = a[1].toTensorVector();
    RnnCellParams p = cellParams(a);
    Tensor h = hx.at(0), c = hx.at(1);
    ops::rnnCellStep(RnnMode::LSTM, ops::linear(a[0].toTensor(), p.wIh, p.bIh), p, h, c);
    return std::make_tuple(h, c);
  });
  const std::pair<const char*, RnnMode> cells[] = {{"aten::gru_cell", RnnMode::GRU},
                                                   {"aten::rnn_tanh_cell", RnnMode::RNN_TANH},
                                                   {"aten::rnn_relu_cell", RnnMode::RNN_RELU}};
  for (const auto& [name, m] : cells) {
    const RnnMode mode = m;
    defN<6>(r, name, [mode](const IValue* a) {
      RnnCellParams p = cellParams(a);
      Tensor h = a[1].toTensor(), c;
      ops::rnnCellStep(mode, ops::linear(a[0].toTensor(), p.wIh, p.bIh), p, h, c);
      return h;
    });
  }
}

}  // namespace torchless
