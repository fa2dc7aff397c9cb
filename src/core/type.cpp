#include "core/type.h"

#include "core/error.h"
#include "core/ivalue.h"

#include <algorithm>
#include <sstream>

namespace torchless {

#define TORCHLESS_SINGLETON_GET(NAME)                         \
  const TypePtr& NAME::get() {                                \
    static const TypePtr instance = std::make_shared<NAME>(); \
    return instance;                                          \
  }
TORCHLESS_SINGLETON_GET(AnyType)
TORCHLESS_SINGLETON_GET(NumberType)
TORCHLESS_SINGLETON_GET(FloatType)
TORCHLESS_SINGLETON_GET(ComplexType)
TORCHLESS_SINGLETON_GET(IntType)
TORCHLESS_SINGLETON_GET(SymIntType)
TORCHLESS_SINGLETON_GET(SymFloatType)
TORCHLESS_SINGLETON_GET(BoolType)
TORCHLESS_SINGLETON_GET(StringType)
TORCHLESS_SINGLETON_GET(NoneType)
TORCHLESS_SINGLETON_GET(DeviceObjType)
TORCHLESS_SINGLETON_GET(StreamObjType)
TORCHLESS_SINGLETON_GET(GeneratorType)
TORCHLESS_SINGLETON_GET(QuantizerType)
TORCHLESS_SINGLETON_GET(StorageType)
TORCHLESS_SINGLETON_GET(CapsuleType)
TORCHLESS_SINGLETON_GET(PyObjectType)
TORCHLESS_SINGLETON_GET(QSchemeType)
TORCHLESS_SINGLETON_GET(ScalarTypeType)
TORCHLESS_SINGLETON_GET(LayoutType)
TORCHLESS_SINGLETON_GET(MemoryFormatType)
TORCHLESS_SINGLETON_GET(AnyListType)
TORCHLESS_SINGLETON_GET(AnyTupleType)
TORCHLESS_SINGLETON_GET(AnyClassType)
TORCHLESS_SINGLETON_GET(AnyEnumType)
#undef TORCHLESS_SINGLETON_GET

// Identity first: types inferred from shared values share their nodes (IValue::type), and a
// walk of a shared type DAG must not expand it.
bool operator==(const Type& a, const Type& b) { return &a == &b || a.equals(b); }

bool Type::equals(const Type& rhs) const {
  if (kind() != rhs.kind()) return false;
  auto a = containedTypes(), b = rhs.containedTypes();
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(*a[i] == *b[i])) return false;
  return true;
}

bool Type::hasFreeVariables() const {
  if (kind() == TypeKind::VarType) return true;
  for (const auto& t : containedTypes())
    if (t->hasFreeVariables()) return true;
  return false;
}

bool Type::isSubtypeOf(const Type& rhs) const {
  if (rhs.kind() == TypeKind::AnyType || *this == rhs) return true;
  if (rhs.kind() == TypeKind::OptionalType)
    return kind() == TypeKind::NoneType ||
           isSubtypeOf(*rhs.expect<OptionalType>().getElementType());
  if (rhs.kind() == TypeKind::UnionType) {
    for (const auto& t : rhs.expect<UnionType>().types())
      if (isSubtypeOf(*t)) return true;
    return false;
  }
  if (rhs.kind() == TypeKind::NumberType)
    return kind() == TypeKind::IntType || kind() == TypeKind::FloatType ||
           kind() == TypeKind::ComplexType;
  return false;
}

bool VarType::equals(const Type& rhs) const {
  const auto* v = rhs.cast<VarType>();
  return v && v->name_ == name_;
}

// ---- TensorType -----------------------------------------------------------------------------

const TypePtr& TensorType::get() {
  static const TypePtr instance = std::make_shared<TensorType>();
  return instance;
}

