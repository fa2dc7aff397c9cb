#include "ir/operator_registry.h"

#include "core/error.h"

#include <algorithm>
#include <mutex>
#include <set>

namespace torchless {

namespace {

#include "ir/op_schemas_generated.inc"

/// Node::hasSideEffects (torch/csrc/jit/ir/ir.cpp), by qualified name.
bool hasSideEffects(const std::string& name) {
  static const std::set<std::string, std::less<>> names = {
      "prim::PythonOp",
      "prim::IgnoredPythonOp",
      "prim::Print",
      "prim::RaiseException",
      "prim::SetAttr",
      "aten::warn",
      "aten::save",
      "aten::manual_seed",
      "prim::AddStatValue",
      "prim::TimePoint",
      "prim::CallFunction",
      "prim::CallMethod",
      "prim::BailoutTemplate",
      "prim::BailOut",
      "prim::rpc_async",
      "prim::rpc_sync",
      "prim::rpc_remote",
      "aten::wait",
      "prim::Enter",
      "prim::Exit",
      "aten::seed",
      "aten::initial_seed",
  };
  return names.count(name) > 0;
}

/// Draws random numbers: takes a Generator, or is one of the random ops without a Generator
/// overload.
bool isNondeterministic(const FunctionSchema& s) {
  static const std::set<std::string, std::less<>> names = {
      "aten::dropout",
      "aten::dropout_",
      "aten::feature_dropout",
      "aten::feature_dropout_",
      "aten::alpha_dropout",
      "aten::alpha_dropout_",
      "aten::feature_alpha_dropout",
      "aten::feature_alpha_dropout_",
      "aten::rrelu",
      "aten::rrelu_",
      "aten::rand_like",
      "aten::randn_like",
      "aten::randint_like",
      "aten::native_dropout",
  };
  if (names.count(s.name())) return true;
  for (const auto& a : s.arguments()) {
    const Type* t = a.realType().get();
    if (const auto* o = t->cast<OptionalType>()) t = o->getElementType().get();
    if (t->kind() == TypeKind::GeneratorType) return true;
  }
  return false;
}

/// A return shares an alias set with some argument (or is a wildcard).
bool returnsAlias(const FunctionSchema& s) {
  std::set<std::string> argSets;
  auto collect = [](const AliasInfo& a, std::set<std::string>& out, auto& self) -> void {
    out.insert(a.beforeSets().begin(), a.beforeSets().end());
    out.insert(a.afterSets().begin(), a.afterSets().end());
    for (const auto& c : a.containedTypes()) self(c, out, self);
  };
  for (const auto& a : s.arguments())
    if (a.aliasInfo()) collect(*a.aliasInfo(), argSets, collect);
  for (const auto& r : s.returns()) {
    if (!r.aliasInfo()) continue;
    std::set<std::string> retSets;
    collect(*r.aliasInfo(), retSets, collect);
    for (const auto& set : retSets)
      if (set == AliasInfo::kWildcard || argSets.count(set)) return true;
  }
  return false;
}

void registerAll(OperatorRegistry& registry, const char* const* begin, const char* const* end) {
  for (auto it = begin; it != end; ++it)
    if (*it) registry.registerSchema(*it);
}

}  // namespace

OperatorRegistry& OperatorRegistry::global() {
  // Never destroyed: tearing down ~4,200 entries (their schemas, types and map nodes) cost
  // several milliseconds at the exit of every command, for memory the process gives back anyway.
  static OperatorRegistry& registry = *new OperatorRegistry;
  static std::once_flag once;
  std::call_once(once, [] {
    registerAtenSchemas(registry);
    registerPrimSchemas(registry);
    registerQuantizedSchemas(registry);
    registerTorchvisionSchemas(registry);
    registerOtherSchemas(registry);
    registerTorchlessSchemas(registry);
  });
  return registry;
}

OpInfo& OperatorRegistry::registerSchema(std::string_view text) {
  FunctionSchema schema;
  try {
    schema = parseSchema(text);
  } catch (Error& e) {
    e.addContext(fmt::format("while registering operator schema '{}'", text));
    throw;
  }
  auto info = std::make_unique<OpInfo>();
  info->key = schema.str();
  info->overloadKey = schema.operatorName().str();
  if (byKey_.count(info->key))
    throw Error(fmt::format("operator schema registered twice: '{}'", info->key));
  if (auto it = byOverload_.find(info->overloadKey); it != byOverload_.end())
    throw Error(fmt::format("operator {} registered twice: '{}' and '{}'", info->overloadKey,
                            it->second->key, info->key));
  info->mutates = schema.isMutable();
  info->returnsAlias = returnsAlias(schema);
  info->hasSideEffects = hasSideEffects(schema.name());
  info->nondeterministic = isNondeterministic(schema);
  info->schema = std::move(schema);

  OpInfo* raw = info.get();
  byOverload_.emplace(raw->overloadKey, raw);
  auto& overloads = byName_[raw->schema.name()];
  // An operator with a Generator overload draws random numbers in all its overloads
  // (aten::randn(int[] size) as well as aten::randn.generator).
  bool random = raw->nondeterministic;
  for (const OpInfo* o : overloads) random |= o->nondeterministic;
  if (random) {
    raw->nondeterministic = true;
    for (const OpInfo* o : overloads) byOverload_.at(o->overloadKey)->nondeterministic = true;
  }
  overloads.push_back(raw);
  byKey_.emplace(raw->key, std::move(info));
  return *raw;
}

const OpInfo* OperatorRegistry::find(std::string_view schema) const {
  auto it = byKey_.find(schema);
  return it == byKey_.end() ? nullptr : it->second.get();
}

OpInfo* OperatorRegistry::findMutable(std::string_view schema) {
  auto it = byKey_.find(schema);
  return it == byKey_.end() ? nullptr : it->second.get();
}

const OpInfo& OperatorRegistry::expect(std::string_view schema) const {
  const OpInfo* info = find(schema);
  if (!info) throw Error(fmt::format("unknown operator schema '{}'", schema));
  return *info;
}

const OpInfo* OperatorRegistry::findOverload(std::string_view nameDotOverload) const {
  auto it = byOverload_.find(nameDotOverload);
  return it == byOverload_.end() ? nullptr : it->second;
}

const std::vector<const OpInfo*>& OperatorRegistry::lookup(std::string_view qualifiedName) const {
  static const std::vector<const OpInfo*> none;
  auto it = byName_.find(qualifiedName);
  return it == byName_.end() ? none : it->second;
}

std::vector<const OpInfo*> OperatorRegistry::all() const {
  std::vector<const OpInfo*> out;
  out.reserve(byKey_.size());
  for (const auto& [key, info] : byKey_) out.push_back(info.get());
  return out;
}

#define TORCHLESS_REGISTER_GROUP(FN, ARRAY) \
  void FN(OperatorRegistry& registry) { registerAll(registry, std::begin(ARRAY), std::end(ARRAY)); }
TORCHLESS_REGISTER_GROUP(registerAtenSchemas, kAtenSchemas)
TORCHLESS_REGISTER_GROUP(registerPrimSchemas, kPrimSchemas)
TORCHLESS_REGISTER_GROUP(registerQuantizedSchemas, kQuantizedSchemas)
TORCHLESS_REGISTER_GROUP(registerTorchvisionSchemas, kTorchvisionSchemas)
TORCHLESS_REGISTER_GROUP(registerOtherSchemas, kOtherSchemas)
#undef TORCHLESS_REGISTER_GROUP

void initOperatorRegistry() { (void)OperatorRegistry::global(); }

}  // namespace torchless
