// ScriptImporter: code/ files to types and compiled functions. See Note [Lazy import] in
// script_importer.h.
#include "frontend/script_importer.h"

#include "core/error.h"
#include "frontend/literal.h"
#include "frontend/parser.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace torchless::frontend {

std::string torchBindMessage(const std::string& qualname) {
  return fmt::format(
      "TorchBind class '{}' is not supported yet (custom C++ classes such as quantized packed "
      "parameters and xnnpack/RNN cell contexts need their own kernels: a later issue)",
      qualname);
}

namespace {

std::string qualifierOf(const std::string& qualname) {
  size_t dot = qualname.rfind('.');
  return dot == std::string::npos ? std::string() : qualname.substr(0, dot);
}

/// `Var` name, or "" when `e` is not a Var.
std::string varName(const Expr& e) {
  return e.kind() == TreeKind::Var ? Var(e.tree()).name().name() : std::string();
}

/// The strings of a `["a", "b", ]` list (the `__parameters__` lines).
std::vector<std::string> stringList(const Expr& e, const std::string& what) {
  if (e.kind() != TreeKind::ListLiteral)
    throwErrorAt(e.range(), fmt::format("expected a list of strings for {}", what));
  std::vector<std::string> out;
  for (const Expr& item : ListLiteral(e.tree()).inputs()) {
    if (item.kind() != TreeKind::StringLiteral)
      throwErrorAt(item.range(), fmt::format("expected a string in {}", what));
    out.push_back(StringLiteral(item.tree()).text());
  }
  return out;
}

}  // namespace

ScriptImporter::ScriptImporter(std::shared_ptr<CompilationUnit> unit, SourceProvider provider,
                               const std::vector<IValue>* constants)
    : unit_(std::move(unit)), provider_(std::move(provider)), constants_(constants) {}

CompileEnv ScriptImporter::env() {
  CompileEnv env;
  env.unit = unit_.get();
  // Note [User sources]: bare names resolve in the user's file.
  auto qualify = [this](const std::string& q) {
    if (q.find('.') != std::string::npos || userQualifiers_.size() != 1) return q;
    return *userQualifiers_.begin() + "." + q;
  };
  env.resolveType = [this, qualify](const std::string& q) { return resolveType(qualify(q)); };
  env.resolveFunction = [this, qualify](const std::string& q) {
    return resolveFunction(qualify(q));
  };
  env.resolveImport = [this](const std::string& name) -> std::optional<std::string> {
    auto it = userImports_.find(name);
    if (it == userImports_.end()) return std::nullopt;
    return it->second;
  };
  env.constants = constants_;
  env.resolveMethod = [this](const ClassType& cls, const std::string& name) -> Function* {
    return resolveMethod(cls, name);
  };
  return env;
}

// ---- lookup -------------------------------------------------------------------------------

TypePtr ScriptImporter::resolveType(const std::string& qualname) {
  if (TypePtr t = unit_->findType(qualname)) return t;
  definePending(qualname);
  return unit_->findType(qualname);
}

ClassTypePtr ScriptImporter::resolveClass(const std::string& qualname) {
  if (!resolveType(qualname)) return nullptr;
  return unit_->findClass(qualname);
}

GraphFunction* ScriptImporter::resolveFunction(const std::string& qualname) {
  if (GraphFunction* f = unit_->findFunction(qualname)) return f;
  if (functionsInProgress_.count(qualname))
    throw RecursiveCallError(
        fmt::format("function '{}' is called recursively. Recursive calls are not supported",
                    qualname.substr(qualname.rfind('.') + 1)));
  definePending(qualname);
  return unit_->findFunction(qualname);
}

Function* ScriptImporter::resolveMethod(const ClassType& cls, const std::string& name) {
  if (Function* f = cls.findMethod(name)) return f;
  auto it = classes_.find(cls.name());
  if (it == classes_.end()) return nullptr;
  ClassState& state = *it->second;
  if (!state.attributesDone || !state.defs.count(name)) return nullptr;
  if (state.inProgress.count(name))
    throw RecursiveCallError(
        fmt::format("method '{}' is called recursively. Recursive calls are not supported", name));
  compileMethod(state, name);
  return cls.findMethod(name);
}

