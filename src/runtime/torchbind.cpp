// TorchBind classes rebuilt from their pickled state; see Note [TorchBind objects] in
// runtime/torchbind.h. State layouts follow PyTorch's def_pickle registrations:
// aten/src/ATen/native/xnnpack/{OpContext.h,RegisterOpContextClass.cpp},
// aten/src/ATen/native/quantized/cpu/{conv_serialization.h,fbgemm_utils.cpp} and
// aten/src/ATen/native/RNN.cpp (CellParamsBase).
#include "runtime/torchbind.h"

#include "core/error.h"

#include <map>
#include <mutex>

namespace torchless::torchbind {

namespace {

enum class Kind {
  Tensor,
  OptTensor,
  IntList,
  Int,
  Bool,
  OptFloat,
  Str,
  TensorList,
  FloatList,
  PackedList
};

struct Field {
  const char* name;
  Kind kind;
};

struct ClassDef {
  const char* qualname;
  std::vector<Field> fields;
  /// Methods as TorchScript source; `{Q}` stands for the qualified class name.
  const char* methods;
};

constexpr const char* kLinearPacked = "__torch__.torch.classes.quantized.LinearPackedParamsBase";

const char* kConvPackedMethods = R"(  def unpack(self: {Q}) -> Tuple[Tensor, Optional[Tensor]]:
    return (self.weight_, self.bias_)
  def weight(self: {Q}) -> Tensor:
    return self.weight_
  def bias(self: {Q}) -> Optional[Tensor]:
    return self.bias_
  def stride(self: {Q}) -> List[int]:
    return self.stride_
  def padding(self: {Q}) -> List[int]:
    return self.padding_
  def output_padding(self: {Q}) -> List[int]:
    return self.output_padding_
  def dilation(self: {Q}) -> List[int]:
    return self.dilation_
  def groups(self: {Q}) -> int:
    return self.groups_
  def transpose(self: {Q}) -> bool:
    return self.transpose_
)";

const std::vector<ClassDef>& classDefs() {
  static const std::vector<ClassDef> defs = {
      {"__torch__.torch.classes.xnnpack.Conv2dOpContext",
       {{"weight", Kind::Tensor},
        {"bias", Kind::OptTensor},
        {"stride", Kind::IntList},
        {"padding", Kind::IntList},
        {"dilation", Kind::IntList},
        {"groups", Kind::Int},
        {"output_min", Kind::OptFloat},
        {"output_max", Kind::OptFloat}},
       ""},
      {"__torch__.torch.classes.xnnpack.TransposeConv2dOpContext",
       {{"weight", Kind::Tensor},
        {"bias", Kind::OptTensor},
        {"stride", Kind::IntList},
        {"padding", Kind::IntList},
        {"output_padding", Kind::IntList},
        {"dilation", Kind::IntList},
        {"groups", Kind::Int},
        {"output_min", Kind::OptFloat},
        {"output_max", Kind::OptFloat}},
       ""},
      {"__torch__.torch.classes.xnnpack.LinearOpContext",
       {{"weight", Kind::Tensor},
        {"bias", Kind::OptTensor},
        {"output_min", Kind::OptFloat},
        {"output_max", Kind::OptFloat}},
       ""},
      {"__torch__.torch.classes.quantized.Conv2dPackedParamsBase",
       {{"weight_", Kind::Tensor},
        {"bias_", Kind::OptTensor},
        {"stride_", Kind::IntList},
        {"padding_", Kind::IntList},
        {"output_padding_", Kind::IntList},
        {"dilation_", Kind::IntList},
        {"groups_", Kind::Int},
        {"transpose_", Kind::Bool}},
       kConvPackedMethods},
      {"__torch__.torch.classes.quantized.Conv3dPackedParamsBase",
       {{"weight_", Kind::Tensor},
        {"bias_", Kind::OptTensor},
        {"stride_", Kind::IntList},
        {"padding_", Kind::IntList},
        {"output_padding_", Kind::IntList},
        {"dilation_", Kind::IntList},
        {"groups_", Kind::Int},
        {"transpose_", Kind::Bool}},
       kConvPackedMethods},
      {kLinearPacked,
       {{"weight_", Kind::Tensor}, {"bias_", Kind::OptTensor}},
       R"(  def unpack(self: {Q}) -> Tuple[Tensor, Optional[Tensor]]:
    return (self.weight_, self.bias_)
  def bias(self: {Q}) -> Optional[Tensor]:
    return self.bias_
)"},
      // A compiled engine (convert/engine/engine_record.h): its record, written by torchless
      // compile. State: (version, network, graph, weights, profiles) as the slots.
      {"__torch__.torch.classes.torchless.Engine",
       {{"version", Kind::Int},
        {"network", Kind::Str},
        {"graph", Kind::Str},
        {"weights", Kind::TensorList},
        {"profiles", Kind::Str}},
       ""},
      {"__torch__.torch.classes.rnn.CellParamsBase",
       {{"type_", Kind::Str},
        {"tensors_", Kind::TensorList},
        {"doubles_", Kind::FloatList},
        {"longs_", Kind::IntList},
        {"packed_", Kind::PackedList}},
       ""},
  };
  return defs;
}

const ClassDef* findDef(std::string_view qualname) {
  for (const auto& d : classDefs())
    if (qualname == d.qualname) return &d;
  return nullptr;
}

const char* annotation(Kind k) {
  switch (k) {
    case Kind::Tensor: return "Tensor";
    case Kind::OptTensor: return "Optional[Tensor]";
    case Kind::IntList: return "List[int]";
    case Kind::Int: return "int";
    case Kind::Bool: return "bool";
    case Kind::OptFloat: return "Optional[float]";
    case Kind::Str: return "str";
    case Kind::TensorList: return "List[Tensor]";
    case Kind::FloatList: return "List[float]";
    case Kind::PackedList: return "List[__torch__.torch.classes.quantized.LinearPackedParamsBase]";
  }
  return "";
}

TypePtr typeOf(Kind k) {
  switch (k) {
    case Kind::Tensor: return TensorType::get();
    case Kind::OptTensor: return OptionalType::ofTensor();
    case Kind::IntList: return ListType::ofInts();
    case Kind::Int: return IntType::get();
    case Kind::Bool: return BoolType::get();
    case Kind::OptFloat: return OptionalType::create(FloatType::get());
    case Kind::Str: return StringType::get();
    case Kind::TensorList: return ListType::ofTensors();
    case Kind::FloatList: return ListType::ofFloats();
    case Kind::PackedList: return ListType::create(classType(kLinearPacked));
  }
  return nullptr;
}

[[noreturn]] void badField(std::string_view cls, const char* field, Kind k, const IValue& v) {
  throw Error(fmt::format("TorchBind state of '{}': field '{}' must be {}, got {}", cls, field,
                          annotation(k), v.tagName()));
}

/// Checks and normalizes one state value for a slot of kind `k`.
IValue convertField(std::string_view cls, const Field& f, const IValue& v) {
  auto listOf = [&](const TypePtr& elem, auto&& check) -> IValue {
    if (!v.isList()) badField(cls, f.name, f.kind, v);
    std::vector<IValue> out;
    for (const IValue& e : v.toList()->list) {
      if (!check(e)) badField(cls, f.name, f.kind, v);
      out.push_back(e.isInt() && elem->kind() == TypeKind::FloatType
                        ? IValue(static_cast<double>(e.toInt()))
                        : e);
    }
    return IValue(ListImpl::create(elem, std::move(out)));
  };
  switch (f.kind) {
    case Kind::Tensor:
      if (!v.isTensor()) badField(cls, f.name, f.kind, v);
      return v;
    case Kind::OptTensor:
      if (!v.isTensor() && !v.isNone()) badField(cls, f.name, f.kind, v);
      return v;
    case Kind::IntList: return listOf(IntType::get(), [](const IValue& e) { return e.isInt(); });
    case Kind::Int:
      if (!v.isInt()) badField(cls, f.name, f.kind, v);
      return v;
    case Kind::Bool:
      if (v.isBool()) return v;
      if (v.isInt()) return IValue(v.toInt() != 0);
      badField(cls, f.name, f.kind, v);
    case Kind::OptFloat:
      if (v.isNone() || v.isDouble()) return v;
      if (v.isInt()) return IValue(static_cast<double>(v.toInt()));
      badField(cls, f.name, f.kind, v);
    case Kind::Str:
      if (!v.isString()) badField(cls, f.name, f.kind, v);
      return v;
    case Kind::TensorList:
      return listOf(TensorType::get(), [](const IValue& e) { return e.isTensor(); });
    case Kind::FloatList:
      return listOf(FloatType::get(), [](const IValue& e) { return e.isDouble() || e.isInt(); });
    case Kind::PackedList:
      return listOf(classType(kLinearPacked), [](const IValue& e) {
        return e.isObject() && e.toObject()->type->name() == kLinearPacked;
      });
  }
  badField(cls, f.name, f.kind, v);
}

const std::vector<IValue>& stateTuple(std::string_view cls, const IValue& state, size_t n) {
  if (!state.isTuple())
    throw Error(
        fmt::format("TorchBind state of '{}' must be a tuple, got {}", cls, state.tagName()));
  const auto& e = state.toTuple()->elements;
  if (e.size() != n)
    throw Error(
        fmt::format("TorchBind state of '{}' must have {} elements, got {}", cls, n, e.size()));
  return e;
}

const ClassDef& defOf(const Object& obj) {
  const ClassDef* d = findDef(obj.type->name());
  if (!d) throw Error(fmt::format("'{}' is not a TorchBind class we know", obj.type->name()));
  if (obj.slots.size() != d->fields.size())
    throw Error(fmt::format("object of '{}' has {} slots, expected {}", obj.type->name(),
                            obj.slots.size(), d->fields.size()));
  return *d;
}

/// conv_serialization.h: any of versions 1, 2, 3 to the 8 slots.
std::vector<IValue> parseConvState(std::string_view cls, const IValue& state, size_t spatial) {
  auto fail = [&](const std::string& why) -> Error {
    return Error(fmt::format("TorchBind state of '{}': {}", cls, why));
  };
  if (!state.isTuple() || state.toTuple()->elements.empty())
    throw fail(fmt::format("expected a non-empty tuple, got {}", state.tagName()));
  const auto& e = state.toTuple()->elements;
  Tensor weight;
  IValue bias;
  std::vector<int64_t>
      config;  // kSpatialDim, stride, padding, dilation, output_padding, groups, flags
  auto tensorInts = [&](const Tensor& t) {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.intAt(i));
    return out;
  };
  if (e[0].isTensor()) {  // version 1: (weight, bias, stride[], padding[], dilation[], groups)
    if (e.size() != 6)
      throw fail(fmt::format("version 1 state has {} elements, expected 6", e.size()));
    weight = e[0].toTensor();
    bias = e[1];
    config.push_back(static_cast<int64_t>(spatial));
    for (int k = 2; k <= 4; ++k) {
      if (!e[k].isList()) throw fail("version 1 stride/padding/dilation must be tensor lists");
      for (const IValue& t : e[k].toList()->list) {
        if (!t.isTensor() || t.toTensor().numel() < 1)
          throw fail("version 1 list element is not a tensor");
        config.push_back(t.toTensor().intAt(0));
      }
    }
    for (size_t i = 0; i < spatial; ++i) config.push_back(0);
    if (!e[5].isTensor() || e[5].toTensor().numel() < 1)
      throw fail("version 1 groups must be a tensor");
    config.push_back(e[5].toTensor().intAt(0));
    config.push_back(0);
  } else if (e[0].isString()) {  // version 2: ("2", [params int16, weight], [bias])
    if (e[0].toStringRef() != "2")
      throw fail(fmt::format("unknown version '{}'", e[0].toStringRef()));
    if (e.size() != 3 || !e[1].isList() || !e[2].isList())
      throw fail("version 2 state must be (str, Tensor[], Tensor?[])");
    const auto& nonOpt = e[1].toList()->list;
    const auto& opt = e[2].toList()->list;
    if (nonOpt.size() < 2 || !nonOpt[0].isTensor() || !nonOpt[1].isTensor())
      throw fail("version 2 state needs the packed parameters tensor and the weight");
    config = tensorInts(nonOpt[0].toTensor());
    weight = nonOpt[1].toTensor();
    bias = opt.empty() ? IValue() : opt[0];
  } else if (e[0].isInt()) {  // version 3: (3, config, [None, weight, bias])
    if (e[0].toInt() != 3) throw fail(fmt::format("unknown version {}", e[0].toInt()));
    if (e.size() != 3 || !e[1].isList() || !e[2].isList())
      throw fail("version 3 state must be (int, int[], Tensor?[])");
    config = e[1].toIntVector();
    const auto& t = e[2].toList()->list;
    if (t.size() != 3 || !t[1].isTensor()) throw fail("version 3 state needs [None, weight, bias]");
    weight = t[1].toTensor();
    bias = t[2];
  } else {
    throw fail(
        fmt::format("cannot tell the version from a first element of type {}", e[0].tagName()));
  }
  if (!bias.isNone() && !bias.isTensor()) throw fail("bias must be a Tensor or None");
  const size_t n = spatial;
  if (config.size() != 4 * n + 3)
    throw fail(fmt::format("{} configuration values, expected {}", config.size(), 4 * n + 3));
  if (config[0] != static_cast<int64_t>(n))
    throw fail(fmt::format("spatial dims {} where {} were expected", config[0], n));
  auto slice = [&](size_t k) {
    std::vector<IValue> v;
    for (size_t i = 0; i < n; ++i) v.emplace_back(config[1 + k * n + i]);
    return IValue(ListImpl::create(IntType::get(), std::move(v)));
  };
  int64_t flags = config[4 * n + 2];
  if (flags & ~int64_t{1}) throw fail(fmt::format("unexpected flags {}", flags));
  return {IValue(weight),
          bias,
          slice(0),
          slice(1),
          slice(3),
          slice(2),
          IValue(config[4 * n + 1]),
          IValue((flags & 1) != 0)};
}

}  // namespace

