#pragma once
// ConversionCtx, Args, Weights: the contract between a conversion backend and its converters
// (Torch-TensorRT's core/conversion/{conversionctx,var,converters/Weights} adapted).
//
// Note [Static and backend values]
// While a graph is converted, each IR Value is one of
//   - a backend value: a tensor the backend computes at run time (an ONNX value name, an
//     engine layer output), set by the converter of the node that defines it;
//   - a static IValue: known at conversion time. Constants (prim::Constant, frozen parameters)
//     and everything derived from them or from known shapes (aten::size on a specialized
//     input, the int arithmetic of traced graphs) are static; the backend never sees them
//     unless a converter asks for one as a tensor, when the ctx materializes it once (an ONNX
//     initializer, named after the parameter when the name is known; see Weights);
//   - a list of backend tensors (prim::ListConstruct of tensors, for cat / stack).
// A value may be both static and materialized; it is never converted twice.
//
// Args gives a converter the node's inputs in schema order with typed, checked unwrapping:
//
//   bool convertLeakyRelu(OnnxCtx& ctx, const Node& n, Args<std::string>& args) {
//     std::string x = args[0].unwrapToTensor();
//     double slope = args[1].unwrapToDouble(0.01);           // the default when None
//     ...
//   }
//
// A failed unwrap throws torchless::Error naming the schema, the argument and where the node
// is used, e.g.
//   m.py:3:9: aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a): argument 'size' (1)
//   must be a constant int[], got a value computed at run time

#include "core/error.h"
#include "core/ivalue.h"
#include "core/tensor.h"
#include "ir/ir.h"
#include "ir/operator_registry.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace torchless::convert {

/// Where a node is used, for messages: its source place ("m.py:3:9"), else its scope
/// ("__module.layer1/__module.layer1.0.conv1"), else "graph node #N (kind)".
std::string nodePlace(const Node& n);

/// A short name for a node taken from its scope or source place, for backend node names
/// ("layer1.0.conv1", "m.py:3"); "" when the node has neither.
std::string nodeNameHint(const Node& n);

/// A constant tensor (a frozen parameter or buffer) with the name it had in the model
/// ("layer1.0.conv1.weight"; "" when unknown).
struct Weights {
  Tensor tensor;
  std::string name;

  Weights() = default;
  Weights(Tensor t, std::string n) : tensor(std::move(t)), name(std::move(n)) {}
  const std::vector<int64_t>& sizes() const { return tensor.sizes(); }
  ScalarType dtype() const { return tensor.dtype(); }
  int64_t numel() const { return tensor.numel(); }
  int64_t dim() const { return tensor.dim(); }
};

/// Values of one graph conversion, mapped to backend values `T` or to static IValues (see
/// Note [Static and backend values]). Backends derive from it and implement materialize().
template <typename T>
class ConversionCtx {
 public:
  virtual ~ConversionCtx() = default;

  bool hasTensor(const Value* v) const { return tensors_.count(v) > 0; }
  void setTensor(const Value* v, T t) { tensors_[v] = std::move(t); }
  bool isStatic(const Value* v) const { return statics_.count(v) > 0; }
  void setStatic(const Value* v, IValue iv) { statics_[v] = std::move(iv); }
  /// The static value of v; asserts that there is one.
  const IValue& staticValue(const Value* v) const {
    auto it = statics_.find(v);
    TL_INTERNAL_ASSERT(it != statics_.end(), "value %{} is not static", v->debugName());
    return it->second;
  }
  bool hasTensorList(const Value* v) const { return tensorLists_.count(v) > 0; }
  void setTensorList(const Value* v, std::vector<T> ts) { tensorLists_[v] = std::move(ts); }
  const std::vector<T>& tensorList(const Value* v) const {
    auto it = tensorLists_.find(v);
    TL_INTERNAL_ASSERT(it != tensorLists_.end(), "value %{} is not a tensor list", v->debugName());
    return it->second;
  }
  /// True when v has been given any form (backend, static, tensor list).
  bool isConverted(const Value* v) const { return hasTensor(v) || isStatic(v) || hasTensorList(v); }

  /// The backend tensor of v: the one set, else its static value materialized (once).
  /// Throws torchless::Error when v has neither.
  const T& toTensor(const Value* v) {
    if (auto it = tensors_.find(v); it != tensors_.end()) return it->second;
    auto s = statics_.find(v);
    if (s == statics_.end())
      throw Error(fmt::format("value %{} has not been converted", v->debugName()));
    T t = materialize(v, s->second);
    return tensors_.emplace(v, std::move(t)).first->second;
  }

