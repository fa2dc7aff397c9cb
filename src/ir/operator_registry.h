#pragma once
// The op table. Note [One op table]
//
// Every operator torchless knows is one entry here, keyed by its full schema string exactly as
// PyTorch prints it:
//   aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
// The same string keys the kernel registry (runtime/), the frontend's overload resolution, and
// the ONNX and engine converters (convert/), so one table is the truth for all of them.
//
// Registration is explicit: initOperatorRegistry() calls registerAtenSchemas() & co. once (no
// static registrars; the linker drops those from static libraries). The schema strings come
// from src/ir/op_schemas_generated.inc, written by scripts/gen_op_schemas.py from the
// installed PyTorch. A duplicate schema, a second schema with the same name and overload, or a
// schema that does not parse throws torchless::Error, which stops start-up.
//
// Per-op facts hang off the entry (OpInfo), not off central switches. Note [Op facts]:
//  - from the schema: `mutates` (an argument annotated `(a!)`), `returnsAlias` (a return in an
//    argument's alias set), and `nondeterministic` for ops that take a Generator;
//  - set where the op is registered (the fact tables of operator_registry.cpp, applied by the
//    same registerXxxSchemas() that adds the group): side effects PyTorch's
//    Node::hasSideEffects lists, random ops without a Generator argument (dropout, rrelu),
//    writes a schema cannot declare (prim::PythonOp), and ops constant folding must leave;
//  - derived: `foldable`, false as soon as one of the above says the op is not a function of
//    its inputs.
// IR constructs that are not operators (prim::SetAttr, prim::CallMethod, prim::If ...) have no
// entry; Node::hasSideEffects / Node::mayWrite (ir/ir.h) state their facts.
// The kernel slot is filled by the runtime from its own registration functions.
// Converters live in their own registries keyed by OpInfo::key.
//
// Thread safety: the table is filled once at start-up; afterwards it may be read from any
// thread (lookups that parse take a lock; Note [Lazy schemas]). Registering is not thread-safe.
//
// Note [Lazy schemas]
// Parsing all ~4,200 schemas cost 25-60 ms of every command that touches the table, though a
// run uses a few hundred of them (issue 13, cold start). The generated schemas are therefore
// registered as text: registerSchemaText() files the string under its qualified name (the
// text up to '.' or '('), checks it against the names and overloads already known, and parses
// nothing. The first lookup that can see an operator of that name (find, findOverload,
// lookup, all) parses every text of the name, in registration order, and makes their
// entries, exactly as registerSchema() would have; a whole name at once, because facts such
// as nondeterministic are per name. Entries never move once made, so a pointer from a lookup
// stays valid. A text that does not parse, or does not print back to itself, throws
// torchless::Error from the lookup that parses it (its name stays unparsed, so every later
// lookup of the name throws too); all() parses the whole table, and a test runs it, so the
// table shipped stays checked. size() counts unparsed texts without parsing them.

