// OnnxCtx: building ONNX nodes, constants and initializers; shared converter helpers.
#include "convert/onnx/onnx_ctx.h"

#include "core/error.h"

#include <cstring>
#include <mutex>

namespace torchless::onnx_export {

int32_t onnxDataType(ScalarType t) {
  using TP = ::onnx::TensorProto;
  switch (t) {
    case ScalarType::Float: return TP::FLOAT;
    case ScalarType::Double: return TP::DOUBLE;
    case ScalarType::Half: return TP::FLOAT16;
    case ScalarType::BFloat16: return TP::BFLOAT16;
    case ScalarType::Long: return TP::INT64;
    case ScalarType::Int: return TP::INT32;
    case ScalarType::Short: return TP::INT16;
    case ScalarType::Char: return TP::INT8;
    case ScalarType::Byte: return TP::UINT8;
    case ScalarType::Bool: return TP::BOOL;
    case ScalarType::ComplexFloat: return TP::COMPLEX64;
    case ScalarType::ComplexDouble: return TP::COMPLEX128;
    default: throw Error(fmt::format("dtype {} has no ONNX equivalent", dtypeName(t)));
  }
}

::onnx::TensorProto toTensorProto(const Tensor& t, const std::string& name) {
  ::onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(onnxDataType(t.dtype()));
  for (int64_t s : t.sizes()) p.add_dims(s);
  Tensor c = t.contiguous();
  p.set_raw_data(std::string(static_cast<const char*>(c.rawData()), c.nbytes()));
  return p;
}

OnnxCtx::OnnxCtx(::onnx::GraphProto* graph, int opset)
    : main_(graph), current_(graph), opset_(opset) {}

std::string OnnxCtx::freshName(const std::string& hint) {
  std::string base = hint.empty() ? "v" : hint;
  for (char& c : base)
    if (c == ' ' || c == '%') c = '_';
  std::string name = base;
  size_t& n = nameCounts_[base];
  while (usedNames_.count(name)) name = fmt::format("{}_{}", base, ++n);
  usedNames_.insert(name);
  return name;
}

std::vector<std::string> OnnxCtx::opN(const std::string& opType,
                                      const std::vector<std::string>& inputs, size_t numOutputs,
                                      const std::vector<OnnxAttr>& attrs) {
  ::onnx::NodeProto* node = current_->add_node();
  node->set_op_type(opType);
  std::string hint = currentNode_ ? convert::nodeNameHint(*currentNode_) : std::string();
  node->set_name(freshName(hint.empty() ? opType : hint + "/" + opType));
  for (const auto& in : inputs) node->add_input(in);
  std::vector<std::string> outs;
  for (size_t i = 0; i < numOutputs; ++i) {
    outs.push_back(freshName(node->name() + (numOutputs > 1 ? fmt::format("_out{}", i) : "_out")));
    node->add_output(outs.back());
  }
  for (const auto& a : attrs) {
    ::onnx::AttributeProto* p = node->add_attribute();
    p->set_name(a.name);
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, int64_t>) {
            p->set_type(::onnx::AttributeProto::INT);
            p->set_i(v);
          } else if constexpr (std::is_same_v<V, float>) {
            p->set_type(::onnx::AttributeProto::FLOAT);
            p->set_f(v);
          } else if constexpr (std::is_same_v<V, std::string>) {
            p->set_type(::onnx::AttributeProto::STRING);
            p->set_s(v);
          } else if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
            p->set_type(::onnx::AttributeProto::INTS);
            for (int64_t x : v) p->add_ints(x);
          } else if constexpr (std::is_same_v<V, std::vector<float>>) {
            p->set_type(::onnx::AttributeProto::FLOATS);
            for (float x : v) p->add_floats(x);
          } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
            p->set_type(::onnx::AttributeProto::STRINGS);
            for (const auto& x : v) p->add_strings(x);
          } else if constexpr (std::is_same_v<V, ::onnx::GraphProto>) {
            p->set_type(::onnx::AttributeProto::GRAPH);
            *p->mutable_g() = v;
          } else {
            p->set_type(::onnx::AttributeProto::TENSOR);
            *p->mutable_t() = v;
          }
        },
        a.value);
  }
  return outs;
}

