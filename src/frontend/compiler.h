#pragma once
// The TorchScript compiler: AST (frontend/tree.h) -> IR (ir/ir.h), with PyTorch's semantics.
//
// Note [Compiler interface]
// Two pieces meet here. The emitter (ir_emitter.cpp) turns one `def` into a GraphFunction:
// scopes and SSA across ifs and loops, type checking and refinement, overload resolution
// against the op table, sugared values (modules, methods, builtins). The importer
// (script_importer.cpp) walks files of class and def statements (an archive's code/ records or
// a user's .py), declares ClassTypes, NamedTuples, enums and interfaces in a CompilationUnit,
// and asks the emitter for each method and function. Names the emitter cannot resolve by
// itself (qualified classes `__torch__.a.B`, free functions `__torch__.helper`, the
// `CONSTANTS.cN` table) come from the CompileEnv the importer provides, so types are
// resolved lazily and files can refer to each other in both directions.

#include "core/error.h"
#include "core/ivalue.h"
#include "core/type.h"
#include "frontend/tree.h"
#include "ir/function.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torchless::frontend {

/// What CompileEnv::resolveMethod / resolveFunction throw for a method or function whose own
/// compilation is in progress: TorchScript has no recursion. The emitter reports it at the
/// call with PyTorch's message ("method 'forward' is called recursively. Recursive calls are
/// not supported", GraphFunction::ensure_defined's RecursiveMethodCallError).
class RecursiveCallError : public Error {
 public:
  using Error::Error;
};

/// What the emitter asks its caller for.
struct CompileEnv {
  /// The unit new functions and types belong to.
  CompilationUnit* unit = nullptr;
  /// A named type by qualified name (`__torch__.a.B`, also NamedTuples, enums, interfaces);
  /// may define it on demand. Returns nullptr when there is none.
  std::function<TypePtr(const std::string& qualname)> resolveType;
  /// A free function by qualified name (`__torch__.helper`); may compile it on demand.
  /// Returns nullptr when there is none.
  std::function<GraphFunction*(const std::string& qualname)> resolveFunction;
  /// What a name bound by an import of a user's source stands for, as a dotted path
  /// (`F` -> "torch.nn.functional"); nullopt when the name is not imported. Optional.
  std::function<std::optional<std::string>(const std::string& name)> resolveImport;
  /// The archive's constants table (`CONSTANTS.c0` is element 0); null outside archives.
  const std::vector<IValue>* constants = nullptr;
  /// A method of a class that is declared but not compiled yet (`forward` of a submodule
  /// called before its own class was compiled); may compile it on demand. Optional: without
  /// it, only methods already added to the ClassType are found.
  std::function<Function*(const ClassType& cls, const std::string& name)> resolveMethod;
  /// Compiling the `__init__` of a class from a user's source (Note [User sources] in
  /// script_importer.h): `self.x = v` on an attribute the class lacks declares it with v's
  /// type. A script class honours `self.x : T = v` (PyTorch compiles its __init__); a module
  /// ignores such annotations and skips empty list/dict values, as PyTorch's type inference
  /// from the Python values does. `self.x = torch.nn.Parameter(t)` declares a parameter,
  /// `self.register_buffer("x", t)` a buffer; `super().__init__()` is skipped.
  bool declareAttributes = false;
};

/// Compiles one `def` into a function named `qualname`. For a method, `selfType` is the class
/// (or interface) and the first parameter is `self`. Parameter annotations default to Tensor,
/// as TorchScript does. Throws torchless::Error at the offending source range
/// (file:line:col, the line highlighted) for syntax the compiler rejects, unknown names,
/// type errors and calls no overload matches (listing the candidates' schemas).
std::unique_ptr<GraphFunction> compileFunction(const Def& def, const std::string& qualname,
                                               const TypePtr& selfType, const CompileEnv& env);

}  // namespace torchless::frontend