std::shared_ptr<const TensorType> TensorType::create(
    std::optional<ScalarType> dtype, std::optional<std::vector<std::optional<int64_t>>> sizes,
    std::optional<std::vector<std::optional<int64_t>>> strides, std::optional<bool> requiresGrad,
    std::optional<Device> device, std::optional<bool> undefined) {
  auto t = std::make_shared<TensorType>();
  t->dtype_ = dtype;
  t->sizes_ = std::move(sizes);
  t->strides_ = std::move(strides);
  t->requiresGrad_ = requiresGrad;
  t->device_ = device;
  t->undefined_ = undefined;
  return t;
}

std::shared_ptr<const TensorType> TensorType::createContiguous(ScalarType dtype, Device device,
                                                               const std::vector<int64_t>& sizes) {
  std::vector<std::optional<int64_t>> sz(sizes.begin(), sizes.end());
  std::vector<std::optional<int64_t>> st;
  int64_t s = 1;
  st.resize(sizes.size());
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return create(dtype, std::move(sz), std::move(st), false, device);
}

bool TensorType::isUnshaped() const {
  return !dtype_ && !sizes_ && !strides_ && !requiresGrad_ && !device_ && !undefined_;
}

bool TensorType::equals(const Type& rhs) const {
  const auto* t = rhs.cast<TensorType>();
  return t && dtype_ == t->dtype_ && sizes_ == t->sizes_ && strides_ == t->strides_ &&
         requiresGrad_ == t->requiresGrad_ && device_ == t->device_ && undefined_ == t->undefined_;
}

bool TensorType::isSubtypeOf(const Type& rhs) const {
  if (const auto* t = rhs.cast<TensorType>()) {
    // Every property known on the right must hold on the left.
    auto known = [](const auto& r, const auto& l) { return !r || r == l; };
    if (!known(t->dtype_, dtype_) || !known(t->requiresGrad_, requiresGrad_) ||
        !known(t->device_, device_) || !known(t->undefined_, undefined_))
      return false;
    auto dimsOk = [](const auto& r, const auto& l) {
      if (!r) return true;
      if (!l || l->size() != r->size()) return false;
      for (size_t i = 0; i < r->size(); ++i)
        if ((*r)[i] && (*r)[i] != (*l)[i]) return false;
      return true;
    };
    return dimsOk(t->sizes_, sizes_) && dimsOk(t->strides_, strides_);
  }
  return Type::isSubtypeOf(rhs);
}

std::shared_ptr<const TensorType> TensorType::merge(const TensorType& o) const {
  auto same = [](const auto& a, const auto& b) { return a == b ? a : std::nullopt; };
  auto dims = [](const std::optional<std::vector<std::optional<int64_t>>>& a,
                 const std::optional<std::vector<std::optional<int64_t>>>& b)
      -> std::optional<std::vector<std::optional<int64_t>>> {
    if (!a || !b || a->size() != b->size()) return std::nullopt;
    std::vector<std::optional<int64_t>> r(a->size());
    for (size_t i = 0; i < a->size(); ++i) r[i] = (*a)[i] == (*b)[i] ? (*a)[i] : std::nullopt;
    return r;
  };
  return create(same(dtype_, o.dtype_), dims(sizes_, o.sizes_), dims(strides_, o.strides_),
                same(requiresGrad_, o.requiresGrad_), same(device_, o.device_),
                same(undefined_, o.undefined_));
}

// ---- printing with tensor details -------------------------------------------------------------

