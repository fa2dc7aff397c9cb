#include "core/ivalue.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <set>

namespace torchless {

IValue::IValue(Tensor t) {
  if (t.defined()) {
    tag_ = Tag::Tensor;
    ptr_ = t.impl();
  }
}
IValue::IValue(std::complex<double> c) : tag_(Tag::ComplexDouble) {
  p_.c[0] = c.real();
  p_.c[1] = c.imag();
}
IValue::IValue(std::string s)
    : tag_(Tag::String), ptr_(std::make_shared<std::string>(std::move(s))) {}
IValue::IValue(ListPtr l) : tag_(Tag::List), ptr_(std::move(l)) {}
IValue::IValue(TuplePtr t) : tag_(Tag::Tuple), ptr_(std::move(t)) {}
IValue::IValue(DictPtr d) : tag_(Tag::Dict), ptr_(std::move(d)) {}
IValue::IValue(ObjectPtr o) : tag_(Tag::Object), ptr_(std::move(o)) {}
IValue::IValue(EnumPtr e) : tag_(Tag::Enum), ptr_(std::move(e)) {}

IValue IValue::capsule(std::shared_ptr<void> p) {
  IValue v;
  v.tag_ = Tag::Capsule;
  v.ptr_ = std::move(p);
  return v;
}

const char* IValue::tagName() const {
  switch (tag_) {
    case Tag::None: return "None";
    case Tag::Tensor: return "Tensor";
    case Tag::Double: return "float";
    case Tag::ComplexDouble: return "complex";
    case Tag::Int: return "int";
    case Tag::Bool: return "bool";
    case Tag::String: return "str";
    case Tag::List: return "List";
    case Tag::Tuple: return "Tuple";
    case Tag::Dict: return "Dict";
    case Tag::Object: return "Object";
    case Tag::Device: return "Device";
    case Tag::Enum: return "Enum";
    case Tag::Uninitialized: return "Uninitialized";
    case Tag::Capsule: return "Capsule";
  }
  return "?";
}

void IValue::typeError(const char* expected) const {
  throw Error(fmt::format("expected a value of type {} but got {}", expected, tagName()));
}

Tensor IValue::toTensor() const {
  if (!isTensor()) typeError("Tensor");
  return Tensor(std::static_pointer_cast<TensorImpl>(ptr_));
}
double IValue::toDouble() const {
  if (!isDouble()) typeError("float");
  return p_.d;
}
std::complex<double> IValue::toComplexDouble() const {
  if (!isComplexDouble()) typeError("complex");
  return {p_.c[0], p_.c[1]};
}
int64_t IValue::toInt() const {
  if (!isInt()) typeError("int");
  return p_.i;
}
bool IValue::toBool() const {
  if (!isBool()) typeError("bool");
  return p_.b;
}
const std::string& IValue::toStringRef() const {
  if (!isString()) typeError("str");
  return *static_cast<const std::string*>(ptr_.get());
}
ListPtr IValue::toList() const {
  if (!isList()) typeError("List");
  return std::static_pointer_cast<typename ListPtr::element_type>(ptr_);
}
TuplePtr IValue::toTuple() const {
  if (!isTuple()) typeError("Tuple");
  return std::static_pointer_cast<typename TuplePtr::element_type>(ptr_);
}
DictPtr IValue::toDict() const {
  if (!isDict()) typeError("Dict");
  return std::static_pointer_cast<typename DictPtr::element_type>(ptr_);
}
ObjectPtr IValue::toObject() const {
  if (!isObject()) typeError("Object");
  return std::static_pointer_cast<typename ObjectPtr::element_type>(ptr_);
}
EnumPtr IValue::toEnum() const {
  if (!isEnum()) typeError("Enum");
  return std::static_pointer_cast<typename EnumPtr::element_type>(ptr_);
}
Device IValue::toDevice() const {
  if (!isDevice()) typeError("Device");
  return p_.dev;
}
const std::shared_ptr<void>& IValue::toCapsule() const {
  if (!isCapsule()) typeError("Capsule");
  return ptr_;
}

double IValue::toScalarDouble() const {
  switch (tag_) {
    case Tag::Double: return p_.d;
    case Tag::Int: return static_cast<double>(p_.i);
    case Tag::Bool: return p_.b ? 1.0 : 0.0;
    default: typeError("Scalar");
  }
}

std::vector<int64_t> IValue::toIntVector() const {
  if (isInt()) return {p_.i};
  std::vector<int64_t> out;
  for (const auto& v : toList()->list) out.push_back(v.toInt());
  return out;
}
std::vector<double> IValue::toDoubleVector() const {
  std::vector<double> out;
  for (const auto& v : toList()->list) out.push_back(v.toScalarDouble());
  return out;
}
std::vector<Tensor> IValue::toTensorVector() const {
  std::vector<Tensor> out;
  for (const auto& v : toList()->list) out.push_back(v.toTensor());
  return out;
}

bool IValue::isSameIdentity(const IValue& o) const {
  if (tag_ != o.tag_) return false;
  switch (tag_) {
    case Tag::None: return true;
    case Tag::Int: return p_.i == o.p_.i;
    case Tag::Double: return p_.d == o.p_.d;
    case Tag::Bool: return p_.b == o.p_.b;
    case Tag::Device: return p_.dev == o.p_.dev;
    case Tag::String: return toStringRef() == o.toStringRef();
    default: return ptr_ == o.ptr_;
  }
}

namespace {
// Pairs of containers already found equal during one equals() call: with shared values
// (Note [Shared values]) each pair of nodes is compared once, so the walk is linear in the DAGs.
struct EqualsMemo {
  std::set<std::pair<const void*, const void*>> equal;
};

bool equalsImpl(const IValue& a, const IValue& b, std::unique_ptr<EqualsMemo>& memo);

bool elementsEqual(const std::vector<IValue>& a, const std::vector<IValue>& b,
                   std::unique_ptr<EqualsMemo>& memo) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!equalsImpl(a[i], b[i], memo)) return false;
  return true;
}

