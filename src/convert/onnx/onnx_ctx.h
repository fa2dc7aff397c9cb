#pragma once
// The ONNX backend's conversion context: a ConversionCtx whose backend values are ONNX value
// names, plus the builder converters use to add nodes, constants and initializers to the
// model being built, and what the preparation learned about each value (dtype, sizes).
//
// Converters (elementwise.cpp, reduction.cpp, ...) follow one contract:
//
//   // aten::relu -> Relu (https://onnx.ai/onnx/operators/onnx__Relu.html)
//   void convertRelu(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
//     ctx.setOutput(n, 0, ctx.op("Relu", {args[0].unwrapToTensor()}));
//   }
//
// ctx.op() names the new node after the IR node being converted (its scope or source place).

#include "convert/conversion_ctx.h"
#include "convert/converter_registry.h"
#include "convert/onnx/onnx_proto.h"
#include "core/scalar_type.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

namespace torchless::onnx_export {

/// What the preparation knows about one IR value (see prepare.h).
struct ValueFacts {
  /// For tensors: dtype and sizes observed on the example inputs.
  std::optional<ScalarType> dtype;
  std::optional<std::vector<int64_t>> sizes;
  /// Dims whose size follows a dynamic axis of some input.
  std::vector<bool> dynamicDims;
  /// The rank when the sizes are not known (a loop-carried tensor: its initial value's rank).
  /// For a list of tensors, dtype, rank and sizes describe its elements when they all share
  /// them (unbind's, broadcast_tensors': what an element read at run time, SequenceAt, is).
  std::optional<int64_t> rank;
  /// For tensors: the strides and storage offset the example run saw (a view's layout in its
  /// storage: as_strided reads the storage, not the view's elements in order).
  std::optional<std::vector<int64_t>> strides;
  int64_t storageOffset = 0;
};

/// One ONNX node attribute.
struct OnnxAttr {
  std::string name;
  std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
               std::vector<std::string>, ::onnx::GraphProto, ::onnx::TensorProto>
      value;
};
/// Shorthands: attrI("axis", 1), attrIs("perm", {0, 2, 1}), attrF("alpha", 0.1f) ...
inline OnnxAttr attrI(std::string n, int64_t v) { return {std::move(n), v}; }
inline OnnxAttr attrF(std::string n, double v) { return {std::move(n), static_cast<float>(v)}; }
inline OnnxAttr attrS(std::string n, std::string v) { return {std::move(n), std::move(v)}; }
inline OnnxAttr attrIs(std::string n, std::vector<int64_t> v) {
  return {std::move(n), std::move(v)};
}
inline OnnxAttr attrFs(std::string n, std::vector<float> v) { return {std::move(n), std::move(v)}; }
inline OnnxAttr attrG(std::string n, ::onnx::GraphProto g) { return {std::move(n), std::move(g)}; }
inline OnnxAttr attrT(std::string n, ::onnx::TensorProto t) { return {std::move(n), std::move(t)}; }

/// ONNX TensorProto::DataType of a ScalarType; throws torchless::Error for types ONNX lacks.
int32_t onnxDataType(ScalarType t);
/// A TensorProto (raw data, C order) of `t`, named `name`.
::onnx::TensorProto toTensorProto(const Tensor& t, const std::string& name);

class OnnxCtx : public convert::ConversionCtx<std::string> {
 public:
  /// Builds into `graph` (the main graph of the model) for `opset`.
  OnnxCtx(::onnx::GraphProto* graph, int opset);

  int opset() const { return opset_; }
  /// ExportOptions::qlinearOps: quantized convs / linears as QLinearConv.
  bool qlinearOps() const { return qlinearOps_; }
  void setQLinearOps(bool on) { qlinearOps_ = on; }

  // ---- building -------------------------------------------------------------------------

  /// Adds node `opType` with `inputs` ("" for an omitted optional input) and `attrs`; returns
  /// its `numOutputs` fresh output names. The node is named after the IR node being converted.
  std::vector<std::string> opN(const std::string& opType, const std::vector<std::string>& inputs,
                               size_t numOutputs, const std::vector<OnnxAttr>& attrs = {});
  /// As opN with one output.
  std::string op(const std::string& opType, const std::vector<std::string>& inputs,
                 const std::vector<OnnxAttr>& attrs = {}) {
    return opN(opType, inputs, 1, attrs)[0];
  }
  /// 1-d int64 constant (shapes, axes, pads).
  std::string constInt64s(const std::vector<int64_t>& values);
  /// 0-d constant of `dtype` (float types, int64, bool).
  std::string constScalar(double value, ScalarType dtype);
  /// An initializer holding `t`, named `name` (made unique) or "const_N" when empty; the same
  /// tensor object given twice yields the same initializer.
  std::string initializer(const Tensor& t, const std::string& name = "");
  /// Casts `x` to `to` unless its known dtype already is `to`.
  std::string castTo(const std::string& x, std::optional<ScalarType> from, ScalarType to);
  /// A fresh value name based on `hint`.
  std::string freshName(const std::string& hint);

