// Kernels of quantized tensors (ops/quantized.h, Note [Quantized arithmetic]):
//   aten::quantize_per_tensor / quantize_per_channel / dequantize / int_repr / q_scale ...;
//   quantized:: compute ops over the packed params of runtime/torchbind.h (conv, linear,
//     linear_dynamic, add, mul, cat, batch_norm, layer/group/instance norm, activations, pooling,
//     embedding_bag);
//   aten::quantized_lstm / quantized_gru over rnn.CellParamsBase objects (dynamic int8/fp16);
//   aten ops that PyTorch also runs on quantized tensors (relu, max_pool2d, adaptive_avg_pool2d,
//     upsample_nearest2d, upsample_bilinear2d, cat, sigmoid, hardsigmoid ...): their float kernels
//     are wrapped (KernelRegistry::wrapKernel) so that a quantized first input takes the quantized
//     path.
// Also aten::FloatImplicit, IntImplicit and aten::stft (ops/spectral.h), which the quantized
// archives we meet use (kws_crnn_streaming), and view_as_real / real / imag of its result.

#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/nn.h"
#include "ops/pool.h"
#include "ops/quantized.h"
#include "ops/shape.h"
#include "ops/spectral.h"
#include "ops/tensor_iterator.h"
#include "runtime/register_utils.h"
#include "runtime/torchbind.h"

