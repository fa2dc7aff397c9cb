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
    if (*it) registry.registerSchemaText(*it);
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
  std::lock_guard<std::recursive_mutex> lock(lazyMutex_);
  parsePending(schema.name());
  return addParsed(std::move(schema));
}

OpInfo& OperatorRegistry::addParsed(FunctionSchema schema) {
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

// ---- Note [Lazy schemas] --------------------------------------------------------------------

namespace {
/// "aten::add.Tensor" of "aten::add.Tensor(Tensor self, ...) -> Tensor" (all before '(').
std::string_view overloadKeyOf(std::string_view schema) {
  return schema.substr(0, std::min(schema.find('('), schema.size()));
}
/// "aten::add" of "aten::add.Tensor" or of a whole schema.
std::string_view nameOf(std::string_view schemaOrOverload) {
  std::string_view k = overloadKeyOf(schemaOrOverload);
  return k.substr(0, std::min(k.find('.'), k.size()));
}
}  // namespace

void OperatorRegistry::registerSchemaText(std::string_view text) {
  std::lock_guard<std::recursive_mutex> lock(lazyMutex_);
  const std::string_view overload = overloadKeyOf(text), name = nameOf(text);
  if (overload.empty() || overload.size() == text.size())
    throw Error(fmt::format("operator schema '{}' has no argument list", text));
  if (auto it = pendingOverloads_.find(overload); it != pendingOverloads_.end()) {
    if (it->second == text) throw Error(fmt::format("operator schema registered twice: '{}'", text));
    throw Error(fmt::format("operator {} registered twice: '{}' and '{}'", overload, it->second, text));
  }
  if (auto it = byOverload_.find(overload); it != byOverload_.end()) {
    if (it->second->key == text) throw Error(fmt::format("operator schema registered twice: '{}'", text));
    throw Error(fmt::format("operator {} registered twice: '{}' and '{}'", overload, it->second->key, text));
  }
  pendingOverloads_.emplace(overload, text);
  pending_[name].push_back(text);
}

void OperatorRegistry::parsePending(std::string_view qualifiedName) const {
  // Logically const: parsing makes the entries the texts already stand for.
  auto& self = const_cast<OperatorRegistry&>(*this);
  std::lock_guard<std::recursive_mutex> lock(lazyMutex_);
  auto it = self.pending_.find(qualifiedName);
  if (it == self.pending_.end()) return;
  std::vector<FunctionSchema> parsed;
  parsed.reserve(it->second.size());
  for (std::string_view text : it->second) {
    try {
      parsed.push_back(parseSchema(text));
    } catch (Error& e) {
      e.addContext(fmt::format("while registering operator schema '{}'", text));
      throw;
    }
    if (parsed.back().str() != text || parsed.back().name() != qualifiedName)
      throw Error(fmt::format("operator schema '{}' is not as PyTorch prints it: '{}'", text,
                              parsed.back().str()));
  }
  const std::vector<std::string_view> texts = std::move(it->second);
  self.pending_.erase(it);
  for (std::string_view text : texts) self.pendingOverloads_.erase(overloadKeyOf(text));
  for (FunctionSchema& s : parsed) self.addParsed(std::move(s));
}

size_t OperatorRegistry::size() const {
  std::lock_guard<std::recursive_mutex> lock(lazyMutex_);
  return byKey_.size() + pendingOverloads_.size();
}

const OpInfo* OperatorRegistry::find(std::string_view schema) const {
  std::lock_guard<std::recursive_mutex> lock(lazyMutex_);
  parsePending(nameOf(schema));
  auto it = byKey_.find(schema);
  return it == byKey_.end() ? nullptr : it->second.get();
}

OpInfo* OperatorRegistry::findMutable(std::string_view schema) {
  return const_cast<OpInfo*>(find(schema));
}

const OpInfo& OperatorRegistry::expect(std::string_view schema) const {
  const OpInfo* info = find(schema);
  if (!info) throw Error(fmt::format("unknown operator schema '{}'", schema));
  return *info;
}

const OpInfo* OperatorRegistry::findOverload(std::string_view nameDotOverload) const {
  std::lock_guard<std::recursive_mutex> lock(lazyMutex_);
  parsePending(nameOf(nameDotOverload));
  auto it = byOverload_.find(nameDotOverload);
  return it == byOverload_.end() ? nullptr : it->second;
}

const std::vector<const OpInfo*>& OperatorRegistry::lookup(std::string_view qualifiedName) const {
  static const std::vector<const OpInfo*> none;
  std::lock_guard<std::recursive_mutex> lock(lazyMutex_);
  parsePending(qualifiedName);
  auto it = byName_.find(qualifiedName);
  return it == byName_.end() ? none : it->second;
}

std::vector<const OpInfo*> OperatorRegistry::all() const {
  std::lock_guard<std::recursive_mutex> lock(lazyMutex_);
  while (!pending_.empty()) parsePending(pending_.begin()->first);
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
