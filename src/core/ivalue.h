#pragma once
// IValue: the value of any TorchScript type (c10::IValue in shape).
//
// Scalars (None, int, double, bool, complex, Device) are held inline; everything else
// (Tensor, str, List, Tuple, Dict, Object, Enum) by shared pointer, so copying an IValue
// aliases lists, dicts and objects as TorchScript requires. ScalarType, Layout and
// MemoryFormat are plain ints, as PyTorch encodes them.

#include "core/device.h"
#include "core/error.h"
#include "core/tensor.h"
#include "core/type.h"

#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace torchless {

struct IValue;
struct ListImpl;
struct TupleImpl;
struct DictImpl;
struct Object;
struct EnumHolder;

using ListPtr = std::shared_ptr<ListImpl>;
using TuplePtr = std::shared_ptr<TupleImpl>;
using DictPtr = std::shared_ptr<DictImpl>;
using ObjectPtr = std::shared_ptr<Object>;
using EnumPtr = std::shared_ptr<EnumHolder>;

struct IValue {
  enum class Tag : uint8_t {
    None,
    Tensor,
    Double,
    ComplexDouble,
    Int,
    Bool,
    String,
    List,
    Tuple,
    Dict,
    Object,
    Device,
    Enum,
    Uninitialized,
    Capsule,
  };

  IValue() = default;
  IValue(std::nullptr_t) {}  // NOLINT(google-explicit-constructor)
  IValue(Tensor t);          // NOLINT(google-explicit-constructor) (undefined -> None)
  IValue(double d) : tag_(Tag::Double) { p_.d = d; }    // NOLINT
  IValue(std::complex<double> c);                       // NOLINT
  IValue(int64_t i) : tag_(Tag::Int) { p_.i = i; }      // NOLINT
  IValue(int i) : tag_(Tag::Int) { p_.i = i; }          // NOLINT
  IValue(bool b) : tag_(Tag::Bool) { p_.b = b; }        // NOLINT
  IValue(std::string s);                                // NOLINT
  IValue(const char* s) : IValue(std::string(s)) {}     // NOLINT
  IValue(ListPtr l);                                    // NOLINT
  IValue(TuplePtr t);                                   // NOLINT
  IValue(DictPtr d);                                    // NOLINT
  IValue(ObjectPtr o);                                  // NOLINT
  IValue(EnumPtr e);                                    // NOLINT
  IValue(Device d) : tag_(Tag::Device) { p_.dev = d; }  // NOLINT
  static IValue uninitialized() {
    IValue v;
    v.tag_ = Tag::Uninitialized;
    return v;
  }
  /// An opaque C++ object (TorchBind state, prepacked weights). The holder keeps it alive.
  static IValue capsule(std::shared_ptr<void> p);

  Tag tag() const { return tag_; }
  /// "None", "Tensor", "int", ... for messages.
  const char* tagName() const;

  bool isNone() const { return tag_ == Tag::None; }
  bool isTensor() const { return tag_ == Tag::Tensor; }
  bool isDouble() const { return tag_ == Tag::Double; }
  bool isComplexDouble() const { return tag_ == Tag::ComplexDouble; }
  bool isInt() const { return tag_ == Tag::Int; }
  bool isBool() const { return tag_ == Tag::Bool; }
  bool isString() const { return tag_ == Tag::String; }
  bool isList() const { return tag_ == Tag::List; }
  bool isTuple() const { return tag_ == Tag::Tuple; }
  bool isDict() const { return tag_ == Tag::Dict; }
  bool isObject() const { return tag_ == Tag::Object; }
  bool isDevice() const { return tag_ == Tag::Device; }
  bool isEnum() const { return tag_ == Tag::Enum; }
  bool isCapsule() const { return tag_ == Tag::Capsule; }
  bool isScalar() const { return isInt() || isDouble() || isBool() || isComplexDouble(); }

  // Accessors throw torchless::Error("expected int but got Tensor") on a tag mismatch.
  Tensor toTensor() const;
  double toDouble() const;
  std::complex<double> toComplexDouble() const;
  int64_t toInt() const;
  bool toBool() const;
  const std::string& toStringRef() const;
  ListPtr toList() const;
  TuplePtr toTuple() const;
  DictPtr toDict() const;
  ObjectPtr toObject() const;
  EnumPtr toEnum() const;
  Device toDevice() const;
  const std::shared_ptr<void>& toCapsule() const;
  /// int, bool or double as double (a Scalar argument).
  double toScalarDouble() const;
  /// Convenience: a List[int] (or a single int) as a vector.
  std::vector<int64_t> toIntVector() const;
  std::vector<double> toDoubleVector() const;
  std::vector<Tensor> toTensorVector() const;