  /// Names constant tensors after the model's parameters ("fc.weight").
  void setWeightName(const Value* v, std::string name) { weightNames_[v] = std::move(name); }
  /// The parameter name of a constant, or "".
  std::string weightName(const Value* v) const {
    auto it = weightNames_.find(v);
    return it == weightNames_.end() ? std::string() : it->second;
  }
  /// The static tensor of v with its name. Throws torchless::Error when v is not a static tensor.
  Weights weights(const Value* v) const {
    if (!isStatic(v) || !staticValue(v).isTensor())
      throw Error(fmt::format("value %{} is not a constant tensor", v->debugName()));
    return Weights(staticValue(v).toTensor(), weightName(v));
  }

 protected:
  /// Turns a static value into a backend tensor (an ONNX initializer or Constant).
  virtual T materialize(const Value* v, const IValue& value) = 0;

 private:
  std::unordered_map<const Value*, T> tensors_;
  std::unordered_map<const Value*, IValue> statics_;
  std::unordered_map<const Value*, std::vector<T>> tensorLists_;
  std::unordered_map<const Value*, std::string> weightNames_;
};

namespace detail {
/// Throws the unwrap error: "<place>: <schema>: argument 'name' (i) must be <what>, got <got>".
[[noreturn]] void throwArgError(const Node& node, const OpInfo* op, size_t index,
                                const std::string& what, const std::string& got);
/// Describes a static value for messages ("int 3", "None", "Tensor [2, 3]").
std::string describeIValue(const IValue& v);
/// A static value as a Scalar IValue (int, double, bool; a one-element tensor's item).
std::optional<IValue> asScalar(const IValue& v);
/// A static value as int list (a list of ints, or a single int, or a 1-d integer tensor).
std::optional<std::vector<int64_t>> asIntList(const IValue& v);
}  // namespace detail

/// One input of a node, seen through its schema argument (see Args).
template <typename T>
class ArgValue {
 public:
  ArgValue(ConversionCtx<T>& ctx, const Node& node, const OpInfo* op, size_t index)
      : ctx_(&ctx), node_(&node), op_(op), index_(index) {}

  /// The IR value.
  const Value* value() const { return node_->input(index_); }
  /// The schema argument (null for schema-less nodes and vararg tails).
  const Argument* argument() const {
    if (!op_ || index_ >= op_->schema.arguments().size()) return nullptr;
    return &op_->schema.arguments()[index_];
  }
  /// Known at conversion time (see Note [Static and backend values]).
  bool isIValue() const { return ctx_->isStatic(value()); }
  /// A backend tensor is already mapped to it.
  bool isTensor() const { return ctx_->hasTensor(value()); }
  bool isTensorList() const { return ctx_->hasTensorList(value()); }
  bool isNone() const { return isIValue() && ctx_->staticValue(value()).isNone(); }