std::ostream& operator<<(std::ostream& out, const Type& t) {
  if (const auto* v = t.cast<TensorType>()) {
    if (v->scalarType()) {
      out << toString(*v->scalarType());
      if (!v->sizes()) out << "Tensor";
    } else {
      out << "Tensor";
    }
    if (const auto& sizes = v->sizes()) {
      const size_t ndim = sizes->size();
      const auto& strides = v->strides();
      bool stridesOk =
          ndim > 0 && strides && strides->size() == ndim &&
          std::all_of(strides->begin(), strides->end(), [](auto s) { return s.has_value(); });
      out << "(";
      size_t i = 0;
      for (i = 0; i < ndim; ++i) {
        if (i > 0) out << ", ";
        if ((*sizes)[i])
          out << *(*sizes)[i];
        else
          out << "*";
      }
      if (stridesOk) {
        out << ", strides=[";
        for (size_t k = 0; k < ndim; ++k) out << (k ? ", " : "") << *(*strides)[k];
        out << "]";
      }
      if (v->requiresGrad()) {
        if (i++ > 0) out << ", ";
        out << "requires_grad=" << (*v->requiresGrad() ? 1 : 0);
      }
      if (v->device()) {
        if (i++ > 0) out << ", ";
        out << "device=" << v->device()->str();
      }
      out << ")";
    } else {
      size_t i = 0;
      if (v->requiresGrad()) {
        out << "(requires_grad=" << (*v->requiresGrad() ? 1 : 0);
        i++;
      }
      if (v->device()) out << ((i++ > 0) ? ", " : "(") << "device=" << v->device()->str();
      if (i > 0) out << ")";
    }
    if (v->undefined() && *v->undefined()) out << "[Undefined]";
  } else if (const auto* l = t.cast<ListType>()) {
    out << *l->getElementType() << "[]";
  } else if (const auto* o = t.cast<OptionalType>()) {
    out << *o->getElementType() << "?";
  } else if (const auto* f = t.cast<FutureType>()) {
    out << "Future[" << *f->getElementType() << "]";
  } else if (const auto* r = t.cast<RRefType>()) {
    out << "RRef[" << *r->getElementType() << "]";
  } else if (const auto* tup = t.cast<TupleType>()) {
    if (tup->isNamed()) out << "NamedTuple";
    out << "(";
    for (size_t i = 0; i < tup->elements().size(); ++i) {
      if (i > 0) out << ", ";
      if (tup->isNamed()) out << tup->fieldNames()[i] << " : ";
      out << *tup->elements()[i];
    }
    out << ")";
  } else {
    out << t.str();
  }
  return out;
}

std::string Type::reprStr() const {
  std::ostringstream ss;
  ss << *this;
  return ss.str();
}

// ---- containers -----------------------------------------------------------------------------

#define TORCHLESS_LIST_OF(FN, ELEM)                                \
  const TypePtr& ListType::FN() {                                  \
    static const TypePtr instance = ListType::create(ELEM::get()); \
    return instance;                                               \
  }
TORCHLESS_LIST_OF(ofTensors, TensorType)
TORCHLESS_LIST_OF(ofInts, IntType)
TORCHLESS_LIST_OF(ofFloats, FloatType)
TORCHLESS_LIST_OF(ofBools, BoolType)
TORCHLESS_LIST_OF(ofStrings, StringType)
#undef TORCHLESS_LIST_OF

bool ListType::isSubtypeOf(const Type& rhs) const {
  if (rhs.kind() == TypeKind::AnyListType) return true;
  return Type::isSubtypeOf(rhs);
}

TypePtr OptionalType::create(TypePtr elem) {
  if (elem->kind() == TypeKind::OptionalType) return elem;
  return std::make_shared<OptionalType>(std::move(elem));
}

const TypePtr& OptionalType::ofTensor() {
  static const TypePtr instance = OptionalType::create(TensorType::get());
  return instance;
}

bool OptionalType::isSubtypeOf(const Type& rhs) const {
  if (const auto* o = rhs.cast<OptionalType>()) return elem_->isSubtypeOf(*o->getElementType());
  if (const auto* u = rhs.cast<UnionType>()) {
    bool noneOk = false, elemOk = false;
    for (const auto& t : u->types()) {
      noneOk |= t->kind() == TypeKind::NoneType;
      elemOk |= elem_->isSubtypeOf(*t);
    }
    return noneOk && elemOk;
  }
  return Type::isSubtypeOf(rhs);
}

