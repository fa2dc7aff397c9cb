#pragma once
// The TorchScript type system (c10's jit_type.h in shape and in print).
//
// Types are immutable and shared (TypePtr = shared_ptr<const Type>), except ClassType, which
// is filled in while its source is compiled (attributes first, then methods).
//
// Two spellings, as in PyTorch:
//   str()            the IR's spelling:        int[]   Tensor?   Dict(str, Tensor)   (int, float)
//   annotationStr()  TorchScript source's:     List[int]  Optional[Tensor]  Dict[str, Tensor]
//                                              Tuple[int, float]
// and operator<< / reprStr() prints tensor details: Float(3, 4, strides=[4, 1], requires_grad=0,
// device=cpu).

#include "core/device.h"
#include "core/scalar_type.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace torchless {

struct IValue;
struct FunctionSchema;
class Function;

enum class TypeKind {
  AnyType,
  EnumType,
  AnyEnumType,
  TensorType,
  StorageType,
  TupleType,
  ListType,
  DictType,
  NumberType,
  FloatType,
  ComplexType,
  FutureType,
  AwaitType,
  RRefType,
  IntType,
  NoneType,
  StringType,
  GeneratorType,
  QuantizerType,
  BoolType,
  OptionalType,
  VarType,
  DeviceObjType,
  StreamObjType,
  FunctionType,
  ClassType,
  PyObjectType,
  CapsuleType,
  InterfaceType,
  QSchemeType,
  ScalarTypeType,
  LayoutType,
  MemoryFormatType,
  AnyListType,
  AnyTupleType,
  AnyClassType,
  UnionType,
  SymIntType,
  SymFloatType,
};

class Type;
using TypePtr = std::shared_ptr<const Type>;

/// Base of all types. Compare with ==: structural equality (class types: by name).
class Type : public std::enable_shared_from_this<Type> {
 public:
  explicit Type(TypeKind kind) : kind_(kind) {}
  virtual ~Type() = default;
  TypeKind kind() const { return kind_; }

  /// The IR spelling (`int[]`, `Tensor?`, `Dict(str, int)`).
  virtual std::string str() const = 0;
  /// The TorchScript source spelling (`List[int]`, `Optional[Tensor]`).
  virtual std::string annotationStr() const { return str(); }
  /// What the IR printer shows for a value of this type (tensor details included).
  std::string reprStr() const;
  /// Structural equality.
  virtual bool equals(const Type& rhs) const;
  /// PyTorch's subtyping: Int <: Number, T <: Optional[T], None <: Optional[T], T <: Any,
  /// covariant tuples, invariant lists and dicts, Float(3, 4) <: Tensor, class <: interface.
  virtual bool isSubtypeOf(const Type& rhs) const;
  /// Contained types in order (list element, dict key and value, tuple elements ...).
  virtual std::vector<TypePtr> containedTypes() const { return {}; }
  /// True for types mentioning a type variable (schema `t`, `t[]`).
  bool hasFreeVariables() const;

  template <typename T>
  const T* cast() const {
    return kind_ == T::Kind ? static_cast<const T*>(this) : nullptr;
  }
  template <typename T>
  const T& expect() const;
  template <typename T>
  std::shared_ptr<const T> castPtr() const {
    return kind_ == T::Kind ? std::static_pointer_cast<const T>(shared_from_this()) : nullptr;
  }
  TypePtr ptr() const { return shared_from_this(); }

 private:
  TypeKind kind_;
};

bool operator==(const Type& a, const Type& b);
inline bool operator!=(const Type& a, const Type& b) { return !(a == b); }
/// Prints as the IR printer does (see Type::reprStr).
std::ostream& operator<<(std::ostream& out, const Type& t);

// ---- singletons ----------------------------------------------------------------------------
#define TORCHLESS_SINGLETON_TYPE(NAME, STR, ANNOT)               \
  class NAME : public Type {                                     \
   public:                                                       \
    static constexpr TypeKind Kind = TypeKind::NAME;             \
    NAME() : Type(Kind) {}                                       \
    static const TypePtr& get();                                 \
    std::string str() const override { return STR; }             \
    std::string annotationStr() const override { return ANNOT; } \
  };

