// The builder's fusions over a converted network:
//   Convolution -> BatchNorm                 the statistics folded into weight and bias
//   Convolution|MatMul -> Binary add         the other operand becomes a sum post-op
//   Convolution|MatMul [-> add] -> Eltwise   the activation becomes an eltwise post-op
//   int8 Convolution|MatMul -> relu          a relu post-op (nothing else fuses into int8 layers)
// A layer is fused into the one before it only when that one's result has no other reader
// and is not a network output, so no one can observe the intermediate value; in-place forms
// (relu_, add_ on the product) write only that value. The fused layer takes the position of
// the last layer it absorbed, where every operand it reads has been computed.
#include "convert/engine/engine.h"

#include <cmath>
#include <unordered_map>

namespace torchless::engine {

namespace {

bool postOpActivation(Activation a) {
  switch (a) {
    case Activation::Relu:
    case Activation::Clamp:
    case Activation::Sigmoid:
    case Activation::Silu:
    case Activation::Hardswish:
    case Activation::GeluErf:
    case Activation::GeluTanh:
    case Activation::Tanh:
    case Activation::LeakyRelu: return true;
    default: return false;
  }
}

// w' = w * gamma / sqrt(var + eps) per output channel; b' = (b - mean) * that + beta.
void foldBatchNorm(Layer& conv, const Layer& bn) {
  const Tensor w = conv.weight.contiguous();
  const int64_t oc = w.sizes()[0];
  const Tensor mean = bn.mean->contiguous(), var = bn.var->contiguous();
  if (mean.numel() != oc || var.numel() != oc) return;
  const int64_t per = w.numel() / oc;
  Tensor nw = Tensor::empty(w.sizes(), ScalarType::Float);
  Tensor nb = Tensor::empty({oc}, ScalarType::Float);
  const float* pw = w.data<float>();
  float* qw = nw.data<float>();
  const Tensor gamma = bn.gamma ? bn.gamma->contiguous() : Tensor(),
               beta = bn.beta ? bn.beta->contiguous() : Tensor();
  const Tensor bias = conv.bias ? conv.bias->contiguous() : Tensor();
  for (int64_t c = 0; c < oc; ++c) {
    const float g = gamma.defined() ? gamma.data<float>()[c] : 1.f;
    const float scale = g / std::sqrt(var.data<float>()[c] + static_cast<float>(bn.eps));
    for (int64_t i = 0; i < per; ++i) qw[c * per + i] = pw[c * per + i] * scale;
    const float b0 = bias.defined() ? bias.data<float>()[c] : 0.f;
    nb.data<float>()[c] =
        (b0 - mean.data<float>()[c]) * scale + (beta.defined() ? beta.data<float>()[c] : 0.f);
  }
  conv.weight = nw;
  conv.bias = nb;
}

}  // namespace

size_t fuseNetwork(NetworkDefinition& net) {
  auto& layers = net.layers();
  std::unordered_map<ValueId, int> readers;
  for (const Layer& l : layers)
    for (ValueId v : l.inputs) ++readers[v];
  for (ValueId v : net.outputs()) readers[v] += 2;  // never fused away
  std::vector<bool> removed(layers.size(), false);
  size_t fusedAway = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (removed[i] ||
        (layers[i].kind != LayerKind::Convolution && layers[i].kind != LayerKind::MatMul))
      continue;
    size_t at = i;  // where the fused layer sits now
    while (true) {
      Layer& f = layers[at];
      const ValueId out = f.outputs[0];
      if (readers[out] != 1) break;
      size_t j = at + 1;
      while (j < layers.size() &&
             (removed[j] || std::find(layers[j].inputs.begin(), layers[j].inputs.end(), out) ==
                                layers[j].inputs.end()))
        ++j;
      if (j >= layers.size()) break;
      Layer& r = layers[j];
      bool take = false;
      if (f.quantized) {
        // int8 layers take only a relu (aten::relu on their quint8 output is max(q, zero point),
        // what the relu post-op gives): anything else would change PyTorch's integers.
        take = r.kind == LayerKind::Eltwise && r.activation.kind == Activation::Relu &&
               f.activation.kind == Activation::None && r.inputs.size() == 1;
        if (take) f.activation = r.activation;
      } else if (r.kind == LayerKind::BatchNorm && f.kind == LayerKind::Convolution &&
                 !f.transposed && !f.hasResidual && f.activation.kind == Activation::None &&
                 r.inputs.size() == 1 && r.mean && r.var && f.weight.dtype() == ScalarType::Float &&
                 r.mean->dtype() == ScalarType::Float) {
        foldBatchNorm(f, r);
        take = true;
      } else if (r.kind == LayerKind::Binary && !f.hasResidual &&
                 f.activation.kind == Activation::None && r.inputs.size() == 2 &&
                 r.inputs[0] != r.inputs[1] && (r.op == "add" || r.inputs[0] == out)) {
        f.inputs.push_back(r.inputs[0] == out ? r.inputs[1] : r.inputs[0]);
        f.hasResidual = true;
        take = true;
      } else if (r.kind == LayerKind::Eltwise && f.activation.kind == Activation::None &&
                 r.inputs.size() == 1 && postOpActivation(r.activation.kind)) {
        f.activation = r.activation;
        take = true;
      }
      if (!take) break;
      f.fused.push_back(r.name);
      f.outputs = r.outputs;
      r = std::move(f);
      removed[at] = true;
      ++fusedAway;
      at = j;
    }
  }
  std::vector<Layer> kept;
  kept.reserve(layers.size());
  for (size_t i = 0; i < layers.size(); ++i)
    if (!removed[i]) kept.push_back(std::move(layers[i]));
  layers = std::move(kept);
  return fusedAway;
}

}  // namespace torchless::engine