std::optional<ClassDef> ScriptImporter::findClassDef(const std::string& qualname) {
  parseQualifier(qualifierOf(qualname));
  auto it = classDefs_.find(qualname);
  if (it == classDefs_.end()) return std::nullopt;
  return it->second;
}

void ScriptImporter::importAll(const std::string& qualifier) {
  parseQualifier(qualifier);
  std::vector<std::string> names;
  for (const auto& [name, p] : pending_)
    if (p.qualifier == qualifier) names.push_back(name);
  for (const auto& n : names) definePending(n);
}

void ScriptImporter::setUserSource(const std::string& qualifier) {
  userQualifiers_.insert(qualifier);
}

bool ScriptImporter::isUserSource(const std::string& qualname) const {
  return userQualifiers_.count(qualifierOf(qualname)) > 0;
}

GraphFunction* ScriptImporter::userInit(const std::string& qualname) const {
  auto it = userInits_.find(qualname);
  return it == userInits_.end() ? nullptr : it->second;
}

std::vector<std::string> ScriptImporter::definedNames(const std::string& qualifier, bool modules) {
  parseQualifier(qualifier);
  std::vector<std::string> out;
  for (const std::string& q : order_[qualifier]) {
    auto it = classDefs_.find(q);
    bool isClass = it != classDefs_.end();
    if (!modules) {
      if (!isClass) out.push_back(q);
      continue;
    }
    if (!isClass || it->second.bases().size() != 1 || isInterfaceDecorated(it->second)) continue;
    std::string_view base = it->second.bases()[0].range().text();
    if (base == "torch.nn.Module" || base == "nn.Module" || base == "Module") out.push_back(q);
  }
  return out;
}

// ---- files --------------------------------------------------------------------------------

bool ScriptImporter::isInterfaceDecorated(const ClassDef& def) {
  for (const Expr& d : def.decorators()) {
    std::string_view t = d.range().text();
    if (t == "torch.jit.interface" || t == "jit.interface") return true;
  }
  return false;
}

void ScriptImporter::recordUserImport(const Stmt& s) {
  // The modules TorchScript resolves without Python: torch (and its submodules), math and
  // typing. Others (a user's own packages, torchvision) stay unbound, so a use of them is
  // an "undefined value" error at the use.
  auto known = [](const std::string& dotted) {
    auto root = dotted.substr(0, dotted.find('.'));
    return root == "torch" || root == "math" || root == "typing";
  };
  if (s.kind() == TreeKind::Import) {
    for (const Alias& a : Import(s.tree()).names()) {
      std::string dotted = a.name().name();
      // `import torch.nn` binds `torch` only, which is always bound.
      if (!a.asName().present() || !known(dotted)) continue;
      userImports_[a.asName().get().name()] = dotted;
    }
    return;
  }
  ImportFrom f(s.tree());
  std::string module = f.module().name();
  if (!known(module)) return;
  for (const Alias& a : f.names()) {
    std::string name = a.name().name();
    if (name == "*") continue;
    std::string local = a.asName().present() ? a.asName().get().name() : name;
    userImports_[local] = module + "." + name;
  }
}