bool equalsImpl(const IValue& a, const IValue& o, std::unique_ptr<EqualsMemo>& memo) {
  using Tag = IValue::Tag;
  if (a.tag() != o.tag() || (a.tag() != Tag::List && a.tag() != Tag::Tuple && a.tag() != Tag::Dict))
    return a.equals(o);
  const void* pa = a.tag() == Tag::List    ? static_cast<const void*>(a.toList().get())
                   : a.tag() == Tag::Tuple ? static_cast<const void*>(a.toTuple().get())
                                           : static_cast<const void*>(a.toDict().get());
  const void* po = o.tag() == Tag::List    ? static_cast<const void*>(o.toList().get())
                   : o.tag() == Tag::Tuple ? static_cast<const void*>(o.toTuple().get())
                                           : static_cast<const void*>(o.toDict().get());
  if (pa == po) return true;  // Python's containers compare `is` first, too
  if (!memo) memo = std::make_unique<EqualsMemo>();
  if (memo->equal.count({pa, po})) return true;
  bool r;
  if (a.tag() == Tag::List) {
    r = elementsEqual(a.toList()->list, o.toList()->list, memo);
  } else if (a.tag() == Tag::Tuple) {
    r = elementsEqual(a.toTuple()->elements, o.toTuple()->elements, memo);
  } else {
    const auto& x = *a.toDict();
    const auto& y = *o.toDict();
    r = x.size() == y.size();
    for (const auto& [k, v] : x.entries()) {
      if (!r) break;
      const IValue* w = y.find(k);
      r = w && equalsImpl(v, *w, memo);
    }
  }
  if (r) memo->equal.insert({pa, po});
  return r;
}
}  // namespace

bool IValue::equals(const IValue& o) const {
  // Numbers compare across int/float/bool as Python does.
  if (isScalar() && o.isScalar() && !isComplexDouble() && !o.isComplexDouble()) {
    if (isInt() && o.isInt()) return p_.i == o.p_.i;
    return toScalarDouble() == o.toScalarDouble();
  }
  if (tag_ != o.tag_) return false;
  switch (tag_) {
    case Tag::None:
    case Tag::Uninitialized: return true;
    case Tag::ComplexDouble: return p_.c[0] == o.p_.c[0] && p_.c[1] == o.p_.c[1];
    case Tag::String: return toStringRef() == o.toStringRef();
    case Tag::Device: return p_.dev == o.p_.dev;
    case Tag::List:
    case Tag::Tuple:
    case Tag::Dict: {
      std::unique_ptr<EqualsMemo> memo;
      return equalsImpl(*this, o, memo);
    }
    case Tag::Enum:
      return toEnum()->type->name() == o.toEnum()->type->name() &&
             toEnum()->name == o.toEnum()->name;
    default: return ptr_ == o.ptr_;
  }
}

