// The restricted unpickler. See Note [Restricted unpickling] in unpickler.h.
#include "serialize/unpickler.h"

#include "core/error.h"
#include "core/scalar_type.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace torchless {

namespace {

// Pickle opcodes (Python's pickle.py names).
enum Opcode : uint8_t {
  kMark = '(',
  kStop = '.',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kNone = 'N',
  kBinPersId = 'Q',
  kReduce = 'R',
  kBinUnicode = 'X',
  kEmptyList = ']',
  kAppends = 'e',
  kBuild = 'b',
  kGlobal = 'c',
  kDict = 'd',
  kEmptyDict = '}',
  kBinGet = 'h',
  kLongBinGet = 'j',
  kList = 'l',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kEmptyTuple = ')',
  kSetItems = 'u',
  kBinFloat = 'G',
  kProto = 0x80,
  kNewObj = 0x81,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kBinUnicode8 = 0x8d,
};

enum class GlobalKind {
  TorchClass,  // __torch__.* : NEWOBJ (class) or REDUCE (enum)
  RebuildTensorV2,
  RebuildQTensor,
  RebuildSparse,
  RebuildFromTypeV2,
  TensorClass,  // torch._tensor.Tensor / torch.nn.parameter.Parameter, as values only
  StorageType,
  QScheme,
  Device,
  Complex,
  OrderedDict,
  BuildIntList,
  BuildDoubleList,
  BuildBoolList,
  BuildTensorList,
  RestoreTypeTag,
};

/// A value that only lives inside the unpickler: a GLOBAL, or a storage from BINPERSID.
struct Special {
  enum class Kind { Global, Storage } kind = Kind::Global;
  GlobalKind global = GlobalKind::TorchClass;
  std::string qualname;  // "module.name"
  ScalarType dtype = ScalarType::Float;
  QuantizerInfo::Scheme qscheme = QuantizerInfo::Scheme::PerTensorAffine;
  Storage storage;
  std::string key;
};

struct Info {
  uint32_t depth = 0;
  bool sealed = false;   // placed inside another value: may no longer be modified
  bool special = false;  // a Special, or a tuple containing one
  bool isSpecialItself = false;
};

bool isGlobalChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

bool validUtf8(const unsigned char* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0)
      len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
      len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
      len = 4, cp = c & 0x07;
    else
      return false;
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

bool isSafeStorageKey(const std::string& key) {
  if (key.empty() || key.size() > 256 || key == "." || key == "..") return false;
  if (key.find("..") != std::string::npos) return false;
  for (char c : key)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      return false;
  return true;
}

class Unpickler {
 public:
  Unpickler(const void* data, size_t size, const UnpicklerOptions& options)
      : data_(static_cast<const uint8_t*>(data)), size_(size), opt_(options) {
    registry_ = opt_.registry ? opt_.registry : std::make_shared<ClassRegistry>();
  }

  UnpickleResult run() {
    try {
      parse();
    } catch (Error& e) {
      if (!e.place().empty()) throw;
      throw Error(fmt::format("{} (at byte {})", e.message(), opStart_), opt_.place, e.details());
    }
    finish();
    return std::move(result_);
  }

 private:
  // ---- errors and bytes ----------------------------------------------------------------------
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    throw Error(
        fmt::format("{} (at byte {})", fmt::format(f, std::forward<Args>(args)...), opStart_),
        opt_.place);
  }

