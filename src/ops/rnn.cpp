#include "ops/rnn.h"

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/shape.h"

#include <cmath>

namespace torchless::ops {
namespace {

// The LSTM step's pointwise part in one pass over float rows, with the same float operations
// in the same order as the unfused ops below (so the same numbers): gates = gi + gh; i, f, o
// sigmoid, g tanh; c' = f * c + i * g; h' = o * tanh(c'). False (nothing done) when a tensor
// is not float or not contiguous.
bool lstmPointwiseFloat(const Tensor& gi, const Tensor& gh, Tensor& h, Tensor& c) {
  if (gi.dtype() != ScalarType::Float || gh.dtype() != ScalarType::Float || !c.defined() ||
      c.dtype() != ScalarType::Float || !gi.isContiguous() || !gh.isContiguous() ||
      !c.isContiguous() || gi.sizes() != gh.sizes() || gi.dim() != 2 || c.dim() != 2 ||
      c.size(0) != gi.size(0) || gi.size(1) != 4 * c.size(1))
    return false;
  const int64_t B = c.size(0), H = c.size(1);
  Tensor nh = Tensor::empty({B, H}, ScalarType::Float),
         nc = Tensor::empty({B, H}, ScalarType::Float);
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
      const float g = std::tanh(ar[2 * H + j] + br[2 * H + j]),
                  o = sig(ar[3 * H + j] + br[3 * H + j]);
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

}  // namespace

void rnnCellStep(RnnMode mode, const Tensor& gi, const RnnCellParams& p, Tensor& h, Tensor& c) {
  Tensor gh = linear(h, p.wHh, p.bHh);
  switch (mode) {
    case RnnMode::LSTM: {
      if (!lstmPointwiseFloat(gi, gh, h, c)) {
        auto g = chunk(add(gi, gh), 4, 1);
        Tensor i = sigmoid(g[0]), f = sigmoid(g[1]), gg = tanh(g[2]), o = sigmoid(g[3]);
        c = add(mul(f, c), mul(i, gg));
        h = mul(o, tanh(c));
      }
      if (p.wHr) h = linear(h, *p.wHr, std::nullopt);  // LSTMCell with projections (ATen)
      return;
    }
    case RnnMode::GRU: {
      auto a = chunk(gi, 3, 1);
      auto b = chunk(gh, 3, 1);
      Tensor rg = sigmoid(add(a[0], b[0]));
      Tensor z = sigmoid(add(a[1], b[1]));
      Tensor n = tanh(add(a[2], mul(rg, b[2])));
      // h' = (1 - z) * n + z * h = n + z * (h - n)
      h = add(n, mul(z, sub(h, n)));
      return;
    }
    case RnnMode::RNN_TANH: h = tanh(add(gi, gh)); return;
    case RnnMode::RNN_RELU: h = relu(add(gi, gh)); return;
  }
}

namespace {

// Runs one direction of one layer over x [T, B, I]; returns [T, B, H], updates h, c.
Tensor runDirection(RnnMode mode, const Tensor& x, const RnnCellParams& p, Tensor& h, Tensor& c,
                    bool reverse) {
  const int64_t T = x.size(0), B = x.size(1);
  Tensor gi = linear(x, p.wIh, p.bIh);  // [T, B, G*H]
  const int64_t H = h.size(1);
  Tensor out = Tensor::empty({T, B, H}, x.dtype());
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s;
    rnnCellStep(mode, select(gi, 0, t), p, h, c);
    Tensor dst = select(out, 0, t);
    copy_(dst, h);
  }
  return out;
}

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
Tensor runDirectionPacked(RnnMode mode, const Tensor& x, const std::vector<int64_t>& bs,
                          const RnnCellParams& p, Tensor& h, Tensor& c, bool reverse) {
  const int64_t T = static_cast<int64_t>(bs.size());
  std::vector<int64_t> offsets(bs.size() + 1, 0);
  for (size_t t = 0; t < bs.size(); ++t) offsets[t + 1] = offsets[t] + bs[t];
  Tensor gi = linear(x, p.wIh, p.bIh);  // [N, G*H]
  const int64_t H = h.size(1);
  Tensor out = Tensor::empty({x.size(0), H}, x.dtype());
  for (int64_t s = 0; s < T; ++s) {
    const size_t t = static_cast<size_t>(reverse ? T - 1 - s : s);
    const int64_t b = bs[t];
    Tensor hb = narrow(h, 0, 0, b);
    Tensor cb = c.defined() ? narrow(c, 0, 0, b) : Tensor();
    rnnCellStep(mode, narrow(gi, 0, offsets[t], b), p, hb, cb);
    Tensor hv = narrow(h, 0, 0, b);
    copy_(hv, hb);
    if (c.defined()) {
      Tensor cv = narrow(c, 0, 0, b);
      copy_(cv, cb);
    }
    Tensor dst = narrow(out, 0, offsets[t], b);
    copy_(dst, hb);
  }
  return out;
}

/// The tensors per layer and direction: w_ih, w_hh (b_ih, b_hh with biases) (w_hr for an LSTM
/// with projections), in PyTorch's _flat_weights order.
size_t paramsPerLayer(bool hasBiases, bool projections) {
  return (hasBiases ? 4 : 2) + (projections ? 1 : 0);
}

void checkParamCount(const std::vector<Tensor>& params, bool hasBiases, bool projections,
                     int64_t numLayers, int64_t dirs) {
  const size_t per = paramsPerLayer(hasBiases, projections);
  if (params.size() != per * static_cast<size_t>(numLayers * dirs))
    throw Error(fmt::format("expected {} weight tensors for {} layers{}, got {}",
                            per * static_cast<size_t>(numLayers * dirs), numLayers,
                            projections ? " with projections" : "", params.size()));
}

/// An LSTM has projections (proj_size) when its hidden state is narrower than its cell state,
/// as ATen's lstm decides (hx[0].size(2) != hx[1].size(2)).
bool hasProjections(const Tensor& hx, const std::optional<Tensor>& cx) {
  return cx && hx.dim() >= 1 && cx->dim() >= 1 && hx.size(-1) != cx->size(-1);
}

/// The layer loop of rnn() and rnnPacked(): for each layer and direction, the direction's
/// state (h, c from hx, cx; copies when `ownState`, as packed layers update rows in place)
/// goes through runDirection(layerInput, params, h, c, reverse); the directions' outputs are
/// concatenated along `catDim`. Returns (last layer's output, h_n[, c_n]).
template <typename RunDirection>
std::vector<Tensor> runLayers(const Tensor& input, const Tensor& hx,
                              const std::optional<Tensor>& cx, const std::vector<Tensor>& params,
                              bool hasBiases, int64_t numLayers, bool bidirectional, int64_t catDim,
                              bool ownState, RunDirection&& runDirection) {
  const int64_t dirs = bidirectional ? 2 : 1;
  const bool projections = hasProjections(hx, cx);
  const size_t per = paramsPerLayer(hasBiases, projections);
  Tensor layerInput = input;
  std::vector<Tensor> hs, cs;
  for (int64_t l = 0; l < numLayers; ++l) {
    std::vector<Tensor> outs;
    for (int64_t d = 0; d < dirs; ++d) {
      const size_t base = per * static_cast<size_t>(l * dirs + d);
      RnnCellParams p{params[base], params[base + 1], std::nullopt, std::nullopt, std::nullopt};
      if (hasBiases) {
        p.bIh = params[base + 2];
        p.bHh = params[base + 3];
      }
      if (projections) p.wHr = params[base + per - 1];
      Tensor h = select(hx, 0, l * dirs + d);
      Tensor c = cx ? select(*cx, 0, l * dirs + d) : Tensor();
      if (ownState) {
        h = clone(h);
        if (cx) c = clone(c);
      }
      outs.push_back(runDirection(layerInput, p, h, c, d == 1));
      hs.push_back(h);
      if (cx) cs.push_back(c);
    }
    layerInput = dirs == 1 ? outs[0] : cat(outs, catDim);
  }
  std::vector<Tensor> result{layerInput, stack(hs, 0)};
  if (cx) result.push_back(stack(cs, 0));
  return result;
}

}  // namespace

std::vector<Tensor> rnn(RnnMode mode, Tensor input, const Tensor& hx,
                        const std::optional<Tensor>& cx, const std::vector<Tensor>& params,
                        bool hasBiases, int64_t numLayers, bool train, bool bidirectional,
                        bool batchFirst) {
  if (train)
    throw Error(
        "recurrent layers in training mode with dropout between layers are not supported (the "
        "dropout is random; torchless runs inference only: call eval() before saving)");
  if (input.dim() != 3)
    throw Error(fmt::format("input must have 3 dimensions, got {}", input.dim()));
  checkParamCount(params, hasBiases, hasProjections(hx, cx), numLayers, bidirectional ? 2 : 1);
  if (batchFirst) input = transpose(input, 0, 1);
  std::vector<Tensor> result =
      runLayers(input, hx, cx, params, hasBiases, numLayers, bidirectional, /*catDim=*/2,
                /*ownState=*/false,
                [&](const Tensor& x, const RnnCellParams& p, Tensor& h, Tensor& c, bool reverse) {
                  return runDirection(mode, x, p, h, c, reverse);
                });
  if (batchFirst) result[0] = contiguous(transpose(result[0], 0, 1));
  return result;
}

std::vector<Tensor> rnnPacked(RnnMode mode, const Tensor& data, const Tensor& batchSizes,
                              const Tensor& hx, const std::optional<Tensor>& cx,
                              const std::vector<Tensor>& params, bool hasBiases, int64_t numLayers,
                              bool train, bool bidirectional) {
  if (train)
    throw Error(
        "recurrent layers in training mode with dropout between layers are not supported (the "
        "dropout is random; torchless runs inference only: call eval() before saving)");
  TL_CHECK(data.dim() == 2, "packed data must have 2 dimensions, got {}", data.dim());
  const std::vector<int64_t> bs = batchSizesOf(batchSizes, data.size(0));
  const int64_t dirs = bidirectional ? 2 : 1;
  checkParamCount(params, hasBiases, hasProjections(hx, cx), numLayers, dirs);
  const int64_t maxBatch = bs.empty() ? 0 : bs[0];
  auto checkHidden = [&](const Tensor& t, const char* what) {
    TL_CHECK(t.dim() == 3 && t.size(0) == numLayers * dirs && t.size(1) == maxBatch,
             "Expected {} size [{}, {}, *], got {}", what, numLayers * dirs, maxBatch,
             sizesToString(t.sizes()));
  };
  checkHidden(hx, "hidden");
  if (cx) checkHidden(*cx, "cell state");
  return runLayers(data, hx, cx, params, hasBiases, numLayers, bidirectional, /*catDim=*/1,
                   /*ownState=*/true,
                   [&](const Tensor& x, const RnnCellParams& p, Tensor& h, Tensor& c,
                       bool reverse) { return runDirectionPacked(mode, x, bs, p, h, c, reverse); });
}

std::tuple<Tensor, Tensor> packPaddedSequence(Tensor input, const Tensor& lengths,
                                              bool batchFirst) {
  if (batchFirst) input = transpose(input, 0, 1);
  TL_CHECK(lengths.dim() == 1 && lengths.dtype() == ScalarType::Long,
           "'lengths' argument should be a 1D CPU int64 tensor, but got {}D cpu {} tensor",
           lengths.dim(), toString(lengths.dtype()));
  TL_CHECK(input.dim() >= 2, "expected input of at least 2 dimensions, got {}", input.dim());
  const int64_t B = input.size(1);
  TL_CHECK(lengths.numel() == B,
           "Expected `len(lengths)` to be equal to batch_size, but got {} (batch_size={})",
           lengths.numel(), B);
  std::vector<int64_t> len(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) len[static_cast<size_t>(b)] = lengths.intAt(b);
  TL_CHECK(B == 0 || len.back() > 0,
           "Length of all samples has to be greater than 0, but found an element in 'lengths' that "
           "is <= 0");
  for (int64_t b = 1; b < B; ++b)
    TL_CHECK(
        len[static_cast<size_t>(b - 1)] >= len[static_cast<size_t>(b)],
        "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can "
        "pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this "
        "requirement if you do not need ONNX exportability.");
  const int64_t T = B == 0 ? 0 : len[0];
  TL_CHECK(T <= input.size(0), "lengths[0] = {} is longer than the input's {} steps", T,
           input.size(0));
  std::vector<Tensor> steps;
  std::vector<int64_t> sizes;
  int64_t b = B;
  for (int64_t t = 0; t < T; ++t) {
    while (b > 0 && len[static_cast<size_t>(b - 1)] <= t) --b;
    sizes.push_back(b);
    steps.push_back(narrow(select(input, 0, t), 0, 0, b));
  }
  Tensor data = steps.empty() ? Tensor::empty({0}, input.dtype()) : cat(steps, 0);
  return {data, Tensor::fromVector(sizes, {static_cast<int64_t>(sizes.size())})};
}

std::tuple<Tensor, Tensor> padPackedSequence(const Tensor& data, const Tensor& batchSizes,
                                             bool batchFirst, const Scalar& paddingValue,
                                             int64_t totalLength) {
  TL_CHECK(data.dim() >= 1, "packed data must have at least 1 dimension");
  const std::vector<int64_t> bs = batchSizesOf(batchSizes, data.size(0));
  const int64_t maxReal = static_cast<int64_t>(bs.size());
  int64_t maxLen = maxReal;
  if (totalLength > 0) {
    TL_CHECK(
        totalLength >= maxReal,
        "Expected total_length to be at least the length of the longest sequence in input, but "
        "got total_length={} and max sequence length being {}",
        totalLength, maxReal);
    maxLen = totalLength;
  }
  const int64_t B = bs.empty() ? 0 : bs[0];
  IntList shape{maxLen, B};
  for (int64_t d = 1; d < data.dim(); ++d) shape.push_back(data.size(d));
  Tensor out = full(shape, paddingValue, data.dtype());
  std::vector<int64_t> lengths(static_cast<size_t>(B), 0);
  int64_t off = 0;
  for (int64_t t = 0; t < maxReal; ++t) {
    const int64_t b = bs[static_cast<size_t>(t)];
    Tensor dst = narrow(select(out, 0, t), 0, 0, b);
    copy_(dst, narrow(data, 0, off, b));
    for (int64_t i = 0; i < b; ++i) lengths[static_cast<size_t>(i)] = t + 1;
    off += b;
  }
  if (batchFirst) out = transpose(out, 0, 1);
  return {out, Tensor::fromVector(lengths, {B})};
}

}  // namespace torchless::ops
