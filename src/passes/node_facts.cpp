// Node and value facts for passes (node_facts.h).
#include "passes/node_facts.h"

#include "ir/dead_code_elimination.h"
#include "ir/walk.h"

#include <cstring>
#include <functional>
#include <set>
#include <utility>

namespace torchless::passes {

bool hasSideEffects(const Node* n) { return hasSideEffectsWithin(n); }

bool isMutableType(const TypePtr& t) {
  switch (t->kind()) {
    case TypeKind::TensorType:
    case TypeKind::ListType:
    case TypeKind::DictType:
    case TypeKind::ClassType:
    case TypeKind::InterfaceType:
    case TypeKind::AnyType:
    case TypeKind::AnyListType:
    case TypeKind::AnyClassType:
    case TypeKind::FutureType:
    case TypeKind::AwaitType:
    case TypeKind::RRefType:
    case TypeKind::CapsuleType:
    case TypeKind::PyObjectType:
    case TypeKind::StorageType:
    case TypeKind::AnyTupleType:
    case TypeKind::VarType: return true;
    case TypeKind::TupleType:
    case TypeKind::OptionalType:
    case TypeKind::UnionType:
      for (const TypePtr& c : t->containedTypes())
        if (isMutableType(c)) return true;
      return false;
    default: return false;
  }
}

bool graphHasWriters(const Graph& g) {
  return anyNode(g.block(), [](const Node* n) { return n->mayWrite(); });
}

bool mustBeNone(const Value* v) {
  if (v->type() && v->type()->kind() == TypeKind::NoneType) return true;
  return v->node()->mustBeNone();
}

bool mustNotBeNone(const Value* v) {
  if (v->node()->kind() == prim::Constant) {
    if (auto iv = toIValue(v)) return !iv->isNone();
  }
  const TypePtr& t = v->type();
  if (!t) return false;
  switch (t->kind()) {
    case TypeKind::NoneType:
    case TypeKind::OptionalType:
    case TypeKind::AnyType:
    case TypeKind::VarType: return false;
    case TypeKind::UnionType:
      for (const TypePtr& c : t->containedTypes())
        if (c->kind() == TypeKind::NoneType) return false;
      return true;
    default: return true;
  }
}

std::optional<int64_t> constantInt(const Value* v) {
  if (v->node()->kind() != prim::Constant) return std::nullopt;
  auto iv = toIValue(v);
  if (!iv || !iv->isInt()) return std::nullopt;
  return iv->toInt();
}

std::optional<bool> constantBool(const Value* v) {
  if (v->node()->kind() != prim::Constant) return std::nullopt;
  auto iv = toIValue(v);
  if (!iv || !iv->isBool()) return std::nullopt;
  return iv->toBool();
}

namespace {

bool tensorEqual(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.is(b)) return true;
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes() || !(a.device() == b.device()) ||
      a.requiresGrad() != b.requiresGrad())
    return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.rawData(), cb.rawData(), ca.nbytes()) == 0;
}

// Pairs of containers known equal (or being compared): shared values (Note [Shared values],
// core/ivalue.cpp) are compared once per pair of nodes, not once per path to them. A false
// answer ends the whole comparison, so only pairs on the way to true are kept.
using SeenPairs = std::set<std::pair<const void*, const void*>>;

bool ivalueEqual(const IValue& a, const IValue& b, SeenPairs& seen);

bool containersEqual(const void* x, const void* y, SeenPairs& seen) {
  return x == y || !seen.insert({x, y}).second;
}

bool ivalueEqual(const IValue& a, const IValue& b) {
  SeenPairs seen;
  return ivalueEqual(a, b, seen);
}

// Strict: tags must agree (1 and 1.0 and True are different constants).
bool ivalueEqual(const IValue& a, const IValue& b, SeenPairs& seen) {
  if (a.tag() != b.tag()) return false;
  switch (a.tag()) {
    case IValue::Tag::Tensor: return tensorEqual(a.toTensor(), b.toTensor());
    case IValue::Tag::Double: {
      double x = a.toDouble(), y = b.toDouble();
      return std::memcmp(&x, &y, sizeof x) == 0;  // -0.0 != 0.0, nan == same nan
    }
    case IValue::Tag::List: {
      if (containersEqual(a.toList().get(), b.toList().get(), seen)) return true;
      const auto &x = a.toList()->list, &y = b.toList()->list;
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!ivalueEqual(x[i], y[i], seen)) return false;
      return true;
    }
    case IValue::Tag::Tuple: {
      if (containersEqual(a.toTuple().get(), b.toTuple().get(), seen)) return true;
      const auto &x = a.toTuple()->elements, &y = b.toTuple()->elements;
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!ivalueEqual(x[i], y[i], seen)) return false;
      return true;
    }
    case IValue::Tag::Dict: {
      if (containersEqual(a.toDict().get(), b.toDict().get(), seen)) return true;
      const auto &x = a.toDict()->entries(), &y = b.toDict()->entries();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!ivalueEqual(x[i].first, y[i].first, seen) ||
            !ivalueEqual(x[i].second, y[i].second, seen))
          return false;
      return true;
    }
    case IValue::Tag::Object:
    case IValue::Tag::Capsule: return a.isSameIdentity(b);
    default: return a.equals(b);
  }
}