std::string OnnxCtx::initializer(const Tensor& t, const std::string& name) {
  const void* key = t.impl().get();
  if (auto it = initializerByTensor_.find(key); it != initializerByTensor_.end())
    return it->second.second;
  std::string n = freshName(name.empty() ? "const" : name);
  *main_->add_initializer() = toTensorProto(t, n);
  initializerByTensor_[key] = {t, n};
  return n;
}

std::string OnnxCtx::constInt64s(const std::vector<int64_t>& values) {
  return initializer(Tensor::fromVector(values, {static_cast<int64_t>(values.size())}));
}

std::string OnnxCtx::constScalar(double value, ScalarType dtype) {
  Tensor t;
  if (dtype == ScalarType::Bool)
    t = Tensor::scalarBool(value != 0);
  else if (isFloatingType(dtype))
    t = Tensor::scalar(value, ScalarType::Double).to(dtype);
  else
    t = Tensor::scalar(static_cast<int64_t>(value), ScalarType::Long).to(dtype);
  return initializer(t);
}

std::string OnnxCtx::castTo(const std::string& x, std::optional<ScalarType> from, ScalarType to) {
  if (from && *from == to) return x;
  return op("Cast", {x}, {attrI("to", onnxDataType(to))});
}

std::string OnnxCtx::materialize(const Value* v, const IValue& value) {
  if (value.isTensor()) return initializer(value.toTensor(), weightName(v));
  if (value.isInt()) return initializer(Tensor::scalar(value.toInt(), ScalarType::Long));
  if (value.isDouble())
    return initializer(Tensor::scalar(value.toDouble(), ScalarType::Double).to(ScalarType::Float));
  if (value.isBool()) return initializer(Tensor::scalarBool(value.toBool()));
  const bool floatList = v && v->type() && v->type()->kind() == TypeKind::ListType &&
                         v->type()->expect<ListType>().getElementType()->kind() ==
                             TypeKind::FloatType;  // (empty, it would pass for an int list)
  if (auto l = convert::detail::asIntList(value); l && value.isList() && !floatList)
    return constInt64s(*l);
  if (value.isList()) {
    std::vector<float> xs;
    for (const auto& e : value.toList()->list) {
      if (!e.isDouble() && !(floatList && e.isInt()))
        throw Error(fmt::format("cannot make an ONNX tensor of {}",
                                convert::detail::describeIValue(value)));
      xs.push_back(static_cast<float>(e.toScalarDouble()));
    }
    Tensor t = Tensor::fromVector(xs, {static_cast<int64_t>(xs.size())});
    return initializer(t);
  }
  throw Error(fmt::format("value %{} ({}) cannot be an ONNX tensor", v->debugName(),
                          convert::detail::describeIValue(value)));
}

bool OnnxCtx::isDynamicDim(const Value* v, int64_t d) const {
  if (!isDynamic(v)) return false;
  auto it = facts_.find(v);
  if (it == facts_.end() || it->second.dynamicDims.empty()) return true;
  return d < 0 || d >= static_cast<int64_t>(it->second.dynamicDims.size()) ||
         it->second.dynamicDims[d];
}

bool OnnxCtx::isComplex(const Value* v) const {
  if (complex_.count(v)) return true;
  auto it = facts_.find(v);
  return it != facts_.end() && it->second.dtype && isComplexType(*it->second.dtype);
}

