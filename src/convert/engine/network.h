#pragma once
// The engine's network definition: layers and the values they read and write, built by the
// engine converters (converters.cpp) from one segment of a method's graph, then fused
// (fuse.cpp) and run by an Engine (engine.h). TensorRT's INetworkDefinition / ILayer /
// ITensor, on oneDNN and our own kernels.
//
// Note [Engine values]
// A network value is one of
//   - a tensor computed when the engine runs (an engine input, a layer output);
//   - a shape value: an int, float, bool or list of them that depends only on the shapes
//     of the engine's inputs (aten::size of an input whose batch dimension is free, the int
//     arithmetic of traced graphs on it). An Engine evaluates shape values once per input
//     signature, when it plans that signature, never per call.
// Values known when converting (constants, frozen parameters, sizes of fixed dimensions) are
// not network values at all: converters read them as static IValues (Note [Static and
// backend values] in convert/conversion_ctx.h) and store them in the layer's parameters, or
// as a Constant layer when a tensor is needed.
//
// Every layer is named after the IR node it came from (its scope, else its source place) and
// every value after its IR value's debug name, so a layer can be traced back to the model's
// line ("layer1.0.conv1", "code/__torch__/m.py:12").

#include "core/ivalue.h"
#include "core/scalar_type.h"
#include "core/tensor.h"
#include "ir/ir.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torchless::engine {

/// Index of a value in a NetworkDefinition.
using ValueId = int32_t;

/// See Note [Engine values].
enum class ValueKind : uint8_t { Tensor, Shape };

/// One network value.
struct NetworkValue {
  std::string name;  // the IR value's debug name
  ValueKind kind = ValueKind::Tensor;
};

/// The kinds of layers. Native layers run as oneDNN primitives built once per input
/// signature; Plugin layers run the operator's CPU kernel (TensorRT's plugin layers);
/// Shape layers compute shape values when a signature is planned.
enum class LayerKind : uint8_t {
  Constant,     // a weight tensor (outputs[0]); no inputs
  Convolution,  // conv / conv_transpose [+ bias, folded batch_norm, residual sum, activation]
  MatMul,       // linear / addmm / matmul / bmm / mm [+ bias, residual sum, activation]
  Eltwise,      // a unary activation (relu, clamp, sigmoid, silu, hardswish, gelu, tanh, ...)
  Binary,       // add / sub / mul / div of two tensors with broadcasting
  Pooling,      // max_pool / avg_pool / adaptive_avg_pool (2-d)
  Softmax,      // softmax / log_softmax along a dim
  LayerNorm,    // layer_norm over the last dims
  BatchNorm,    // batch_norm in eval mode not folded into a convolution
  Plugin,       // any other operator: its CPU kernel
  Shape,        // aten::size, int arithmetic, list construction: evaluated when planning
};

/// "Convolution", "MatMul", ... for reports.
const char* toString(LayerKind kind);

/// An activation applied as a oneDNN eltwise post-op or layer. Clamp uses [alpha, beta]
/// (infinite for a missing bound, as hardtanh/relu6/clamp); LeakyRelu uses alpha as slope;
/// Elu uses alpha.
enum class Activation : uint8_t {
  None,
  Relu,
  Clamp,
  Sigmoid,
  Silu,
  Hardswish,
  GeluErf,
  GeluTanh,
  Tanh,
  LeakyRelu,
  Elu,
  Mish,
  Hardsigmoid,
};
/// "relu", "clamp", ... for reports.
const char* toString(Activation a);

/// An activation and its parameters.
struct ActivationSpec {
  Activation kind = Activation::None;
  float alpha = 0, beta = 0;
};

/// Weights reordered into a oneDNN primitive's layout, shared by every plan of an engine
/// (layer_exec.cpp).
struct PackedWeightCache;

/// One layer. Its fields are the layer's full definition (what a serialized engine holds);
/// what is built for a given input signature lives in the Engine's plans.
struct Layer {
  LayerKind kind = LayerKind::Plugin;
  std::string name;   // from the node's scope or source place
  std::string place;  // where the node is used (for error messages)
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;

  // ---- Constant: a weight tensor, or a static value a segment returns ----
  IValue constant;

