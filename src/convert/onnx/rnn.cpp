// ONNX converters: recurrent layers with PyTorch's flat weights (src/runtime/register_rnn.cpp's
// family): aten::lstm / gru / rnn_tanh / rnn_relu -> one ONNX LSTM / GRU / RNN per layer
// (https://onnx.ai/onnx/operators/onnx__LSTM.html, onnx__GRU.html, onnx__RNN.html); their .data
// overloads on packed sequences with sequence_lens (Note [Packed sequences]).
//
// PyTorch's params list, per layer and direction (forward, then reverse): w_ih [G*H, in],
// w_hh [G*H, H], then b_ih, b_hh [G*H] when has_biases. ONNX wants per layer W [dirs, G*H, in],
// R [dirs, G*H, H], B [dirs, 2*G*H] (input biases, then recurrent ones) with its own gate
// order: LSTM i,o,f,c for torch's i,f,g,o; GRU z,r,h for torch's r,z,n (and
// linear_before_reset=1, as torch applies r after the recurrent product); RNN one gate. The
// weights are constants, so they are reordered and stacked here, once, into initializers.
#include "convert/onnx/rnn.h"

#include <cstring>

namespace torchless::onnx_export {

namespace {

enum class Cell { LSTM, GRU, RNN_TANH, RNN_RELU };

// Gate blocks of `t` (rows, or elements for 1-d) in ONNX's order, as a contiguous tensor.
Tensor reorderGates(const Tensor& t, const std::vector<int>& order) {
  Tensor src = t.contiguous();
  const int64_t gates = static_cast<int64_t>(order.size());
  const size_t blockBytes = src.nbytes() / static_cast<size_t>(gates);
  Tensor out = Tensor::empty(src.sizes(), src.dtype());
  const auto* in = static_cast<const char*>(src.rawData());
  auto* o = static_cast<char*>(out.rawData());
  for (int64_t g = 0; g < gates; ++g)
    std::memcpy(o + g * blockBytes, in + order[g] * blockBytes, blockBytes);
  return out;
}

// Stacks same-shaped tensors along a new first dim.
Tensor stack(const std::vector<Tensor>& ts) {
  std::vector<int64_t> sizes = ts.at(0).sizes();
  sizes.insert(sizes.begin(), static_cast<int64_t>(ts.size()));
  Tensor out = Tensor::empty(sizes, ts[0].dtype());
  auto* o = static_cast<char*>(out.rawData());
  for (const auto& t : ts) {
    Tensor c = t.contiguous();
    std::memcpy(o, c.rawData(), c.nbytes());
    o += c.nbytes();
  }
  return out;
}

// Concatenates 1-d tensors.
Tensor concat1d(const std::vector<Tensor>& ts) {
  int64_t n = 0;
  for (const auto& t : ts) n += t.numel();
  Tensor out = Tensor::empty({n}, ts.at(0).dtype());
  auto* o = static_cast<char*>(out.rawData());
  for (const auto& t : ts) {
    Tensor c = t.contiguous();
    std::memcpy(o, c.rawData(), c.nbytes());
    o += c.nbytes();
  }
  return out;
}

Tensor zeros(int64_t n, ScalarType dt) {
  Tensor t = Tensor::empty({n}, dt);
  std::memset(t.rawData(), 0, t.nbytes());  // Storage::allocate does not zero-fill
  return t;
}

// Note [Packed sequences]
// As torch.onnx exports them (symbolic_opset9's _pack_padded_sequence, _pad_packed_sequence and
// the RNN symbolics with batch_sizes): between aten::_pack_padded_sequence and
// aten::_pad_packed_sequence, a PackedSequence's `data` is the padded input, time-major
// [T, B, *], and its `batch_sizes` are the sequence lengths [B] (int64). The .data overloads of
// lstm / gru / rnn_* pass the lengths to ONNX's sequence_lens, which stops each sequence at its
// length (outputs past it are 0, h_n / c_n are each sequence's last valid step, as PyTorch's);
// _pad_packed_sequence fills past the lengths with padding_value and cuts or pads to
// total_length. PyTorch's packed tensors of the example run ([sum(lengths), *]) never reach
// ONNX: only these converters (and quantized.cpp's quantized_lstm / quantized_gru .data, which
// mask the steps past each length themselves) read such values.

}  // namespace

void convertRecurrent(OnnxCtx& ctx, const Node& n, OnnxArgs& args, bool lstm, bool packed,
                      const std::function<RecurrentLayerFn(const RecurrentArgs&)>& makeLayer) {
  RecurrentArgs ra;
  ra.lstm = lstm;
  ra.packed = packed;
  const size_t a = packed ? 1 : 0;  // argument shift after the lengths
  ra.paramsArg = 2 + a;
  ra.hasBiases = args[3 + a].unwrapToBool();
  ra.layers = args[4 + a].unwrapToInt();
  if (args[6 + a].unwrapToBool() && args[5 + a].unwrapToDouble() > 0)
    args[6 + a].fail("False (export runs in inference mode; call eval() first)", "True");
  ra.bidirectional = args[7 + a].unwrapToBool();
  ra.batchFirst = !packed && args[8].unwrapToBool();
  if (packed) ra.lengths = args[1].unwrapToTensor();
  const int64_t dirs = ra.dirs();
  const RecurrentLayerFn layer = makeLayer(ra);

  std::string x = args[0].unwrapToTensor();
  if (ra.batchFirst) x = ctx.op("Transpose", {x}, {attrIs("perm", {1, 0, 2})});
  // Initial states [layers * dirs, batch, H].
  std::string h0, c0;
  if (lstm) {
    auto hx = args[1 + a].unwrapToTensorList();
    if (hx.size() != 2) args[1 + a].fail("(h_0, c_0)", fmt::format("{} tensors", hx.size()));
    h0 = hx[0];
    c0 = hx[1];
  } else {
    h0 = args[1 + a].unwrapToTensor();
  }
  auto layerSlice = [&](const std::string& s, int64_t l) {
    if (ra.layers == 1) return s;
    return ctx.op("Slice", {s, ctx.constInt64s({l * dirs}), ctx.constInt64s({(l + 1) * dirs}),
                            ctx.constInt64s({0})});
  };
  std::vector<std::string> hn, cn;
  for (int64_t l = 0; l < ra.layers; ++l) {
    RecurrentLayerOut out = layer(l, x, layerSlice(h0, l), lstm ? layerSlice(c0, l) : "");
    x = out.y;
    hn.push_back(out.hn);
    if (lstm) cn.push_back(out.cn);
  }
  if (ra.batchFirst) x = ctx.op("Transpose", {x}, {attrIs("perm", {1, 0, 2})});
  ctx.setOutput(n, 0, x);
  auto joined = [&](const std::vector<std::string>& xs) {
    return xs.size() == 1 ? xs[0] : ctx.op("Concat", xs, {attrI("axis", 0)});
  };
  ctx.setOutput(n, 1, joined(hn));
  if (lstm) ctx.setOutput(n, 2, joined(cn));
}

namespace {

// aten::lstm.input / gru.input / rnn_*.input (packed = false) and their .data overloads
// (packed = true; the lengths go to ONNX's sequence_lens, Note [Packed sequences]): one ONNX
// LSTM / GRU / RNN per layer over PyTorch's flat weights, reordered and stacked.
OnnxConverter recurrent(Cell cell, bool packed = false) {
  return [cell, packed](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    const bool lstm = cell == Cell::LSTM;
    convertRecurrent(ctx, n, args, lstm, packed, [&](const RecurrentArgs& ra) -> RecurrentLayerFn {
      const size_t pa = ra.paramsArg;
      const int64_t dirs = ra.dirs();
      const IValue& paramList = args[pa].unwrapToIValue();
      if (!paramList.isList())
        args[pa].fail("a constant Tensor[] (the module's weights)", "something else");
      std::vector<Tensor> params;
      for (const auto& p : paramList.toList()->list) {
        if (!p.isTensor())
          args[pa].fail("a constant Tensor[]", convert::detail::describeIValue(paramList));
        params.push_back(p.toTensor());
      }
      const size_t perDir = ra.hasBiases ? 4 : 2;
      if (params.size() != perDir * static_cast<size_t>(ra.layers * dirs))
        args[pa].fail(
            fmt::format("{} tensors ({} layers, {} directions)", perDir * ra.layers * dirs,
                        ra.layers, dirs),
            fmt::format("{} tensors (projections, proj_size, are not supported)", params.size()));
      const std::string seqLens =
          ra.packed ? ctx.op("Cast", {ra.lengths}, {attrI("to", onnxDataType(ScalarType::Int))})
                    : "";
      // Initializers named after the module: "rnn.W_l0" from "rnn.weight_ih_l0".
      std::string prefix;
      if (const Node* list = args[pa].value()->node();
          list->kind() == prim::ListConstruct && !list->inputs().empty()) {
        std::string first = ctx.weightName(list->input(0));
        if (auto dot = first.rfind('.'); dot != std::string::npos)
          prefix = first.substr(0, dot + 1);
      }
      return [&ctx, cell, lstm, ra, params, perDir, seqLens, prefix](
                 int64_t l, const std::string& x, const std::string& h0,
                 const std::string& c0) -> RecurrentLayerOut {
        const int64_t dirs = ra.dirs();
        const int64_t gateCount = lstm ? 4 : cell == Cell::GRU ? 3 : 1;
        const int64_t hidden = params[1].sizes().at(1);
        std::vector<int> order = lstm                ? std::vector<int>{0, 3, 1, 2}
                                 : cell == Cell::GRU ? std::vector<int>{1, 0, 2}
                                                     : std::vector<int>{0};
        const std::string opType = lstm ? "LSTM" : cell == Cell::GRU ? "GRU" : "RNN";
        const ScalarType dt = params[0].dtype();
        std::vector<Tensor> W, R, B;
        for (int64_t d = 0; d < dirs; ++d) {
          const size_t base = static_cast<size_t>((l * dirs + d)) * perDir;
          W.push_back(reorderGates(params[base], order));
          R.push_back(reorderGates(params[base + 1], order));
          if (ra.hasBiases)
            B.push_back(concat1d(
                {reorderGates(params[base + 2], order), reorderGates(params[base + 3], order)}));
          else
            B.push_back(zeros(2 * gateCount * hidden, dt));
        }
        std::vector<std::string> in = {x,
                                       ctx.initializer(stack(W), fmt::format("{}W_l{}", prefix, l)),
                                       ctx.initializer(stack(R), fmt::format("{}R_l{}", prefix, l)),
                                       ctx.initializer(stack(B), fmt::format("{}B_l{}", prefix, l)),
                                       seqLens,
                                       h0};
        if (lstm) in.push_back(c0);
        std::vector<OnnxAttr> attrs = {
            attrI("hidden_size", hidden),
            attrS("direction", ra.bidirectional ? "bidirectional" : "forward")};
        if (cell == Cell::GRU) attrs.push_back(attrI("linear_before_reset", 1));
        if (cell == Cell::RNN_TANH || cell == Cell::RNN_RELU) {
          std::string act = cell == Cell::RNN_TANH ? "Tanh" : "Relu";
          attrs.push_back(
              {"activations", std::vector<std::string>(static_cast<size_t>(dirs), act)});
        }
        auto outs = ctx.opN(opType, in, lstm ? 3 : 2, attrs);
        // Y [seq, dirs, batch, H] -> [seq, batch, dirs * H].
        std::string y = outs[0];
        if (dirs == 1) {
          y = squeeze(ctx, y, {1});
        } else {
          y = ctx.op("Transpose", {y}, {attrIs("perm", {0, 2, 1, 3})});
          y = ctx.op("Reshape", {y, ctx.constInt64s({0, 0, -1})});
        }
        return {y, outs[1], lstm ? outs[2] : ""};
      };
    });
  };
}

// x @ w^T (+ b): one of a cell's two affine maps (w is args[w], b is args[b] or None).
std::string cellLinear(OnnxCtx& ctx, OnnxArgs& args, const std::string& x, size_t w, size_t b) {
  std::string y = ctx.op(
      "MatMul", {x, ctx.op("Transpose", {args[w].unwrapToTensor()}, {attrIs("perm", {1, 0})})});
  return args[b].isNone() ? y : ctx.op("Add", {y, args[b].unwrapToTensor()});
}

// lstm_cell(input, (h, c), w_ih, w_hh, b_ih, b_hh) -> (h', c'), one step decomposed as
// torch.onnx's symbolic_opset9 lstm_cell and PyTorch's LSTMCell: gates = input @ w_ih^T + b_ih
// + h @ w_hh^T + b_hh, split into i, f, g, o (Split into 4 equal parts); c' = sigmoid(f) * c +
// sigmoid(i) * tanh(g); h' = sigmoid(o) * tanh(c').
void convertLstmCell(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  auto hx = args[1].unwrapToTensorList();
  if (hx.size() != 2) args[1].fail("(h, c)", fmt::format("{} tensors", hx.size()));
  std::string gates = ctx.op("Add", {cellLinear(ctx, args, args[0].unwrapToTensor(), 2, 4),
                                     cellLinear(ctx, args, hx[0], 3, 5)});
  std::vector<OnnxAttr> splitAttrs = {attrI("axis", -1)};
  if (ctx.opset() >= 18) splitAttrs.push_back(attrI("num_outputs", 4));  // required from 18
  auto parts = ctx.opN("Split", {gates}, 4, splitAttrs);
  std::string i = ctx.op("Sigmoid", {parts[0]}), f = ctx.op("Sigmoid", {parts[1]});
  std::string g = ctx.op("Tanh", {parts[2]}), o = ctx.op("Sigmoid", {parts[3]});
  std::string c = ctx.op("Add", {ctx.op("Mul", {f, hx[1]}), ctx.op("Mul", {i, g})});
  ctx.setOutput(n, 0, ctx.op("Mul", {o, ctx.op("Tanh", {c})}));
  ctx.setOutput(n, 1, c);
}

// gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh) -> h', one step as PyTorch's GRUCell
// (aten/src/ATen/native/RNN.cpp, GRUCell): gi = input @ w_ih^T + b_ih and gh = hx @ w_hh^T +
// b_hh, each split into (r, z, n) parts; r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z),
// n = tanh(gi_n + r * gh_n) (the reset gate applied after the hidden map, ONNX GRU's
// linear_before_reset = 1); h' = (1 - z) * n + z * hx, written n + z * (hx - n).
void convertGruCell(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string hx = args[1].unwrapToTensor();
  std::vector<OnnxAttr> splitAttrs = {attrI("axis", -1)};
  if (ctx.opset() >= 18) splitAttrs.push_back(attrI("num_outputs", 3));  // required from 18
  auto gi =
      ctx.opN("Split", {cellLinear(ctx, args, args[0].unwrapToTensor(), 2, 4)}, 3, splitAttrs);
  auto gh = ctx.opN("Split", {cellLinear(ctx, args, hx, 3, 5)}, 3, splitAttrs);
  std::string r = ctx.op("Sigmoid", {ctx.op("Add", {gi[0], gh[0]})});
  std::string z = ctx.op("Sigmoid", {ctx.op("Add", {gi[1], gh[1]})});
  std::string nn = ctx.op("Tanh", {ctx.op("Add", {gi[2], ctx.op("Mul", {r, gh[2]})})});
  ctx.setOutput(n, 0, ctx.op("Add", {nn, ctx.op("Mul", {z, ctx.op("Sub", {hx, nn})})}));
}

// rnn_tanh_cell / rnn_relu_cell(input, hx, w_ih, w_hh, b_ih, b_hh) -> h' = act(input @ w_ih^T
// + b_ih + hx @ w_hh^T + b_hh), as PyTorch's RNNCell.
OnnxConverter rnnCell(bool relu) {
  return [relu](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    std::string pre = ctx.op("Add", {cellLinear(ctx, args, args[0].unwrapToTensor(), 2, 4),
                                     cellLinear(ctx, args, args[1].unwrapToTensor(), 3, 5)});
    ctx.setOutput(n, 0, ctx.op(relu ? "Relu" : "Tanh", {pre}));
  };
}

// The permutation swapping dims 0 and 1 of a rank-`rank` tensor.
std::vector<int64_t> swap01(int64_t rank) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) perm[d] = d;
  std::swap(perm[0], perm[1]);
  return perm;
}

