#pragma once
// The engine backend's conversion context and converter registry (Torch-TensorRT's
// core/conversion on oneDNN). Converters follow the same contract as the ONNX backend's
// (convert/conversion_ctx.h): they receive the node and its Args in schema order, read
// static arguments with unwrapTo*(), and map each output to a network value or a static
// IValue:
//
//   // aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor
//   void convertLinear(EngineCtx& ctx, const Node& n, EngineArgs& args) {
//     Layer l = ctx.layer(n, LayerKind::MatMul);
//     l.inputs = {args[0].unwrapToTensor()};
//     l.weight = args[1].unwrapToWeights().tensor;      // throws unless the weight is constant
//     ...
//     ctx.addLayer(std::move(l), n);                     // outputs named after n's outputs
//   }
//
// A converter that cannot take this particular node (a weight computed at run time, a
// string padding) calls ctx.addPlugin(n, args): the node then runs as a plugin layer (its
// CPU kernel) inside the engine.

#include "convert/conversion_ctx.h"
#include "convert/converter_registry.h"
#include "convert/engine/network.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace torchless::engine {

class EngineCtx;
using EngineArgs = convert::Args<ValueId>;
/// An engine converter (see the header comment).
using EngineConverter = std::function<void(EngineCtx& ctx, const Node& node, EngineArgs& args)>;
using EngineConverterRegistry = convert::ConverterRegistry<EngineConverter>;

/// The process-wide engine converter registry, filled once by registerEngineConverters.
/// Throws torchless::Error at first use when two converters claim one schema.
const EngineConverterRegistry& engineConverters();

/// Fills `r`: native converters (converters.cpp) first, then plugin converters for every other
/// op-table entry whose kernel the engine can run (registerEnginePlugins).
void registerEngineConverters(EngineConverterRegistry& r);
void registerEngineNativeConverters(EngineConverterRegistry& r);
/// quantized::conv*d(_relu) / linear(_relu) as int8 Convolution / MatMul layers, every other
/// quantized:: op with a kernel as a plugin layer (quantized.cpp).
void registerEngineQuantizedConverters(EngineConverterRegistry& r);
/// Plugin and shape converters for every op with a kernel that is pure and whose output sizes
/// follow from its input sizes (not nonzero, unique, masked_select ...), and for the prim nodes
/// of lists and tuples. Skips schemas that already have a converter.
void registerEnginePlugins(EngineConverterRegistry& r);

/// Values of one segment's conversion into a NetworkDefinition.
class EngineCtx : public convert::ConversionCtx<ValueId> {
 public:
  explicit EngineCtx(NetworkDefinition& net) : net_(net) {}

  NetworkDefinition& network() { return net_; }

  /// A layer of `kind` named after `n` (its scope, else its source place, else the kind and
  /// a number), with n's place for messages.
  Layer layer(const Node& n, LayerKind kind);
  /// Adds `l`; when l.outputs is empty, creates one network value per output of `n` (named
  /// after them, kind `outKind`) and maps n's outputs to them. Returns the added layer.
  Layer& addLayer(Layer l, const Node& n, ValueKind outKind = ValueKind::Tensor);
  /// Adds `n` as a plugin layer (its CPU kernel at run time) or, when every non-static input
  /// is a shape value or it only reads tensor sizes, as a shape layer.
  void addPlugin(const Node& n, EngineArgs& args);
  /// A fresh network value for IR value `v`, mapped to it.
  ValueId newValue(const Value* v, ValueKind kind);
  /// True when the value is evaluated per input signature (Note [Engine values]).
  bool isShapeValue(ValueId id) const {
    return net_.values()[static_cast<size_t>(id)].kind == ValueKind::Shape;
  }

 protected:
  /// A static tensor (or number) becomes a Constant layer.
  ValueId materialize(const Value* v, const IValue& value) override;

 private:
  NetworkDefinition& net_;
  size_t unnamed_ = 0;
};

/// The evaluator: when `n` is pure, has a kernel and every input has a static value
/// (`staticOf` returns it, or null), runs the kernel now and returns the outputs; nullopt
/// otherwise. The converters' driver and engine records (engine_record.cpp) both use it, so a
/// record's static values are exactly those its converters saw.
std::optional<std::vector<IValue>> evaluateStatically(
    const Node& n, const OpInfo* op, const std::function<const IValue*(const Value*)>& staticOf);

/// Converts `graph` (a segment: every node has an engine converter or only static inputs) into
/// a network whose inputs and outputs are the graph's. The network keeps `graph`
/// (NetworkDefinition::sourceGraph). Throws torchless::Error naming the node that fails.
NetworkDefinition convertToNetwork(std::shared_ptr<Graph> graph);

/// True for ops that read a tensor's values into numbers (int(t), t.item(), t.tolist(),
/// torch.equal), not only its metadata (sizes, dtype, device, flags): the partition lets an
/// engine take one only on a tensor computed from sizes (a traced `int(x.size(0) // 2)`).
/// Elsewhere a number an engine computed would be fixed per input signature wherever it
/// shapes a later value (`x[:, :int(lengths.max())]`, then `y.size(1)`, was stale on the next
/// call); in the interpreter it enters the engine as an input, and plans are keyed by it.
bool readsValuesIntoNumbers(const OpInfo& op);

/// True when the engine can take `node`: it has a converter, or it is a constant, or it is a
/// shape check (isShapeCheck).
bool isConvertible(const Node& node, const OpInfo* op);

/// A prim::If with no outputs whose one block only raises (prim::RaiseException, with the
/// nodes that build its message) and whose other block is empty: the checks PyTorch's
/// functional code makes (`if input.dim() != 4: raise ValueError(...)`). When its condition
/// is a shape value the engine evaluates it once per input signature (a Shape layer, op
/// "assert"), and raises the message there.
bool isShapeCheck(const Node& node);

}  // namespace torchless::engine