bool FutureType::isSubtypeOf(const Type& rhs) const {
  if (const auto* f = rhs.cast<FutureType>()) return elem_->isSubtypeOf(*f->getElementType());
  return Type::isSubtypeOf(rhs);
}

TypePtr TupleType::createNamed(std::string qualname, std::vector<std::string> fields,
                               std::vector<TypePtr> types,
                               std::vector<std::shared_ptr<IValue>> defaults) {
  auto t = std::make_shared<TupleType>(std::move(types));
  t->name_ = std::move(qualname);
  t->fields_ = std::move(fields);
  t->defaults_ = std::move(defaults);
  return t;
}

std::string TupleType::str() const {
  if (isNamed()) return name_;
  std::string s = "(";
  for (size_t i = 0; i < elems_.size(); ++i) s += (i ? ", " : "") + elems_[i]->str();
  return s + ")";
}

std::string TupleType::annotationStr() const {
  if (isNamed()) return name_;
  if (elems_.empty()) return "Tuple[()]";
  std::string s = "Tuple[";
  for (size_t i = 0; i < elems_.size(); ++i) s += (i ? ", " : "") + elems_[i]->annotationStr();
  return s + "]";
}

bool TupleType::equals(const Type& rhs) const {
  const auto* t = rhs.cast<TupleType>();
  if (!t || t->name_ != name_ || t->fields_ != fields_) return false;
  return Type::equals(rhs);
}

bool TupleType::isSubtypeOf(const Type& rhs) const {
  if (rhs.kind() == TypeKind::AnyTupleType) return true;
  if (const auto* t = rhs.cast<TupleType>()) {
    if (t->isNamed() && t->name_ != name_) return false;
    if (t->elems_.size() != elems_.size()) return false;
    for (size_t i = 0; i < elems_.size(); ++i)
      if (!elems_[i]->isSubtypeOf(*t->elems_[i])) return false;
    return true;
  }
  return Type::isSubtypeOf(rhs);
}

// ---- Union ----------------------------------------------------------------------------------

TypePtr UnionType::create(std::vector<TypePtr> types) {
  std::vector<TypePtr> flat;
  std::function<void(const TypePtr&)> add = [&](const TypePtr& t) {
    if (const auto* u = t->cast<UnionType>()) {
      for (const auto& x : u->types()) add(x);
      return;
    }
    if (const auto* o = t->cast<OptionalType>()) {
      add(o->getElementType());
      add(NoneType::get());
      return;
    }
    for (const auto& x : flat)
      if (*x == *t || t->isSubtypeOf(*x)) return;
    flat.erase(std::remove_if(flat.begin(), flat.end(),
                              [&](const TypePtr& x) { return x->isSubtypeOf(*t); }),
               flat.end());
    flat.push_back(t);
  };
  for (const auto& t : types) add(t);
  TL_CHECK(!flat.empty(), "Union needs at least one type");
  if (flat.size() == 1) return flat[0];
  if (flat.size() == 2) {
    for (int i = 0; i < 2; ++i)
      if (flat[static_cast<size_t>(i)]->kind() == TypeKind::NoneType)
        return OptionalType::create(flat[static_cast<size_t>(1 - i)]);
  }
  // PyTorch's sortUnion: by TypeKind, then by str(), so equal unions print alike.
  std::sort(flat.begin(), flat.end(), [](const TypePtr& a, const TypePtr& b) {
    if (a->kind() != b->kind()) return a->kind() < b->kind();
    return a->str() < b->str();
  });
  return std::make_shared<UnionType>(std::move(flat));
}

std::string UnionType::str() const {
  std::string s = "Union(";
  for (size_t i = 0; i < types_.size(); ++i) s += (i ? ", " : "") + types_[i]->str();
  return s + ")";
}

std::string UnionType::annotationStr() const {
  std::string s = "Union[";
  for (size_t i = 0; i < types_.size(); ++i) s += (i ? ", " : "") + types_[i]->annotationStr();
  return s + "]";
}