namespace torchless {
namespace {

using namespace kreg;

constexpr const char* kConv2dPacked = "__torch__.torch.classes.quantized.Conv2dPackedParamsBase";
constexpr const char* kConv3dPacked = "__torch__.torch.classes.quantized.Conv3dPackedParamsBase";
constexpr const char* kLinearPacked = "__torch__.torch.classes.quantized.LinearPackedParamsBase";
constexpr const char* kCellParams = "__torch__.torch.classes.rnn.CellParamsBase";

const Object& objectOf(const IValue& v, const char* cls, const char* op) {
  if (!v.isObject())
    throw Error(fmt::format("{}: expected a {} object, got {}", op, cls, v.tagName()));
  const Object& o = *v.toObject();
  if (o.type->name() != cls)
    throw Error(fmt::format("{}: expected a {} object, got {}", op, cls, o.type->name()));
  return o;
}

// ---- conv ------------------------------------------------------------------------------------

/// Runs a conv packed-params object (slots: weight, bias, stride, padding, output_padding,
/// dilation, groups, transpose) on x. `spatial` is the op's dimensionality (conv1d objects hold
/// 2-d params over [N, C, 1, L], as PyTorch's do).
Tensor runConv(const char* op, size_t spatial, const Tensor& x, const IValue& packed, double scale,
               int64_t zp, bool relu, bool wantTranspose) {
  const Object& o = objectOf(packed, spatial == 3 ? kConv3dPacked : kConv2dPacked, op);
  const bool transposed = o.slots[7].toBool();
  if (transposed != wantTranspose)
    throw Error(fmt::format("{}: the packed params are for a {}convolution", op,
                            transposed ? "transposed " : ""));
  Tensor in = x;
  if (spatial == 1) {
    if (x.dim() != 3)
      throw Error(fmt::format("{}: input must be 3-d [N, C, L], got {}-d", op, x.dim()));
    in = ops::unsqueeze(x, 2);
  }
  Tensor y =
      ops::qconv(in, o.slots[0].toTensor(), toOptTensor(o.slots[1]), o.slots[2].toIntVector(),
                 o.slots[3].toIntVector(), o.slots[5].toIntVector(), o.slots[6].toInt(), transposed,
                 o.slots[4].toIntVector(), scale, zp, relu);
  if (spatial == 1) {
    Tensor s = ops::squeeze(y, 2);
    if (!s.isQuantized()) s.setQuantizer(y.quantizer());
    return s;
  }
  return y;
}

void registerConv(KernelRegistry& r) {
  struct C {
    const char* name;
    size_t spatial;
    bool relu, transpose;
  };
  const C convs[] = {{"quantized::conv1d", 1, false, false},
                     {"quantized::conv1d_relu", 1, true, false},
                     {"quantized::conv2d.new", 2, false, false},
                     {"quantized::conv2d_relu.new", 2, true, false},
                     {"quantized::conv3d.new", 3, false, false},
                     {"quantized::conv3d_relu.new", 3, true, false},
                     {"quantized::conv_transpose1d", 1, false, true},
                     {"quantized::conv_transpose2d", 2, false, true},
                     {"quantized::conv_transpose3d", 3, false, true}};
  for (const C& c : convs) {
    defN<4>(r, c.name, [c](const IValue* a) {
      return runConv(c.name, c.spatial, a[0].toTensor(), a[1], a[2].toDouble(), a[3].toInt(),
                     c.relu, c.transpose);
    });
  }
  // The pre-1.6 forms pass stride/padding/dilation/groups again; the packed object's win, as in
  // PyTorch (which ignores the extra arguments).
  const C legacy[] = {{"quantized::conv2d", 2, false, false},
                      {"quantized::conv2d_relu", 2, true, false},
                      {"quantized::conv3d", 3, false, false},
                      {"quantized::conv3d_relu", 3, true, false}};
  for (const C& c : legacy) {
    defN<8>(r, c.name, [c](const IValue* a) {
      return runConv(c.name, c.spatial, a[0].toTensor(), a[1], a[6].toDouble(), a[7].toInt(),
                     c.relu, false);
    });
  }
}

// ---- linear ----------------------------------------------------------------------------------

/// (weight, bias) of a LinearPackedParamsBase; a float weight means fp16 packed params.
std::pair<Tensor, std::optional<Tensor>> linearParams(const IValue& packed, const char* op) {
  const Object& o = objectOf(packed, kLinearPacked, op);
  return {o.slots[0].toTensor(), toOptTensor(o.slots[1])};
}

Tensor linearDynamic(const Tensor& x, const IValue& packed, bool reduceRange, bool relu,
                     const char* op) {
  auto [w, b] = linearParams(packed, op);
  if (!w.isQuantized()) return ops::qlinearDynamicFp16(x, w, b, relu);
  return ops::qlinearDynamic(x, w, b, reduceRange, relu);
}

void registerLinear(KernelRegistry& r) {
  for (const auto& [name, relu] :
       {std::pair{"quantized::linear", false}, std::pair{"quantized::linear_relu", true}}) {
    const bool rl = relu;
    const char* nm = name;
    defN<4>(r, name, [rl, nm](const IValue* a) {
      auto [w, b] = linearParams(a[1], nm);
      return ops::qlinear(a[0].toTensor(), w, b, a[2].toDouble(), a[3].toInt(), rl);
    });
  }
  for (const auto& [name, relu] : {std::pair{"quantized::linear_dynamic", false},
                                   std::pair{"quantized::linear_relu_dynamic", true}}) {
    const bool rl = relu;
    const char* nm = name;
    defN<3>(r, name, [rl, nm](const IValue* a) {
      return linearDynamic(a[0].toTensor(), a[1], a[2].toBool(), rl, nm);
    });
  }
  for (const auto& [name, relu] : {std::pair{"quantized::linear_dynamic_fp16", false},
                                   std::pair{"quantized::linear_relu_dynamic_fp16", true}}) {
    const bool rl = relu;
    const char* nm = name;
    defN<2>(r, name, [rl, nm](const IValue* a) {
      auto [w, b] = linearParams(a[1], nm);
      if (w.isQuantized())
        throw Error(fmt::format("{}: expected fp16 packed params, got int8 ones", nm));
      return ops::qlinearDynamicFp16(a[0].toTensor(), w, b, rl);
    });
  }
}

// ---- dynamic recurrent layers ------------------------------------------------------------------

enum class Mode { LSTM, GRU };

/// One direction's cell params: linear_ih / linear_hh through packed params.
struct QCell {
  IValue ih, hh;
  bool reduceRange = false;
  Tensor linearIh(const Tensor& x) const {
    return linearDynamic(x, ih, reduceRange, false, "quantized rnn");
  }
  Tensor linearHh(const Tensor& h) const {
    return linearDynamic(h, hh, reduceRange, false, "quantized rnn");
  }
};

QCell cellOf(const IValue& v) {
  const Object& o = objectOf(v, kCellParams, "quantized rnn");
  const std::string& type = o.slots[0].toStringRef();
  const auto& packed = o.slots[4].toList()->list;
  if ((type != "quantized_dynamic" && type != "quantized_dynamic_fp16") || packed.size() != 2)
    throw Error(
        fmt::format("quantized rnn: cell params of type '{}' are not supported (dynamic int8 "
                    "and fp16 are)",
                    type));
  QCell c{packed[0], packed[1], false};
  const auto& longs = o.slots[3].toList()->list;
  if (type == "quantized_dynamic" && !longs.empty()) c.reduceRange = longs[0].toInt() != 0;
  return c;
}

/// One step with the input projection gi [B, G*H] precomputed (PyTorch's FullLayer projects the
/// whole sequence at once, then runs the cells).
void step(Mode mode, const Tensor& gi, const QCell& p, Tensor& h, Tensor& c) {
  Tensor gh = p.linearHh(h);
  if (mode == Mode::LSTM) {
    auto g = ops::chunk(ops::add(gi, gh), 4, 1);
    Tensor i = ops::sigmoid(g[0]), f = ops::sigmoid(g[1]), gg = ops::tanh(g[2]),
           o = ops::sigmoid(g[3]);
    c = ops::add(ops::mul(f, c), ops::mul(i, gg));
    h = ops::mul(o, ops::tanh(c));
    return;
  }
  auto a = ops::chunk(gi, 3, 1);
  auto b = ops::chunk(gh, 3, 1);
  Tensor rg = ops::sigmoid(ops::add(b[0], a[0]));
  Tensor z = ops::sigmoid(ops::add(b[1], a[1]));
  Tensor n = ops::tanh(ops::add(a[2], ops::mul(b[2], rg)));
  h = ops::add(ops::mul(ops::sub(h, n), z), n);
}

std::vector<Tensor> runQuantizedRnn(Mode mode, Tensor input, const Tensor& hx,
                                    const std::optional<Tensor>& cx, const IValue& params,
                                    int64_t numLayers, bool train, bool bidirectional,
                                    bool batchFirst) {
  if (train)
    throw Error("quantized recurrent layers run in inference mode only (train=True given)");
  if (input.dim() != 3)
    throw Error(fmt::format("input must have 3 dimensions, got {}", input.dim()));
  const auto& cells = params.toList()->list;
  const int64_t dirs = bidirectional ? 2 : 1;
  if (static_cast<int64_t>(cells.size()) != numLayers * dirs)
    throw Error(fmt::format("expected {} cell params for {} layers, got {}", numLayers * dirs,
                            numLayers, cells.size()));
  if (batchFirst) input = ops::transpose(input, 0, 1);
  Tensor layerInput = input;
  std::vector<Tensor> hs, cs;
  for (int64_t l = 0; l < numLayers; ++l) {
    std::vector<Tensor> outs;
    for (int64_t d = 0; d < dirs; ++d) {
      const QCell p = cellOf(cells[static_cast<size_t>(l * dirs + d)]);
      Tensor h = ops::contiguous(ops::select(hx, 0, l * dirs + d));
      Tensor c = cx ? ops::contiguous(ops::select(*cx, 0, l * dirs + d)) : Tensor();
      const int64_t T = layerInput.size(0), B = layerInput.size(1), H = h.size(1);
      Tensor gi = p.linearIh(ops::contiguous(layerInput));
      Tensor out = Tensor::empty({T, B, H}, ScalarType::Float);
      for (int64_t s = 0; s < T; ++s) {
        const int64_t t = d == 1 ? T - 1 - s : s;
        step(mode, ops::select(gi, 0, t), p, h, c);
        Tensor dst = ops::select(out, 0, t);
        ops::copy_(dst, h);
      }
      outs.push_back(out);
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

/// The .data overloads over a PackedSequence (data [N, I], batch_sizes [T], see Note [Packed
/// sequences] in register_rnn.cpp). PyTorch's PackedLayer (and ReversedPackedLayer) projects
/// the whole packed data at once on CPU (one set of dynamic input qparams), then runs each
/// step's rows, so this does too.
std::vector<Tensor> runQuantizedRnnPacked(Mode mode, const Tensor& data, const Tensor& batchSizes,
                                          const Tensor& hx, const std::optional<Tensor>& cx,
                                          const IValue& params, int64_t numLayers, bool train,
                                          bool bidirectional) {
  if (train)
    throw Error("quantized recurrent layers run in inference mode only (train=True given)");
  if (data.dim() != 2)
    throw Error(fmt::format("packed data must have 2 dimensions, got {}", data.dim()));
  std::vector<int64_t> bs;
  int64_t total = 0;
  for (int64_t t = 0; t < batchSizes.numel(); ++t) {
    bs.push_back(batchSizes.intAt(t));
    if (bs.back() <= 0 || (t > 0 && bs.back() > bs[static_cast<size_t>(t) - 1]))
      throw Error("batch_sizes must be positive and non-increasing");
    total += bs.back();
  }
  if (total != data.size(0))
    throw Error(
        fmt::format("batch_sizes sum to {} but the packed data has {} rows", total, data.size(0)));
  std::vector<int64_t> offsets(bs.size() + 1, 0);
  for (size_t t = 0; t < bs.size(); ++t) offsets[t + 1] = offsets[t] + bs[t];
  const auto& cells = params.toList()->list;
  const int64_t dirs = bidirectional ? 2 : 1;
  if (static_cast<int64_t>(cells.size()) != numLayers * dirs)
    throw Error(fmt::format("expected {} cell params for {} layers, got {}", numLayers * dirs,
                            numLayers, cells.size()));
  const int64_t T = static_cast<int64_t>(bs.size());
  Tensor layerInput = data;
  std::vector<Tensor> hs, cs;
  for (int64_t l = 0; l < numLayers; ++l) {
    std::vector<Tensor> outs;
    for (int64_t d = 0; d < dirs; ++d) {
      const QCell p = cellOf(cells[static_cast<size_t>(l * dirs + d)]);
      Tensor h = ops::clone(ops::select(hx, 0, l * dirs + d));
      Tensor c = cx ? ops::clone(ops::select(*cx, 0, l * dirs + d)) : Tensor();
      Tensor out = Tensor::empty({data.size(0), h.size(1)}, ScalarType::Float);
      const Tensor giAll = p.linearIh(ops::contiguous(layerInput));
      for (int64_t s = 0; s < T; ++s) {
        const size_t t = static_cast<size_t>(d == 1 ? T - 1 - s : s);
        const int64_t b = bs[t];
        Tensor hb = ops::contiguous(ops::narrow(h, 0, 0, b));
        Tensor cb = c.defined() ? ops::contiguous(ops::narrow(c, 0, 0, b)) : Tensor();
        Tensor gi = ops::contiguous(ops::narrow(giAll, 0, offsets[t], b));
        step(mode, gi, p, hb, cb);
        Tensor hv = ops::narrow(h, 0, 0, b);
        ops::copy_(hv, hb);
        if (c.defined()) {
          Tensor cv = ops::narrow(c, 0, 0, b);
          ops::copy_(cv, cb);
        }
        Tensor dst = ops::narrow(out, 0, offsets[t], b);
        ops::copy_(dst, hb);
      }
      outs.push_back(out);
      hs.push_back(h);
      if (cx) cs.push_back(c);
    }
    layerInput = dirs == 1 ? outs[0] : ops::cat(outs, 1);
  }
  std::vector<Tensor> result{layerInput, ops::stack(hs, 0)};
  if (cx) result.push_back(ops::stack(cs, 0));
  return result;
}

void registerRnn(KernelRegistry& r) {
  // quantized_gru.data(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
  //                    bidirectional)
  defN<9>(r, "aten::quantized_gru.data", [](const IValue* a) {
    auto res =
        runQuantizedRnnPacked(Mode::GRU, a[0].toTensor(), a[1].toTensor(), a[2].toTensor(),
                              std::nullopt, a[3], a[5].toInt(), a[7].toBool(), a[8].toBool());
    return std::make_tuple(res[0], res[1]);
  });
  const OpInfo* lstmData = OperatorRegistry::global().findOverload("aten::quantized_lstm.data");
  const size_t nd = lstmData ? lstmData->schema.arguments().size() : 11;
  def(r, "aten::quantized_lstm.data", [nd](Stack& s) {
    const IValue* a = s.data() + (s.size() - nd);
    const auto& hx = a[2].toList()->list;
    if (hx.size() != 2) throw Error("quantized_lstm: hx must hold (h0, c0)");
    auto res =
        runQuantizedRnnPacked(Mode::LSTM, a[0].toTensor(), a[1].toTensor(), hx[0].toTensor(),
                              hx[1].toTensor(), a[3], a[5].toInt(), a[7].toBool(), a[8].toBool());
    drop(s, nd);
    push(s, res[0], res[1], res[2]);
  });
  // quantized_gru.input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
  // batch_first)
  defN<9>(r, "aten::quantized_gru.input", [](const IValue* a) {
    auto res = runQuantizedRnn(Mode::GRU, a[0].toTensor(), a[1].toTensor(), std::nullopt, a[2],
                               a[4].toInt(), a[6].toBool(), a[7].toBool(), a[8].toBool());
    return std::make_tuple(res[0], res[1]);
  });
  // quantized_lstm.input(input, hx[], params, has_biases, num_layers, dropout, train,
  //                      bidirectional, batch_first, *, dtype=None, use_dynamic=False)
  const OpInfo* lstm = OperatorRegistry::global().findOverload("aten::quantized_lstm.input");
  const size_t n = lstm ? lstm->schema.arguments().size() : 11;
  def(r, "aten::quantized_lstm.input", [n](Stack& s) {
    const IValue* a = s.data() + (s.size() - n);
    const auto& hx = a[1].toList()->list;
    if (hx.size() != 2) throw Error("quantized_lstm: hx must hold (h0, c0)");
    auto res = runQuantizedRnn(Mode::LSTM, a[0].toTensor(), hx[0].toTensor(), hx[1].toTensor(),
                               a[2], a[4].toInt(), a[6].toBool(), a[7].toBool(), a[8].toBool());
    drop(s, n);
    push(s, res[0], res[1], res[2]);
  });
}

// ---- elementwise and the rest ------------------------------------------------------------------

void registerElementwise(KernelRegistry& r) {
  for (const auto& [name, relu] :
       {std::pair{"quantized::add", false}, std::pair{"quantized::add_relu", true}}) {
    const bool rl = relu;
    defN<4>(r, name, [rl](const IValue* a) {
      return ops::qadd(a[0].toTensor(), a[1].toTensor(), a[2].toDouble(), a[3].toInt(), rl);
    });
  }
  for (const auto& [name, relu] :
       {std::pair{"quantized::mul", false}, std::pair{"quantized::mul_relu", true}}) {
    const bool rl = relu;
    defN<4>(r, name, [rl](const IValue* a) {
      return ops::qmul(a[0].toTensor(), a[1].toTensor(), a[2].toDouble(), a[3].toInt(), rl);
    });
  }
  defN<2>(r, "quantized::add.Scalar", [](const IValue* a) {
    return ops::qaddScalar(a[0].toTensor(), a[1].toScalarDouble(), false);
  });
  defN<2>(r, "quantized::add_relu.Scalar", [](const IValue* a) {
    return ops::qaddScalar(a[0].toTensor(), a[1].toScalarDouble(), true);
  });
  defN<2>(r, "quantized::add_scalar", [](const IValue* a) {
    return ops::qaddScalar(a[0].toTensor(), a[1].toScalarDouble(), false);
  });
  defN<2>(r, "quantized::add_scalar_relu", [](const IValue* a) {
    return ops::qaddScalar(a[0].toTensor(), a[1].toScalarDouble(), true);
  });
  defN<2>(r, "quantized::mul.Scalar",
          [](const IValue* a) { return ops::qmulScalar(a[0].toTensor(), a[1].toScalarDouble()); });
  defN<2>(r, "quantized::mul_scalar",
          [](const IValue* a) { return ops::qmulScalar(a[0].toTensor(), a[1].toScalarDouble()); });
  for (const auto& [name, relu] :
       {std::pair{"quantized::cat", false}, std::pair{"quantized::cat_relu", true}}) {
    const bool rl = relu;
    defN<4>(r, name, [rl](const IValue* a) {
      std::vector<Tensor> xs;
      for (const auto& e : a[0].toList()->list) xs.push_back(e.toTensor());
      return ops::qcat(xs, a[1].toInt(), toOptDouble(a[2]), toOptInt(a[3]), rl);
    });
  }
  defN<3>(r, "quantized::hardswish", [](const IValue* a) {
    return ops::qhardswish(a[0].toTensor(), a[1].toDouble(), a[2].toInt());
  });
  defN<3>(r, "quantized::sigmoid", [](const IValue* a) {
    return ops::qsigmoid(a[0].toTensor(), a[1].toDouble(), a[2].toInt());
  });
  defN<5>(r, "quantized::leaky_relu", [](const IValue* a) {
    return ops::qleakyRelu(a[0].toTensor(), toScalar(a[1]).toDouble(), a[3].toDouble(),
                           a[4].toInt());
  });
  defN<7>(r, "quantized::layer_norm", [](const IValue* a) {
    return ops::qlayerNorm(a[0].toTensor(), a[1].toIntVector(), toOptTensor(a[2]),
                           toOptTensor(a[3]), a[4].toDouble(), a[5].toDouble(), a[6].toInt());
  });
  defN<7>(r, "quantized::group_norm", [](const IValue* a) {
    return ops::qgroupNorm(a[0].toTensor(), a[1].toInt(), toOptTensor(a[2]), toOptTensor(a[3]),
                           a[4].toDouble(), a[5].toDouble(), a[6].toInt());
  });
  defN<6>(r, "quantized::instance_norm", [](const IValue* a) {
    return ops::qinstanceNorm(a[0].toTensor(), toOptTensor(a[1]), toOptTensor(a[2]),
                              a[3].toDouble(), a[4].toDouble(), a[5].toInt());
  });
  defN<4>(r, "quantized::softmax", [](const IValue* a) {
    return ops::qsoftmax(a[0].toTensor(), a[1].toInt(), a[2].toDouble(), a[3].toInt());
  });
  defN<6>(r, "quantized::elu", [](const IValue* a) {
    return ops::qelu(a[0].toTensor(), a[1].toDouble(), a[2].toInt(), toScalar(a[3]).toDouble(),
                     toScalar(a[4]).toDouble(), toScalar(a[5]).toDouble());
  });
  defN<4>(
      r, "quantized::celu", [](const IValue* a) {  // celu(x, alpha) = elu(x, alpha, 1, 1 / alpha)
        const double alpha = toScalar(a[3]).toDouble();
        return ops::qelu(a[0].toTensor(), a[1].toDouble(), a[2].toInt(), alpha, 1.0, 1.0 / alpha);
      });
  defN<4>(r, "quantized::matmul", [](const IValue* a) {
    return ops::qmatmul(a[0].toTensor(), a[1].toTensor(), a[2].toDouble(), a[3].toInt());
  });
  defN<2>(r, "quantized::relu6",
          [](const IValue* a) { return ops::qclamp(a[0].toTensor(), 0.0, 6.0); });
  defN<3>(r, "quantized::threshold", [](const IValue* a) {
    return ops::qthreshold(a[0].toTensor(), toScalar(a[1]).toDouble(), toScalar(a[2]).toDouble());
  });
  defN<3>(r, "quantized::clamp", [](const IValue* a) {
    return ops::qclamp(a[0].toTensor(), toOptDouble(a[1]), toOptDouble(a[2]));
  });
  struct Bn {
    const char* name;
    bool relu;
  };
  const Bn bns[] = {{"quantized::batch_norm", false},   {"quantized::batch_norm_relu", true},
                    {"quantized::batch_norm1d", false}, {"quantized::batch_norm1d_relu", true},
                    {"quantized::batch_norm2d", false}, {"quantized::batch_norm2d_relu", true},
                    {"quantized::batch_norm3d", false}, {"quantized::batch_norm3d_relu", true}};
  for (const Bn& b : bns) {
    const bool rl = b.relu;
    defN<8>(r, b.name, [rl](const IValue* a) {
      return ops::qbatchNorm(a[0].toTensor(), toOptTensor(a[1]), toOptTensor(a[2]), a[3].toTensor(),
                             a[4].toTensor(), a[5].toDouble(), a[6].toDouble(), a[7].toInt(), rl);
    });
  }
  for (const auto& [name, sp] : {std::pair{"quantized::max_pool1d", int64_t{1}},
                                 std::pair{"quantized::max_pool2d", int64_t{2}}}) {
    const int64_t s = sp;
    defN<6>(r, name, [s](const IValue* a) {
      return ops::qmaxPool(a[0].toTensor(), s, toIntList(a[1], s), toIntList(a[2], s),
                           toIntList(a[3], s), toIntList(a[4], s), a[5].toBool());
    });
  }
  // embedding_bag_{byte,4bit}_rowwise_offsets(weight, indices, offsets, scale_grad_by_freq, mode,
  //     pruned_weights, per_sample_weights, compressed_indices_mapping, include_last_offset)
  for (const auto& [name, bits] :
       {std::pair{"quantized::embedding_bag_byte_rowwise_offsets", int64_t{8}},
        std::pair{"quantized::embedding_bag_4bit_rowwise_offsets", int64_t{4}}}) {
    const int64_t b = bits;
    defN<9>(r, name, [b](const IValue* a) {
      if (a[5].toBool()) throw Error("quantized embedding_bag: pruned weights are not supported");
      return ops::qembeddingBag(a[0].toTensor(), a[1].toTensor(), toOptTensor(a[2]), b,
                                a[4].toInt(), toOptTensor(a[6]), a[8].toBool());
    });
  }
}

void registerTensorOps(KernelRegistry& r) {
  defN<4>(r, "aten::quantize_per_tensor", [](const IValue* a) {
    return ops::quantizePerTensor(a[0].toTensor(), a[1].toDouble(), a[2].toInt(), toDtype(a[3]));
  });
  defN<4>(r, "aten::quantize_per_tensor.tensor_qparams", [](const IValue* a) {
    return ops::quantizePerTensor(a[0].toTensor(), a[1].toTensor().itemDouble(),
                                  a[2].toTensor().itemInt(), toDtype(a[3]));
  });
  defN<4>(r, "aten::quantize_per_tensor.tensors", [](const IValue* a) {
    std::vector<Tensor> out;
    const auto& xs = a[0].toList()->list;
    Tensor s = a[1].toTensor(), z = a[2].toTensor();
    if (s.numel() != static_cast<int64_t>(xs.size()) ||
        z.numel() != static_cast<int64_t>(xs.size()))
      throw Error("quantize_per_tensor: one scale and zero point per tensor expected");
    for (size_t i = 0; i < xs.size(); ++i)
      out.push_back(ops::quantizePerTensor(xs[i].toTensor(), s.doubleAt(static_cast<int64_t>(i)),
                                           z.intAt(static_cast<int64_t>(i)), toDtype(a[3])));
    return tensorList(std::move(out));
  });
  defN<5>(r, "aten::quantize_per_channel", [](const IValue* a) {
    return ops::quantizePerChannel(a[0].toTensor(), a[1].toTensor(), a[2].toTensor(), a[3].toInt(),
                                   toDtype(a[4]));
  });
  defN<1>(r, "aten::dequantize.self",
          [](const IValue* a) { return ops::dequantize(a[0].toTensor()); });
  defN<1>(r, "aten::dequantize.tensor",
          [](const IValue* a) { return ops::dequantize(a[0].toTensor()); });
  for (const char* name : {"aten::dequantize.tensors", "aten::dequantize.list"}) {
    defN<1>(r, name, [](const IValue* a) {
      std::vector<Tensor> out;
      for (const auto& e : a[0].toList()->list) out.push_back(ops::dequantize(e.toTensor()));
      return tensorList(std::move(out));
    });
  }
  defN<1>(r, "aten::int_repr", [](const IValue* a) { return ops::intRepr(a[0].toTensor()); });
  defN<1>(r, "aten::q_scale", [](const IValue* a) { return IValue(ops::qScale(a[0].toTensor())); });
  defN<1>(r, "aten::q_zero_point",
          [](const IValue* a) { return IValue(ops::qZeroPoint(a[0].toTensor())); });
  defN<1>(r, "aten::q_per_channel_scales",
          [](const IValue* a) { return ops::qPerChannelScales(a[0].toTensor()); });
  defN<1>(r, "aten::q_per_channel_zero_points",
          [](const IValue* a) { return ops::qPerChannelZeroPoints(a[0].toTensor()); });
  defN<1>(r, "aten::q_per_channel_axis",
          [](const IValue* a) { return IValue(ops::qPerChannelAxis(a[0].toTensor())); });
  // stft(self, n_fft, hop_length, win_length, window, normalized, onesided, return_complex)
  defN<8>(r, "aten::stft", [](const IValue* a) {
    return ops::stft(a[0].toTensor(), a[1].toInt(), toOptInt(a[2]), toOptInt(a[3]),
                     toOptTensor(a[4]), a[5].toBool(), toOptBool(a[6]), toOptBool(a[7]));
  });
  // The real view of a complex tensor (what stft returns): view_as_real, real, imag.
  auto realView = [](const Tensor& z, const char* op) {
    if (!isComplexType(z.dtype()))
      throw Error(fmt::format("{}: expected a complex tensor, got {}", op, dtypeName(z.dtype())));
    IntList sizes = z.sizes(), strides;
    sizes.push_back(2);
    for (int64_t st : z.strides()) strides.push_back(st * 2);
    strides.push_back(1);
    return Tensor::fromStorage(
        z.storage(), z.storageOffset() * 2, sizes, strides,
        z.dtype() == ScalarType::ComplexFloat ? ScalarType::Float : ScalarType::Double);
  };
  defN<1>(r, "aten::view_as_real",
          [realView](const IValue* a) { return realView(a[0].toTensor(), "view_as_real"); });
  defN<1>(r, "aten::real", [realView](const IValue* a) {
    const Tensor& z = a[0].toTensor();
    return isComplexType(z.dtype()) ? ops::select(realView(z, "real"), -1, 0) : z;
  });
  defN<1>(r, "aten::imag", [realView](const IValue* a) {
    const Tensor& z = a[0].toTensor();
    if (!isComplexType(z.dtype()))
      throw Error("imag is not implemented for tensors with non-complex dtypes.");
    return ops::select(realView(z, "imag"), -1, 1);
  });
  defN<1>(r, "aten::FloatImplicit", [](const IValue* a) {
    const Tensor& t = a[0].toTensor();
    if (t.dim() != 0)
      throw Error(
          fmt::format("Cannot input a tensor of dimension other than 0 as a scalar argument "
                      "(got {}-d)",
                      t.dim()));
    return IValue(t.itemDouble());
  });
  // int(t) of a 0-d integral tensor (eager quantized GroupNorm / InstanceNorm / LayerNorm pass
  // their zero_point buffer), as PyTorch's checkImplicitTensorToNum(to_int=true).
  defN<1>(r, "aten::IntImplicit", [](const IValue* a) {
    const Tensor& t = a[0].toTensor();
    if (t.dim() != 0)
      throw Error(
          fmt::format("Cannot input a tensor of dimension other than 0 as a scalar argument "
                      "(got {}-d)",
                      t.dim()));
    if (isFloatingType(t.dtype()) || t.isQuantized())
      throw Error(fmt::format("Cannot input a tensor of type {} as an integral argument",
                              dtypeName(t.dtype())));
    return IValue(t.itemInt());
  });
}

// ---- aten ops on quantized tensors -------------------------------------------------------------

/// True when the first argument is a quantized tensor (or a list whose first tensor is).
bool firstQuantized(const IValue& v) {
  if (v.isTensor()) return v.toTensor().defined() && v.toTensor().isQuantized();
  if (v.isList()) {
    const auto& l = v.toList()->list;
    return !l.empty() && l[0].isTensor() && l[0].toTensor().isQuantized();
  }
  return false;
}

/// Routes `overloadKey`'s quantized calls to fn(args) (args: the schema's arguments).
template <typename Fn>
void routeQuantized(KernelRegistry& r, std::string_view overloadKey, Fn fn) {
  const OpInfo* op = OperatorRegistry::global().findOverload(overloadKey);
  if (!op) throw Error(fmt::format("kernel for unknown operator '{}'", overloadKey));
  const size_t n = op->schema.arguments().size();
  const bool hasKernel = op->kernel != nullptr;
  Operation q = [fn, n](Stack& s) {
    const IValue* a = s.data() + (s.size() - n);
    Tensor res = fn(a);
    drop(s, n);
    s.emplace_back(std::move(res));
  };
  if (!hasKernel) {
    r.registerKernel(op->key, [q, n, key = op->key](Stack& s) {
      if (!firstQuantized(s[s.size() - n]))
        throw Error(fmt::format("{}: only quantized inputs are supported", key));
      q(s);
    });
    return;
  }
  r.wrapKernel(op->key, [q, n](OperationCreator orig) -> OperationCreator {
    return [orig, q, n](const Node& node) -> Operation {
      Operation o = orig(node);
      return [o, q, n](Stack& s) {
        if (firstQuantized(s[s.size() - n]))
          q(s);
        else
          o(s);
      };
    };
  });
}

/// For ops that only pick values (nearest upsampling): a quantized first input runs the float
/// kernel on its integers (exact in float) and the result gets the input's qparams back.
void routeOnIntegers(KernelRegistry& r, std::string_view overloadKey) {
  const OpInfo* op = OperatorRegistry::global().findOverload(overloadKey);
  if (!op) throw Error(fmt::format("kernel for unknown operator '{}'", overloadKey));
  if (!op->kernel) return;  // the overloads without a float kernel stay unsupported
  const size_t n = op->schema.arguments().size();
  r.wrapKernel(op->key, [n](OperationCreator orig) -> OperationCreator {
    return [orig, n](const Node& node) -> Operation {
      Operation o = orig(node);
      return [o, n](Stack& s) {
        IValue& first = s[s.size() - n];
        if (!firstQuantized(first)) return o(s);
        const Tensor q = first.toTensor();
        first = IValue(ops::intRepr(q).to(ScalarType::Float));
        o(s);
        s.back() =
            IValue(ops::withQuantizerOf(s.back().toTensor().to(ops::underlyingType(q.dtype())), q));
      };
    };
  });
}

/// The in-place form of a quantized op: y's integers written into self (any strides) and self
/// takes y's qparams, as PyTorch's quantized copy_ does.
Tensor assignQuantized(Tensor self, const Tensor& y) {
  Tensor dst = Tensor::fromStorage(self.storage(), self.storageOffset(), self.sizes(),
                                   self.strides(), ops::underlyingType(self.dtype()));
  ops::copyInto(dst, ops::intRepr(y));
  self.setQuantizer(y.quantizer());
  return self;
}

void registerAtenOnQuantized(KernelRegistry& r) {
  routeQuantized(r, "aten::relu", [](const IValue* a) { return ops::qrelu(a[0].toTensor()); });
  routeQuantized(r, "aten::relu_", [](const IValue* a) {
    return assignQuantized(a[0].toTensor(), ops::qrelu(a[0].toTensor()));
  });
  routeQuantized(r, "aten::sigmoid", [](const IValue* a) {
    const Tensor& x = a[0].toTensor();
    const bool u8 = x.dtype() == ScalarType::QUInt8;
    return ops::qsigmoid(x, 1.0 / 256.0, u8 ? 0 : -128);
  });
  routeQuantized(r, "aten::mean", [](const IValue* a) {
    if (auto d = toOptDtype(a[1]); d && *d != a[0].toTensor().dtype())
      throw Error("mean: a quantized input's dtype argument must be its own dtype");
    return ops::qmean(a[0].toTensor(), {}, false);
  });
  routeQuantized(r, "aten::mean.dim", [](const IValue* a) {
    if (auto d = toOptDtype(a[3]); d && *d != a[0].toTensor().dtype())
      throw Error("mean: a quantized input's dtype argument must be its own dtype");
    return ops::qmean(a[0].toTensor(), a[1].isNone() ? IntList{} : a[1].toIntVector(),
                      a[2].toBool());
  });
  routeQuantized(r, "aten::tanh", [](const IValue* a) { return ops::qtanh(a[0].toTensor()); });
  routeQuantized(r, "aten::hardsigmoid",
                 [](const IValue* a) { return ops::qhardsigmoid(a[0].toTensor()); });
  routeQuantized(r, "aten::leaky_relu", [](const IValue* a) {
    const Tensor& x = a[0].toTensor();
    return ops::qleakyRelu(x, toScalar(a[1]).toDouble(), ops::qScale(x), ops::qZeroPoint(x));
  });
  routeQuantized(r, "aten::threshold", [](const IValue* a) {
    return ops::qthreshold(a[0].toTensor(), toScalar(a[1]).toDouble(), toScalar(a[2]).toDouble());
  });
  routeQuantized(r, "aten::hardtanh", [](const IValue* a) {
    return ops::qclamp(a[0].toTensor(), toScalar(a[1]).toDouble(), toScalar(a[2]).toDouble());
  });
  routeQuantized(r, "aten::hardtanh_", [](const IValue* a) {
    const Tensor& x = a[0].toTensor();
    return assignQuantized(x, ops::qclamp(x, toScalar(a[1]).toDouble(), toScalar(a[2]).toDouble()));
  });
  routeQuantized(r, "aten::hardsigmoid_", [](const IValue* a) {
    return assignQuantized(a[0].toTensor(), ops::qhardsigmoid(a[0].toTensor()));
  });
  routeQuantized(r, "aten::clamp", [](const IValue* a) {
    return ops::qclamp(a[0].toTensor(), toOptDouble(a[1]), toOptDouble(a[2]));
  });
  for (const auto& [name, sp] :
       {std::pair{"aten::max_pool1d", int64_t{1}}, std::pair{"aten::max_pool2d", int64_t{2}},
        std::pair{"aten::max_pool3d", int64_t{3}}}) {
    const int64_t s = sp;
    routeQuantized(r, name, [s](const IValue* a) {
      return ops::qmaxPool(a[0].toTensor(), s, toIntList(a[1], s), toIntList(a[2], s),
                           toIntList(a[3], s), toIntList(a[4], s), a[5].toBool());
    });
  }
  for (const auto& [name, sp] :
       {std::pair{"aten::avg_pool2d", int64_t{2}}, std::pair{"aten::avg_pool3d", int64_t{3}}}) {
    const int64_t s = sp;
    routeQuantized(r, name, [s](const IValue* a) {
      return ops::qavgPool(a[0].toTensor(), s, toIntList(a[1], s), toIntList(a[2], s),
                           toIntList(a[3], s), a[4].toBool(), a[5].toBool(), toOptInt(a[6]));
    });
  }
  routeQuantized(r, "aten::avg_pool1d", [](const IValue* a) {
    return ops::qavgPool(a[0].toTensor(), 1, toIntList(a[1], 1), toIntList(a[2], 1),
                         toIntList(a[3], 1), a[4].toBool(), a[5].toBool(), std::nullopt);
  });
  for (const auto& [name, sp] : {std::pair{"aten::adaptive_avg_pool1d", int64_t{1}},
                                 std::pair{"aten::adaptive_avg_pool2d", int64_t{2}},
                                 std::pair{"aten::adaptive_avg_pool3d", int64_t{3}}}) {
    const int64_t s = sp;
    routeQuantized(r, name, [s](const IValue* a) {
      return ops::qadaptiveAvgPool(a[0].toTensor(), s, toIntList(a[1], s));
    });
  }
  for (const char* name : {"aten::upsample_nearest1d.vec", "aten::upsample_nearest2d.vec",
                           "aten::upsample_nearest3d.vec", "aten::upsample_nearest1d",
                           "aten::upsample_nearest2d", "aten::upsample_nearest3d"})
    routeOnIntegers(r, name);
  routeQuantized(r, "aten::upsample_bilinear2d", [](const IValue* a) {
    return ops::qupsampleBilinear2d(a[0].toTensor(), toIntList(a[1], 2), a[2].toBool(),
                                    toOptDouble(a[3]), toOptDouble(a[4]));
  });
  routeQuantized(r, "aten::upsample_bilinear2d.vec", [](const IValue* a) {
    const Tensor& x = a[0].toTensor();
    auto scales = scalesOf(a[3], 2);
    return ops::qupsampleBilinear2d(x, vecOutputSize(x, a[1], a[3], 2), a[2].toBool(), scales[0],
                                    scales[1]);
  });
  routeQuantized(r, "aten::cat", [](const IValue* a) {
    std::vector<Tensor> xs;
    for (const auto& e : a[0].toList()->list) xs.push_back(e.toTensor());
    return ops::qcat(xs, a[1].toInt(), std::nullopt, std::nullopt, false);
  });
}

}  // namespace

void registerQuantizedKernels(KernelRegistry& r) {
  registerTensorOps(r);
  registerConv(r);
  registerLinear(r);
  registerRnn(r);
  registerElementwise(r);
  registerAtenOnQuantized(r);
}

}  // namespace torchless
