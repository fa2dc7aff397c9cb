// Recurrent layers with PyTorch's flat weights: aten::lstm / gru / rnn_tanh / rnn_relu
// (.input overloads, what scripted nn.LSTM/GRU/RNN call) and the single-step cells, built
// from ops:: matmul and elementwise kernels.
//
// params holds, for each layer and then each direction, w_ih [G*H, I], w_hh [G*H, H] and,
// with has_biases, b_ih [G*H], b_hh [G*H] (G = 4 for LSTM, 3 for GRU, 1 for RNN). Gate
// order is PyTorch's: LSTM (i, f, g, o), GRU (r, z, n). The input projection of a whole
// sequence is one matmul; each step then does one [B, H] x [H, G*H] matmul.

#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/shape.h"
#include "runtime/register_utils.h"

namespace torchless {
namespace {

using namespace kreg;
using ops::Scalar;

enum class Mode { LSTM, GRU, RNN_TANH, RNN_RELU };

struct CellParams {
  Tensor wIh, wHh;
  std::optional<Tensor> bIh, bHh;
};

// One step. `gi` is x W_ih^T + b_ih for this step [B, G*H]; h (and c for LSTM) [B, H].
void cellStep(Mode mode, const Tensor& gi, const CellParams& p, Tensor& h, Tensor& c) {
  Tensor gh = ops::linear(h, p.wHh, p.bHh);
  switch (mode) {
    case Mode::LSTM: {
      auto g = ops::chunk(ops::add(gi, gh), 4, 1);
      Tensor i = ops::sigmoid(g[0]), f = ops::sigmoid(g[1]), gg = ops::tanh(g[2]), o = ops::sigmoid(g[3]);
      c = ops::add(ops::mul(f, c), ops::mul(i, gg));
      h = ops::mul(o, ops::tanh(c));
      return;
    }
    case Mode::GRU: {
      auto a = ops::chunk(gi, 3, 1);
      auto b = ops::chunk(gh, 3, 1);
      Tensor rg = ops::sigmoid(ops::add(a[0], b[0]));
      Tensor z = ops::sigmoid(ops::add(a[1], b[1]));
      Tensor n = ops::tanh(ops::add(a[2], ops::mul(rg, b[2])));
      // h' = (1 - z) * n + z * h = n + z * (h - n)
      h = ops::add(n, ops::mul(z, ops::sub(h, n)));
      return;
    }
    case Mode::RNN_TANH: h = ops::tanh(ops::add(gi, gh)); return;
    case Mode::RNN_RELU: h = ops::relu(ops::add(gi, gh)); return;
  }
}

// Runs one direction of one layer over x [T, B, I]; returns [T, B, H], updates h, c.
Tensor runDirection(Mode mode, const Tensor& x, const CellParams& p, Tensor& h, Tensor& c, bool reverse) {
  const int64_t T = x.size(0), B = x.size(1);
  Tensor gi = ops::linear(x, p.wIh, p.bIh);  // [T, B, G*H]
  const int64_t H = h.size(1);
  Tensor out = Tensor::empty({T, B, H}, x.dtype());
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s;
    cellStep(mode, ops::select(gi, 0, t), p, h, c);
    Tensor dst = ops::select(out, 0, t);
    ops::copy_(dst, h);
  }
  return out;
}

// (output, h_n[, c_n]) of a multi-layer, maybe bidirectional recurrent layer.
std::vector<Tensor> runRnn(Mode mode, Tensor input, const Tensor& hx, const std::optional<Tensor>& cx,
                           const std::vector<Tensor>& params, bool hasBiases, int64_t numLayers,
                           bool train, bool bidirectional, bool batchFirst) {
  if (train) throw Error("recurrent layers in training mode are not supported (torchless runs inference)");
  if (input.dim() != 3) throw Error(fmt::format("input must have 3 dimensions, got {}", input.dim()));
  const int64_t dirs = bidirectional ? 2 : 1;
  const size_t per = hasBiases ? 4 : 2;
  if (params.size() != per * static_cast<size_t>(numLayers * dirs))
    throw Error(fmt::format("expected {} weight tensors for {} layers, got {} (proj_size is not supported)",
                            per * static_cast<size_t>(numLayers * dirs), numLayers, params.size()));
  if (batchFirst) input = ops::transpose(input, 0, 1);
  Tensor layerInput = input;
  std::vector<Tensor> hs, cs;
  for (int64_t l = 0; l < numLayers; ++l) {
    std::vector<Tensor> outs;
    for (int64_t d = 0; d < dirs; ++d) {
      const size_t base = per * static_cast<size_t>(l * dirs + d);
      CellParams p{params[base], params[base + 1], std::nullopt, std::nullopt};
      if (hasBiases) {
        p.bIh = params[base + 2];
        p.bHh = params[base + 3];
      }
      Tensor h = ops::select(hx, 0, l * dirs + d);
      Tensor c = cx ? ops::select(*cx, 0, l * dirs + d) : Tensor();
      outs.push_back(runDirection(mode, layerInput, p, h, c, d == 1));
      hs.push_back(h);
      if (cx) cs.push_back(c);
    }
    layerInput = dirs == 1 ? outs[0] : ops::cat(outs, 2);
  }
  Tensor output = batchFirst ? ops::contiguous(ops::transpose(layerInput, 0, 1)) : layerInput;
  std::vector<Tensor> result{output, ops::stack(hs, 0)};
  if (cx) result.push_back(ops::stack(cs, 0));
  return result;
}

Operation hiddenRnn(Mode mode) {
  // (input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
  return kernel<9>([mode](const IValue* a) {
    auto r = runRnn(mode, a[0].toTensor(), a[1].toTensor(), std::nullopt, a[2].toTensorVector(),
                    a[3].toBool(), a[4].toInt(), a[6].toBool(), a[7].toBool(), a[8].toBool());
    return std::make_tuple(r[0], r[1]);
  });
}

CellParams cellParams(const IValue* a) {
  return {a[2].toTensor(), a[3].toTensor(), toOptTensor(a[4]), toOptTensor(a[5])};
}

}  // namespace

