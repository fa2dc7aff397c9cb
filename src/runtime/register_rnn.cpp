// Recurrent layers with PyTorch's flat weights: aten::lstm / gru / rnn_tanh / rnn_relu
// (.input overloads, what scripted nn.LSTM/GRU/RNN call) and the single-step cells, built
// from ops:: matmul and elementwise kernels; the .data overloads over packed sequences and
// aten::_pack_padded_sequence / _pad_packed_sequence (Note [Packed sequences]).
//
// params holds, for each layer and then each direction, w_ih [G*H, I], w_hh [G*H, H] and,
// with has_biases, b_ih [G*H], b_hh [G*H] (G = 4 for LSTM, 3 for GRU, 1 for RNN). Gate
// order is PyTorch's: LSTM (i, f, g, o), GRU (r, z, n). The input projection of a whole
// sequence is one matmul; each step then does one [B, H] x [H, G*H] matmul.

#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/shape.h"
#include "runtime/register_utils.h"

#include <cmath>

namespace torchless {
namespace {

using namespace kreg;
using ops::Scalar;

enum class Mode { LSTM, GRU, RNN_TANH, RNN_RELU };

struct CellParams {
  Tensor wIh, wHh;
  std::optional<Tensor> bIh, bHh;
};

// The LSTM step's pointwise part in one pass over float rows, with the same float operations
// in the same order as the unfused ops below (so the same numbers): gates = gi + gh; i, f, o
// sigmoid, g tanh; c' = f * c + i * g; h' = o * tanh(c'). False (nothing done) when a tensor
// is not float or not contiguous.
bool lstmPointwiseFloat(const Tensor& gi, const Tensor& gh, Tensor& h, Tensor& c) {
  if (gi.dtype() != ScalarType::Float || gh.dtype() != ScalarType::Float || !c.defined() ||
      c.dtype() != ScalarType::Float || !gi.isContiguous() || !gh.isContiguous() || !c.isContiguous() ||
      gi.sizes() != gh.sizes() || gi.dim() != 2 || c.dim() != 2 || c.size(0) != gi.size(0) ||
      gi.size(1) != 4 * c.size(1))
    return false;
  const int64_t B = c.size(0), H = c.size(1);
  Tensor nh = Tensor::empty({B, H}, ScalarType::Float), nc = Tensor::empty({B, H}, ScalarType::Float);
  const float* a = gi.data<float>();
  const float* b = gh.data<float>();
  const float* cp = c.data<float>();
  float* hq = nh.data<float>();
  float* cq = nc.data<float>();
  auto sig = [](float v) { return 1.f / (1.f + std::exp(-v)); };
  for (int64_t r = 0; r < B; ++r) {
    const float* ar = a + r * 4 * H;
    const float* br = b + r * 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      const float i = sig(ar[j] + br[j]), f = sig(ar[H + j] + br[H + j]);
      const float g = std::tanh(ar[2 * H + j] + br[2 * H + j]), o = sig(ar[3 * H + j] + br[3 * H + j]);
      const float fc = f * cp[r * H + j], ig = i * g;
      const float cy = fc + ig;
      cq[r * H + j] = cy;
      hq[r * H + j] = o * std::tanh(cy);
    }
  }
  h = nh;
  c = nc;
  return true;
}

// One step. `gi` is x W_ih^T + b_ih for this step [B, G*H]; h (and c for LSTM) [B, H].
void cellStep(Mode mode, const Tensor& gi, const CellParams& p, Tensor& h, Tensor& c) {
  Tensor gh = ops::linear(h, p.wHh, p.bHh);
  switch (mode) {
    case Mode::LSTM: {
      if (lstmPointwiseFloat(gi, gh, h, c)) return;
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

// ---- packed sequences ----------------------------------------------------------------------
//
// Note [Packed sequences]
// A PackedSequence's data [N, *] holds the rows of time step 0 (batch_sizes[0] of them, the
// longest sequences first), then those of step 1, ...; batch_sizes is a non-increasing Long
// [T] with sum N. A recurrent layer over it keeps one hidden row per sequence: step t updates
// rows [0, batch_sizes[t]). Forward, a row that stops being updated keeps its sequence's last
// state (its h_n); in reverse the steps run from T-1 down to 0 and a row joins with its hx
// row, untouched until then. This is what PyTorch's PackedLayer / ReversedPackedLayer compute.

/// batch_sizes as numbers, checked as PyTorch's _pack_padded_sequence / lstm.data do.
std::vector<int64_t> batchSizesOf(const Tensor& batchSizes, int64_t rows) {
  TL_CHECK(batchSizes.dim() == 1 && batchSizes.dtype() == ScalarType::Long,
           "batch_sizes must be a 1-D Long tensor, got {}-D {}", batchSizes.dim(),
           toString(batchSizes.dtype()));
  std::vector<int64_t> bs(static_cast<size_t>(batchSizes.numel()));
  int64_t total = 0;
  for (size_t t = 0; t < bs.size(); ++t) {
    bs[t] = batchSizes.intAt(static_cast<int64_t>(t));
    TL_CHECK(bs[t] > 0 && (t == 0 || bs[t] <= bs[t - 1]),
             "batch_sizes must be positive and non-increasing, got {} at step {}", bs[t], t);
    total += bs[t];
  }
  TL_CHECK(total == rows, "batch_sizes sum to {} but the packed data has {} rows", total, rows);
  return bs;
}

// One direction of one layer over packed x [N, I]; returns [N, H]; h, c [B, H] are owned
// and updated row-wise (see Note [Packed sequences]).
Tensor runDirectionPacked(Mode mode, const Tensor& x, const std::vector<int64_t>& bs,
                          const CellParams& p, Tensor& h, Tensor& c, bool reverse) {
  const int64_t T = static_cast<int64_t>(bs.size());
  std::vector<int64_t> offsets(bs.size() + 1, 0);
  for (size_t t = 0; t < bs.size(); ++t) offsets[t + 1] = offsets[t] + bs[t];
  Tensor gi = ops::linear(x, p.wIh, p.bIh);  // [N, G*H]
  const int64_t H = h.size(1);
  Tensor out = Tensor::empty({x.size(0), H}, x.dtype());
  for (int64_t s = 0; s < T; ++s) {
    const size_t t = static_cast<size_t>(reverse ? T - 1 - s : s);
    const int64_t b = bs[t];
    Tensor hb = ops::narrow(h, 0, 0, b);
    Tensor cb = c.defined() ? ops::narrow(c, 0, 0, b) : Tensor();
    cellStep(mode, ops::narrow(gi, 0, offsets[t], b), p, hb, cb);
    Tensor hv = ops::narrow(h, 0, 0, b);
    ops::copy_(hv, hb);
    if (c.defined()) {
      Tensor cv = ops::narrow(c, 0, 0, b);
      ops::copy_(cv, cb);
    }
    Tensor dst = ops::narrow(out, 0, offsets[t], b);
    ops::copy_(dst, hb);
  }
  return out;
}

// (output [N, D*H], h_n[, c_n]) of aten::lstm.data / gru.data / rnn_*.data.
std::vector<Tensor> runRnnPacked(Mode mode, const Tensor& data, const Tensor& batchSizes,
                                 const Tensor& hx, const std::optional<Tensor>& cx,
                                 const std::vector<Tensor>& params, bool hasBiases,
                                 int64_t numLayers, bool train, bool bidirectional) {
  if (train) throw Error("recurrent layers in training mode are not supported (torchless runs inference)");
  TL_CHECK(data.dim() == 2, "packed data must have 2 dimensions, got {}", data.dim());
  const std::vector<int64_t> bs = batchSizesOf(batchSizes, data.size(0));
  const int64_t dirs = bidirectional ? 2 : 1;
  const size_t per = hasBiases ? 4 : 2;
  if (params.size() != per * static_cast<size_t>(numLayers * dirs))
    throw Error(fmt::format("expected {} weight tensors for {} layers, got {} (proj_size is not supported)",
                            per * static_cast<size_t>(numLayers * dirs), numLayers, params.size()));
  const int64_t maxBatch = bs.empty() ? 0 : bs[0];
  auto checkHidden = [&](const Tensor& t, const char* what) {
    TL_CHECK(t.dim() == 3 && t.size(0) == numLayers * dirs && t.size(1) == maxBatch,
             "Expected {} size [{}, {}, *], got {}", what, numLayers * dirs, maxBatch,
             sizesToString(t.sizes()));
  };
  checkHidden(hx, "hidden");
  if (cx) checkHidden(*cx, "cell state");
  Tensor layerInput = data;
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
      Tensor h = ops::clone(ops::select(hx, 0, l * dirs + d));
      Tensor c = cx ? ops::clone(ops::select(*cx, 0, l * dirs + d)) : Tensor();
      outs.push_back(runDirectionPacked(mode, layerInput, bs, p, h, c, d == 1));
      hs.push_back(h);
      if (cx) cs.push_back(c);
    }
    layerInput = dirs == 1 ? outs[0] : ops::cat(outs, 1);
  }
  std::vector<Tensor> result{layerInput, ops::stack(hs, 0)};
  if (cx) result.push_back(ops::stack(cs, 0));
  return result;
}

Operation hiddenRnnPacked(Mode mode) {
  // (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)
  return kernel<9>([mode](const IValue* a) {
    auto r = runRnnPacked(mode, a[0].toTensor(), a[1].toTensor(), a[2].toTensor(), std::nullopt,
                          a[3].toTensorVector(), a[4].toBool(), a[5].toInt(), a[7].toBool(),
                          a[8].toBool());
    return std::make_tuple(r[0], r[1]);
  });
}

/// aten::_pack_padded_sequence(input [T, B, *] (or [B, T, *]), lengths [B] sorted decreasing)
/// -> (data [sum(lengths), *], batch_sizes Long [lengths[0]]), with PyTorch's messages.
std::tuple<Tensor, Tensor> packPaddedSequence(Tensor input, const Tensor& lengths, bool batchFirst) {
  if (batchFirst) input = ops::transpose(input, 0, 1);
  TL_CHECK(lengths.dim() == 1 && lengths.dtype() == ScalarType::Long,
           "'lengths' argument should be a 1D CPU int64 tensor, but got {}D cpu {} tensor",
           lengths.dim(), toString(lengths.dtype()));
  TL_CHECK(input.dim() >= 2, "expected input of at least 2 dimensions, got {}", input.dim());
  const int64_t B = input.size(1);
  TL_CHECK(lengths.numel() == B, "Expected `len(lengths)` to be equal to batch_size, but got {} (batch_size={})",
           lengths.numel(), B);
  std::vector<int64_t> len(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) len[static_cast<size_t>(b)] = lengths.intAt(b);
  TL_CHECK(B == 0 || len.back() > 0,
           "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0");
  for (int64_t b = 1; b < B; ++b)
    TL_CHECK(len[static_cast<size_t>(b - 1)] >= len[static_cast<size_t>(b)],
             "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can "
             "pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this "
             "requirement if you do not need ONNX exportability.");
  const int64_t T = B == 0 ? 0 : len[0];
  TL_CHECK(T <= input.size(0), "lengths[0] = {} is longer than the input's {} steps", T, input.size(0));
  std::vector<Tensor> steps;
  std::vector<int64_t> sizes;
  int64_t b = B;
  for (int64_t t = 0; t < T; ++t) {
    while (b > 0 && len[static_cast<size_t>(b - 1)] <= t) --b;
    sizes.push_back(b);
    steps.push_back(ops::narrow(ops::select(input, 0, t), 0, 0, b));
  }
  Tensor data = steps.empty() ? Tensor::empty({0}, input.dtype()) : ops::cat(steps, 0);
  return {data, Tensor::fromVector(sizes, {static_cast<int64_t>(sizes.size())})};
}

/// aten::_pad_packed_sequence(data, batch_sizes, batch_first, padding_value, total_length)
/// -> (padded [T, B, *] (a transposed view when batch_first), lengths Long [B]).
std::tuple<Tensor, Tensor> padPackedSequence(const Tensor& data, const Tensor& batchSizes, bool batchFirst,
                                             const Scalar& paddingValue, int64_t totalLength) {
  TL_CHECK(data.dim() >= 1, "packed data must have at least 1 dimension");
  const std::vector<int64_t> bs = batchSizesOf(batchSizes, data.size(0));
  const int64_t maxReal = static_cast<int64_t>(bs.size());
  int64_t maxLen = maxReal;
  if (totalLength > 0) {
    TL_CHECK(totalLength >= maxReal,
             "Expected total_length to be at least the length of the longest sequence in input, but "
             "got total_length={} and max sequence length being {}",
             totalLength, maxReal);
    maxLen = totalLength;
  }
  const int64_t B = bs.empty() ? 0 : bs[0];
  IntList shape{maxLen, B};
  for (int64_t d = 1; d < data.dim(); ++d) shape.push_back(data.size(d));
  Tensor out = ops::full(shape, paddingValue, data.dtype());
  std::vector<int64_t> lengths(static_cast<size_t>(B), 0);
  int64_t off = 0;
  for (int64_t t = 0; t < maxReal; ++t) {
    const int64_t b = bs[static_cast<size_t>(t)];
    Tensor dst = ops::narrow(ops::select(out, 0, t), 0, 0, b);
    ops::copy_(dst, ops::narrow(data, 0, off, b));
    for (int64_t i = 0; i < b; ++i) lengths[static_cast<size_t>(i)] = t + 1;
    off += b;
  }
  if (batchFirst) out = ops::transpose(out, 0, 1);
  return {out, Tensor::fromVector(lengths, {B})};
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

  // Packed sequences (Note [Packed sequences]).
  defN<9>(r, "aten::lstm.data", [](const IValue* a) {
    auto hx = a[2].toTensorVector();
    if (hx.size() != 2) throw Error("lstm expects hx to hold (h_0, c_0)");
    auto res = runRnnPacked(Mode::LSTM, a[0].toTensor(), a[1].toTensor(), hx[0], hx[1],
                            a[3].toTensorVector(), a[4].toBool(), a[5].toInt(), a[7].toBool(),
                            a[8].toBool());
    return std::make_tuple(res[0], res[1], res[2]);
  });
  def(r, "aten::gru.data", hiddenRnnPacked(Mode::GRU));
  def(r, "aten::rnn_tanh.data", hiddenRnnPacked(Mode::RNN_TANH));
  def(r, "aten::rnn_relu.data", hiddenRnnPacked(Mode::RNN_RELU));
  defN<3>(r, "aten::_pack_padded_sequence", [](const IValue* a) {
    return packPaddedSequence(a[0].toTensor(), a[1].toTensor(), a[2].toBool());
  });
  defN<5>(r, "aten::_pad_packed_sequence", [](const IValue* a) {
    return padPackedSequence(a[0].toTensor(), a[1].toTensor(), a[2].toBool(), toScalar(a[3]), a[4].toInt());
  });

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
