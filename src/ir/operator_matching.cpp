#include "ir/operator_matching.h"

namespace torchless {

bool matchTypeVariables(const TypePtr& formal, const TypePtr& actual, TypeEnv& env) {
  if (!formal->hasFreeVariables()) {
    if (actual->isSubtypeOf(*formal)) return true;
    // The IR gives ScalarType/Layout/MemoryFormat values the type int, as does Argument::type.
    return false;
  }
  switch (formal->kind()) {
    case TypeKind::VarType: {
      const auto& name = formal->expect<VarType>().name();
      auto it = env.find(name);
      if (it == env.end()) {
        env.emplace(name, actual);
        return true;
      }
      if (auto u = unifyTypes(it->second, actual)) {
        it->second = *u;
        return true;
      }
      return false;
    }
    case TypeKind::ListType:
      if (const auto* l = actual->cast<ListType>())
        return matchTypeVariables(formal->expect<ListType>().getElementType(), l->getElementType(),
                                  env);
      return false;
    case TypeKind::OptionalType: {
      const auto& elem = formal->expect<OptionalType>().getElementType();
      if (actual->kind() == TypeKind::NoneType) return true;
      if (const auto* o = actual->cast<OptionalType>())
        return matchTypeVariables(elem, o->getElementType(), env);
      return matchTypeVariables(elem, actual, env);
    }
    case TypeKind::FutureType:
      if (const auto* f = actual->cast<FutureType>())
        return matchTypeVariables(formal->expect<FutureType>().getElementType(),
                                  f->getElementType(), env);
      return false;
    case TypeKind::DictType:
      if (const auto* d = actual->cast<DictType>()) {
        const auto& fd = formal->expect<DictType>();
        return matchTypeVariables(fd.getKeyType(), d->getKeyType(), env) &&
               matchTypeVariables(fd.getValueType(), d->getValueType(), env);
      }
      return false;
    case TypeKind::TupleType:
      if (const auto* t = actual->cast<TupleType>()) {
        const auto& ft = formal->expect<TupleType>();
        if (ft.elements().size() != t->elements().size()) return false;
        for (size_t i = 0; i < ft.elements().size(); ++i)
          if (!matchTypeVariables(ft.elements()[i], t->elements()[i], env)) return false;
        return true;
      }
      return false;
    default: return false;
  }
}

TypePtr substituteTypeVariables(const TypePtr& formal, const TypeEnv& env) {
  if (!formal->hasFreeVariables()) return formal;
  switch (formal->kind()) {
    case TypeKind::VarType: {
      auto it = env.find(formal->expect<VarType>().name());
      return it == env.end() ? formal : it->second;
    }
    case TypeKind::ListType:
      return ListType::create(
          substituteTypeVariables(formal->expect<ListType>().getElementType(), env));
    case TypeKind::OptionalType:
      return OptionalType::create(
          substituteTypeVariables(formal->expect<OptionalType>().getElementType(), env));
    case TypeKind::FutureType:
      return FutureType::create(
          substituteTypeVariables(formal->expect<FutureType>().getElementType(), env));
    case TypeKind::DictType: {
      const auto& d = formal->expect<DictType>();
      return DictType::create(substituteTypeVariables(d.getKeyType(), env),
                              substituteTypeVariables(d.getValueType(), env));
    }
    case TypeKind::TupleType: {
      std::vector<TypePtr> elems;
      for (const auto& e : formal->expect<TupleType>().elements())
        elems.push_back(substituteTypeVariables(e, env));
      return TupleType::create(std::move(elems));
    }
    default: return formal;
  }
}

namespace {

bool fits(const Node* node, const OpInfo& op) {
  const auto& schema = op.schema;
  const auto& args = schema.arguments();
  const auto& inputs = node->inputs();
  if (schema.isVararg() ? inputs.size() < args.size() : inputs.size() != args.size()) return false;
  if (!schema.isVarret() && node->outputs().size() != schema.returns().size()) return false;
  TypeEnv env;
  for (size_t i = 0; i < args.size(); ++i)
    if (!matchTypeVariables(args[i].type(), inputs[i]->type(), env)) return false;
  return true;
}

// a is at least as specific as b: each argument type of a is a subtype of b's.
bool atLeastAsSpecific(const OpInfo& a, const OpInfo& b) {
  const auto& x = a.schema.arguments();
  const auto& y = b.schema.arguments();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].type()->hasFreeVariables() || y[i].type()->hasFreeVariables()) continue;
    if (!x[i].type()->isSubtypeOf(*y[i].type())) return false;
  }
  return true;
}

}  // namespace

const OpInfo* matchOperator(const Node* node, const OperatorRegistry& registry) {
  if (&registry == &OperatorRegistry::global()) return node->maybeOperator();
  return matchOperatorUncached(node, registry);
}

const OpInfo* matchOperatorUncached(const Node* node, const OperatorRegistry& registry) {
  // Several overloads may accept the inputs (`aten::floordiv(Scalar, Scalar)` and
  // `aten::floordiv.int(int, int)` both take two ints); the most specific one wins, as the
  // emitter's overload resolution would have picked it.
  std::vector<const OpInfo*> matches;
  for (const OpInfo* op : registry.lookup(node->kind().toQualString()))
    if (fits(node, *op)) matches.push_back(op);
  if (matches.empty()) return nullptr;
  for (const OpInfo* candidate : matches) {
    bool best = true;
    for (const OpInfo* other : matches)
      if (other != candidate && !atLeastAsSpecific(*candidate, *other)) best = false;
    if (best) return candidate;
  }
  return matches.front();
}

}  // namespace torchless