std::optional<ScalarType> OnnxCtx::dtypeOf(const Value* v) const {
  // A quantized tensor is exported as the float tensor of its dequantized values (Note [QDQ
  // representation], quantized.cpp): float converters see float. A complex one as its real
  // view (Note [Complex values], spectral.cpp): its parts' type.
  auto exported = [](ScalarType t) {
    if (t == ScalarType::ComplexFloat) return ScalarType::Float;
    if (t == ScalarType::ComplexDouble) return ScalarType::Double;
    return isQuantizedType(t) ? ScalarType::Float : t;
  };
  if (auto it = facts_.find(v); it != facts_.end() && it->second.dtype)
    return exported(*it->second.dtype);
  if (isStatic(v)) {
    const IValue& x = staticValue(v);
    if (x.isTensor()) return exported(x.toTensor().dtype());
    if (x.isInt()) return ScalarType::Long;
    if (x.isDouble()) return ScalarType::Float;
    if (x.isBool()) return ScalarType::Bool;
  }
  if (v->type()) {
    if (const auto* t = v->type()->cast<TensorType>()) {
      auto d = t->scalarType();
      return d ? std::optional<ScalarType>(exported(*d)) : d;
    }
    if (v->type()->kind() == TypeKind::IntType) return ScalarType::Long;
    if (v->type()->kind() == TypeKind::BoolType) return ScalarType::Bool;
    if (v->type()->kind() == TypeKind::FloatType) return ScalarType::Float;
    // A list of numbers is a 1-d tensor (materialize): int64 for ints, float for floats.
    if (v->type()->kind() == TypeKind::ListType) {
      const TypeKind e = v->type()->expect<ListType>().getElementType()->kind();
      if (e == TypeKind::IntType) return ScalarType::Long;
      if (e == TypeKind::FloatType) return ScalarType::Float;
    }
  }
  return std::nullopt;
}

std::optional<std::vector<int64_t>> OnnxCtx::sizesOf(const Value* v) const {
  if (auto it = facts_.find(v); it != facts_.end() && it->second.sizes) return it->second.sizes;
  if (isStatic(v) && staticValue(v).isTensor()) return staticValue(v).toTensor().sizes();
  if (v->type())
    if (const auto* t = v->type()->cast<TensorType>(); t && t->sizes()) {
      std::vector<int64_t> out;
      for (const auto& s : *t->sizes()) {
        if (!s) return std::nullopt;
        out.push_back(*s);
      }
      return out;
    }
  return std::nullopt;
}

std::optional<int64_t> OnnxCtx::rankOf(const Value* v) const {
  if (auto s = sizesOf(v)) return static_cast<int64_t>(s->size());
  if (auto it = facts_.find(v); it != facts_.end() && it->second.rank) return it->second.rank;
  if (v->type())
    if (const auto* t = v->type()->cast<TensorType>(); t && t->dim())
      return static_cast<int64_t>(*t->dim());
  return std::nullopt;
}

std::vector<int64_t> OnnxCtx::expectSizes(const Node& n, const Value* v) const {
  auto s = sizesOf(v);
  if (!s)
    throw Error(fmt::format("{}: the sizes of %{} must be known for ONNX export (export with "
                            "example inputs that the graph runs on)",
                            n.kind().toQualString(), v->debugName()),
                convert::nodePlace(n));
  return *s;
}

int64_t OnnxCtx::expectRank(const Node& n, const Value* v) const {
  auto r = rankOf(v);
  if (!r)
    throw Error(fmt::format("{}: the rank of %{} must be known for ONNX export",
                            n.kind().toQualString(), v->debugName()),
                convert::nodePlace(n));
  return *r;
}

void OnnxCtx::withGraph(::onnx::GraphProto* g, const std::function<void()>& fn) {
  ::onnx::GraphProto* saved = current_;
  current_ = g;
  try {
    fn();
  } catch (...) {
    current_ = saved;
    throw;
  }
  current_ = saved;
}

// ---- shared helpers ---------------------------------------------------------------------------

int64_t wrapDim(int64_t dim, int64_t rank) {
  int64_t r = rank == 0 ? 1 : rank;
  TL_CHECK(dim >= -r && dim < r, "dim {} is out of range for rank {}", dim, rank);
  return dim < 0 ? dim + r : dim;
}