void ScriptImporter::parseQualifier(const std::string& qualifier) {
  if (qualifier.empty() || !parsedQualifiers_.insert(qualifier).second) return;
  std::optional<SourceFile> file = provider_(qualifier);
  if (!file) return;  // a namespace without a file of its own
  qualifierFiles_[qualifier] = file->filename;
  try {
    Module m = parseFile(makeSource(file->filename, std::move(file->text)));
    for (const Stmt& s : m.body()) {
      switch (s.kind()) {
        case TreeKind::ClassDef:
        case TreeKind::Def: {
          std::string name = s.kind() == TreeKind::ClassDef ? ClassDef(s.tree()).name().name()
                                                            : Def(s.tree()).name().name();
          std::string qualname = qualifier + "." + name;
          if (pending_.count(qualname) || unit_->findType(qualname) ||
              unit_->findFunction(qualname))
            throwErrorAt(s.range(), fmt::format("'{}' is defined twice", qualname));
          pending_[qualname] = Pending{s.tree(), qualifier};
          order_[qualifier].push_back(qualname);
          if (s.kind() == TreeKind::ClassDef) classDefs_.emplace(qualname, ClassDef(s.tree()));
          break;
        }
        case TreeKind::Import:
        case TreeKind::ImportFrom:
          // Older writers listed the files a file uses; names are resolved lazily. A user's
          // file binds names with them (`import torch.nn.functional as F`).
          if (userQualifiers_.count(qualifier)) recordUserImport(s);
          break;
        case TreeKind::Assign: {
          Assign a(s.tree());
          if (a.lhsList().size() == 1 && varName(a.lhs()) == "op_version_set") break;
          [[fallthrough]];
        }
        default:
          if (userQualifiers_.count(qualifier)) break;  // Python-only code of a user's file
          throwErrorAt(s.range(),
                       "unexpected statement at the top level of TorchScript code (only classes, "
                       "functions, imports and `op_version_set = N` are allowed)");
      }
    }
  } catch (Error& e) {
    e.addContext("while loading " + file->filename);
    throw;
  }
}

void ScriptImporter::definePending(const std::string& qualname) {
  std::string qualifier = qualifierOf(qualname);
  if (qualifier.empty()) return;
  parseQualifier(qualifier);
  auto it = pending_.find(qualname);
  if (it == pending_.end() || defining_.count(qualname)) return;
  Pending p = it->second;
  pending_.erase(it);
  defining_.insert(qualname);
  const bool function = p.stmt->kind() != TreeKind::ClassDef;
  if (function) functionsInProgress_.insert(qualname);
  try {
    if (p.stmt->kind() == TreeKind::ClassDef)
      defineClass(qualname, ClassDef(p.stmt), p.qualifier);
    else
      defineFunction(qualname, Def(p.stmt));
  } catch (Error& e) {
    defining_.erase(qualname);
    functionsInProgress_.erase(qualname);
    auto f = qualifierFiles_.find(p.qualifier);
    if (f != qualifierFiles_.end()) e.addContext("while loading " + f->second);
    throw;
  }
  defining_.erase(qualname);
  functionsInProgress_.erase(qualname);
}

// ---- definitions --------------------------------------------------------------------------

void ScriptImporter::defineClass(const std::string& qualname, const ClassDef& def,
                                 const std::string& qualifier) {
  auto bases = def.bases();
  if (bases.empty()) return defineModuleOrClass(qualname, def, false);
  if (bases.size() > 1)
    throwErrorAt(bases[1].range(),
                 fmt::format("class '{}' has more than one base class", qualname));
  std::string base = varName(bases[0]);
  if (userQualifiers_.count(qualifier)) {
    std::string_view text = bases[0].range().text();
    // `@torch.jit.interface` on a class of a user's file: an interface (a module interface
    // when it derives from nn.Module), as torch.jit.interface makes it.
    if (isInterfaceDecorated(def))
      return defineInterface(qualname, def, text == "torch.nn.Module" || text == "nn.Module");
    if (text == "torch.nn.Module" || text == "nn.Module") base = "Module";
    if (text == "object") return defineModuleOrClass(qualname, def, false);
  }
  if (base == "Module") return defineModuleOrClass(qualname, def, true);
  if (base == "NamedTuple") return defineNamedTuple(qualname, def);
  if (base == "Enum") return defineEnum(qualname, def);
  if (base == "Interface") return defineInterface(qualname, def, false);
  if (base == "ModuleInterface") return defineInterface(qualname, def, true);
  throwErrorAt(
      bases[0].range(),
      fmt::format("unsupported base class '{}' of '{}' (expected Module, NamedTuple, Enum, "
                  "Interface or ModuleInterface)",
                  bases[0].range().text(), qualname));
}