#include "ir/function_schema.h"

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace torchless {

// Defined by the runtime, which fills the kernel slot of OpInfo.
struct KernelEntry;

/// One operator of the table: its schema and the facts about it.
struct OpInfo {
  /// The parsed schema.
  FunctionSchema schema;
  /// The table key: schema.str(), the full schema string as PyTorch prints it.
  std::string key;
  /// "aten::add.Tensor" (name, and `.overload` when there is one).
  std::string overloadKey;

  // ---- facts (Note [Op facts]) ----
  /// Some argument is written: an alias annotation with `!` (`add_`, `out=` variants, list
  /// and dict mutators), or a registration fact for ops whose schema cannot say
  /// (prim::PythonOp).
  bool mutates = false;
  /// Some return may alias an argument (shares an alias set with it, or is a wildcard):
  /// views such as `aten::view`, `aten::select`, and the returns of in-place ops.
  bool returnsAlias = false;
  /// Observable beyond its outputs and arguments (prints, raises, RNG state, files, RPC);
  /// must not be removed or reordered even when its outputs are unused
  /// (Node::hasSideEffects in torch/csrc/jit/ir/ir.cpp).
  bool hasSideEffects = false;
  /// Draws random numbers (some overload of the name takes a Generator, or it is marked at
  /// registration: dropout, rrelu, rand_like); must not be constant-folded or deduplicated.
  bool nondeterministic = false;
  /// May be evaluated at compile time when its inputs are constants: none of the facts above
  /// forbids it, and registration did not exclude it (prim::Uninitialized, dequantize).
  bool foldable = true;

  // ---- extension slot, filled by the runtime from its registration functions ----
  /// The runtime's kernel; null = no kernel (the op is unsupported by the interpreter).
  const KernelEntry* kernel = nullptr;
};

/// Facts a schema cannot tell (Note [Op facts]), given where an op group is registered.
struct RegisteredFacts {
  bool sideEffects = false;  ///< sets OpInfo::hasSideEffects
  bool random = false;       ///< sets OpInfo::nondeterministic
  bool writes = false;       ///< sets OpInfo::mutates
  bool notFoldable = false;  ///< clears OpInfo::foldable
};

/// The op table. Use OperatorRegistry::global(); separate instances are for tests.
class OperatorRegistry {
 public:
  OperatorRegistry() = default;
  OperatorRegistry(const OperatorRegistry&) = delete;
  OperatorRegistry& operator=(const OperatorRegistry&) = delete;

  /// The process-wide table, filled by initOperatorRegistry() on first use.
  static OperatorRegistry& global();

  /// Parses `schema` and adds it. Throws torchless::Error naming the schema when it does not
  /// parse, when the same schema is already registered, or when another schema has the same
  /// name and overload name. Returns the new entry (its address stays valid).
  OpInfo& registerSchema(std::string_view schema);

  /// Adds `schema` without parsing it (Note [Lazy schemas]): it is parsed by the first lookup
  /// of its name. `schema` must be printed as PyTorch prints it (schema.str() == schema) and
  /// must outlive the table (a string literal). Throws torchless::Error when the same text or
  /// another schema with the same name and overload is already registered.
  void registerSchemaText(std::string_view schema);
  /// Adds `facts` to every overload of `qualifiedName` (`prim::Print`). Throws
  /// torchless::Error when no overload of that name is registered.
  void addFacts(std::string_view qualifiedName, const RegisteredFacts& facts);

  /// The entry whose key is `schema` (the exact printed schema), or nullptr.
  const OpInfo* find(std::string_view schema) const;
  OpInfo* findMutable(std::string_view schema);
  /// As find, but throws torchless::Error("unknown operator schema '...'").
  const OpInfo& expect(std::string_view schema) const;
  /// The entry of `aten::add.Tensor` (or `aten::relu` for an empty overload), or nullptr.
  const OpInfo* findOverload(std::string_view nameDotOverload) const;
  /// Every overload of a qualified name (`aten::add`), in registration order; empty if none.
  const std::vector<const OpInfo*>& lookup(std::string_view qualifiedName) const;
  /// Every entry, sorted by key.
  std::vector<const OpInfo*> all() const;
  size_t size() const;

 private:
  // Note [Lazy schemas]. These take lazyMutex_ themselves; the maps below are changed only
  // under it (registering from one thread excepted).
  void parsePending(std::string_view qualifiedName) const;
  OpInfo& addParsed(FunctionSchema schema);
  mutable std::recursive_mutex lazyMutex_;
  /// Qualified name -> the texts of its overloads that are not parsed yet.
  std::unordered_map<std::string_view, std::vector<std::string_view>> pending_;
  /// `name.overload` -> text, of every text registered by registerSchemaText and not parsed.
  std::unordered_map<std::string_view, std::string_view> pendingOverloads_;
  std::vector<OpInfo*> overloadsOf(std::string_view qualifiedName);

  std::map<std::string, std::unique_ptr<OpInfo>, std::less<>> byKey_;
  std::map<std::string, OpInfo*, std::less<>> byOverload_;
  std::map<std::string, std::vector<const OpInfo*>, std::less<>> byName_;
};

/// Registers the aten:: schemas of op_schemas_generated.inc.
void registerAtenSchemas(OperatorRegistry& registry);
/// prim::, prims::, nvprims::.
void registerPrimSchemas(OperatorRegistry& registry);
/// quantized::, _quantized::, quantization::, prepacked::, mkldnn_prepacked::, sparse::.
void registerQuantizedSchemas(OperatorRegistry& registry);
/// torchvision::, image::, video_reader::.
void registerTorchvisionSchemas(OperatorRegistry& registry);
/// Every other namespace PyTorch registers (c10d::, profiler::, static_runtime:: ...).
void registerOtherSchemas(OperatorRegistry& registry);
/// torchless:: operators that runtime-only passes create (torchless_schemas.cpp).
void registerTorchlessSchemas(OperatorRegistry& registry);

/// Fills OperatorRegistry::global() once (later calls do nothing). Throws torchless::Error
/// when a schema is duplicated or does not parse.
void initOperatorRegistry();

}  // namespace torchless
