#pragma once
// ScriptImporter: TorchScript source files (an archive's code/ records, or a user's .py) to
// types and functions in a CompilationUnit, as torch/csrc/jit/serialization/import_source.cpp.
//
// Note [Lazy import]
// Nothing is compiled up front. A qualified name (`__torch__.a.b.C`, `__torch__.helper`) is
// looked up on demand: its qualifier (`__torch__.a.b`) names a file, which is parsed once when
// first needed (a missing file is only a namespace); every top-level `class` and `def` in it is
// registered as "to be defined"; then the requested name is defined:
//   class X(Module)      ClassType (module): `name : T` attribute slots in declaration order,
//                        `__annotations__["0"] = T` for non-identifier names, parameter and
//                        buffer flags from `__parameters__` / `__buffers__`, `name : Final[T] =
//                        literal` constants, `__forward_hooks__` / `__forward_pre_hooks__`.
//   class X              ClassType (script class), the same body rules.
//   class X(NamedTuple)  TupleType::createNamed (fields, types, defaults).
//   class X(Enum)        EnumType (`RED = 1` members; all int, all float or all str).
//   class X(Interface) / class X(ModuleInterface)
//                        InterfaceType, method schemas from the stubs.
//   def f(...)           GraphFunction `<qualifier>.f`.
// A class is registered in the unit before its attribute types and methods are resolved, so
// classes may refer to each other (and to themselves) in both directions, across files, and
// before their definition. Right after its attributes, every method of a class is compiled
// through frontend::compileFunction, in declaration order; a method that calls a later one
// (`self.helper(x)`) gets it compiled on demand through CompileEnv::resolveMethod (a method
// already being compiled is not found, so recursion is rejected by the emitter). Names the emitter
// meets (`__torch__.X`, `__torch__.f`, `CONSTANTS.cN`) come back here through the CompileEnv.
//
// Note [User sources]
// A user's .py (torchless script) is read with the same rules plus what Python-side scripting
// gives: names used bare (`helper(x)`, `Point(1, 2)`) resolve in the file itself; top-level
// statements other than classes, functions and imports are Python-only and ignored; a class
// deriving from `torch.nn.Module` / `nn.Module` is a module and gets `training : bool`; its
// `__init__(self)` is compiled apart (CompileEnv::declareAttributes: `self.x = v` declares
// attribute x with v's type, as PyTorch infers a module's attribute types from the values:
// annotations in __init__ are ignored and empty lists/dicts give no attribute; types declared
// in the class body (`x : List[int]`) hold; `torch.nn.Parameter(t)` declares a parameter,
// `self.register_buffer(...)` a buffer) for the caller to run on a fresh object; of its
// methods, `forward` and those
// marked `@torch.jit.export` are compiled, others when called, as torch.jit.script does. A
// script class (no base, or `object`) gets its attributes from `__init__` the same way and
// keeps it as its constructor.
//
// Errors carry the file, line and column of the offending source, plus context lines
// "while compiling __torch__.M.forward" and "while loading code/__torch__/m.py".

#include "core/ivalue.h"
#include "core/type.h"
#include "frontend/compiler.h"
#include "frontend/source.h"
#include "frontend/tree.h"
#include "ir/function.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace torchless::frontend {

/// Qualified names of TorchBind classes (custom C++ classes) start with this; they never have
/// code in an archive.
inline constexpr std::string_view kTorchBindPrefix = "__torch__.torch.classes.";

/// The error message for a TorchBind class we cannot load ("TorchBind class '...' is not
/// supported yet ...").
std::string torchBindMessage(const std::string& qualname);

/// One source file: the name errors show ("code/__torch__/m.py") and its text.
struct SourceFile {
  std::string filename;
  std::string text;
};

/// Returns the file of a qualifier (`__torch__.a.b`), or nullopt when there is none.
using SourceProvider = std::function<std::optional<SourceFile>(const std::string& qualifier)>;

class ScriptImporter {
 public:
  /// `constants` backs `CONSTANTS.cN` (may be null outside archives; may be filled later but
  /// must outlive the importer).
  ScriptImporter(std::shared_ptr<CompilationUnit> unit, SourceProvider provider,
                 const std::vector<IValue>* constants = nullptr);

  /// A named type (class, NamedTuple, enum, interface), defined on demand; nullptr when no
  /// file defines it. Throws torchless::Error when its source does not compile.
  TypePtr resolveType(const std::string& qualname);
  /// A class (module or script class), defined on demand with all its methods compiled;
  /// nullptr when the name is not a class in any file.
  ClassTypePtr resolveClass(const std::string& qualname);
  /// A free function, compiled on demand; nullptr when no file defines it.
  GraphFunction* resolveFunction(const std::string& qualname);