bool isKnownClass(std::string_view qualname) { return findDef(qualname) != nullptr; }

std::optional<std::string> namespaceSource(const std::string& qualifier) {
  std::string out;
  for (const auto& d : classDefs()) {
    std::string_view q = d.qualname;
    auto dot = q.rfind('.');
    if (q.substr(0, dot) != qualifier) continue;
    out += fmt::format("class {}:\n", q.substr(dot + 1));
    for (const auto& f : d.fields) out += fmt::format("  {} : {}\n", f.name, annotation(f.kind));
    std::string methods = d.methods;
    for (size_t p = methods.find("{Q}"); p != std::string::npos; p = methods.find("{Q}", p))
      methods.replace(p, 3, d.qualname);
    out += methods;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

ClassTypePtr classType(std::string_view qualname) {
  static std::recursive_mutex mu;
  static std::map<std::string, ClassTypePtr, std::less<>> types;
  std::lock_guard<std::recursive_mutex> lock(mu);
  auto it = types.find(qualname);
  if (it != types.end()) return it->second;
  const ClassDef* d = findDef(qualname);
  if (!d) throw Error(fmt::format("'{}' is not a TorchBind class we know", qualname));
  auto t = ClassType::create(d->qualname, /*isModule=*/false);
  for (const auto& f : d->fields) t->addAttribute(f.name, typeOf(f.kind));
  types.emplace(d->qualname, t);
  return t;
}

ObjectPtr makeObject(std::string_view qualname, std::vector<IValue> slots) {
  auto obj = Object::create(classType(qualname));
  const ClassDef& d = defOf(*obj);
  if (slots.size() != d.fields.size())
    throw Error(
        fmt::format("'{}' takes {} values, got {}", qualname, d.fields.size(), slots.size()));
  for (size_t i = 0; i < slots.size(); ++i)
    obj->slots[i] = convertField(qualname, d.fields[i], slots[i]);
  return obj;
}

void setState(Object& obj, const IValue& state) {
  const ClassDef& d = defOf(obj);
  std::string_view cls = d.qualname;
  std::vector<IValue> values;
  if (cls.ends_with("Conv2dPackedParamsBase") || cls.ends_with("Conv3dPackedParamsBase")) {
    values = parseConvState(cls, state, cls.ends_with("Conv3dPackedParamsBase") ? 3 : 2);
  } else {
    values = stateTuple(cls, state, d.fields.size());
  }
  for (size_t i = 0; i < values.size(); ++i)
    obj.slots[i] = convertField(cls, d.fields[i], values[i]);
}

IValue getState(const Object& obj) {
  const ClassDef& d = defOf(obj);
  std::string_view cls = d.qualname;
  if (cls.ends_with("Conv2dPackedParamsBase") || cls.ends_with("Conv3dPackedParamsBase")) {
    // Version 2 (QCONV_SERIALIZATION_VERSION 2 in 1.13): ("2", [int16 params, weight], [bias]).
    const int64_t n = cls.ends_with("Conv3dPackedParamsBase") ? 3 : 2;
    std::vector<int64_t> params{n};
    for (size_t slot : {2u, 3u, 5u, 4u})  // stride, padding, dilation, output_padding
      for (int64_t v : obj.slots[slot].toIntVector()) params.push_back(v);
    params.push_back(obj.slots[6].toInt());
    params.push_back(obj.slots[7].toBool() ? 1 : 0);
    Tensor p = Tensor::empty({static_cast<int64_t>(params.size())}, ScalarType::Short);
    for (size_t i = 0; i < params.size(); ++i)
      p.data<int16_t>()[i] = static_cast<int16_t>(params[i]);
    auto nonOpt = ListImpl::create(TensorType::get(), {IValue(p), obj.slots[0]});
    auto opt = ListImpl::create(OptionalType::ofTensor(), {obj.slots[1]});
    return IValue(TupleImpl::create({IValue(std::string("2")), IValue(nonOpt), IValue(opt)}));
  }
  return IValue(TupleImpl::create(obj.slots));
}

}  // namespace torchless::torchbind
