#include "serialize/pickler.h"

#include "core/error.h"

#include <cstring>

namespace torchless {
namespace {

constexpr char kProto = '\x80', kStop = '.', kMark = '(', kBinint = 'J', kBinint1 = 'K',
               kBinint2 = 'M', kLong1 = '\x8a', kNone = 'N', kNewTrue = '\x88', kNewFalse = '\x89',
               kBinfloat = 'G', kBinunicode = 'X', kGlobal = 'c', kEmptyTuple = ')', kTuple = 't',
               kTuple1 = '\x85', kTuple2 = '\x86', kTuple3 = '\x87', kEmptyList = ']',
               kAppends = 'e', kEmptyDict = '}', kSetitems = 'u', kNewobj = '\x81', kBuild = 'b',
               kReduce = 'R', kBinpersid = 'Q', kBinput = 'q', kLongBinput = 'r', kBinget = 'h',
               kLongBinget = 'j';

template <typename T>
void appendLE(std::string& out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.append(buf, sizeof(T));
}

}  // namespace

void Pickler::pickle(const IValue& v) {
  out_.push_back(kProto);
  out_.push_back('\x02');
  value(v);
  out_.push_back(kStop);
}

void Pickler::memoize() {
  const uint32_t id = nextMemo_++;
  if (id <= 0xff) {
    out_.push_back(kBinput);
    out_.push_back(static_cast<char>(id));
  } else {
    out_.push_back(kLongBinput);
    appendLE<uint32_t>(out_, id);
  }
}

void Pickler::get(uint32_t id) {
  if (id <= 0xff) {
    out_.push_back(kBinget);
    out_.push_back(static_cast<char>(id));
  } else {
    out_.push_back(kLongBinget);
    appendLE<uint32_t>(out_, id);
  }
}

void Pickler::integer(int64_t i) {
  if (i >= 0 && i <= 0xff) {
    out_.push_back(kBinint1);
    out_.push_back(static_cast<char>(i));
  } else if (i >= 0 && i <= 0xffff) {
    out_.push_back(kBinint2);
    appendLE<uint16_t>(out_, static_cast<uint16_t>(i));
  } else if (i >= INT32_MIN && i <= INT32_MAX) {
    out_.push_back(kBinint);
    appendLE<int32_t>(out_, static_cast<int32_t>(i));
  } else {
    out_.push_back(kLong1);
    out_.push_back('\x08');
    appendLE<int64_t>(out_, i);
  }
}

void Pickler::floating(double d) {
  out_.push_back(kBinfloat);
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  for (int shift = 56; shift >= 0; shift -= 8)
    out_.push_back(static_cast<char>((bits >> shift) & 0xff));
}

void Pickler::string(const std::string& s) {
  auto it = strings_.find(s);
  if (it != strings_.end()) return get(it->second);
  out_.push_back(kBinunicode);
  if (s.size() > UINT32_MAX) throw Error("string too long to pickle");
  appendLE<uint32_t>(out_, static_cast<uint32_t>(s.size()));
  out_ += s;
  strings_.emplace(s, nextMemo_);
  memoize();
}

void Pickler::global(const std::string& module, const std::string& name) {
  const std::string key = module + "\n" + name + "\n";
  auto it = globals_.find(key);
  if (it != globals_.end()) return get(it->second);
  out_.push_back(kGlobal);
  out_ += key;
  globals_.emplace(key, nextMemo_);
  memoize();
}

void Pickler::tuple(const std::vector<IValue>& elems) {
  switch (elems.size()) {
    case 0: out_.push_back(kEmptyTuple); return;
    case 1:
      value(elems[0]);
      out_.push_back(kTuple1);
      return;
    case 2:
      value(elems[0]);
      value(elems[1]);
      out_.push_back(kTuple2);
      return;
    case 3:
      value(elems[0]);
      value(elems[1]);
      value(elems[2]);
      out_.push_back(kTuple3);
      return;
    default:
      out_.push_back(kMark);
      for (const auto& e : elems) value(e);
      out_.push_back(kTuple);
  }
}

void Pickler::tensor(const Tensor& t) {
  if (!t.device().isCpu()) throw Error("only CPU tensors can be written");
  auto memo = objectMemo_.find(t.impl().get());
  if (memo != objectMemo_.end()) return get(memo->second);
  // Quantized tensors: torch._utils._rebuild_qtensor with the quantizer's parameters after the
  // strides (torch/csrc/jit/serialization/pickler.cpp, pushLiteralTensor).
  global("torch._utils", t.isQuantized() ? "_rebuild_qtensor" : "_rebuild_tensor_v2");
  out_.push_back(kMark);
  // Persistent id: ("storage", <dtype>Storage, key, location, numel). The storage is written
  // once; later tensors on it refer to the memoized result.
  const StorageImpl* storage = t.storage().unsafeGetImpl();
  auto sm = storageMemo_.find(storage);
  if (sm != storageMemo_.end()) {
    get(sm->second);
  } else {
    const size_t item = t.itemsize();
    const std::string key = std::to_string(nextKey_++);
    out_.push_back(kMark);
    string("storage");
    global("torch", std::string(toString(t.dtype())) + "Storage");
    string(key);
    string("cpu");
    integer(static_cast<int64_t>(t.storage().nbytes() / item));
    out_.push_back(kTuple);
    out_.push_back(kBinpersid);
    storageMemo_.emplace(storage, nextMemo_);
    memoize();
    storages_.push_back({key, t.storage(), t.storage().nbytes()});
  }
  integer(t.storageOffset());
  out_.push_back(kMark);
  for (int64_t s : t.sizes()) integer(s);
  out_.push_back(kTuple);
  out_.push_back(kMark);
  for (int64_t s : t.strides()) integer(s);
  out_.push_back(kTuple);
  if (t.isQuantized()) {
    const QuantizerInfo& q = *t.quantizer();
    using S = QuantizerInfo::Scheme;
    out_.push_back(kMark);
    switch (q.scheme) {
      case S::PerTensorAffine: global("torch", "per_tensor_affine"); break;
      case S::PerTensorSymmetric: global("torch", "per_tensor_symmetric"); break;
      case S::PerChannelAffine: global("torch", "per_channel_affine"); break;
      case S::PerChannelSymmetric: global("torch", "per_channel_symmetric"); break;
      case S::PerChannelAffineFloatQParams:
        global("torch", "per_channel_affine_float_qparams");
        break;
    }
    if (q.scheme == S::PerTensorAffine || q.scheme == S::PerTensorSymmetric) {
      floating(q.scale);
      integer(q.zeroPoint);
    } else {
      if (!q.scales || !q.zeroPoints)
        throw Error("a per-channel quantized tensor without scales or zero points");
      tensor(Tensor(q.scales));
      tensor(Tensor(q.zeroPoints));
      integer(q.axis);
    }
    out_.push_back(kTuple);
  }
  out_.push_back(t.requiresGrad() ? kNewTrue : kNewFalse);
  global("collections", "OrderedDict");
  out_.push_back(kEmptyTuple);
  out_.push_back(kReduce);
  out_.push_back(kTuple);
  out_.push_back(kReduce);
  objectMemo_.emplace(t.impl().get(), nextMemo_);
  memoize();
}

void Pickler::typeTagged(const std::string& typeStr, const std::function<void()>& container) {
  global("torch.jit._pickle", "restore_type_tag");
  out_.push_back(kMark);
  container();
  string(typeStr);
  out_.push_back(kTuple);
  out_.push_back(kReduce);
}

void Pickler::list(const ListImpl& l) {
  const TypeKind k = l.elementType->kind();
  const char* builder = k == TypeKind::IntType      ? "build_intlist"
                        : k == TypeKind::FloatType  ? "build_doublelist"
                        : k == TypeKind::BoolType   ? "build_boollist"
                        : k == TypeKind::TensorType ? "build_tensorlist"
                                                    : nullptr;
  auto items = [&] {
    out_.push_back(kEmptyList);
    if (!l.list.empty()) {
      out_.push_back(kMark);
      for (const auto& e : l.list) value(e);
      out_.push_back(kAppends);
    }
  };
  if (builder) {
    global("torch.jit._pickle", builder);
    out_.push_back(kMark);
    items();
    out_.push_back(kTuple);
    out_.push_back(kReduce);
  } else {
    typeTagged(ListType::create(l.elementType)->annotationStr(), items);
  }
}

void Pickler::dict(const DictImpl& d) {
  typeTagged(DictType::create(d.keyType, d.valueType)->annotationStr(), [&] {
    out_.push_back(kEmptyDict);
    if (d.size() > 0) {
      out_.push_back(kMark);
      for (const auto& [k, v] : d.entries()) {
        value(k);
        value(v);
      }
      out_.push_back(kSetitems);
    }
  });
}

void Pickler::object(const ObjectPtr& obj) {
  const Object& o = *obj;
  const std::string& q = o.type->name();
  std::optional<IValue> state;
  if (getState_) state = getState_(obj);
  if (!state && o.type->findMethod("__getstate__"))
    throw Error(fmt::format("writing objects with __getstate__ ({}) is not supported yet", q));
  auto dot = q.rfind('.');
  global(dot == std::string::npos ? "" : q.substr(0, dot),
         dot == std::string::npos ? q : q.substr(dot + 1));
  out_.push_back(kEmptyTuple);
  out_.push_back(kNewobj);
  if (state) {
    value(*state);
    out_.push_back(kBuild);
    return;
  }
  out_.push_back(kEmptyDict);
  const auto& attrs = o.type->attributes();
  if (!attrs.empty()) {
    out_.push_back(kMark);
    for (size_t i = 0; i < attrs.size(); ++i) {
      string(attrs[i].name);
      value(i < o.slots.size() ? o.slots[i] : IValue());
    }
    out_.push_back(kSetitems);
  }
  out_.push_back(kBuild);
}

void Pickler::value(const IValue& v) {
  if (++depth_ > 1000) throw Error("value nested too deeply to pickle");
  switch (v.tag()) {
    case IValue::Tag::None: out_.push_back(kNone); break;
    case IValue::Tag::Bool: out_.push_back(v.toBool() ? kNewTrue : kNewFalse); break;
    case IValue::Tag::Int: integer(v.toInt()); break;
    case IValue::Tag::Double: floating(v.toDouble()); break;
    case IValue::Tag::String: string(v.toStringRef()); break;
    case IValue::Tag::Tensor: tensor(v.toTensor()); break;
    case IValue::Tag::Tuple: tuple(v.toTuple()->elements); break;
    case IValue::Tag::List: list(*v.toList()); break;
    case IValue::Tag::Dict: dict(*v.toDict()); break;
    case IValue::Tag::Object: object(v.toObject()); break;
    case IValue::Tag::Device:
      global("torch", "device");
      string(v.toDevice().str());
      out_.push_back(kTuple1);
      out_.push_back(kReduce);
      break;
    case IValue::Tag::ComplexDouble:
      global("builtins", "complex");
      floating(v.toComplexDouble().real());
      floating(v.toComplexDouble().imag());
      out_.push_back(kTuple2);
      out_.push_back(kReduce);
      break;
    case IValue::Tag::Enum: {
      const auto& e = *v.toEnum();
      const std::string& q = e.type->name();
      auto dot = q.rfind('.');
      global(q.substr(0, dot), q.substr(dot + 1));
      value(e.value);
      out_.push_back(kReduce);
      break;
    }
    default:
      throw Error(fmt::format("cannot write a value of kind {} into an archive", v.tagName()));
  }
  --depth_;
}

}  // namespace torchless