  /// The static value; throws when it is computed at run time.
  const IValue& unwrapToIValue() const {
    if (!isIValue()) fail("a constant", "a value computed at run time");
    return ctx_->staticValue(value());
  }
  int64_t unwrapToInt() const {
    const IValue& v = unwrapToIValue();
    if (v.isInt()) return v.toInt();
    if (v.isBool()) return v.toBool() ? 1 : 0;
    if (auto s = detail::asScalar(v); s && s->isInt()) return s->toInt();
    fail("an int", detail::describeIValue(v));
  }
  /// As unwrapToInt; None gives `dflt`.
  int64_t unwrapToInt(int64_t dflt) const { return isNone() ? dflt : unwrapToInt(); }
  double unwrapToDouble() const {
    const IValue& v = unwrapToIValue();
    if (auto s = detail::asScalar(v); s && !s->isComplexDouble()) return s->toScalarDouble();
    fail("a float", detail::describeIValue(v));
  }
  double unwrapToDouble(double dflt) const { return isNone() ? dflt : unwrapToDouble(); }
  bool unwrapToBool() const {
    const IValue& v = unwrapToIValue();
    if (v.isBool()) return v.toBool();
    if (v.isInt()) return v.toInt() != 0;
    fail("a bool", detail::describeIValue(v));
  }
  bool unwrapToBool(bool dflt) const { return isNone() ? dflt : unwrapToBool(); }
  /// int[] (an int is broadcast by callers that want it; a single int gives [int]).
  std::vector<int64_t> unwrapToIntList() const {
    const IValue& v = unwrapToIValue();
    if (auto l = detail::asIntList(v)) return *l;
    fail("an int[]", detail::describeIValue(v));
  }
  std::vector<int64_t> unwrapToIntList(std::vector<int64_t> dflt) const {
    return isNone() ? std::move(dflt) : unwrapToIntList();
  }
  std::vector<double> unwrapToDoubleList() const {
    const IValue& v = unwrapToIValue();
    if (v.isList()) {
      std::vector<double> out;
      for (const auto& e : v.toList()->list) {
        auto s = detail::asScalar(e);
        if (!s || s->isComplexDouble()) fail("a float[]", detail::describeIValue(v));
        out.push_back(s->toScalarDouble());
      }
      return out;
    }
    fail("a float[]", detail::describeIValue(v));
  }
  /// A Scalar: int, float or bool (a static one-element tensor gives its item).
  IValue unwrapToScalar() const {
    const IValue& v = unwrapToIValue();
    if (auto s = detail::asScalar(v)) return *s;
    fail("a Scalar", detail::describeIValue(v));
  }
  std::string unwrapToString() const {
    const IValue& v = unwrapToIValue();
    if (v.isString()) return v.toStringRef();
    fail("a str", detail::describeIValue(v));
  }
  /// A constant tensor with its parameter name.
  Weights unwrapToWeights() const {
    const IValue& v = unwrapToIValue();
    if (!v.isTensor()) fail("a constant Tensor", detail::describeIValue(v));
    return ctx_->weights(value());
  }
  /// The backend tensor (a static value is materialized).
  T unwrapToTensor() const {
    if (isNone()) fail("a Tensor", "None");
    if (!isTensor() && !isIValue()) fail("a Tensor", "a value that was not converted");
    return ctx_->toTensor(value());
  }
  /// nullopt for None.
  std::optional<T> unwrapToOptionalTensor() const {
    if (isNone()) return std::nullopt;
    return unwrapToTensor();
  }
  /// The tensors of a Tensor[] (a static list is materialized element by element).
  std::vector<T> unwrapToTensorList() const {
    if (isTensorList()) return ctx_->tensorList(value());
    if (isIValue() && ctx_->staticValue(value()).isList()) {
      const Node* def = value()->node();
      if (def->kind() == prim::ListConstruct) {
        std::vector<T> out;
        for (const Value* in : def->inputs()) out.push_back(ctx_->toTensor(in));
        return out;
      }
    }
    fail("a Tensor[]", isIValue() ? detail::describeIValue(ctx_->staticValue(value()))
                                  : "a value computed at run time");
  }

  /// Throws the argument error: "... argument 'name' (i) must be <what>, got <got>".
  [[noreturn]] void fail(const std::string& what, const std::string& got) const {
    detail::throwArgError(*node_, op_, index_, what, got);
  }

 private:
  ConversionCtx<T>* ctx_;
  const Node* node_;
  const OpInfo* op_;
  size_t index_;
};

/// A node's inputs in schema order (in the IR every argument is explicit and positional).
template <typename T>
class Args {
 public:
  Args(ConversionCtx<T>& ctx, const Node& node, const OpInfo* op) : node_(&node), op_(op) {
    for (size_t i = 0; i < node.inputs().size(); ++i) args_.emplace_back(ctx, node, op, i);
  }
  size_t size() const { return args_.size(); }
  /// Argument i; throws torchless::Error when the node has fewer inputs.
  const ArgValue<T>& operator[](size_t i) const {
    if (i >= args_.size())
      detail::throwArgError(*node_, op_, i, "present", fmt::format("{} inputs", args_.size()));
    return args_[i];
  }
  /// The argument called `name` in the schema; throws when the schema has none.
  const ArgValue<T>& operator[](std::string_view name) const {
    if (op_)
      if (auto i = op_->schema.argumentIndexWithName(name)) return (*this)[*i];
    throw Error(
        fmt::format("{}: no argument '{}'", op_ ? op_->key : node_->kind().toQualString(), name),
        nodePlace(*node_));
  }
  const Node& node() const { return *node_; }
  const OpInfo* op() const { return op_; }

 private:
  const Node* node_;
  const OpInfo* op_;
  std::vector<ArgValue<T>> args_;
};

}  // namespace torchless::convert