  /// A declared method of a class being imported, compiled on demand (a method calling
  /// another method of its class that comes later in the file); nullptr when there is none.
  Function* resolveMethod(const ClassType& cls, const std::string& name);

  /// Defines every class and function of the file of `qualifier` (e.g. a user's .py).
  void importAll(const std::string& qualifier);

  /// Marks the file of `qualifier` as a user's source rather than an archive's code/
  /// (Note [User sources]). Call before anything of it is resolved.
  void setUserSource(const std::string& qualifier);
  /// The compiled `__init__` of a module class of a user's source (self is its only input),
  /// or nullptr when the class has none. Not a method of the class: PyTorch's scripted
  /// modules have no `__init__` either.
  GraphFunction* userInit(const std::string& qualname) const;
  /// The qualified names of the module classes and functions the file of `qualifier`
  /// defines, in source order (for messages and defaults).
  std::vector<std::string> definedNames(const std::string& qualifier, bool modules);

  /// The environment given to the emitter (backed by this importer).
  CompileEnv env();

  const std::shared_ptr<CompilationUnit>& unit() const { return unit_; }

  /// The parsed `class` statement of a qualified class name (parsing its file if needed);
  /// nullopt when there is none.
  std::optional<ClassDef> findClassDef(const std::string& qualname);

 private:
  struct Pending {
    TreeRef stmt;           // ClassDef or Def
    std::string qualifier;  // its file's qualifier
  };
  struct ClassState {
    ClassTypePtr type;
    std::map<std::string, Def> defs;  // method name -> def
    std::vector<std::string> order;   // method names in declaration order
    std::set<std::string> inProgress;
    bool attributesDone = false;  // methods may compile once the slots are known
  };

  /// Parses the file of `qualifier` once; registers its top-level statements.
  void parseQualifier(const std::string& qualifier);
  /// Defines `qualname` if it is pending; returns whether something was defined or exists.
  void definePending(const std::string& qualname);
  void defineClass(const std::string& qualname, const ClassDef& def, const std::string& qualifier);
  void defineModuleOrClass(const std::string& qualname, const ClassDef& def, bool isModule);
  void defineNamedTuple(const std::string& qualname, const ClassDef& def);
  void defineEnum(const std::string& qualname, const ClassDef& def);
  void defineInterface(const std::string& qualname, const ClassDef& def, bool isModule);
  void defineFunction(const std::string& qualname, const Def& def);
  void compileMethod(ClassState& cls, const std::string& name);
  /// compileFunction with the context line "while compiling <qualname>".
  std::unique_ptr<GraphFunction> compile(const Def& def, const std::string& qualname,
                                         const TypePtr& selfType, bool declareAttributes = false);
  bool isUserSource(const std::string& qualname) const;

  /// The type an annotation expression denotes, resolving `__torch__` names through this.
  TypePtr typeOf(const Expr& annotation);
  /// The value of a literal (`3`, `-1.5`, `"zeros"`, `(2, 3)`, `None`, `inf`) of type `type`
  /// (frontend/literal.h evalLiteral, with the archive's constants table).
  IValue literalValue(const Expr& e, const TypePtr& type);
  /// The schema of a method stub (interfaces), self first.
  FunctionSchema stubSchema(const Def& def, const TypePtr& selfType);

  std::shared_ptr<CompilationUnit> unit_;
  SourceProvider provider_;
  const std::vector<IValue>* constants_;

  std::set<std::string> parsedQualifiers_;
  std::map<std::string, Pending> pending_;             // qualname -> statement to define
  std::map<std::string, ClassDef> classDefs_;          // qualname -> class statement
  std::map<std::string, std::string> qualifierFiles_;  // qualifier -> file name
  std::set<std::string> defining_;                     // qualnames being defined
  std::set<std::string> functionsInProgress_;          // free functions being compiled
  std::set<std::string> userQualifiers_;               // files that are a user's source
  std::map<std::string, GraphFunction*> userInits_;    // module class -> its __init__
  /// Names a user's file binds by import (Note [User sources]): `F` -> "torch.nn.functional",
  /// `sqrt` -> "math.sqrt". Only torch, math, typing and __future__ imports are recorded.
  std::map<std::string, std::string> userImports_;
  void recordUserImport(const Stmt& s);
  /// Whether a class of a user's file carries `@torch.jit.interface`.
  static bool isInterfaceDecorated(const ClassDef& def);
  std::map<std::string, std::vector<std::string>> order_;  // qualifier -> names in order
  std::map<std::string, std::unique_ptr<ClassState>> classes_;
};

}  // namespace torchless::frontend