void registerRnnKernels(KernelRegistry& r) {
  defN<9>(r, "aten::lstm.input", [](const IValue* a) {
    auto hx = a[1].toTensorVector();
    if (hx.size() != 2) throw Error("lstm expects hx to hold (h_0, c_0)");
    auto res = runRnn(Mode::LSTM, a[0].toTensor(), hx[0], hx[1], a[2].toTensorVector(), a[3].toBool(),
                      a[4].toInt(), a[6].toBool(), a[7].toBool(), a[8].toBool());
    return std::make_tuple(res[0], res[1], res[2]);
  });
  def(r, "aten::gru.input", hiddenRnn(Mode::GRU));
  def(r, "aten::rnn_tanh.input", hiddenRnn(Mode::RNN_TANH));
  def(r, "aten::rnn_relu.input", hiddenRnn(Mode::RNN_RELU));

  // Cells: (input [B, I], hx, w_ih, w_hh, b_ih, b_hh).
  defN<6>(r, "aten::lstm_cell", [](const IValue* a) {
    auto hx = a[1].toTensorVector();
    CellParams p = cellParams(a);
    Tensor h = hx.at(0), c = hx.at(1);
    cellStep(Mode::LSTM, ops::linear(a[0].toTensor(), p.wIh, p.bIh), p, h, c);
    return std::make_tuple(h, c);
  });
  const std::pair<const char*, Mode> cells[] = {{"aten::gru_cell", Mode::GRU},
                                                {"aten::rnn_tanh_cell", Mode::RNN_TANH},
                                                {"aten::rnn_relu_cell", Mode::RNN_RELU}};
  for (const auto& [name, m] : cells) {
    const Mode mode = m;
    defN<6>(r, name, [mode](const IValue* a) {
      CellParams p = cellParams(a);
      Tensor h = a[1].toTensor(), c;
      cellStep(mode, ops::linear(a[0].toTensor(), p.wIh, p.bIh), p, h, c);
      return h;
    });
  }
}

}  // namespace torchless