  void need(size_t n) const {
    if (n > size_ - pos_)
      fail("truncated pickle: opcode needs {} more bytes but only {} are left", n, size_ - pos_);
  }
  uint8_t u8() {
    need(1);
    return data_[pos_++];
  }
  uint64_t le(size_t n) {
    need(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(data_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }
  std::string line() {
    size_t start = pos_;
    size_t limit = std::min(size_, pos_ + opt_.limits.maxGlobalLength + 1);
    for (size_t i = pos_; i < limit; ++i) {
      if (data_[i] == '\n') {
        pos_ = i + 1;
        return std::string(reinterpret_cast<const char*>(data_ + start), i - start);
      }
      if (!isGlobalChar(static_cast<char>(data_[i])))
        fail("GLOBAL name contains byte 0x{:02x}; only [A-Za-z0-9_.] are allowed", data_[i]);
    }
    if (limit == size_) fail("truncated pickle: GLOBAL name has no terminating newline");
    fail("GLOBAL name longer than {} bytes", opt_.limits.maxGlobalLength);
  }

  // ---- value bookkeeping ---------------------------------------------------------------------
  static const void* identity(const IValue& v) {
    switch (v.tag()) {
      case IValue::Tag::List: return v.toList().get();
      case IValue::Tag::Tuple: return v.toTuple().get();
      case IValue::Tag::Dict: return v.toDict().get();
      case IValue::Tag::Object: return v.toObject().get();
      case IValue::Tag::Capsule: return v.toCapsule().get();
      default: return nullptr;
    }
  }
  Info* infoOf(const IValue& v) {
    const void* id = identity(v);
    if (!id) return nullptr;
    auto it = info_.find(id);
    return it == info_.end() ? nullptr : &it->second;
  }
  uint32_t depthOf(const IValue& v) {
    Info* i = infoOf(v);
    return i ? i->depth : 0;
  }
  bool isSpecialish(const IValue& v) {
    Info* i = infoOf(v);
    return i && i->special;
  }
  Special* asSpecial(const IValue& v) {
    Info* i = infoOf(v);
    if (!i || !i->isSpecialItself) return nullptr;
    return static_cast<Special*>(v.toCapsule().get());
  }
  void track(const IValue& v, Info info) {
    if (info.depth > opt_.limits.maxDepth)
      fail("values nest deeper than {} levels", opt_.limits.maxDepth);
    info_[identity(v)] = info;
    keepAlive_.push_back(v);  // identities stay unique while info_ refers to them
  }
  void seal(const IValue& v) {
    if (Info* i = infoOf(v)) i->sealed = true;
  }
  /// Checks that `child` may go inside the mutable `container` and records the new depth.
  void adopt(const IValue& container, const IValue& child, const char* what) {
    Info* ci = infoOf(container);
    TL_INTERNAL_ASSERT(ci != nullptr);
    if (ci->sealed) fail("{} modifies a container that is already part of another value", what);
    if (identity(child) && identity(child) == identity(container))
      fail("{} puts a container inside itself", what);
    if (isSpecialish(child)) fail("{} stores a GLOBAL or storage as a plain value", what);
    uint32_t d = depthOf(child) + 1;
    if (d > opt_.limits.maxDepth) fail("values nest deeper than {} levels", opt_.limits.maxDepth);
    ci = infoOf(container);  // (no rehash since, but keep it obviously right)
    ci->depth = std::max(ci->depth, d);
    seal(child);
  }

  IValue makeTuple(std::vector<IValue> elems) {
    Info info;
    info.depth = 1;
    for (const auto& e : elems) {
      info.depth = std::max(info.depth, depthOf(e) + 1);
      if (isSpecialish(e)) info.special = true;
    }
    if (info.depth > opt_.limits.maxDepth)
      fail("values nest deeper than {} levels", opt_.limits.maxDepth);
    for (const auto& e : elems) seal(e);
    IValue t(TupleImpl::create(std::move(elems)));
    info.sealed = false;
    track(t, info);
    return t;
  }
  IValue makeList(TypePtr elem) {
    IValue l(ListImpl::create(std::move(elem)));
    track(l, Info{1, false, false, false});
    return l;
  }
  IValue makeDict() {
    IValue d(DictImpl::create(AnyType::get(), AnyType::get()));
    track(d, Info{1, false, false, false});
    return d;
  }
  IValue makeSpecial(std::shared_ptr<Special> s) {
    IValue v = IValue::capsule(std::static_pointer_cast<void>(std::move(s)));
    track(v, Info{0, false, true, true});
    return v;
  }

  void push(IValue v) {
    if (stack_.size() >= opt_.limits.maxStack)
      fail("pickle stack exceeds {} entries", opt_.limits.maxStack);
    stack_.push_back(std::move(v));
  }
  IValue pop() {
    if (stack_.empty()) fail("stack underflow");
    if (!marks_.empty() && marks_.back() >= stack_.size())
      fail("opcode consumes a value below the last MARK");
    IValue v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  IValue& top() {
    if (stack_.empty()) fail("stack underflow");
    return stack_.back();
  }
  std::vector<IValue> popMark() {
    if (marks_.empty()) fail("opcode needs a MARK but none is open");
    size_t m = marks_.back();
    marks_.pop_back();
    if (m > stack_.size()) fail("MARK lies above the top of the stack");
    std::vector<IValue> items(std::make_move_iterator(stack_.begin() + static_cast<ptrdiff_t>(m)),
                              std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return items;
  }

  // ---- the main loop -------------------------------------------------------------------------
  void parse() {
    while (true) {
      opStart_ = pos_;
      if (pos_ >= size_) fail("truncated pickle: data ends without a STOP opcode");
      uint8_t op = data_[pos_++];
      switch (op) {
        case kProto: {
          uint8_t v = u8();
          if (v != 2)
            fail("unsupported pickle protocol {} (TorchScript archives use protocol 2)", v);
          break;
        }
        case kGlobal: {
          std::string module = line();
          std::string name = line();
          push(makeGlobal(module, name));
          break;
        }
        case kBinPut: memoPut(u8()); break;
        case kLongBinPut: memoPut(static_cast<uint32_t>(le(4))); break;
        case kBinGet: memoGet(u8()); break;
        case kLongBinGet: memoGet(static_cast<uint32_t>(le(4))); break;
        case kMark:
          if (marks_.size() >= opt_.limits.maxMarks)
            fail("more than {} open MARKs", opt_.limits.maxMarks);
          marks_.push_back(stack_.size());
          break;
        case kEmptyTuple: push(makeTuple({})); break;
        case kTuple: push(makeTuple(popMark())); break;
        case kTuple1:
        case kTuple2:
        case kTuple3: {
          size_t n = op - kTuple1 + 1;
          std::vector<IValue> elems(n);
          for (size_t i = n; i-- > 0;) elems[i] = pop();
          push(makeTuple(std::move(elems)));
          break;
        }
        case kEmptyList: push(makeList(AnyType::get())); break;
        case kAppends: {
          auto items = popMark();
          IValue l = top();
          if (!l.isList()) fail("APPENDS on a {}, not a list", l.tagName());
          for (auto& it : items) {
            adopt(l, it, "APPENDS");
            l.toList()->list.push_back(std::move(it));
          }
          break;
        }
        case kList: {
          auto items = popMark();
          IValue l = makeList(AnyType::get());
          for (auto& it : items) {
            adopt(l, it, "LIST");
            l.toList()->list.push_back(std::move(it));
          }
          push(std::move(l));
          break;
        }
        case kEmptyDict: push(makeDict()); break;
        case kSetItems: {
          auto items = popMark();
          if (items.size() % 2 != 0) fail("SETITEMS with an odd number of values");
          IValue d = top();
          if (!d.isDict()) fail("SETITEMS on a {}, not a dict", d.tagName());
          for (size_t i = 0; i < items.size(); i += 2)
            setItem(d, items[i], items[i + 1], "SETITEMS");
          break;
        }
        case kSetItem: {
          IValue v = pop();
          IValue k = pop();
          IValue d = top();
          if (!d.isDict()) fail("SETITEM on a {}, not a dict", d.tagName());
          setItem(d, k, v, "SETITEM");
          break;
        }
        case kDict: {
          auto items = popMark();
          if (items.size() % 2 != 0) fail("DICT with an odd number of values");
          IValue d = makeDict();
          for (size_t i = 0; i < items.size(); i += 2) setItem(d, items[i], items[i + 1], "DICT");
          push(std::move(d));
          break;
        }
        case kNewObj: {
          IValue args = pop();
          IValue cls = pop();
          push(newObject(cls, args));
          break;
        }
        case kBuild: {
          IValue state = pop();
          IValue obj = top();
          build(obj, state);
          break;
        }
        case kReduce: {
          IValue args = pop();
          IValue fn = pop();
          Special* g = asSpecial(fn);
          if (!g || g->kind != Special::Kind::Global)
            fail("REDUCE on a {}, which is not a callable GLOBAL", fn.tagName());
          if (g->global == GlobalKind::TorchClass) {  // an enum: `<value> REDUCE`, no tuple
            push(enumValue(*g, args));
            break;
          }
          if (!args.isTuple()) fail("REDUCE arguments are a {}, not a tuple", args.tagName());
          push(reduce(*g, *args.toTuple()));
          break;
        }
        case kBinPersId: {
          IValue pid = pop();
          push(persistentLoad(pid));
          break;
        }
        case kBinInt1: push(IValue(static_cast<int64_t>(u8()))); break;
        case kBinInt2: push(IValue(static_cast<int64_t>(le(2)))); break;
        case kBinInt: push(IValue(static_cast<int64_t>(static_cast<int32_t>(le(4))))); break;
        case kLong1: {
          uint8_t n = u8();
          if (n != 8) fail("LONG1 of {} bytes (TorchScript pickles use 8)", n);
          push(IValue(static_cast<int64_t>(le(8))));
          break;
        }
        case kBinFloat: {
          need(8);
          uint64_t bits = 0;
          for (int i = 0; i < 8; ++i) bits = (bits << 8) | data_[pos_ + i];  // big-endian
          pos_ += 8;
          double d;
          std::memcpy(&d, &bits, 8);
          push(IValue(d));
          break;
        }
        case kBinUnicode: push(string(le(4))); break;
        case kBinUnicode8: push(string(le(8))); break;
        case kNewTrue: push(IValue(true)); break;
        case kNewFalse: push(IValue(false)); break;
        case kNone: push(IValue()); break;
        case kStop: {
          if (stack_.size() != 1)
            fail("pickle ends with {} values on the stack (expected exactly 1)", stack_.size());
          if (isSpecialish(stack_.back())) fail("pickle's result is a GLOBAL or a storage");
          result_.value = std::move(stack_.back());
          stack_.clear();
          return;
        }
        default:
          if (op >= 0x20 && op < 0x7f)
            fail("unknown or unsupported pickle opcode 0x{:02x} ('{}')", op, static_cast<char>(op));
          fail("unknown or unsupported pickle opcode 0x{:02x}", op);
      }
    }
  }

  IValue string(uint64_t n) {
    if (n > size_ - pos_)
      fail("truncated pickle: string of {} bytes but only {} are left", n, size_ - pos_);
    const uint8_t* s = data_ + pos_;
    if (!validUtf8(s, static_cast<size_t>(n))) fail("string is not valid UTF-8");
    pos_ += static_cast<size_t>(n);
    return IValue(std::string(reinterpret_cast<const char*>(s), static_cast<size_t>(n)));
  }

  void memoPut(uint32_t id) {
    if (stack_.empty()) fail("BINPUT on an empty stack");
    if (memo_.size() >= opt_.limits.maxMemo && !memo_.count(id))
      fail("memo exceeds {} entries", opt_.limits.maxMemo);
    memo_[id] = stack_.back();
  }
  void memoGet(uint32_t id) {
    auto it = memo_.find(id);
    if (it == memo_.end()) fail("memo slot {} read before it was set", id);
    push(it->second);
  }

  void setItem(const IValue& d, const IValue& k, const IValue& v, const char* what) {
    adopt(d, k, what);
    adopt(d, v, what);
    switch (k.tag()) {
      case IValue::Tag::String:
      case IValue::Tag::Int:
      case IValue::Tag::Double:
      case IValue::Tag::Bool:
      case IValue::Tag::Tensor:
      case IValue::Tag::None:
      case IValue::Tag::Tuple:
      case IValue::Tag::ComplexDouble:
      case IValue::Tag::Device:
      case IValue::Tag::Enum: break;
      default: fail("{} with an unhashable key of type {}", what, k.tagName());
    }
    d.toDict()->insertOrAssign(k, v);
  }

  // ---- GLOBAL --------------------------------------------------------------------------------
  IValue makeGlobal(const std::string& module, const std::string& name) {
    auto s = std::make_shared<Special>();
    s->qualname = module + "." + name;
    auto is = [&](const char* m, const char* n) { return module == m && name == n; };
    if (module == "__torch__" || module.rfind("__torch__.", 0) == 0) {
      s->global = GlobalKind::TorchClass;
    } else if (is("torch._utils", "_rebuild_tensor_v2")) {
      s->global = GlobalKind::RebuildTensorV2;
    } else if (is("torch._utils", "_rebuild_qtensor")) {
      s->global = GlobalKind::RebuildQTensor;
    } else if (is("torch._utils", "_rebuild_sparse_tensor") ||
               is("torch._utils", "_rebuild_sparse_csr_tensor")) {
      s->global = GlobalKind::RebuildSparse;
    } else if (is("torch._tensor", "_rebuild_from_type_v2")) {
      s->global = GlobalKind::RebuildFromTypeV2;
    } else if (is("torch._tensor", "Tensor") || is("torch", "Tensor") ||
               is("torch.nn.parameter", "Parameter")) {
      s->global = GlobalKind::TensorClass;
    } else if (module == "torch" && name.size() > 7 &&
               name.compare(name.size() - 7, 7, "Storage") == 0) {
      auto dt = dtypeFromStorageName(name);
      if (!dt) fail("unknown storage type 'torch.{}'", name);
      s->global = GlobalKind::StorageType;
      s->dtype = *dt;
    } else if (module == "torch" &&
               (name == "per_tensor_affine" || name == "per_channel_affine" ||
                name == "per_tensor_symmetric" || name == "per_channel_symmetric" ||
                name == "per_channel_affine_float_qparams")) {
      s->global = GlobalKind::QScheme;
      using S = QuantizerInfo::Scheme;
      s->qscheme = name == "per_tensor_affine"       ? S::PerTensorAffine
                   : name == "per_channel_affine"    ? S::PerChannelAffine
                   : name == "per_tensor_symmetric"  ? S::PerTensorSymmetric
                   : name == "per_channel_symmetric" ? S::PerChannelSymmetric
                                                     : S::PerChannelAffineFloatQParams;
    } else if (is("torch", "device")) {
      s->global = GlobalKind::Device;
    } else if (is("builtins", "complex")) {
      s->global = GlobalKind::Complex;
    } else if (is("collections", "OrderedDict")) {
      s->global = GlobalKind::OrderedDict;
    } else if (is("torch.jit._pickle", "build_intlist")) {
      s->global = GlobalKind::BuildIntList;
    } else if (is("torch.jit._pickle", "build_doublelist")) {
      s->global = GlobalKind::BuildDoubleList;
    } else if (is("torch.jit._pickle", "build_boollist")) {
      s->global = GlobalKind::BuildBoolList;
    } else if (is("torch.jit._pickle", "build_tensorlist")) {
      s->global = GlobalKind::BuildTensorList;
    } else if (is("torch.jit._pickle", "restore_type_tag")) {
      s->global = GlobalKind::RestoreTypeTag;
    } else {
      fail("forbidden global '{}' (not on the allow-list of TorchScript pickles)", s->qualname);
    }
    return makeSpecial(std::move(s));
  }

  // ---- objects -------------------------------------------------------------------------------
  ClassTypePtr registryClass(const std::string& qualname, bool isModule) {
    auto& slot = registry_->classes[qualname];
    if (!slot) slot = ClassType::create(qualname, isModule);
    return slot;
  }

  IValue newObject(const IValue& cls, const IValue& args) {
    Special* g = asSpecial(cls);
    if (!g || g->kind != Special::Kind::Global || g->global != GlobalKind::TorchClass)
      fail("NEWOBJ on {} (only __torch__ classes can be instantiated)",
           g ? "'" + g->qualname + "'" : std::string("a ") + cls.tagName());
    if (!args.isTuple() || !args.toTuple()->elements.empty())
      fail("NEWOBJ of '{}' with arguments (expected an empty tuple)", g->qualname);
    ClassTypePtr type = opt_.resolveClass ? opt_.resolveClass(g->qualname) : nullptr;
    ObjectPtr obj;
    if (type) {
      obj = Object::create(type);
    } else {
      auto it = registry_->classes.find(g->qualname);
      obj = Object::create(it != registry_->classes.end() ? it->second
                                                          : ClassType::create(g->qualname, false));
      placeholders_[obj.get()] = PlaceholderState{g->qualname};
    }
    IValue v(obj);
    track(v, Info{1, false, false, false});
    return v;
  }

  void build(const IValue& objv, const IValue& state) {
    if (!objv.isObject()) fail("BUILD on a {}, not an object", objv.tagName());
    ObjectPtr obj = objv.toObject();
    if (!built_.insert(obj.get()).second) fail("BUILD applied twice to one object");
    adopt(objv, state, "BUILD");
    auto ph = placeholders_.find(obj.get());
    bool dictState = state.isDict();
    if (dictState) {
      for (const auto& [k, v] : state.toDict()->entries())
        if (!k.isString())
          fail("state of '{}' has a key of type {} (expected str)", obj->type->name(), k.tagName());
    }
    if (ph == placeholders_.end()) {
      // A class from the resolver: slots by declared attribute, missing keys are errors.
      if (!dictState || obj->type->findMethod("__setstate__")) {
        result_.pendingSetState.push_back({obj, state});
        return;
      }
      const auto& dict = *state.toDict();
      const auto& attrs = obj->type->attributes();
      for (size_t i = 0; i < attrs.size(); ++i) {
        const IValue* v = dict.find(IValue(attrs[i].name));
        if (!v)
          fail("state of '{}' has no value for attribute '{}'", obj->type->name(), attrs[i].name);
        obj->slots[i] = *v;
      }
      return;
    }
    // A placeholder class: attributes from the state's keys, types from the values.
    const std::string& qualname = ph->second.qualname;
    bool isModule = dictState && state.toDict()->find(IValue("training")) != nullptr;
    if (opt_.isModuleHint)
      if (auto hint = opt_.isModuleHint(qualname)) isModule = *hint;
    ClassTypePtr type = registryClass(qualname, isModule);
    obj->type = type;
    placeholderObjects_.push_back(obj);
    placeholders_.erase(ph);
    if (!dictState) {
      obj->resizeSlots();
      result_.pendingSetState.push_back({obj, state});
      return;
    }
    for (const auto& [k, v] : state.toDict()->entries())
      if (!type->findAttributeSlot(k.toStringRef()))
        type->addAttribute(k.toStringRef(), placeholderAttributeType(v));
    obj->resizeSlots();
    for (const auto& [k, v] : state.toDict()->entries()) obj->setAttr(k.toStringRef(), v);
  }

  /// The type of a placeholder attribute: the value's type, or Any when that mentions a class
  /// (class types own their attribute types, so a class named inside its own attribute types
  /// would be a reference cycle; the frontend supplies the declared types later).
  static TypePtr placeholderAttributeType(const IValue& v) {
    TypePtr t = v.type();
    std::vector<const Type*> work{t.get()};
    std::unordered_set<const Type*> seen{t.get()};  // a shared type DAG: each node once
    while (!work.empty()) {
      const Type* x = work.back();
      work.pop_back();
      if (x->kind() == TypeKind::ClassType) return AnyType::get();
      for (const auto& c : x->containedTypes())
        if (seen.insert(c.get()).second) work.push_back(c.get());
    }
    return t;
  }

  // ---- REDUCE --------------------------------------------------------------------------------
  IValue reduce(const Special& g, const TupleImpl& argsTuple) {
    const auto& a = argsTuple.elements;
    auto arity = [&](size_t lo, size_t hi) {
      if (a.size() < lo || a.size() > hi)
        fail("'{}' called with {} arguments (expected {})", g.qualname, a.size(),
             lo == hi ? std::to_string(lo) : fmt::format("{} to {}", lo, hi));
    };
    switch (g.global) {
      case GlobalKind::TorchClass: fail("'{}' used as a function", g.qualname);
      case GlobalKind::RebuildTensorV2: arity(6, 7); return rebuildTensor(g, a, false);
      case GlobalKind::RebuildQTensor: arity(7, 7); return rebuildTensor(g, a, true);
      case GlobalKind::RebuildSparse:
        fail(
            "sparse tensors are not supported ('{}'); torchless loads dense and quantized "
            "tensors only",
            g.qualname);
      case GlobalKind::RebuildFromTypeV2: {
        arity(4, 4);
        Special* fn = asSpecial(a[0]);
        if (!fn || fn->kind != Special::Kind::Global ||
            (fn->global != GlobalKind::RebuildTensorV2 && fn->global != GlobalKind::RebuildQTensor))
          fail("'{}' wraps something other than a tensor rebuild function", g.qualname);
        Special* ty = asSpecial(a[1]);
        if (!ty || ty->global != GlobalKind::TensorClass)
          fail("'{}' names a tensor subclass other than Tensor/Parameter", g.qualname);
        if (!a[2].isTuple()) fail("'{}' arguments are not a tuple", g.qualname);
        return reduce(*fn, *a[2].toTuple());  // the Python state (a[3]) is dropped, as in 2.x
      }
      case GlobalKind::Device: {
        arity(1, 1);
        if (!a[0].isString()) fail("torch.device of a {} (expected str)", a[0].tagName());
        return IValue(Device::parse(a[0].toStringRef()));
      }
      case GlobalKind::Complex: {
        arity(2, 2);
        if (!a[0].isScalar() || !a[1].isScalar() || a[0].isComplexDouble() ||
            a[1].isComplexDouble())
          fail("complex() of {} and {} (expected numbers)", a[0].tagName(), a[1].tagName());
        return IValue(std::complex<double>(a[0].toScalarDouble(), a[1].toScalarDouble()));
      }
      case GlobalKind::OrderedDict:
        arity(0, 0);
        return IValue();  // the (always empty) backward-hooks dict
      case GlobalKind::BuildIntList: return typedList(g, a, IntType::get(), IValue::Tag::Int);
      case GlobalKind::BuildDoubleList:
        return typedList(g, a, FloatType::get(), IValue::Tag::Double);
      case GlobalKind::BuildBoolList: return typedList(g, a, BoolType::get(), IValue::Tag::Bool);
      case GlobalKind::BuildTensorList:
        return typedList(g, a, TensorType::get(), IValue::Tag::Tensor);
      case GlobalKind::RestoreTypeTag: {
        arity(2, 2);
        if (!a[1].isString()) fail("restore_type_tag with a {} tag (expected str)", a[1].tagName());
        TypePtr t = parseTag(a[1].toStringRef());
        if (a[0].isList()) {
          auto lt = t->castPtr<ListType>();
          if (!lt) fail("type tag '{}' on a list", a[1].toStringRef());
          a[0].toList()->elementType = lt->getElementType();
        } else if (a[0].isDict()) {
          auto dt = t->castPtr<DictType>();
          if (!dt) fail("type tag '{}' on a dict", a[1].toStringRef());
          a[0].toDict()->keyType = dt->getKeyType();
          a[0].toDict()->valueType = dt->getValueType();
        } else {
          fail("type tag '{}' on a {} (expected a list or dict)", a[1].toStringRef(),
               a[0].tagName());
        }
        return a[0];
      }
      case GlobalKind::TensorClass:
      case GlobalKind::StorageType:
      case GlobalKind::QScheme: fail("global '{}' cannot be called", g.qualname);
    }
    fail("global '{}' cannot be called", g.qualname);
  }

  IValue typedList(const Special& g, const std::vector<IValue>& a, TypePtr elem, IValue::Tag tag) {
    if (a.size() != 1 || !a[0].isList()) fail("'{}' expects one list argument", g.qualname);
    auto l = a[0].toList();
    for (size_t i = 0; i < l->list.size(); ++i)
      if (l->list[i].tag() != tag)
        fail("'{}' element {} is a {} (expected {})", g.qualname, i, l->list[i].tagName(),
             elem->str());
    l->elementType = std::move(elem);
    return a[0];
  }

  TypePtr parseTag(const std::string& tag) {
    if (tag.size() > opt_.limits.maxTypeTagLength)
      fail("type tag of {} bytes is too long", tag.size());
    size_t depth = 0;
    for (char c : tag) {
      if (c == '[' && ++depth > opt_.limits.maxDepth)
        fail("type tag nests deeper than {} levels", opt_.limits.maxDepth);
      if (c == ']' && depth > 0) --depth;
    }
    TypeResolver resolver = [this](const std::string& q) -> TypePtr {
      if (opt_.resolveType)
        if (TypePtr t = opt_.resolveType(q)) return t;
      if (opt_.resolveClass)
        if (ClassTypePtr c = opt_.resolveClass(q)) return c;
      if (q != "__torch__" && q.rfind("__torch__.", 0) != 0) return nullptr;
      auto e = registry_->enums.find(q);
      if (e != registry_->enums.end()) return e->second;
      return registryClass(q, false);
    };
    try {
      return parseTypeAnnotation(tag, resolver);
    } catch (const Error& e) {
      fail("bad type tag '{}': {}", tag, e.message());
    }
  }

  IValue enumValue(const Special& g, const IValue& value) {
    if (!value.isInt() && !value.isDouble() && !value.isString())
      fail("enum '{}' value is a {} (expected int, float or str)", g.qualname, value.tagName());
    TypePtr t = opt_.resolveType ? opt_.resolveType(g.qualname) : nullptr;
    auto holder = std::make_shared<EnumHolder>();
    holder->value = value;
    if (t) {
      auto et = t->castPtr<EnumType>();
      if (!et) fail("REDUCE on '{}', which is not an enum", g.qualname);
      for (size_t i = 0; i < et->values().size(); ++i) {
        if (et->values()[i] && et->values()[i]->equals(value) &&
            et->values()[i]->tag() == value.tag()) {
          holder->type = et;
          holder->name = et->names()[i];
          return IValue(holder);
        }
      }
      fail("{} is not a value of enum '{}'", value.repr(), g.qualname);
    }
    if (opt_.resolveClass && opt_.resolveClass(g.qualname))
      fail("REDUCE on class '{}' (only enums are built this way)", g.qualname);
    // Placeholder: the member's name is unknown until code/ is compiled; use the value's repr.
    auto& slot = registry_->enums[g.qualname];
    if (!slot)
      slot = std::make_shared<EnumType>(g.qualname, value.type(), std::vector<std::string>{},
                                        std::vector<std::shared_ptr<IValue>>{});
    holder->type = slot;
    holder->name = value.repr();
    return IValue(holder);
  }

  // ---- tensors -------------------------------------------------------------------------------
  IValue persistentLoad(const IValue& pid) {
    // PyTorch <= 1.3 wrote a sixth element, always None (Python's view metadata).
    if (!pid.isTuple() || pid.toTuple()->elements.size() < 5 ||
        pid.toTuple()->elements.size() > 6 ||
        (pid.toTuple()->elements.size() == 6 && !pid.toTuple()->elements[5].isNone()))
      fail("persistent id is not a ('storage', type, key, location, numel) tuple");
    const auto& e = pid.toTuple()->elements;
    if (!e[0].isString() || e[0].toStringRef() != "storage")
      fail("persistent id does not start with 'storage'");
    Special* st = asSpecial(e[1]);
    if (!st || st->kind != Special::Kind::Global || st->global != GlobalKind::StorageType)
      fail("persistent id names no torch.<X>Storage type");
    if (!e[2].isString()) fail("persistent id key is a {} (expected str)", e[2].tagName());
    const std::string& key = e[2].toStringRef();
    if (!isSafeStorageKey(key)) fail("bad storage key '{}'", key);
    if (!e[3].isString()) fail("persistent id location is a {} (expected str)", e[3].tagName());
    const std::string& location = e[3].toStringRef();
    Device::parse(location);  // throws for device strings we cannot name; all map to cpu
    if (!e[4].isInt() || e[4].toInt() < 0) fail("persistent id numel is not a non-negative int");
    int64_t numel = e[4].toInt();
    size_t item = elementSize(st->dtype);
    if (static_cast<uint64_t>(numel) > std::numeric_limits<size_t>::max() / item)
      fail("storage '{}' of {} elements overflows", key, numel);
    size_t nbytes = static_cast<size_t>(numel) * item;

    auto s = std::make_shared<Special>();
    s->kind = Special::Kind::Storage;
    s->dtype = st->dtype;
    s->key = key;
    s->qualname = opt_.storageDir + key;
    auto it = storageIndex_.find(key);
    if (it != storageIndex_.end()) {
      const LoadedStorage& ls = result_.storages[it->second];
      if (nbytes > ls.storage.nbytes())
        fail("storage '{}' is used with {} bytes here but {} bytes before", key, nbytes,
             ls.storage.nbytes());
      s->storage = ls.storage;
      return makeSpecial(std::move(s));
    }
    LoadedStorage ls;
    ls.key = key;
    ls.dtype = st->dtype;
    ls.location = location;
    if (nbytes == 0) {
      ls.storage = Storage::allocate(0);  // the record may be empty or missing
    } else {
      if (!opt_.readStorage) fail("persistent id '{}' but no storage records are available", key);
      RecordData rd = opt_.readStorage(key);
      if (rd.size < nbytes && opt_.shortRecordsAsPlaceholders)
        rd = placeholderRecord(nbytes, opt_.place);
      if (rd.size < nbytes)
        fail("storage '{}' needs {} bytes ({} x {}) but record '{}{}' holds {}", key, nbytes, numel,
             dtypeName(st->dtype), opt_.storageDir, key, rd.size);
      if (rd.size > nbytes)
        result_.warnings.push_back(fmt::format("record '{}{}' holds {} bytes; its storage uses {}",
                                               opt_.storageDir, key, rd.size, nbytes));
      ls.storage = Storage::wrap(const_cast<std::byte*>(rd.data), nbytes, rd.owner);
    }
    s->storage = ls.storage;
    storageIndex_[key] = result_.storages.size();
    result_.storages.push_back(std::move(ls));
    return makeSpecial(std::move(s));
  }

  IntList intTuple(const IValue& v, const char* what, const std::string& fn) {
    std::vector<IValue> const* items = nullptr;
    if (v.isTuple())
      items = &v.toTuple()->elements;
    else if (v.isList())
      items = &v.toList()->list;
    else
      fail("'{}' {} is a {} (expected a tuple of ints)", fn, what, v.tagName());
    IntList out;
    for (const auto& x : *items) {
      if (!x.isInt()) fail("'{}' {} holds a {} (expected int)", fn, what, x.tagName());
      out.push_back(x.toInt());
    }
    return out;
  }

  IValue rebuildTensor(const Special& g, const std::vector<IValue>& a, bool quantized) {
    Special* st = asSpecial(a[0]);
    if (!st || st->kind != Special::Kind::Storage)
      fail("'{}' argument 0 is a {} (expected a storage)", g.qualname, a[0].tagName());
    if (!a[1].isInt())
      fail("'{}' storage offset is a {} (expected int)", g.qualname, a[1].tagName());
    int64_t offset = a[1].toInt();
    IntList sizes = intTuple(a[2], "size", g.qualname);
    IntList strides = intTuple(a[3], "stride", g.qualname);
    size_t rgIndex = quantized ? 5 : 4;
    if (!a[rgIndex].isBool())
      fail("'{}' requires_grad is a {} (expected bool)", g.qualname, a[rgIndex].tagName());
    if (!quantized && a.size() == 7 && a[6].isDict()) {
      for (const auto& [k, v] : a[6].toDict()->entries())
        if (v.isBool() && v.toBool())
          fail("tensor on storage '{}' has math bit {} set (conj/neg views are not supported)",
               st->key, k.repr());
    }
    if (quantized != isQuantizedType(st->dtype))
      fail("'{}' on a {} storage", g.qualname, dtypeName(st->dtype));

    Tensor t;
    try {
      if (st->dtype == ScalarType::QUInt4x2 || st->dtype == ScalarType::QUInt2x4)
        t = packedTensor(st, offset, sizes, strides);
      else
        t = Tensor::fromStorage(st->storage, offset, sizes, strides, st->dtype, Device());
    } catch (const Error& e) {
      fail("tensor on storage '{}': {}", st->qualname, e.message());
    }
    t.setRequiresGrad(a[rgIndex].toBool());
    if (quantized) t.setQuantizer(quantizer(g, a[4], t));
    return IValue(t);
  }

  /// Sub-byte packed quantized dtypes: `perByte` values share a byte; check bounds in values.
  Tensor packedTensor(Special* st, int64_t offset, const IntList& sizes, const IntList& strides) {
    int64_t perByte = st->dtype == ScalarType::QUInt4x2 ? 2 : 4;
    if (sizes.size() != strides.size()) fail("sizes and strides differ in length");
    int64_t n = checkedNumel(sizes);
    if (offset < 0) fail("negative storage offset {}", offset);
    if (n > 0) {
      // Same rule as Tensor::fromStorage, counting values instead of bytes.
      int64_t maxIndex = offset;
      for (size_t i = 0; i < sizes.size(); ++i) {
        if (strides[i] < 0) fail("negative stride");
        int64_t extent = sizes[i] - 1;
        if (strides[i] != 0 &&
            extent > (std::numeric_limits<int64_t>::max() - maxIndex) / strides[i])
          fail("tensor extent overflows");
        maxIndex += extent * strides[i];
      }
      uint64_t available = static_cast<uint64_t>(st->storage.nbytes()) * perByte;
      if (static_cast<uint64_t>(maxIndex) >= available)
        fail("packed tensor reaches value {} but its storage holds {}", maxIndex, available);
    }
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = st->storage;
    impl->storageOffset = offset;
    impl->sizes = sizes;
    impl->strides = strides;
    impl->dtype = st->dtype;
    return Tensor(std::move(impl));
  }

  std::shared_ptr<QuantizerInfo> quantizer(const Special& g, const IValue& qp, const Tensor& t) {
    if (!qp.isTuple() || qp.toTuple()->elements.empty())
      fail("'{}' qparams are not a tuple", g.qualname);
    const auto& q = qp.toTuple()->elements;
    Special* qs = asSpecial(q[0]);
    if (!qs || qs->kind != Special::Kind::Global || qs->global != GlobalKind::QScheme)
      fail("'{}' qparams do not start with a torch qscheme", g.qualname);
    auto info = std::make_shared<QuantizerInfo>();
    info->scheme = qs->qscheme;
    using S = QuantizerInfo::Scheme;
    if (qs->qscheme == S::PerTensorAffine || qs->qscheme == S::PerTensorSymmetric) {
      if (q.size() != 3 || !q[1].isDouble() || !q[2].isInt())
        fail("per-tensor qparams are not (qscheme, float scale, int zero_point)");
      info->scale = q[1].toDouble();
      info->zeroPoint = q[2].toInt();
      return info;
    }
    if (q.size() != 4 || !q[1].isTensor() || !q[2].isTensor() || !q[3].isInt())
      fail("per-channel qparams are not (qscheme, Tensor scales, Tensor zero_points, int axis)");
    Tensor scales = q[1].toTensor(), zps = q[2].toTensor();
    int64_t axis = q[3].toInt();
    if (axis < 0 || axis >= t.dim())
      fail("per-channel axis {} out of range for {} dims", axis, t.dim());
    if (scales.dim() != 1 || zps.dim() != 1 || scales.size(0) != t.size(axis) ||
        zps.size(0) != t.size(axis))
      fail("per-channel scales {} / zero points {} do not match size {} of dim {}",
           sizesToString(scales.sizes()), sizesToString(zps.sizes()), t.size(axis), axis);
    info->scales = scales.impl();
    info->zeroPoints = zps.impl();
    info->axis = axis;
    return info;
  }

  void finish() {
    // Objects never BUILT still get their (placeholder) class.
    for (const IValue& v : keepAlive_) {
      if (!v.isObject()) continue;
      ObjectPtr o = v.toObject();
      auto it = placeholders_.find(o.get());
      if (it == placeholders_.end()) continue;
      bool isModule = false;
      if (opt_.isModuleHint)
        if (auto hint = opt_.isModuleHint(it->second.qualname)) isModule = *hint;
      o->type = registryClass(it->second.qualname, isModule);
      placeholderObjects_.push_back(o);
    }
    placeholders_.clear();
    for (auto& o : placeholderObjects_) o->resizeSlots();
  }

  struct PlaceholderState {
    std::string qualname;
  };

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  size_t opStart_ = 0;
  const UnpicklerOptions& opt_;
  std::shared_ptr<ClassRegistry> registry_;
  std::vector<IValue> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, IValue> memo_;
  std::unordered_map<const void*, Info> info_;
  std::vector<IValue> keepAlive_;
  std::unordered_map<std::string, size_t> storageIndex_;
  std::unordered_map<const Object*, PlaceholderState> placeholders_;
  std::unordered_set<const Object*> built_;
  std::vector<ObjectPtr> placeholderObjects_;
  UnpickleResult result_;
};

}  // namespace

std::optional<ScalarType> dtypeFromStorageName(std::string_view name) {
  constexpr std::string_view kSuffix = "Storage";
  if (name.size() <= kSuffix.size() || name.substr(name.size() - kSuffix.size()) != kSuffix)
    return std::nullopt;
  auto t = scalarTypeFromString(name.substr(0, name.size() - kSuffix.size()));
  if (!t || *t == ScalarType::Undefined) return std::nullopt;
  return t;
}

UnpickleResult unpickle(const void* data, size_t size, const UnpicklerOptions& options) {
  return Unpickler(data, size, options).run();
}

}  // namespace torchless