void ScriptImporter::defineModuleOrClass(const std::string& qualname, const ClassDef& def,
                                         bool isModule) {
  auto type = ClassType::create(qualname, isModule);
  unit_->addType(qualname, type);
  auto owned = std::make_unique<ClassState>();
  ClassState& cls = *owned;
  cls.type = type;
  classes_[qualname] = std::move(owned);

  std::set<std::string> parameters, buffers;
  struct AttrDecl {
    std::string name;
    Expr type;
  };
  std::vector<AttrDecl> attrs;
  std::vector<Assign> constants;
  for (const Stmt& s : def.body()) {
    switch (s.kind()) {
      case TreeKind::Assign: {
        Assign a(s.tree());
        Expr lhs = a.lhs();
        if (a.lhsList().size() != 1)
          throwErrorAt(s.range(), "unexpected assignment in a class body");
        if (lhs.kind() == TreeKind::Var) {
          std::string name = varName(lhs);
          if (name == "__parameters__" || name == "__buffers__" || name == "__forward_hooks__" ||
              name == "__forward_pre_hooks__") {
            if (!a.rhs().present()) throwErrorAt(s.range(), fmt::format("{} needs a value", name));
            auto names = stringList(a.rhs().get(), name);
            if (name == "__parameters__")
              parameters.insert(names.begin(), names.end());
            else if (name == "__buffers__")
              buffers.insert(names.begin(), names.end());
            else if (name == "__forward_hooks__")
              type->forwardHooks = names;
            else
              type->forwardPreHooks = names;
          } else if (name == "__annotations__") {
            // `__annotations__ = []` (older writers) initialises the table: nothing to do.
          } else if (a.rhs().present()) {
            constants.push_back(a);
          } else if (a.type().present()) {
            attrs.push_back({name, a.type().get()});
          } else {
            throwErrorAt(s.range(), "an attribute declaration needs a type");
          }
        } else if (lhs.kind() == TreeKind::Subscript) {
          // `__annotations__["0"] = T`: an attribute whose name is not an identifier.
          Subscript sub(lhs.tree());
          auto idx = sub.subscriptExprs();
          if (varName(sub.value()) != "__annotations__" || idx.size() != 1 ||
              idx[0].kind() != TreeKind::StringLiteral || !a.rhs().present())
            throwErrorAt(s.range(), "unexpected assignment in a class body");
          attrs.push_back({StringLiteral(idx[0].tree()).text(), a.rhs().get()});
        } else {
          throwErrorAt(s.range(), "unexpected assignment in a class body");
        }
        break;
      }
      case TreeKind::Def: {
        Def d(s.tree());
        const std::string& name = d.name().name();
        if (cls.defs.count(name))
          throwErrorAt(s.range(),
                       fmt::format("method '{}' of '{}' is defined twice", name, qualname));
        cls.defs.emplace(name, d);
        cls.order.push_back(name);
        break;
      }
      case TreeKind::Pass: break;
      case TreeKind::ExprStmt:
        if (ExprStmt(s.tree()).expr().kind() == TreeKind::StringLiteral) break;  // docstring
        [[fallthrough]];
      default: throwErrorAt(s.range(), "unexpected statement in a class body");
    }
  }

  for (const auto& a : attrs) {
    TypePtr t = typeOf(a.type);
    try {
      type->addAttribute(a.name, t, parameters.count(a.name) > 0, buffers.count(a.name) > 0);
    } catch (const Error& e) {
      throwErrorAt(a.type.range(), e.message());
    }
  }
  for (const Assign& a : constants) {
    std::string name = varName(a.lhs());
    TypePtr t;
    if (a.type().present()) {
      Expr te = a.type().get();
      if (te.kind() == TreeKind::Subscript && varName(Subscript(te.tree()).value()) == "Final") {
        auto idx = Subscript(te.tree()).subscriptExprs();
        if (idx.size() != 1) throwErrorAt(te.range(), "Final takes one type");
        t = typeOf(idx[0]);
      } else {
        t = typeOf(te);
      }
    }
    type->addConstant(name, std::make_shared<IValue>(literalValue(a.rhs().get(), t)));
  }

  if (!isUserSource(qualname)) {
    cls.attributesDone = true;
    for (const auto& name : cls.order) compileMethod(cls, name);
    return;
  }
  // Note [User sources]
  if (isModule && !type->findAttribute("training")) type->addAttribute("training", BoolType::get());
  cls.attributesDone = true;
  auto init = cls.defs.find("__init__");
  if (init != cls.defs.end()) {
    if (isModule) {
      Def d = init->second;
      cls.defs.erase(init);
      cls.order.erase(std::find(cls.order.begin(), cls.order.end(), "__init__"));
      userInits_[qualname] = unit_->addFunction(compile(d, qualname + ".__init__", type, true));
    } else {
      cls.inProgress.insert("__init__");
      std::unique_ptr<GraphFunction> fn = compile(init->second, qualname + ".__init__", type, true);
      type->addMethod(unit_->addFunction(std::move(fn)));
      cls.inProgress.erase("__init__");
    }
  }
  for (const auto& name : cls.order) {
    if (isModule && name != "forward" && !cls.defs.at(name).hasDecorator("torch.jit.export"))
      continue;  // compiled when called
    compileMethod(cls, name);
  }
}