TORCHLESS_SINGLETON_TYPE(AnyType, "Any", "Any")
TORCHLESS_SINGLETON_TYPE(NumberType, "Scalar", "number")
TORCHLESS_SINGLETON_TYPE(FloatType, "float", "float")
TORCHLESS_SINGLETON_TYPE(ComplexType, "complex", "complex")
TORCHLESS_SINGLETON_TYPE(IntType, "int", "int")
TORCHLESS_SINGLETON_TYPE(SymIntType, "SymInt", "int")
TORCHLESS_SINGLETON_TYPE(SymFloatType, "SymFloat", "float")
TORCHLESS_SINGLETON_TYPE(BoolType, "bool", "bool")
TORCHLESS_SINGLETON_TYPE(StringType, "str", "str")
TORCHLESS_SINGLETON_TYPE(NoneType, "NoneType", "NoneType")
TORCHLESS_SINGLETON_TYPE(DeviceObjType, "Device", "Device")
TORCHLESS_SINGLETON_TYPE(StreamObjType, "Stream", "Stream")
TORCHLESS_SINGLETON_TYPE(GeneratorType, "Generator", "Generator")
TORCHLESS_SINGLETON_TYPE(QuantizerType, "Quantizer", "Quantizer")
TORCHLESS_SINGLETON_TYPE(StorageType, "Storage", "Storage")
TORCHLESS_SINGLETON_TYPE(CapsuleType, "Capsule", "Capsule")
TORCHLESS_SINGLETON_TYPE(PyObjectType, "PyObject", "PyObject")
TORCHLESS_SINGLETON_TYPE(QSchemeType, "QScheme", "QScheme")
TORCHLESS_SINGLETON_TYPE(ScalarTypeType, "ScalarType", "int")
TORCHLESS_SINGLETON_TYPE(LayoutType, "Layout", "int")
TORCHLESS_SINGLETON_TYPE(MemoryFormatType, "MemoryFormat", "int")
TORCHLESS_SINGLETON_TYPE(AnyListType, "list", "list")
TORCHLESS_SINGLETON_TYPE(AnyTupleType, "tuple", "tuple")
TORCHLESS_SINGLETON_TYPE(AnyClassType, "AnyClassType", "AnyClassType")
TORCHLESS_SINGLETON_TYPE(AnyEnumType, "AnyEnumType", "AnyEnumType")
#undef TORCHLESS_SINGLETON_TYPE

/// A type variable of a schema (`t`, `t1`), bound during overload matching.
class VarType : public Type {
 public:
  static constexpr TypeKind Kind = TypeKind::VarType;
  explicit VarType(std::string name) : Type(Kind), name_(std::move(name)) {}
  static TypePtr create(std::string name) { return std::make_shared<VarType>(std::move(name)); }
  const std::string& name() const { return name_; }
  std::string str() const override { return name_; }
  bool equals(const Type& rhs) const override;

 private:
  std::string name_;
};

/// TensorType: a tensor with optionally known dtype, sizes (per dim), strides,
/// requires_grad and device. All unknown = plain `Tensor`.
class TensorType : public Type {
 public:
  static constexpr TypeKind Kind = TypeKind::TensorType;
  TensorType() : Type(Kind) {}
  /// `Tensor` with nothing known.
  static const TypePtr& get();
  static std::shared_ptr<const TensorType> create(
      std::optional<ScalarType> dtype, std::optional<std::vector<std::optional<int64_t>>> sizes,
      std::optional<std::vector<std::optional<int64_t>>> strides, std::optional<bool> requiresGrad,
      std::optional<Device> device, std::optional<bool> undefined = std::nullopt);
  /// A complete type: every size and stride known.
  static std::shared_ptr<const TensorType> createContiguous(ScalarType dtype, Device device,
                                                            const std::vector<int64_t>& sizes);

  std::optional<ScalarType> scalarType() const { return dtype_; }
  const std::optional<std::vector<std::optional<int64_t>>>& sizes() const { return sizes_; }
  const std::optional<std::vector<std::optional<int64_t>>>& strides() const { return strides_; }
  std::optional<bool> requiresGrad() const { return requiresGrad_; }
  const std::optional<Device>& device() const { return device_; }
  std::optional<bool> undefined() const { return undefined_; }
  std::optional<size_t> dim() const {
    return sizes_ ? std::optional<size_t>(sizes_->size()) : std::nullopt;
  }
  /// Nothing known (prints as `Tensor`).
  bool isUnshaped() const;