  /// Python's `==` for values (tensors compare by identity, as `is`).
  bool equals(const IValue& o) const;
  /// Python's `is`: same object for reference types, equal value for scalars.
  bool isSameIdentity(const IValue& o) const;
  /// Hash for dict keys (str, int, double, bool, Tensor by identity, tuples).
  size_t hash() const;
  /// str(value) as Python/TorchScript prints it: `1`, `1.5`, `True`, `[1, 2]`, `(1, 'a')`,
  /// `{'a': 1}`, tensors as print(tensor) does.
  std::string repr() const;
  /// The dynamic type of the value (TensorType::get() for tensors; lists carry their type).
  TypePtr type() const;

 private:
  [[noreturn]] void typeError(const char* expected) const;
  /// type() of a tuple with tuple elements, memoized per TupleImpl (Note [Shared values]).
  static TypePtr tupleTypeShared(const TupleImpl& t);
  Tag tag_ = Tag::None;
  union Payload {
    double d;
    int64_t i;
    bool b;
    Device dev;
    double c[2];
    Payload() : i(0) {}
  } p_;
  std::shared_ptr<void> ptr_;
};

/// A List[T]: element type plus values. Shared (aliased) through ListPtr.
struct ListImpl {
  TypePtr elementType;
  std::vector<IValue> list;
  static ListPtr create(TypePtr elementType, std::vector<IValue> values = {}) {
    auto l = std::make_shared<ListImpl>();
    l->elementType = std::move(elementType);
    l->list = std::move(values);
    return l;
  }
};

/// A tuple; `type` is set for NamedTuples (and may be set for plain ones).
struct TupleImpl {
  std::vector<IValue> elements;
  TypePtr type;
  static TuplePtr create(std::vector<IValue> elems, TypePtr type = nullptr) {
    auto t = std::make_shared<TupleImpl>();
    t->elements = std::move(elems);
    t->type = std::move(type);
    return t;
  }
};

/// A Dict[K, V] keeping insertion order (as Python's dict and c10::Dict do).
struct DictImpl {
  TypePtr keyType, valueType;

  static DictPtr create(TypePtr keyType, TypePtr valueType) {
    auto d = std::make_shared<DictImpl>();
    d->keyType = std::move(keyType);
    d->valueType = std::move(valueType);
    return d;
  }
  size_t size() const { return entries_.size(); }
  /// Inserts or overwrites (an overwrite keeps the key's original position).
  void insertOrAssign(const IValue& key, IValue value);
  /// Returns nullptr when absent.
  const IValue* find(const IValue& key) const;
  bool contains(const IValue& key) const { return find(key) != nullptr; }
  /// Removes key; returns false when absent.
  bool erase(const IValue& key);
  void clear();
  /// Entries in insertion order.
  const std::vector<std::pair<IValue, IValue>>& entries() const { return entries_; }

 private:
  struct KeyHash {
    size_t operator()(const IValue& v) const { return v.hash(); }
  };
  struct KeyEq {
    bool operator()(const IValue& a, const IValue& b) const { return a.equals(b); }
  };
  std::vector<std::pair<IValue, IValue>> entries_;
  std::unordered_map<IValue, size_t, KeyHash, KeyEq> index_;
};

/// An instance of a module or script class: one slot per attribute of its ClassType.
struct Object {
  ClassTypePtr type;
  std::vector<IValue> slots;

  static ObjectPtr create(ClassTypePtr type) {
    auto o = std::make_shared<Object>();
    o->slots.resize(type->attributes().size());
    o->type = std::move(type);
    return o;
  }
  /// Throws torchless::Error naming the class when there is no such attribute.
  const IValue& getAttr(std::string_view name) const;
  void setAttr(std::string_view name, IValue v);
  /// Resizes slots after attributes were added to the type.
  void resizeSlots() { slots.resize(type->attributes().size()); }
};

/// An enum member: its type, name and value.
struct EnumHolder {
  std::shared_ptr<const EnumType> type;
  std::string name;
  IValue value;
};

/// The Python number of a one-element tensor, as Tensor.item() gives it: float for floating
/// dtypes, bool for bool, int for integral ones (complex is not handled). Throws
/// torchless::Error when `t` has more or fewer than one element.
IValue itemIValue(const Tensor& t);

}  // namespace torchless