void ScriptImporter::compileMethod(ClassState& cls, const std::string& name) {
  if (cls.type->findMethod(name) || cls.inProgress.count(name)) return;
  cls.inProgress.insert(name);
  const Def& def = cls.defs.at(name);
  std::string qualname = cls.type->name() + "." + name;
  std::unique_ptr<GraphFunction> fn = compile(def, qualname, cls.type);
  cls.type->addMethod(unit_->addFunction(std::move(fn)));
  cls.inProgress.erase(name);
}

std::unique_ptr<GraphFunction> ScriptImporter::compile(const Def& def, const std::string& qualname,
                                                       const TypePtr& selfType,
                                                       bool declareAttributes) {
  try {
    CompileEnv e = env();
    e.declareAttributes = declareAttributes;
    return compileFunction(def, qualname, selfType, e);
  } catch (Error& e) {
    // The emitter names the function for errors in bodies; add it where it did not.
    std::string line = "while compiling " + qualname;
    const auto& ctx = e.context();
    if (std::find(ctx.begin(), ctx.end(), line) == ctx.end()) e.addContext(line);
    throw;
  }
}

void ScriptImporter::defineFunction(const std::string& qualname, const Def& def) {
  unit_->addFunction(compile(def, qualname, nullptr));
}

void ScriptImporter::defineNamedTuple(const std::string& qualname, const ClassDef& def) {
  std::vector<std::string> fields;
  std::vector<TypePtr> types;
  std::vector<std::shared_ptr<IValue>> defaults;
  bool anyDefault = false;
  for (const Stmt& s : def.body()) {
    if (s.kind() == TreeKind::Pass) continue;
    if (s.kind() != TreeKind::Assign || Assign(s.tree()).lhs().kind() != TreeKind::Var ||
        !Assign(s.tree()).type().present())
      throwErrorAt(s.range(), "a NamedTuple body holds `field : Type` lines only");
    Assign a(s.tree());
    fields.push_back(varName(a.lhs()));
    types.push_back(typeOf(a.type().get()));
    if (a.rhs().present()) {
      defaults.push_back(std::make_shared<IValue>(literalValue(a.rhs().get(), types.back())));
      anyDefault = true;
    } else {
      if (anyDefault)
        throwErrorAt(s.range(), "a NamedTuple field without a default follows one with a default");
      defaults.push_back(nullptr);
    }
  }
  if (!anyDefault) defaults.clear();
  unit_->addType(qualname, TupleType::createNamed(qualname, std::move(fields), std::move(types),
                                                  std::move(defaults)));
}