  std::string str() const override { return "Tensor"; }
  bool equals(const Type& rhs) const override;
  bool isSubtypeOf(const Type& rhs) const override;
  /// The least specific type that both this and `other` are subtypes of (properties that
  /// disagree become unknown), as TensorType::merge.
  std::shared_ptr<const TensorType> merge(const TensorType& other) const;

 private:
  std::optional<ScalarType> dtype_;
  std::optional<std::vector<std::optional<int64_t>>> sizes_;
  std::optional<std::vector<std::optional<int64_t>>> strides_;
  std::optional<bool> requiresGrad_;
  std::optional<Device> device_;
  std::optional<bool> undefined_;
};

/// A type with one element type: List[T], Optional[T], Future[T], RRef[T], Await[T].
template <TypeKind K>
class SingleElementType : public Type {
 public:
  static constexpr TypeKind Kind = K;
  explicit SingleElementType(TypePtr elem) : Type(K), elem_(std::move(elem)) {}
  const TypePtr& getElementType() const { return elem_; }
  std::vector<TypePtr> containedTypes() const override { return {elem_}; }

 protected:
  TypePtr elem_;
};

class ListType : public SingleElementType<TypeKind::ListType> {
 public:
  using SingleElementType::SingleElementType;
  static TypePtr create(TypePtr elem) { return std::make_shared<ListType>(std::move(elem)); }
  static const TypePtr& ofTensors();
  static const TypePtr& ofInts();
  static const TypePtr& ofFloats();
  static const TypePtr& ofBools();
  static const TypePtr& ofStrings();
  std::string str() const override { return elem_->str() + "[]"; }
  std::string annotationStr() const override { return "List[" + elem_->annotationStr() + "]"; }
  bool isSubtypeOf(const Type& rhs) const override;
};

class OptionalType : public SingleElementType<TypeKind::OptionalType> {
 public:
  using SingleElementType::SingleElementType;
  /// Optional[T]; Optional[Optional[T]] collapses to Optional[T].
  static TypePtr create(TypePtr elem);
  static const TypePtr& ofTensor();
  std::string str() const override { return elem_->str() + "?"; }
  std::string annotationStr() const override { return "Optional[" + elem_->annotationStr() + "]"; }
  bool isSubtypeOf(const Type& rhs) const override;
};

class FutureType : public SingleElementType<TypeKind::FutureType> {
 public:
  using SingleElementType::SingleElementType;
  static TypePtr create(TypePtr elem) { return std::make_shared<FutureType>(std::move(elem)); }
  std::string str() const override { return "Future(" + elem_->str() + ")"; }
  std::string annotationStr() const override { return "Future[" + elem_->annotationStr() + "]"; }
  bool isSubtypeOf(const Type& rhs) const override;
};

class AwaitType : public SingleElementType<TypeKind::AwaitType> {
 public:
  using SingleElementType::SingleElementType;
  static TypePtr create(TypePtr elem) { return std::make_shared<AwaitType>(std::move(elem)); }
  std::string str() const override { return "Await(" + elem_->str() + ")"; }
  std::string annotationStr() const override { return "Await[" + elem_->annotationStr() + "]"; }
};

class RRefType : public SingleElementType<TypeKind::RRefType> {
 public:
  using SingleElementType::SingleElementType;
  static TypePtr create(TypePtr elem) { return std::make_shared<RRefType>(std::move(elem)); }
  std::string str() const override { return "RRef(" + elem_->str() + ")"; }
  std::string annotationStr() const override { return "RRef[" + elem_->annotationStr() + "]"; }
};

class DictType : public Type {
 public:
  static constexpr TypeKind Kind = TypeKind::DictType;
  DictType(TypePtr key, TypePtr value)
      : Type(Kind), key_(std::move(key)), value_(std::move(value)) {}
  static TypePtr create(TypePtr key, TypePtr value) {
    return std::make_shared<DictType>(std::move(key), std::move(value));
  }
  const TypePtr& getKeyType() const { return key_; }
  const TypePtr& getValueType() const { return value_; }
  std::vector<TypePtr> containedTypes() const override { return {key_, value_}; }
  std::string str() const override { return "Dict(" + key_->str() + ", " + value_->str() + ")"; }
  std::string annotationStr() const override {
    return "Dict[" + key_->annotationStr() + ", " + value_->annotationStr() + "]";
  }