  /// Maps output i of n to `name` (and records its dtype when known).
  void setOutput(const Node& n, size_t i, const std::string& name) { setTensor(n.output(i), name); }

  // ---- facts ------------------------------------------------------------------------------

  void setFacts(const Value* v, ValueFacts f) { facts_[v] = std::move(f); }
  /// What the example run observed of v, or null.
  const ValueFacts* factsOf(const Value* v) const {
    auto it = facts_.find(v);
    return it == facts_.end() ? nullptr : &it->second;
  }
  /// The dtype of a tensor value (observed, else from its IR type), or nullopt.
  std::optional<ScalarType> dtypeOf(const Value* v) const;
  /// The sizes of a tensor value when all are known, else nullopt.
  std::optional<std::vector<int64_t>> sizesOf(const Value* v) const;
  /// The rank of a tensor value, or nullopt.
  std::optional<int64_t> rankOf(const Value* v) const;
  /// sizesOf, or an error naming the node when they are unknown.
  std::vector<int64_t> expectSizes(const Node& n, const Value* v) const;
  int64_t expectRank(const Node& n, const Value* v) const;
  /// Marks a value whose static value must not be folded (it follows a dynamic axis).
  void markDynamic(const Value* v) { dynamic_.insert(v); }
  bool isDynamic(const Value* v) const { return dynamic_.count(v) > 0; }
  /// Whether dim `d` (>= 0) of tensor v follows a dynamic axis: by its facts, else (facts
  /// without dims) whenever v is dynamic.
  bool isDynamicDim(const Value* v, int64_t d) const;

  /// Note [Complex values] (spectral.cpp): a complex tensor is exported as its real view, a
  /// float tensor with a trailing axis of 2. markComplex tells that the backend value of v is
  /// one; isComplex is true for those and for values the example run saw complex.
  void markComplex(const Value* v) { complex_.insert(v); }
  bool isComplex(const Value* v) const;

  // ---- sequences ---------------------------------------------------------------------------

  /// Marks a backend value as an ONNX sequence of tensors (a list grown at run time).
  void markSequence(const Value* v) { sequences_.insert(v); }
  bool isSequence(const Value* v) const { return sequences_.count(v) > 0; }
  /// The list value v as an ONNX sequence: itself when it is one, else SequenceConstruct of its
  /// tensors (SequenceEmpty of `emptyDtype` for an empty list). Throws when v is not a list.
  std::string toSequence(const Value* v, ScalarType emptyDtype = ScalarType::Float);

  /// Note [List writes] (prepare.cpp): a write to list `list` (insert, pop, _set_item,
  /// Delete) leaves sequence `seq`; the aten::list.t copy after it takes it (nullopt when no
  /// write left one).
  void setListAfterWrite(const Value* list, std::string seq) {
    listAfterWrite_[list] = std::move(seq);
  }
  /// The same for a write whose new list is known at export time (a list of numbers).
  void setStaticListAfterWrite(const Value* list, IValue value) {
    staticListAfterWrite_[list] = std::move(value);
  }
  std::optional<IValue> takeStaticListAfterWrite(const Value* list) {
    auto it = staticListAfterWrite_.find(list);
    if (it == staticListAfterWrite_.end()) return std::nullopt;
    IValue v = std::move(it->second);
    staticListAfterWrite_.erase(it);
    return v;
  }
  bool hasListAfterWrite(const Value* list) const {
    return listAfterWrite_.count(list) > 0 || staticListAfterWrite_.count(list) > 0;
  }
  std::optional<std::string> takeListAfterWrite(const Value* list) {
    auto it = listAfterWrite_.find(list);
    if (it == listAfterWrite_.end()) return std::nullopt;
    std::string seq = std::move(it->second);
    listAfterWrite_.erase(it);
    return seq;
  }

  // ---- subgraphs (prim::If / prim::Loop bodies) ------------------------------------------

  /// Builds into `g` while `fn` runs (nodes, not initializers: those stay in the main graph).
  void withGraph(::onnx::GraphProto* g, const std::function<void()>& fn);
  ::onnx::GraphProto* currentGraph() { return current_; }
  ::onnx::GraphProto* mainGraph() { return main_; }