void ScriptImporter::defineEnum(const std::string& qualname, const ClassDef& def) {
  std::vector<std::string> names;
  std::vector<std::shared_ptr<IValue>> values;
  TypePtr valueType;
  for (const Stmt& s : def.body()) {
    if (s.kind() == TreeKind::Pass) continue;
    if (s.kind() != TreeKind::Assign || Assign(s.tree()).lhs().kind() != TreeKind::Var ||
        !Assign(s.tree()).rhs().present())
      throwErrorAt(s.range(), "an Enum body holds `NAME = value` lines only");
    Assign a(s.tree());
    IValue v = literalValue(a.rhs().get(), nullptr);
    TypePtr t;
    if (v.isInt())
      t = IntType::get();
    else if (v.isDouble())
      t = FloatType::get();
    else if (v.isString())
      t = StringType::get();
    else
      throwErrorAt(a.rhs().get().range(), "enum values must be int, float or str");
    if (valueType && *valueType != *t)
      throwErrorAt(a.rhs().get().range(), fmt::format("enum '{}' mixes {} and {} values", qualname,
                                                      valueType->str(), t->str()));
    valueType = t;
    names.push_back(varName(a.lhs()));
    values.push_back(std::make_shared<IValue>(std::move(v)));
  }
  if (!valueType) throwErrorAt(def.range(), fmt::format("enum '{}' has no members", qualname));
  unit_->addType(qualname, std::make_shared<EnumType>(qualname, valueType, std::move(names),
                                                      std::move(values)));
}

void ScriptImporter::defineInterface(const std::string& qualname, const ClassDef& def,
                                     bool isModule) {
  auto iface = std::make_shared<InterfaceType>(qualname, isModule);
  unit_->addInterface(qualname, iface);
  for (const Stmt& s : def.body()) {
    if (s.kind() == TreeKind::Pass) continue;
    if (s.kind() != TreeKind::Def)
      throwErrorAt(s.range(), "an interface body holds method stubs only");
    Def d(s.tree());
    iface->methods.emplace_back(d.name().name(),
                                std::make_shared<const FunctionSchema>(stubSchema(d, iface)));
  }
}

FunctionSchema ScriptImporter::stubSchema(const Def& def, const TypePtr& selfType) {
  std::vector<Argument> args;
  size_t i = 0;
  for (const Param& p : def.decl().params()) {
    TypePtr t;
    if (i++ == 0 && p.ident().name() == "self")
      t = selfType;
    else
      t = p.type().present() ? typeOf(p.type().get()) : TensorType::get();
    std::optional<IValue> dflt;
    if (p.defaultValue().present()) dflt = literalValue(p.defaultValue().get(), t);
    args.emplace_back(p.ident().name(), t, std::nullopt, dflt, p.kwargOnly());
  }
  TypePtr ret =
      def.decl().returnType().present() ? typeOf(def.decl().returnType().get()) : NoneType::get();
  return FunctionSchema(def.name().name(), "", std::move(args), {Argument("", ret)});
}

// ---- types and literals -------------------------------------------------------------------

TypePtr ScriptImporter::typeOf(const Expr& annotation) {
  bool nested = false;  // an error from defining another class passes through unchanged
  TypeResolver resolver = [&](const std::string& q) -> TypePtr {
    try {
      return resolveType(q);
    } catch (...) {
      nested = true;
      throw;
    }
  };
  try {
    return parseTypeAnnotation(annotation.range().text(), resolver);
  } catch (const Error& e) {
    if (nested) throw;
    std::string_view text = annotation.range().text();
    size_t tb = text.find(kTorchBindPrefix);
    if (tb != std::string_view::npos) {
      size_t end = tb;
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) ||
                                   text[end] == '_' || text[end] == '.'))
        ++end;
      throwErrorAt(annotation.range(), torchBindMessage(std::string(text.substr(tb, end - tb))));
    }
    throwErrorAt(annotation.range(), e.message());
  }
}

IValue ScriptImporter::literalValue(const Expr& e, const TypePtr& type) {
  return evalLiteral(
      e, type, constants_,
      "expected a constant (a number, string, bool, None, or a tuple or list of them)");
}

}  // namespace torchless::frontend