 private:
  TypePtr key_, value_;
};

/// Tuple[...], or a NamedTuple when it has a qualified name and field names.
class TupleType : public Type {
 public:
  static constexpr TypeKind Kind = TypeKind::TupleType;
  explicit TupleType(std::vector<TypePtr> elems) : Type(Kind), elems_(std::move(elems)) {}
  static TypePtr create(std::vector<TypePtr> elems) {
    return std::make_shared<TupleType>(std::move(elems));
  }
  /// A NamedTuple `qualname` with `fields` (and optional default values, null = none).
  static TypePtr createNamed(std::string qualname, std::vector<std::string> fields,
                             std::vector<TypePtr> types,
                             std::vector<std::shared_ptr<IValue>> defaults = {});
  const std::vector<TypePtr>& elements() const { return elems_; }
  std::vector<TypePtr> containedTypes() const override { return elems_; }
  bool isNamed() const { return !name_.empty(); }
  const std::string& name() const { return name_; }
  const std::vector<std::string>& fieldNames() const { return fields_; }
  const std::vector<std::shared_ptr<IValue>>& defaults() const { return defaults_; }
  std::string str() const override;
  std::string annotationStr() const override;
  bool equals(const Type& rhs) const override;
  bool isSubtypeOf(const Type& rhs) const override;

 private:
  std::vector<TypePtr> elems_;
  std::string name_;
  std::vector<std::string> fields_;
  std::vector<std::shared_ptr<IValue>> defaults_;
};

/// Union[A, B, ...]: flattened, deduplicated; a union of T and None is an OptionalType.
class UnionType : public Type {
 public:
  static constexpr TypeKind Kind = TypeKind::UnionType;
  explicit UnionType(std::vector<TypePtr> types) : Type(Kind), types_(std::move(types)) {}
  /// Returns the single type when only one remains, Optional[T] for {T, None}.
  static TypePtr create(std::vector<TypePtr> types);
  const std::vector<TypePtr>& types() const { return types_; }
  std::vector<TypePtr> containedTypes() const override { return types_; }
  std::string str() const override;
  std::string annotationStr() const override;
  bool equals(const Type& rhs) const override;
  bool isSubtypeOf(const Type& rhs) const override;

 private:
  std::vector<TypePtr> types_;
};

/// A function value (free function or method reference).
class FunctionType : public Type {
 public:
  static constexpr TypeKind Kind = TypeKind::FunctionType;
  explicit FunctionType(Function* fn) : Type(Kind), fn_(fn) {}
  static TypePtr create(Function* fn) { return std::make_shared<FunctionType>(fn); }
  Function* function() const { return fn_; }
  std::string str() const override { return "Function"; }
  bool equals(const Type& rhs) const override;

 private:
  Function* fn_;
};

/// A named enum class (`class Color(Enum)`) with its member names and values.
class EnumType : public Type {
 public:
  static constexpr TypeKind Kind = TypeKind::EnumType;
  EnumType(std::string qualname, TypePtr valueType, std::vector<std::string> names,
           std::vector<std::shared_ptr<IValue>> values)
      : Type(Kind),
        name_(std::move(qualname)),
        valueType_(std::move(valueType)),
        names_(std::move(names)),
        values_(std::move(values)) {}
  const std::string& name() const { return name_; }
  const TypePtr& valueType() const { return valueType_; }
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<std::shared_ptr<IValue>>& values() const { return values_; }
  std::string str() const override { return "Enum<" + name_ + ">"; }
  std::string annotationStr() const override { return name_; }
  bool equals(const Type& rhs) const override;
  bool isSubtypeOf(const Type& rhs) const override;

 private:
  std::string name_;
  TypePtr valueType_;
  std::vector<std::string> names_;
  std::vector<std::shared_ptr<IValue>> values_;
};

/// Base of script functions and methods. Defined by the IR layer (GraphFunction).
class Function {
 public:
  virtual ~Function() = default;
  /// Unqualified name ("forward").
  virtual const std::string& name() const = 0;
  /// Fully qualified name ("__torch__.M.forward").
  virtual std::string qualname() const = 0;
};