bool attributeEqual(const AttributeValue& a, const AttributeValue& b) {
  if (a.index() != b.index()) return false;
  switch (static_cast<AttributeKind>(a.index())) {
    case AttributeKind::f: {
      double x = std::get<double>(a), y = std::get<double>(b);
      return std::memcmp(&x, &y, sizeof x) == 0;
    }
    case AttributeKind::t: return tensorEqual(std::get<Tensor>(a), std::get<Tensor>(b));
    case AttributeKind::ts: {
      const auto &x = std::get<std::vector<Tensor>>(a), &y = std::get<std::vector<Tensor>>(b);
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!tensorEqual(x[i], y[i])) return false;
      return true;
    }
    case AttributeKind::g:
      return std::get<std::shared_ptr<Graph>>(a) == std::get<std::shared_ptr<Graph>>(b);
    case AttributeKind::gs:
      return std::get<std::vector<std::shared_ptr<Graph>>>(a) ==
             std::get<std::vector<std::shared_ptr<Graph>>>(b);
    case AttributeKind::ty: return *std::get<TypePtr>(a) == *std::get<TypePtr>(b);
    case AttributeKind::tys: {
      const auto &x = std::get<std::vector<TypePtr>>(a), &y = std::get<std::vector<TypePtr>>(b);
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (*x[i] != *y[i]) return false;
      return true;
    }
    case AttributeKind::ival: return ivalueEqual(std::get<IValue>(a), std::get<IValue>(b));
    case AttributeKind::fs:
      return std::get<std::vector<double>>(a) == std::get<std::vector<double>>(b);
    case AttributeKind::c:
      return std::get<std::complex<double>>(a) == std::get<std::complex<double>>(b);
    case AttributeKind::i: return std::get<int64_t>(a) == std::get<int64_t>(b);
    case AttributeKind::is:
      return std::get<std::vector<int64_t>>(a) == std::get<std::vector<int64_t>>(b);
    case AttributeKind::s: return std::get<std::string>(a) == std::get<std::string>(b);
    case AttributeKind::ss:
      return std::get<std::vector<std::string>>(a) == std::get<std::vector<std::string>>(b);
  }
  return false;
}

}  // namespace

bool sameAttributes(const Node* a, const Node* b) {
  if (a->numAttributes() != b->numAttributes()) return false;
  for (Symbol name : a->attributeNames()) {
    if (!b->hasAttribute(name)) return false;
    if (!attributeEqual(a->attribute(name), b->attribute(name))) return false;
  }
  return true;
}

bool sameOutputTypes(const Node* a, const Node* b) {
  if (a->outputs().size() != b->outputs().size()) return false;
  for (size_t i = 0; i < a->outputs().size(); ++i) {
    const TypePtr& x = a->output(i)->type();
    const TypePtr& y = b->output(i)->type();
    if (x == y) continue;
    if (!x || !y || *x != *y) return false;
  }
  return true;
}

size_t hashNode(const Node* n) {
  size_t h = std::hash<uint32_t>()(n->kind().value());
  auto mix = [&](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (const Value* v : n->inputs()) mix(std::hash<const void*>()(v));
  mix(n->outputs().size());
  for (Symbol name : n->attributeNames()) {
    mix(std::hash<uint32_t>()(name.value()));
    const AttributeValue& a = n->attribute(name);
    mix(a.index());
    switch (static_cast<AttributeKind>(a.index())) {
      case AttributeKind::i: mix(std::hash<int64_t>()(std::get<int64_t>(a))); break;
      case AttributeKind::s: mix(std::hash<std::string>()(std::get<std::string>(a))); break;
      case AttributeKind::f: mix(std::hash<double>()(std::get<double>(a))); break;
      default: break;  // equal attributes of other kinds just share a bucket
    }
  }
  return h;
}

}  // namespace torchless::passes
