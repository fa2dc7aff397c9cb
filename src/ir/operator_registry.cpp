#include "ir/operator_registry.h"

#include "core/error.h"

#include <algorithm>
#include <mutex>
#include <set>

namespace torchless {

namespace {

#include "ir/op_schemas_generated.inc"

/// Takes a Generator: draws random numbers.
bool takesGenerator(const FunctionSchema& s) {
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

struct NamedFacts {
  const char* name;
  RegisteredFacts facts;
};

template <size_t N, size_t M>
void registerGroup(OperatorRegistry& registry, const char* const (&schemas)[N],
                   const NamedFacts (&facts)[M]) {
  for (const char* schema : schemas)
    if (schema) registry.registerSchemaText(schema);
  for (const NamedFacts& f : facts)
    if (f.name) registry.addFacts(f.name, f.facts);
}

// ---- Facts set where each group is registered (Note [Op facts]) ----------------------------
// Side effects are the operators of PyTorch's Node::hasSideEffects (torch/csrc/jit/ir/ir.cpp)
// that have a schema; random ops are those without a Generator overload (the others are
// found from their schemas); not foldable are ops PyTorch's ConstantPropagation skips.
constexpr RegisteredFacts kEffect{.sideEffects = true};
constexpr RegisteredFacts kRandom{.random = true};
constexpr RegisteredFacts kNotFoldable{.notFoldable = true};

constexpr NamedFacts kAtenFacts[] = {
    {"aten::warn", kEffect},
    {"aten::save", kEffect},
    {"aten::manual_seed", kEffect},
    {"aten::wait", kEffect},
    {"aten::dropout", kRandom},
    {"aten::dropout_", kRandom},
    {"aten::feature_dropout", kRandom},
    {"aten::feature_dropout_", kRandom},
    {"aten::alpha_dropout", kRandom},
    {"aten::alpha_dropout_", kRandom},
    {"aten::feature_alpha_dropout", kRandom},
    {"aten::feature_alpha_dropout_", kRandom},
    {"aten::rrelu", kRandom},
    {"aten::rrelu_", kRandom},
    {"aten::rand_like", kRandom},
    {"aten::randn_like", kRandom},
    {"aten::randint_like", kRandom},
    {"aten::native_dropout", kRandom},
    // Folding would replace a quantized tensor by a float constant.
    {"aten::dequantize", kNotFoldable},
};

constexpr NamedFacts kPrimFacts[] = {
    // Runs Python: anything may be written.
    {"prim::PythonOp", {.sideEffects = true, .writes = true}},
    {"prim::IgnoredPythonOp", {.sideEffects = true, .writes = true}},
    {"prim::Print", kEffect},
    {"prim::RaiseException", kEffect},
    {"prim::AddStatValue", kEffect},
    {"prim::TimePoint", kEffect},
    {"prim::BailoutTemplate", kEffect},
    {"prim::BailOut", kEffect},
    {"prim::rpc_async", kEffect},
    {"prim::rpc_sync", kEffect},
    {"prim::rpc_remote", kEffect},
    // Placeholders and profiling nodes stand for a run-time value.
    {"prim::Uninitialized", kNotFoldable},
    {"prim::AutogradZero", kNotFoldable},
    {"prim::Guard", kNotFoldable},
    {"prim::profile", kNotFoldable},
    {"prim::unchecked_unwrap_optional", kNotFoldable},
};

constexpr NamedFacts kNoFacts[] = {{nullptr, {}}};

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
  info->nondeterministic = takesGenerator(schema);
  info->foldable = !info->mutates && !info->nondeterministic;
  info->schema = std::move(schema);

  OpInfo* raw = info.get();
  byOverload_.emplace(raw->overloadKey, raw);
  auto& overloads = byName_[raw->schema.name()];
  // An operator with a Generator overload draws random numbers in all its overloads
  // (aten::randn(int[] size) as well as aten::randn.generator).
  bool random = raw->nondeterministic;
  for (const OpInfo* o : overloads) random |= o->nondeterministic;
  if (random) {
    for (OpInfo* o : overloadsOf(raw->schema.name())) {
      o->nondeterministic = true;
      o->foldable = false;
    }
    raw->nondeterministic = true;
    raw->foldable = false;
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
    if (it->second == text)
      throw Error(fmt::format("operator schema registered twice: '{}'", text));
    throw Error(
        fmt::format("operator {} registered twice: '{}' and '{}'", overload, it->second, text));
  }
  if (auto it = byOverload_.find(overload); it != byOverload_.end()) {
    if (it->second->key == text)
      throw Error(fmt::format("operator schema registered twice: '{}'", text));
    throw Error(fmt::format("operator {} registered twice: '{}' and '{}'", overload,
                            it->second->key, text));
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

std::vector<OpInfo*> OperatorRegistry::overloadsOf(std::string_view qualifiedName) {
  std::vector<OpInfo*> out;
  for (const OpInfo* o : lookup(qualifiedName)) out.push_back(byOverload_.at(o->overloadKey));
  return out;
}

void OperatorRegistry::addFacts(std::string_view qualifiedName, const RegisteredFacts& facts) {
  std::vector<OpInfo*> ops = overloadsOf(qualifiedName);
  if (ops.empty())
    throw Error(fmt::format("facts given for operator {}, which is not registered", qualifiedName));
  for (OpInfo* op : ops) {
    op->hasSideEffects |= facts.sideEffects;
    op->nondeterministic |= facts.random;
    op->mutates |= facts.writes;
    op->foldable &= !(facts.sideEffects || facts.random || facts.writes || facts.notFoldable);
  }
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

void registerAtenSchemas(OperatorRegistry& registry) {
  registerGroup(registry, kAtenSchemas, kAtenFacts);
}
void registerPrimSchemas(OperatorRegistry& registry) {
  registerGroup(registry, kPrimSchemas, kPrimFacts);
}
void registerQuantizedSchemas(OperatorRegistry& registry) {
  registerGroup(registry, kQuantizedSchemas, kNoFacts);
}
void registerTorchvisionSchemas(OperatorRegistry& registry) {
  registerGroup(registry, kTorchvisionSchemas, kNoFacts);
}
void registerOtherSchemas(OperatorRegistry& registry) {
  registerGroup(registry, kOtherSchemas, kNoFacts);
}

void initOperatorRegistry() { (void)OperatorRegistry::global(); }

}  // namespace torchless
