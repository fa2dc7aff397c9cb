#include "convert/engine/network.h"

#include <fmt/format.h>

#include <map>

namespace torchless::engine {

const char* toString(LayerKind kind) {
  switch (kind) {
    case LayerKind::Constant: return "Constant";
    case LayerKind::Convolution: return "Convolution";
    case LayerKind::MatMul: return "MatMul";
    case LayerKind::Eltwise: return "Eltwise";
    case LayerKind::Binary: return "Binary";
    case LayerKind::Pooling: return "Pooling";
    case LayerKind::Softmax: return "Softmax";
    case LayerKind::LayerNorm: return "LayerNorm";
    case LayerKind::BatchNorm: return "BatchNorm";
    case LayerKind::Plugin: return "Plugin";
    case LayerKind::Shape: return "Shape";
  }
  return "?";
}

const char* toString(Activation a) {
  switch (a) {
    case Activation::None: return "none";
    case Activation::Relu: return "relu";
    case Activation::Clamp: return "clamp";
    case Activation::Sigmoid: return "sigmoid";
    case Activation::Silu: return "silu";
    case Activation::Hardswish: return "hardswish";
    case Activation::GeluErf: return "gelu";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::Tanh: return "tanh";
    case Activation::LeakyRelu: return "leaky_relu";
    case Activation::Elu: return "elu";
    case Activation::Mish: return "mish";
    case Activation::Hardsigmoid: return "hardsigmoid";
  }
  return "?";
}

ValueId NetworkDefinition::addValue(std::string name, ValueKind kind) {
  values_.push_back({std::move(name), kind});
  return static_cast<ValueId>(values_.size() - 1);
}

Layer& NetworkDefinition::addLayer(Layer layer) {
  layers_.push_back(std::move(layer));
  return layers_.back();
}

std::string NetworkDefinition::summary() const {
  std::map<std::string, size_t> counts;
  for (const Layer& l : layers_)
    if (l.kind != LayerKind::Constant) ++counts[toString(l.kind)];
  std::string s;
  for (const auto& [k, c] : counts) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", k, c);
  return s.empty() ? "no layers" : s;
}

std::string NetworkDefinition::str() const {
  std::string s;
  auto names = [&](const std::vector<ValueId>& ids) {
    std::string r;
    for (size_t i = 0; i < ids.size(); ++i)
      r += (i ? ", %" : "%") + values_[static_cast<size_t>(ids[i])].name;
    return r;
  };
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    if (l.kind == LayerKind::Constant) continue;
    std::string extra;
    if (!l.fused.empty() || l.activation.kind != Activation::None || l.hasResidual) {
      std::vector<std::string> parts = l.fused;
      if (l.hasResidual) parts.push_back("residual add");
      if (l.activation.kind != Activation::None) parts.push_back(toString(l.activation.kind));
      extra = " (+" + fmt::format("{}", fmt::join(parts, ", ")) + ")";
    }
    std::string what = l.node ? " " + l.node->kind().toQualString() : "";
    s +=
        fmt::format("[{}] {}{}{} {}{}: {} -> {}\n", i, toString(l.kind), l.quantized ? " int8" : "",
                    what, l.name, extra, names(l.inputs), names(l.outputs));
  }
  return s;
}

}  // namespace torchless::engine