bool UnionType::equals(const Type& rhs) const {
  const auto* u = rhs.cast<UnionType>();
  if (!u || u->types_.size() != types_.size()) return false;
  for (const auto& t : types_) {
    bool found = false;
    for (const auto& x : u->types_) found |= *x == *t;
    if (!found) return false;
  }
  return true;
}

bool UnionType::isSubtypeOf(const Type& rhs) const {
  if (rhs.kind() == TypeKind::AnyType) return true;
  for (const auto& t : types_)
    if (!t->isSubtypeOf(rhs)) return false;
  return true;
}

bool FunctionType::equals(const Type& rhs) const {
  const auto* f = rhs.cast<FunctionType>();
  return f && f->fn_ == fn_;
}

bool EnumType::equals(const Type& rhs) const {
  const auto* e = rhs.cast<EnumType>();
  return e && e->name_ == name_;
}

bool EnumType::isSubtypeOf(const Type& rhs) const {
  return rhs.kind() == TypeKind::AnyEnumType || Type::isSubtypeOf(rhs);
}

// ---- classes ----------------------------------------------------------------------------------

bool ClassType::equals(const Type& rhs) const {
  const auto* c = rhs.cast<ClassType>();
  return c && c->name_ == name_;
}

bool ClassType::isSubtypeOf(const Type& rhs) const {
  if (rhs.kind() == TypeKind::AnyClassType) return true;
  if (const auto* iface = rhs.cast<InterfaceType>()) {
    // Note: only method names are compared here; the IR layer checks schemas when it binds
    // a class to an interface-typed attribute.
    if (iface->isModule() && !isModule_) return false;
    for (const auto& m : iface->methods)
      if (!findMethod(m.first)) return false;
    return true;
  }
  return Type::isSubtypeOf(rhs);
}

size_t ClassType::addAttribute(const std::string& name, TypePtr type, bool isParameter,
                               bool isBuffer) {
  if (findAttributeSlot(name))
    throw Error(fmt::format("attribute '{}' of class {} is defined twice", name, name_));
  attributes_.push_back({name, std::move(type), isParameter, isBuffer});
  return attributes_.size() - 1;
}

std::optional<size_t> ClassType::findAttributeSlot(std::string_view name) const {
  for (size_t i = 0; i < attributes_.size(); ++i)
    if (attributes_[i].name == name) return i;
  return std::nullopt;
}

const ClassType::Attribute* ClassType::findAttribute(std::string_view name) const {
  auto slot = findAttributeSlot(name);
  return slot ? &attributes_[*slot] : nullptr;
}

void ClassType::addConstant(const std::string& name, std::shared_ptr<IValue> value) {
  if (findConstant(name))
    throw Error(fmt::format("constant '{}' of class {} is defined twice", name, name_));
  constants_.push_back({name, std::move(value)});
}

const IValue* ClassType::findConstant(std::string_view name) const {
  for (const auto& c : constants_)
    if (c.name == name) return c.value.get();
  return nullptr;
}

void ClassType::addMethod(Function* fn) {
  if (findMethod(fn->name()))
    throw Error(fmt::format("method '{}' of class {} is defined twice", fn->name(), name_));
  methods_.push_back(fn);
}

Function* ClassType::findMethod(std::string_view name) const {
  for (Function* f : methods_)
    if (f->name() == name) return f;
  return nullptr;
}

bool InterfaceType::equals(const Type& rhs) const {
  const auto* i = rhs.cast<InterfaceType>();
  return i && i->name_ == name_;
}

// ---- unification ------------------------------------------------------------------------------

bool canHoldNone(const Type& t) {
  switch (t.kind()) {
    case TypeKind::NoneType:
    case TypeKind::OptionalType:
    case TypeKind::AnyType: return true;
    case TypeKind::UnionType:
      for (const auto& x : t.expect<UnionType>().types())
        if (canHoldNone(*x)) return true;
      return false;
    default: return false;
  }
}