size_t IValue::hash() const {
  switch (tag_) {
    case Tag::None: return 0;
    case Tag::Int: return std::hash<int64_t>()(p_.i);
    case Tag::Bool: return std::hash<int64_t>()(p_.b ? 1 : 0);
    case Tag::Double: {
      double d = p_.d;
      if (d == std::floor(d) && std::fabs(d) < 9.2e18)
        return std::hash<int64_t>()(static_cast<int64_t>(d));  // 1.0 and 1 hash alike
      return std::hash<double>()(d);
    }
    case Tag::String: return std::hash<std::string>()(toStringRef());
    case Tag::Device: return std::hash<int>()(static_cast<int>(p_.dev.type) * 1000 + p_.dev.index);
    case Tag::Tuple: {
      // Memoized per TupleImpl (Note [Shared values]): a shared key hashes in linear time.
      std::unordered_map<const TupleImpl*, size_t> memo;
      std::function<size_t(const TupleImpl&)> tupleHash = [&](const TupleImpl& t) -> size_t {
        auto it = memo.find(&t);
        if (it != memo.end()) return it->second;
        size_t h = 0x345678;
        for (const auto& e : t.elements)
          h = h * 1000003 ^ (e.isTuple() ? tupleHash(*e.toTuple()) : e.hash());
        memo.emplace(&t, h);
        return h;
      };
      return tupleHash(*toTuple());
    }
    case Tag::Enum: return std::hash<std::string>()(toEnum()->name);
    case Tag::Tensor:
    case Tag::Object: return std::hash<const void*>()(ptr_.get());
    default: throw Error(fmt::format("unhashable type: '{}'", tagName()));
  }
}

namespace {
std::string reprString(const std::string& s) {
  // Python's repr: single quotes unless the string has a single quote and no double quote.
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  return out + q;
}
}  // namespace

