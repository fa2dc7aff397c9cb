#pragma once
// Script functions and the compilation unit that owns them.
//
// A GraphFunction is a TorchScript function or method: a qualified name, a Graph whose first
// input is `self` for methods, and a FunctionSchema (argument names, types and defaults).
// The runtime attaches its compiled form lazily (executionState()), so compiling a graph into
// instructions happens once per function, not per call.
//
// A CompilationUnit owns the functions and named types (classes, NamedTuples, enums,
// interfaces) of one archive or one source file, looked up by qualified name
// (`__torch__.M.forward`, `__torch__.M`).

#include "core/type.h"
#include "ir/function_schema.h"
#include "ir/ir.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace torchless {

/// Defined by the runtime: the compiled instruction list of a GraphFunction.
struct ExecutionState;

/// A function or method whose body is a Graph.
class GraphFunction : public Function {
 public:
  /// `qualname` is `__torch__.M.forward` for a method, `__torch__.helper` for a function.
  /// The schema's argument names and types must match the graph's inputs.
  GraphFunction(std::string qualname, std::shared_ptr<Graph> graph, FunctionSchema schema);

  const std::string& name() const override { return name_; }
  std::string qualname() const override { return qualname_; }
  const std::shared_ptr<Graph>& graph() const { return graph_; }
  void setGraph(std::shared_ptr<Graph> g);
  const FunctionSchema& schema() const { return schema_; }
  void setSchema(FunctionSchema s) { schema_ = std::move(s); }
  /// Number of inputs the graph takes (self included for methods).
  size_t numInputs() const { return graph_->inputs().size(); }

  /// The runtime's compiled state, created by `create` on first use (thread-safe).
  template <typename Create>
  ExecutionState& executionState(Create&& create) const {
    std::call_once(stateOnce_, [&] { state_ = create(*this); });
    return *state_;
  }

  /// A schema built from the graph inputs: names from their debug names, types from the
  /// values, no defaults; returns from the graph's outputs.
  static FunctionSchema schemaFromGraph(const std::string& name, const Graph& graph);

 private:
  std::string qualname_;
  std::string name_;
  std::shared_ptr<Graph> graph_;
  FunctionSchema schema_;
  mutable std::once_flag stateOnce_;
  mutable std::shared_ptr<ExecutionState> state_;
};

/// Owns functions and named types by qualified name.
class CompilationUnit {
 public:
  CompilationUnit() = default;
  CompilationUnit(const CompilationUnit&) = delete;
  CompilationUnit& operator=(const CompilationUnit&) = delete;
  /// Breaks the cycle of each interface it declared (its method schemas take the interface
  /// as `self`), so the types are freed with the unit.
  ~CompilationUnit();

  /// Adds a function; throws torchless::Error if the name is taken.
  GraphFunction* addFunction(std::unique_ptr<GraphFunction> fn);
  GraphFunction* findFunction(const std::string& qualname) const;
  const std::vector<std::unique_ptr<GraphFunction>>& functions() const { return functions_; }

  /// Adds a named type (ClassType, InterfaceType, EnumType, named TupleType) under `qualname`;
  /// throws torchless::Error if the name is taken.
  void addType(const std::string& qualname, TypePtr type);
  /// addType for an interface, whose methods the unit clears when it is destroyed.
  void addInterface(const std::string& qualname, std::shared_ptr<InterfaceType> type);
  TypePtr findType(const std::string& qualname) const;
  std::shared_ptr<ClassType> findClass(const std::string& qualname) const;
  /// Every named type in the order added.
  const std::vector<TypePtr>& types() const { return typeOrder_; }

 private:
  std::vector<std::unique_ptr<GraphFunction>> functions_;
  std::map<std::string, GraphFunction*, std::less<>> functionsByName_;
  std::map<std::string, TypePtr, std::less<>> typesByName_;
  std::vector<TypePtr> typeOrder_;
  std::vector<std::shared_ptr<InterfaceType>> interfaces_;
};

}  // namespace torchless