std::optional<TypePtr> unifyTypes(const TypePtr& t1, const TypePtr& t2, bool defaultToUnion) {
  if (t1->isSubtypeOf(*t2)) return t2;
  if (t2->isSubtypeOf(*t1)) return t1;
  if (const auto* a = t1->cast<TensorType>())
    if (const auto* b = t2->cast<TensorType>()) return TypePtr(a->merge(*b));
  if (t1->kind() == TypeKind::NoneType && !canHoldNone(*t2)) return OptionalType::create(t2);
  if (t2->kind() == TypeKind::NoneType && !canHoldNone(*t1)) return OptionalType::create(t1);
  if (const auto* o1 = t1->cast<OptionalType>()) {
    if (const auto* o2 = t2->cast<OptionalType>()) {
      if (auto e = unifyTypes(o1->getElementType(), o2->getElementType()))
        return OptionalType::create(*e);
    } else if (auto e = unifyTypes(o1->getElementType(), t2)) {
      return OptionalType::create(*e);
    }
  } else if (const auto* o2 = t2->cast<OptionalType>()) {
    if (auto e = unifyTypes(t1, o2->getElementType())) return OptionalType::create(*e);
  }
  if (const auto* l1 = t1->cast<ListType>()) {
    if (const auto* l2 = t2->cast<ListType>()) {
      auto e = unifyTypes(l1->getElementType(), l2->getElementType());
      if (e && (*e)->kind() == TypeKind::TensorType) return ListType::create(*e);
    }
  }
  if (const auto* a = t1->cast<TupleType>()) {
    if (const auto* b = t2->cast<TupleType>()) {
      if (a->elements().size() == b->elements().size() && !a->isNamed() && !b->isNamed()) {
        std::vector<TypePtr> elems;
        for (size_t i = 0; i < a->elements().size(); ++i) {
          auto e = unifyTypes(a->elements()[i], b->elements()[i], defaultToUnion);
          if (!e) return std::nullopt;
          elems.push_back(*e);
        }
        return TupleType::create(std::move(elems));
      }
    }
  }
  if (const auto* f1 = t1->cast<FutureType>())
    if (const auto* f2 = t2->cast<FutureType>())
      if (auto e = unifyTypes(f1->getElementType(), f2->getElementType()))
        return FutureType::create(*e);
  if (defaultToUnion) return UnionType::create({t1, t2});
  return std::nullopt;
}

TypePtr unshapedType(const TypePtr& t) {
  switch (t->kind()) {
    case TypeKind::TensorType: return TensorType::get();
    case TypeKind::ListType:
      return ListType::create(unshapedType(t->expect<ListType>().getElementType()));
    case TypeKind::OptionalType:
      return OptionalType::create(unshapedType(t->expect<OptionalType>().getElementType()));
    case TypeKind::FutureType:
      return FutureType::create(unshapedType(t->expect<FutureType>().getElementType()));
    case TypeKind::DictType: {
      const auto& d = t->expect<DictType>();
      return DictType::create(unshapedType(d.getKeyType()), unshapedType(d.getValueType()));
    }
    case TypeKind::TupleType: {
      const auto& tup = t->expect<TupleType>();
      std::vector<TypePtr> elems;
      for (const auto& e : tup.elements()) elems.push_back(unshapedType(e));
      if (tup.isNamed())
        return TupleType::createNamed(tup.name(), tup.fieldNames(), std::move(elems),
                                      tup.defaults());
      return TupleType::create(std::move(elems));
    }
    case TypeKind::UnionType: {
      std::vector<TypePtr> elems;
      for (const auto& e : t->expect<UnionType>().types()) elems.push_back(unshapedType(e));
      return UnionType::create(std::move(elems));
    }
    default: return t;
  }
}

// ---- annotation parser ------------------------------------------------------------------------