ScalarType dtypeOr(const OnnxCtx& ctx, const Value* v, ScalarType dflt) {
  auto d = ctx.dtypeOf(v);
  return d ? *d : dflt;
}

std::string unsqueeze(OnnxCtx& ctx, const std::string& x, const std::vector<int64_t>& axes) {
  return ctx.op("Unsqueeze", {x, ctx.constInt64s(axes)});
}

std::string intAsList(OnnxCtx& ctx, const convert::ArgValue<std::string>& a) {
  if (a.isIValue()) return ctx.constInt64s({a.unwrapToInt()});
  std::string t = ctx.castTo(a.unwrapToTensor(), ctx.dtypeOf(a.value()), ScalarType::Long);
  auto r = ctx.rankOf(a.value());
  return r && *r == 1 ? t : unsqueeze(ctx, t, {0});
}

std::string squeeze(OnnxCtx& ctx, const std::string& x, const std::vector<int64_t>& axes) {
  if (axes.empty()) return ctx.op("Squeeze", {x});
  return ctx.op("Squeeze", {x, ctx.constInt64s(axes)});
}

std::string reduce(OnnxCtx& ctx, const std::string& kind, const std::string& x,
                   const std::vector<int64_t>& axes, bool keepdims) {
  std::string opType = "Reduce" + kind;
  bool axesInput = kind == "Sum" ? ctx.opset() >= 13 : ctx.opset() >= 18;
  std::vector<OnnxAttr> attrs = {attrI("keepdims", keepdims ? 1 : 0)};
  if (axes.empty()) return ctx.op(opType, {x}, attrs);
  if (axesInput) return ctx.op(opType, {x, ctx.constInt64s(axes)}, attrs);
  attrs.push_back(attrIs("axes", axes));
  return ctx.op(opType, {x}, attrs);
}

std::string tensorOrScalar(OnnxCtx& ctx, const convert::ArgValue<std::string>& a, ScalarType to) {
  if (a.isIValue() && !a.unwrapToIValue().isTensor()) {
    IValue s = a.unwrapToScalar();
    return ctx.constScalar(s.toScalarDouble(), to);
  }
  return ctx.castTo(a.unwrapToTensor(), ctx.dtypeOf(a.value()), to);
}

std::string OnnxCtx::toSequence(const Value* v, ScalarType emptyDtype) {
  if (isSequence(v)) return toTensor(v);
  std::vector<std::string> xs;
  if (hasTensorList(v)) {
    xs = tensorList(v);
  } else if (isStatic(v) && staticValue(v).isList() && v->node()->kind() == prim::ListConstruct) {
    for (const Value* e : v->node()->inputs()) xs.push_back(toTensor(e));
  } else {
    throw Error(fmt::format("value %{} is not a list of tensors", v->debugName()));
  }
  std::string seq = xs.empty() ? op("SequenceEmpty", {}, {attrI("dtype", onnxDataType(emptyDtype))})
                               : op("SequenceConstruct", xs);
  return seq;
}

OnnxConverterRegistry& onnxConverters() {
  static OnnxConverterRegistry registry("onnx");
  static std::once_flag once;
  std::call_once(once, [] {
    registerElementwiseConverters(registry);
    registerReductionConverters(registry);
    registerShapeConverters(registry);
    registerLinalgConverters(registry);
    registerConvConverters(registry);
    registerPoolConverters(registry);
    registerNormConverters(registry);
    registerNnConverters(registry);
    registerRnnConverters(registry);
    registerScatterConverters(registry);
    registerQuantizedConverters(registry);
    registerSearchConverters(registry);
    registerLossConverters(registry);
    registerRandomConverters(registry);
    registerVisionConverters(registry);
    registerSpectralConverters(registry);
  });
  return registry;
}

}  // namespace torchless::onnx_export