  // ---- Convolution: inputs [x] or [x, residual] ----
  Tensor weight;               // [OC, C/g, k...] (transposed: [C, OC/g, k...]); float32
  std::optional<Tensor> bias;  // [OC]
  IntList stride, padding, dilation, outputPadding;
  int64_t groups = 1;
  bool transposed = false;
  /// From aten::_convolution / convolution, which refuse an unbatched input [C, *spatial]
  /// ("Expected 4-dimensional input for 4-dimensional weight"); conv1d/2d/3d accept it.
  bool batchedOnly = false;
  bool hasResidual = false;        // inputs[1] is added before the activation (a sum post-op)
  ActivationSpec activation;       // applied last
  std::vector<std::string> fused;  // names of the layers fused into this one (report)
  /// Run the product in bfloat16 (weights and activations; f32 accumulation and results).
  bool bf16 = false;
  /// Quantized (int8) Convolution / MatMul, from quantized::conv{1,2,3}d(_relu) / linear(_relu):
  /// quint8 input and output [N, C, *spatial] (MatMul: [*, K]), `weight` qint8 (per tensor or
  /// per channel along axis 0; conv1d's is [OC, C/g, 1, L] as PyTorch packs it), float bias,
  /// and the output's (outScale, outZeroPoint). `node` is the quantized:: node: its kernel is
  /// the reference path. Only a Relu activation fuses into it (the integers stay PyTorch's).
  bool quantized = false;
  double outScale = 1.0;
  int64_t outZeroPoint = 0;
  /// Reordered weights, shared by all plans (set when the engine is built).
  std::shared_ptr<PackedWeightCache> packed;

  // ---- MatMul: inputs [a, b?, residual?]; a [*, M, K] ----
  // With `weight` defined: a @ weight^T (+ bias), weight [N, K] (linear; addmm's mat2 is
  // stored transposed). Without: a @ inputs[1] with PyTorch's matmul broadcasting.
  double alpha = 1.0;  // scale of the product (addmm/baddbmm alpha)

  // ---- Binary: inputs [a, b]; op is one of "add", "sub", "mul", "div" ----
  // ---- Pooling: op "max" / "avg" / "adaptive_avg"; kernel/stride/padding/dilation ----
  std::string op;
  IntList kernel;
  bool ceilMode = false;
  bool countIncludePad = true;
  IntList outputSize;  // adaptive pooling

  // ---- Softmax / LayerNorm / BatchNorm ----
  int64_t dim = -1;  // softmax dim
  bool logSoftmax = false;
  IntList normalizedShape;  // layer_norm
  double eps = 1e-5;
  std::optional<Tensor> gamma, beta, mean, var;  // layer_norm affine / batch_norm stats

  // ---- Plugin / Shape, and the unfused form of Eltwise/Binary/Pooling/Softmax/LayerNorm/
  // BatchNorm (which run their node's kernel until they get oneDNN primitives of their own):
  // `node` is the IR node in the network's source graph (NetworkDefinition::sourceGraph);
  // its inputs that are network values are `inputs`, in order; the others are static.
  const Node* node = nullptr;
  std::vector<std::optional<IValue>> args;  // per node input: the static value, or nullopt
};

/// A network: values, layers in execution order, and which values are its inputs and outputs.
class NetworkDefinition {
 public:
  ValueId addValue(std::string name, ValueKind kind);
  Layer& addLayer(Layer layer);

  const std::vector<NetworkValue>& values() const { return values_; }
  std::vector<NetworkValue>& values() { return values_; }
  const std::vector<Layer>& layers() const { return layers_; }
  std::vector<Layer>& layers() { return layers_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  void markInput(ValueId v) { inputs_.push_back(v); }
  void markOutput(ValueId v) { outputs_.push_back(v); }

  /// Number of layers of each kind, as "Convolution 53, MatMul 1, Plugin 3".
  std::string summary() const;
  /// One line per layer: "[3] Convolution layer1.0.conv1 (+bn1, relu) %x.1 -> %input.5".
  std::string str() const;

  /// The graph the layers' nodes belong to (the segment as converted); kept alive with the
  /// network, and kept so that a stale engine can be rebuilt from it.
  std::shared_ptr<Graph> sourceGraph;

 private:
  std::vector<NetworkValue> values_;
  std::vector<Layer> layers_;
  std::vector<ValueId> inputs_, outputs_;
};

}  // namespace torchless::engine