namespace {

class AnnotationParser {
 public:
  AnnotationParser(std::string_view text, const TypeResolver& resolver)
      : text_(text), resolver_(resolver) {}

  TypePtr parseAll() {
    TypePtr t = parse();
    skipSpace();
    if (pos_ != text_.size()) fail(fmt::format("unexpected '{}'", text_.substr(pos_)));
    return t;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(
        fmt::format("cannot parse type annotation '{}': {} at column {}", text_, what, pos_ + 1));
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  bool accept(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(fmt::format("expected '{}'", c));
  }
  std::string name() {
    skipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '_' || text_[pos_] == '.'))
      ++pos_;
    if (start == pos_) fail("expected a type name");
    return std::string(text_.substr(start, pos_ - start));
  }
  std::vector<TypePtr> args() {
    std::vector<TypePtr> out;
    expect('[');
    if (accept(']')) return out;
    do {
      out.push_back(parse());
    } while (accept(','));
    expect(']');
    return out;
  }
  TypePtr parse() {
    if (++depth_ > 64) fail("type nested too deeply");
    TypePtr t = parseInner();
    --depth_;
    return t;
  }
  TypePtr parseInner() {
    std::string n = name();
    auto argsOf = [&](size_t count) {
      auto a = args();
      if (a.size() != count)
        fail(fmt::format("{} takes {} type argument{}, got {}", n, count, count == 1 ? "" : "s",
                         a.size()));
      return a;
    };
    if (n == "List" || n == "list") return ListType::create(argsOf(1)[0]);
    if (n == "Optional") return OptionalType::create(argsOf(1)[0]);
    if (n == "Future") return FutureType::create(argsOf(1)[0]);
    if (n == "Await") return AwaitType::create(argsOf(1)[0]);
    if (n == "RRef") return RRefType::create(argsOf(1)[0]);
    if (n == "Final") return argsOf(1)[0];
    if (n == "Dict" || n == "dict") {
      auto a = argsOf(2);
      return DictType::create(a[0], a[1]);
    }
    if (n == "Union") {
      auto a = args();
      if (a.empty()) fail("Union needs at least one type");
      return UnionType::create(std::move(a));
    }
    if (n == "Tuple" || n == "tuple") {
      skipSpace();
      if (pos_ < text_.size() && text_[pos_] == '[') {
        expect('[');
        if (accept('(')) {
          expect(')');
          expect(']');
          return TupleType::create({});
        }
        std::vector<TypePtr> elems;
        if (!accept(']')) {
          do {
            elems.push_back(parse());
          } while (accept(','));
          expect(']');
        }
        return TupleType::create(std::move(elems));
      }
      return AnyTupleType::get();
    }
    if (n == "Tensor") return TensorType::get();
    if (n == "int") return IntType::get();
    if (n == "float") return FloatType::get();
    if (n == "bool") return BoolType::get();
    if (n == "str") return StringType::get();
    if (n == "complex") return ComplexType::get();
    if (n == "number" || n == "Scalar") return NumberType::get();
    if (n == "None" || n == "NoneType") return NoneType::get();
    if (n == "Any") return AnyType::get();
    if (n == "Device" || n == "torch.device") return DeviceObjType::get();
    if (n == "Stream" || n == "torch.Stream") return StreamObjType::get();
    if (n == "Generator") return GeneratorType::get();
    if (n == "Storage") return StorageType::get();
    if (n == "Capsule") return CapsuleType::get();
    if (n == "QScheme") return QSchemeType::get();
    if (n == "torch.Tensor") return TensorType::get();
    if (resolver_) {
      if (TypePtr t = resolver_(n)) return t;
    }
    fail(fmt::format("unknown type name '{}'", n));
  }

  std::string_view text_;
  const TypeResolver& resolver_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

TypePtr parseTypeAnnotation(std::string_view text, const TypeResolver& resolver) {
  return AnnotationParser(text, resolver).parseAll();
}

}  // namespace torchless