/// A module or script class (`__torch__.M`). Attributes keep declaration order, which is the
/// slot order of Objects of this type.
class ClassType : public Type {
 public:
  static constexpr TypeKind Kind = TypeKind::ClassType;
  struct Attribute {
    std::string name;
    TypePtr type;
    bool isParameter = false;
    bool isBuffer = false;
  };
  struct Constant {
    std::string name;
    std::shared_ptr<IValue> value;
  };

  ClassType(std::string qualname, bool isModule)
      : Type(Kind), name_(std::move(qualname)), isModule_(isModule) {}
  static std::shared_ptr<ClassType> create(std::string qualname, bool isModule) {
    return std::make_shared<ClassType>(std::move(qualname), isModule);
  }
  const std::string& name() const { return name_; }
  bool isModule() const { return isModule_; }
  std::string str() const override { return name_; }
  bool equals(const Type& rhs) const override;
  bool isSubtypeOf(const Type& rhs) const override;

  const std::vector<Attribute>& attributes() const { return attributes_; }
  /// Adds an attribute slot; returns its index. Throws torchless::Error on a duplicate name.
  size_t addAttribute(const std::string& name, TypePtr type, bool isParameter = false,
                      bool isBuffer = false);
  std::optional<size_t> findAttributeSlot(std::string_view name) const;
  const Attribute* findAttribute(std::string_view name) const;

  const std::vector<Constant>& constants() const { return constants_; }
  void addConstant(const std::string& name, std::shared_ptr<IValue> value);
  const IValue* findConstant(std::string_view name) const;

  const std::vector<Function*>& methods() const { return methods_; }
  void addMethod(Function* fn);
  Function* findMethod(std::string_view name) const;

  /// Forward hooks and pre-hooks, by method name (`__forward_hooks__`).
  std::vector<std::string> forwardHooks, forwardPreHooks;

 private:
  std::string name_;
  bool isModule_;
  std::vector<Attribute> attributes_;
  std::vector<Constant> constants_;
  std::vector<Function*> methods_;
};
using ClassTypePtr = std::shared_ptr<ClassType>;

/// `class I(Interface)` / `class I(ModuleInterface)`: a set of method signatures.
class InterfaceType : public Type {
 public:
  static constexpr TypeKind Kind = TypeKind::InterfaceType;
  InterfaceType(std::string qualname, bool isModule)
      : Type(Kind), name_(std::move(qualname)), isModule_(isModule) {}
  const std::string& name() const { return name_; }
  bool isModule() const { return isModule_; }
  std::string str() const override { return name_; }
  bool equals(const Type& rhs) const override;
  /// Method names with their schemas (schemas are owned by the IR layer).
  std::vector<std::pair<std::string, std::shared_ptr<const FunctionSchema>>> methods;

 private:
  std::string name_;
  bool isModule_;
};

// ---- relations -------------------------------------------------------------------------------

/// unifyTypes from PyTorch: the least type both are subtypes of, or nullopt. With
/// defaultToUnion, incompatible types unify to Union[t1, t2].
std::optional<TypePtr> unifyTypes(const TypePtr& t1, const TypePtr& t2,
                                  bool defaultToUnion = false);
/// Erases tensor details everywhere inside (Float(3) -> Tensor, List[Float(3)] -> Tensor[]).
TypePtr unshapedType(const TypePtr& t);
/// True if a value of type `t` may hold None (None, Optional, Union with None, Any).
bool canHoldNone(const Type& t);

/// Resolves a qualified class name (`__torch__.a.B`) to a type, or returns nullptr.
using TypeResolver = std::function<TypePtr(const std::string& qualname)>;

/// Parses TorchScript annotation syntax: `Optional[List[Tensor]]`, `Dict[str, Tuple[int, float]]`,
/// `Tuple[()]`, `Union[int, str]`, `__torch__.a.b.C` (through `resolver`). Throws
/// torchless::Error("unknown type name ...", place = column) on failure.
TypePtr parseTypeAnnotation(std::string_view text, const TypeResolver& resolver = nullptr);

template <typename T>
const T& Type::expect() const {
  const T* p = cast<T>();
  if (!p) throw std::logic_error("type " + str() + " is not the expected kind");
  return *p;
}

}  // namespace torchless