  /// The IR node being converted (names ONNX nodes); set by the driver.
  void setCurrentNode(const Node* n) { currentNode_ = n; }
  const Node* currentNode() const { return currentNode_; }

 protected:
  std::string materialize(const Value* v, const IValue& value) override;

 private:
  ::onnx::GraphProto* main_;
  ::onnx::GraphProto* current_;
  int opset_;
  bool qlinearOps_ = false;
  const Node* currentNode_ = nullptr;
  std::unordered_map<std::string, size_t> nameCounts_;
  std::unordered_set<std::string> usedNames_;
  // Keyed by the tensor's impl; the Tensor is kept so that the address is not reused.
  std::unordered_map<const void*, std::pair<Tensor, std::string>> initializerByTensor_;
  std::unordered_map<const Value*, ValueFacts> facts_;
  std::unordered_set<const Value*> dynamic_;
  std::unordered_set<const Value*> sequences_;
  std::unordered_set<const Value*> complex_;
  std::unordered_map<const Value*, std::string> listAfterWrite_;
  std::unordered_map<const Value*, IValue> staticListAfterWrite_;
};

using OnnxArgs = convert::Args<std::string>;
/// A converter: maps n's outputs (setOutput / setStatic / setTensorList) from its inputs.
using OnnxConverter = std::function<void(OnnxCtx& ctx, const Node& n, OnnxArgs& args)>;
using OnnxConverterRegistry = convert::ConverterRegistry<OnnxConverter>;

/// The ONNX backend's registry, filled once on first use by the register functions below
/// (and by user registrations through convert/onnx/onnx_export.h).
OnnxConverterRegistry& onnxConverters();

// Registration functions, one per op family (files named as src/ops/).
void registerElementwiseConverters(OnnxConverterRegistry& r);
void registerReductionConverters(OnnxConverterRegistry& r);
void registerShapeConverters(OnnxConverterRegistry& r);
void registerLinalgConverters(OnnxConverterRegistry& r);
void registerConvConverters(OnnxConverterRegistry& r);
void registerPoolConverters(OnnxConverterRegistry& r);
void registerNormConverters(OnnxConverterRegistry& r);
void registerNnConverters(OnnxConverterRegistry& r);
void registerRnnConverters(OnnxConverterRegistry& r);
void registerScatterConverters(OnnxConverterRegistry& r);
void registerQuantizedConverters(OnnxConverterRegistry& r);  // quantized.cpp (QDQ)
void registerSearchConverters(OnnxConverterRegistry& r);
void registerLossConverters(OnnxConverterRegistry& r);      // loss.cpp
void registerRandomConverters(OnnxConverterRegistry& r);    // random.cpp
void registerVisionConverters(OnnxConverterRegistry& r);    // vision.cpp (torchvision::)
void registerSpectralConverters(OnnxConverterRegistry& r);  // spectral.cpp (stft)

/// The converter for a node of `overloadKey` ("aten::abs") with a complex input (Note [Complex
/// values] in spectral.cpp), or null when there is none; complexOpsList() names those ops.
const OnnxConverter* complexConverter(std::string_view overloadKey);
std::string complexOpsList();

// ---- helpers shared by converter files ----------------------------------------------------

/// Normalizes a possibly negative dim for rank `rank`.
int64_t wrapDim(int64_t dim, int64_t rank);
/// The input's dtype, else Float (most models are fp32).
ScalarType dtypeOr(const OnnxCtx& ctx, const Value* v, ScalarType dflt = ScalarType::Float);
/// Unsqueeze(x, axes) in the opset's form (axes input from 13).
std::string unsqueeze(OnnxCtx& ctx, const std::string& x, const std::vector<int64_t>& axes);
std::string squeeze(OnnxCtx& ctx, const std::string& x, const std::vector<int64_t>& axes);
/// An int argument (known, or computed at run time) as a 1-d int64 tensor of one element.
std::string intAsList(OnnxCtx& ctx, const convert::ArgValue<std::string>& a);
/// Reduce<kind>(x, axes, keepdims) in the opset's form: axes as input for ReduceSum from 13
/// and for the others from 18, as attribute before. Empty axes reduce everything.
std::string reduce(OnnxCtx& ctx, const std::string& kind, const std::string& x,
                   const std::vector<int64_t>& axes, bool keepdims);
/// An input of n that is a Tensor or a Scalar, as an ONNX value of dtype `to`.
std::string tensorOrScalar(OnnxCtx& ctx, const convert::ArgValue<std::string>& a, ScalarType to);

}  // namespace torchless::onnx_export
