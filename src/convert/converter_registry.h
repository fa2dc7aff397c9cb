#pragma once
// Converters keyed by schema: the registry every conversion backend (ONNX, engine) fills.
//
// Note [Converter registries]
// A converter turns one IR node into backend operations. It is registered under the exact
// schema string of the op table (Note [One op table] in ir/operator_registry.h), e.g.
//   aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
// and may claim several overloads at once (add.Tensor and add.Scalar share one converter).
// Nodes without a schema (prim::ListConstruct, prim::TupleConstruct ...) register by Symbol.
//
// Each backend owns one registry instance, filled by explicit registration functions called
// once at start-up (registerOnnxElementwise(r) & co.; never static registrars, which the
// linker drops from static libraries). Registering a schema that the op table does not know,
// or one that already has a converter, throws torchless::Error: start-up stops, as with the
// kernel registry. A miss is not an error here: find() returns nullptr and the caller reports
// it through the pre-flight (preflight.h), which lists every unsupported operator at once.
//
//   ConverterRegistry<OnnxConverter> r("onnx");
//   r.add({"aten::relu(Tensor self) -> Tensor", "aten::relu_(Tensor(a!) self) -> Tensor(a!)"},
//         convertRelu);
//   const OnnxConverter* c = r.find(matchOperator(node, OperatorRegistry::global()));

#include "core/error.h"
#include "ir/ir.h"
#include "ir/operator_registry.h"
#include "ir/symbol.h"

#include <fmt/format.h>

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace torchless::convert {

/// Converters of type `Fn` by schema key (and by Symbol for schema-less nodes).
template <typename Fn>
class ConverterRegistry {
 public:
  /// `backend` names the registry in messages ("onnx", "engine").
  explicit ConverterRegistry(std::string backend,
                             const OperatorRegistry& ops = OperatorRegistry::global())
      : backend_(std::move(backend)), ops_(&ops) {}
  ConverterRegistry(const ConverterRegistry&) = delete;
  ConverterRegistry& operator=(const ConverterRegistry&) = delete;

  /// Registers `fn` for the op-table entry whose key is exactly `schema`. Throws
  /// torchless::Error when the op table has no such schema or it already has a converter.
  void add(std::string_view schema, Fn fn) {
    const OpInfo* op = ops_->find(schema);
    if (!op)
      throw Error(
          fmt::format("{} converter registered for a schema the op table does not know: '{}'",
                      backend_, schema));
    if (bySchema_.count(op->key))
      throw Error(fmt::format("{} converter registered twice for '{}'", backend_, op->key));
    bySchema_.emplace(op->key, std::move(fn));
  }
  /// One converter claiming several overloads.
  void add(std::initializer_list<std::string_view> schemas, const Fn& fn) {
    for (auto s : schemas) add(s, fn);
  }
  void add(const std::vector<std::string>& schemas, const Fn& fn) {
    for (const auto& s : schemas) add(std::string_view(s), fn);
  }
  /// Registers `fn` for every schema named by `overloads` ("aten::add.Tensor", "aten::relu_"),
  /// each resolved to its exact schema string in the op table; an unknown name throws
  /// torchless::Error. The registry is still keyed by the full schema strings.
  void addOverloads(std::initializer_list<std::string_view> overloads, const Fn& fn) {
    for (auto o : overloads) {
      const OpInfo* op = ops_->findOverload(o);
      if (!op)
        throw Error(
            fmt::format("{} converter registered for an operator the op table does not know: '{}'",
                        backend_, o));
      add(std::string_view(op->key), fn);
    }
  }
  /// Registers `fn` for nodes of `kind` that have no schema (prim::ListConstruct ...).
  /// Throws torchless::Error when the kind already has one.
  void addNode(Symbol kind, Fn fn) {
    if (byKind_.count(kind))
      throw Error(fmt::format("{} converter registered twice for node kind {}", backend_,
                              kind.toQualString()));
    byKind_.emplace(kind, std::move(fn));
  }

  /// The converter for op-table entry `op` (null op: none), or nullptr.
  const Fn* find(const OpInfo* op) const { return op ? find(std::string_view(op->key)) : nullptr; }
  /// The converter for the exact schema string, or nullptr.
  const Fn* find(std::string_view schema) const {
    auto it = bySchema_.find(schema);
    return it == bySchema_.end() ? nullptr : &it->second;
  }
  /// The converter for schema-less nodes of `kind`, or nullptr.
  const Fn* findNode(Symbol kind) const {
    auto it = byKind_.find(kind);
    return it == byKind_.end() ? nullptr : &it->second;
  }
  /// The converter for `node` given its op-table entry (may be null): by schema first, then by
  /// kind. nullptr when there is none.
  const Fn* findFor(const Node& node, const OpInfo* op) const {
    if (const Fn* f = find(op)) return f;
    return findNode(node.kind());
  }

  /// Schemas with a converter, sorted (for coverage reports and the count test).
  std::vector<std::string> schemas() const {
    std::vector<std::string> out;
    for (const auto& [k, fn] : bySchema_) out.push_back(k);
    return out;
  }
  size_t numSchemas() const { return bySchema_.size(); }
  size_t numNodeKinds() const { return byKind_.size(); }
  const std::string& backend() const { return backend_; }

 private:
  std::string backend_;
  const OperatorRegistry* ops_;
  std::map<std::string, Fn, std::less<>> bySchema_;
  std::unordered_map<Symbol, Fn> byKind_;
};

}  // namespace torchless::convert