/// Python's repr of a float: shortest round-trip digits, `1.0`, `1e+20`, `inf`, `nan`.
static std::string reprDouble(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

namespace {
// Text past this many bytes is refused: a value shared through the pickle memo can expand to far
// more text than memory holds (Note [Shared values]).
constexpr size_t kMaxReprBytes = size_t{64} << 20;

void reprInto(const IValue& v, std::string& s) {
  if (s.size() > kMaxReprBytes)
    throw Error(
        fmt::format("value too large to print: its text passes {} MiB (a value shared "
                    "many times inside itself?)",
                    kMaxReprBytes >> 20));
  switch (v.tag()) {
    case IValue::Tag::List: {
      s += '[';
      bool first = true;
      for (const auto& e : v.toList()->list) {
        if (!first) s += ", ";
        first = false;
        reprInto(e, s);
      }
      s += ']';
      return;
    }
    case IValue::Tag::Tuple: {
      const auto& e = v.toTuple()->elements;
      s += '(';
      for (size_t i = 0; i < e.size(); ++i) {
        if (i) s += ", ";
        reprInto(e[i], s);
      }
      s += e.size() == 1 ? ",)" : ")";
      return;
    }
    case IValue::Tag::Dict: {
      s += '{';
      bool first = true;
      for (const auto& [k, x] : v.toDict()->entries()) {
        if (!first) s += ", ";
        first = false;
        reprInto(k, s);
        s += ": ";
        reprInto(x, s);
      }
      s += '}';
      return;
    }
    default: s += v.repr(); return;
  }
}
}  // namespace

std::string IValue::repr() const {
  switch (tag_) {
    case Tag::None: return "None";
    case Tag::Uninitialized: return "<uninitialized>";
    case Tag::Tensor: return toTensor().toString();
    case Tag::Double: return reprDouble(p_.d);
    case Tag::ComplexDouble:
      return fmt::format("({}{}{}j)", reprDouble(p_.c[0]), p_.c[1] < 0 ? "" : "+",
                         reprDouble(p_.c[1]));
    case Tag::Int: return std::to_string(p_.i);
    case Tag::Bool: return p_.b ? "True" : "False";
    case Tag::String: return reprString(toStringRef());
    case Tag::Device:
      return fmt::format("device(type='{}'{})", deviceTypeName(p_.dev.type),
                         p_.dev.index >= 0 ? fmt::format(", index={}", p_.dev.index) : "");
    case Tag::List:
    case Tag::Tuple:
    case Tag::Dict: {
      std::string s;
      reprInto(*this, s);
      return s;
    }
    case Tag::Object: return fmt::format("<{} object>", toObject()->type->name());
    case Tag::Enum: return fmt::format("{}.{}", toEnum()->type->name(), toEnum()->name);
    case Tag::Capsule: return "<capsule>";
  }
  return "?";
}

// Note [Shared values]
// A pickle's memo lets one tuple, list or dict appear many times in a value, so a 2 KB file can
// hold a DAG whose expansion has 2^100 leaves ("billion laughs"). The unpickler keeps the
// sharing (memo entries are the same IValue), and every walk over values must be linear in the
// DAG: memoize per node (type inference here, hashing, freezing), or bound the output (repr).
namespace {
TypePtr tupleTypeMemo(const TupleImpl& t, std::unordered_map<const TupleImpl*, TypePtr>& memo) {
  if (t.type) return t.type;
  auto it = memo.find(&t);
  if (it != memo.end()) return it->second;
  std::vector<TypePtr> elems;
  elems.reserve(t.elements.size());
  for (const auto& e : t.elements)
    elems.push_back(e.isTuple() ? tupleTypeMemo(*e.toTuple(), memo) : e.type());
  TypePtr r = TupleType::create(std::move(elems));
  memo.emplace(&t, r);
  return r;
}
}  // namespace

TypePtr IValue::tupleTypeShared(const TupleImpl& t) {
  std::unordered_map<const TupleImpl*, TypePtr> memo;
  return tupleTypeMemo(t, memo);
}

TypePtr IValue::type() const {
  switch (tag_) {
    case Tag::None: return NoneType::get();
    case Tag::Uninitialized: return AnyType::get();
    case Tag::Tensor: return TensorType::get();
    case Tag::Double: return FloatType::get();
    case Tag::ComplexDouble: return ComplexType::get();
    case Tag::Int: return IntType::get();
    case Tag::Bool: return BoolType::get();
    case Tag::String: return StringType::get();
    case Tag::Device: return DeviceObjType::get();
    case Tag::List: return ListType::create(toList()->elementType);
    case Tag::Tuple: {
      const auto& t = *toTuple();
      if (t.type) return t.type;
      bool nested = false;
      for (const auto& e : t.elements) nested = nested || e.isTuple();
      std::vector<TypePtr> elems;
      if (!nested) {
        for (const auto& e : t.elements) elems.push_back(e.type());
        return TupleType::create(std::move(elems));
      }
      return tupleTypeShared(t);
    }
    case Tag::Dict: return DictType::create(toDict()->keyType, toDict()->valueType);
    case Tag::Object: return toObject()->type;
    case Tag::Enum: return toEnum()->type;
    case Tag::Capsule: return CapsuleType::get();
  }
  return AnyType::get();
}

// ---- DictImpl --------------------------------------------------------------------------------

void DictImpl::insertOrAssign(const IValue& key, IValue value) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    entries_[it->second].second = std::move(value);
    return;
  }
  index_.emplace(key, entries_.size());
  entries_.emplace_back(key, std::move(value));
}

const IValue* DictImpl::find(const IValue& key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

bool DictImpl::erase(const IValue& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  size_t pos = it->second;
  index_.erase(it);
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(pos));
  for (auto& [k, i] : index_)
    if (i > pos) --i;
  return true;
}

void DictImpl::clear() {
  entries_.clear();
  index_.clear();
}

// ---- Object ---------------------------------------------------------------------------------

const IValue& Object::getAttr(std::string_view name) const {
  auto slot = type->findAttributeSlot(name);
  if (!slot) throw Error(fmt::format("'{}' object has no attribute '{}'", type->name(), name));
  return slots.at(*slot);
}

void Object::setAttr(std::string_view name, IValue v) {
  auto slot = type->findAttributeSlot(name);
  if (!slot) throw Error(fmt::format("'{}' object has no attribute '{}'", type->name(), name));
  if (slots.size() <= *slot) resizeSlots();
  slots[*slot] = std::move(v);
}

IValue itemIValue(const Tensor& t) {
  if (t.numel() != 1)
    throw Error(fmt::format("a Tensor with {} elements cannot be converted to Scalar", t.numel()));
  if (isFloatingType(t.dtype())) return IValue(t.itemDouble());
  if (t.dtype() == ScalarType::Bool) return IValue(t.itemBool());
  return IValue(t.itemInt());
}

}  // namespace torchless