// _pack_padded_sequence(input, lengths, batch_first) -> (data, batch_sizes): the input
// time-major and the lengths as int64 (Note [Packed sequences]).
void convertPackPadded(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  std::string x = args[0].unwrapToTensor();
  if (args[2].unwrapToBool())
    x = ctx.op("Transpose", {x}, {attrIs("perm", swap01(ctx.expectRank(n, args[0].value())))});
  ctx.setOutput(n, 0, x);
  ctx.setOutput(
      n, 1, ctx.castTo(args[1].unwrapToTensor(), ctx.dtypeOf(args[1].value()), ScalarType::Long));
}

// _pad_packed_sequence(data, batch_sizes, batch_first, padding_value, total_length) ->
// (padded, lengths): steps at or past each sequence's length hold padding_value, the time axis
// is cut or zero-padded to total_length, then made batch-first when asked (Note [Packed
// sequences]). The rank is the output's (PyTorch's padded tensor, which the example run saw).
void convertPadPacked(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const int64_t rank = ctx.expectRank(n, n.output(0));
  const ScalarType dt = dtypeOr(ctx, n.output(0));
  std::string data = args[0].unwrapToTensor();
  std::string lengths = args[1].unwrapToTensor();
  std::string total =
      ctx.op("Reshape", {tensorOrScalar(ctx, args[4], ScalarType::Long), ctx.constInt64s({1})});
  // Steps [0, total): the first `total` of data's, then zeros (Pad by max(total - T, 0)).
  std::string steps =
      ctx.op("Slice", {ctx.op("Shape", {data}), ctx.constInt64s({0}), ctx.constInt64s({1})});
  data = ctx.op("Slice", {data, ctx.constInt64s({0}), total, ctx.constInt64s({0})});
  std::string more = ctx.op("Max", {ctx.op("Sub", {total, steps}), ctx.constInt64s({0})});
  std::vector<int64_t> zerosBefore(static_cast<size_t>(rank), 0);
  std::string pads =
      ctx.op("Concat",
             {ctx.constInt64s(zerosBefore), more,
              ctx.constInt64s(std::vector<int64_t>(static_cast<size_t>(rank - 1), 0))},
             {attrI("axis", 0)});
  data = ctx.op("Pad", {data, pads});
  // padding_value past each length: Where(t < length, data, padding_value).
  const double pad = args[3].unwrapToDouble();
  if (pad != 0.0) {
    std::string t = ctx.op("Range", {ctx.constScalar(0, ScalarType::Long), squeeze(ctx, total, {0}),
                                     ctx.constScalar(1, ScalarType::Long)});
    std::vector<int64_t> trailing;
    for (int64_t d = 2; d < rank; ++d) trailing.push_back(d);
    std::string mask = ctx.op("Less", {unsqueeze(ctx, t, {1}), unsqueeze(ctx, lengths, {0})});
    if (!trailing.empty()) mask = unsqueeze(ctx, mask, trailing);
    data = ctx.op("Where", {mask, data, ctx.constScalar(pad, dt)});
  }
  if (args[2].unwrapToBool()) data = ctx.op("Transpose", {data}, {attrIs("perm", swap01(rank))});
  ctx.setOutput(n, 0, data);
  ctx.setOutput(n, 1, lengths);
}

}  // namespace

void registerRnnConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"aten::lstm_cell"}, convertLstmCell);
  r.addOverloads({"aten::gru_cell"}, convertGruCell);
  r.addOverloads({"aten::rnn_tanh_cell"}, rnnCell(false));
  r.addOverloads({"aten::rnn_relu_cell"}, rnnCell(true));
  r.addOverloads({"aten::lstm.input"}, recurrent(Cell::LSTM));
  r.addOverloads({"aten::gru.input"}, recurrent(Cell::GRU));
  r.addOverloads({"aten::rnn_tanh.input"}, recurrent(Cell::RNN_TANH));
  r.addOverloads({"aten::rnn_relu.input"}, recurrent(Cell::RNN_RELU));
  r.addOverloads({"aten::lstm.data"}, recurrent(Cell::LSTM, true));
  r.addOverloads({"aten::gru.data"}, recurrent(Cell::GRU, true));
  r.addOverloads({"aten::rnn_tanh.data"}, recurrent(Cell::RNN_TANH, true));
  r.addOverloads({"aten::rnn_relu.data"}, recurrent(Cell::RNN_RELU, true));
  r.addOverloads({"aten::_pack_padded_sequence"}, convertPackPadded);
  r.addOverloads({"aten::_pad_packed_sequence"}, convertPadPacked);
}

}  // namespace torchless::onnx_export
