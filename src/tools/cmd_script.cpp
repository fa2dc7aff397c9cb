// `torchless script FILE.py [--class NAME | --function NAME] -o OUT.pt`: compiles a user's
// TorchScript source with our frontend and writes an archive torch.jit.load accepts
// (../shared/docs/cli.md).
//
// What a file can express without Python running it (Note [User sources] in
// frontend/script_importer.h):
//   --function NAME  a top-level `def NAME(...)`; the archive is what
//                    `torch.jit.script(NAME).save(path)` writes: a module
//                    `__torch__.PlaceholderModule` (attribute `training`) whose forward is the
//                    function, with the functions it calls beside it.
//   --class NAME     a class deriving from torch.nn.Module. Its `__init__(self)` (no other
//                    parameters) is compiled with TorchScript's rules and run by our
//                    interpreter on a fresh object: `self.x = v` declares attribute x with
//                    v's type (as PyTorch infers module attribute types from values: an
//                    annotation in __init__ is ignored, an empty list/dict declares nothing;
//                    declare such types in the class body, `x : List[int]`),
//                    `self.w = torch.nn.Parameter(t)` a parameter, `self.register_buffer("b",
//                    t)` a buffer; tensors come from torch.* factories (zeros, ones, arange,
//                    linspace, ...). Submodules built by Python code (`nn.Linear(...)`) cannot
//                    be expressed. Every attribute must end up set (Optional ones may be None).
//                    forward, @torch.jit.export methods and what they call are compiled.
//   neither          the file's only torch.nn.Module class.
// Compile errors are file:line:col with the source line and a caret; exit status 1.
#include "api/module.h"
#include "core/error.h"
#include "frontend/script_importer.h"
#include "runtime/interpreter.h"
#include "runtime/kernel.h"
#include "tools/commands.h"
#include "tools/save_checked.h"

#include <fstream>
#include <iostream>
#include <sstream>

namespace torchless::cli {

namespace {

constexpr const char* kQualifier = "__torch__";

struct ScriptOptions {
  std::string file;
  std::string className;
  std::string functionName;
  std::string output;
};

std::string readSource(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string shortNames(const std::vector<std::string>& qualnames) {
  std::vector<std::string> out;
  for (const auto& q : qualnames) out.push_back(q.substr(q.rfind('.') + 1));
  return out.empty() ? std::string("none") : fmt::format("{}", fmt::join(out, ", "));
}

/// `torch.jit.script(fn).save()`'s root: a module whose forward is `fn` with `self` first.
ObjectPtr placeholderModule(CompilationUnit& unit, const GraphFunction& fn) {
  const std::string qualname = std::string(kQualifier) + ".PlaceholderModule";
  if (unit.findType(qualname))
    throw Error(fmt::format("the file defines '{}' itself; --function needs that name free",
                            qualname.substr(qualname.rfind('.') + 1)));
  auto type = ClassType::create(qualname, /*isModule=*/true);
  type->addAttribute("training", BoolType::get());
  unit.addType(qualname, type);
  std::shared_ptr<Graph> g = fn.graph()->copy();
  g->insertInput(0, "self")->setType(type);
  std::vector<Argument> args{Argument("self", type)};
  for (const Argument& a : fn.schema().arguments()) args.push_back(a);
  FunctionSchema schema("forward", "", std::move(args), fn.schema().returns());
  type->addMethod(unit.addFunction(
      std::make_unique<GraphFunction>(qualname + ".forward", g, std::move(schema))));
  ObjectPtr obj = Object::create(type);
  obj->setAttr("training", IValue(true));
  return obj;
}

/// A module object of class `cls` initialised by running its compiled `__init__`.
ObjectPtr initializedModule(const ClassTypePtr& cls, const GraphFunction* init,
                            const std::string& file) {
  ObjectPtr obj = Object::create(cls);
  obj->setAttr("training", IValue(true));
  if (init) {
    if (init->numInputs() != 1)
      throw Error(fmt::format("{}.__init__ takes parameters besides self; a script file's module "
                              "is built without arguments",
                              cls->name()),
                  file);
    try {
      runFunction(*init, {IValue(obj)});
    } catch (Error& e) {
      e.addContext(fmt::format("while running {}.__init__", cls->name()));
      throw;
    }
  }
  const auto& attrs = cls->attributes();
  for (size_t i = 0; i < attrs.size(); ++i) {
    if (obj->slots[i].isNone() && !canHoldNone(*attrs[i].type))
      throw Error(fmt::format("attribute '{}' of type {} of '{}' is not set by __init__ (a "
                              "script file's module gets its state from __init__)",
                              attrs[i].name, attrs[i].type->annotationStr(), cls->name()),
                  file);
  }
  return obj;
}

void runScript(const ScriptOptions& o) {
  initKernels();
  std::string text = readSource(o.file);
  auto unit = std::make_shared<CompilationUnit>();
  frontend::ScriptImporter importer(
      unit, [&](const std::string& q) -> std::optional<frontend::SourceFile> {
        if (q != kQualifier) return std::nullopt;
        return frontend::SourceFile{o.file, text};
      });
  importer.setUserSource(kQualifier);

  ObjectPtr root;
  if (!o.functionName.empty()) {
    std::string qualname = std::string(kQualifier) + "." + o.functionName;
    GraphFunction* fn = importer.resolveFunction(qualname);
    if (!fn)
      throw Error(fmt::format("no function '{}' at the top level (functions: {})", o.functionName,
                              shortNames(importer.definedNames(kQualifier, false))),
                  o.file);
    root = placeholderModule(*unit, *fn);
  } else {
    std::string name = o.className;
    if (name.empty()) {
      auto modules = importer.definedNames(kQualifier, true);
      if (modules.size() != 1)
        throw Error(fmt::format("the file defines {} torch.nn.Module classes ({}); name one with "
                                "--class NAME, or a function with --function NAME",
                                modules.size(), shortNames(modules)),
                    o.file);
      name = modules[0].substr(modules[0].rfind('.') + 1);
    }
    std::string qualname = std::string(kQualifier) + "." + name;
    ClassTypePtr cls = importer.resolveClass(qualname);
    if (!cls)
      throw Error(fmt::format("no class '{}' at the top level (modules: {})", name,
                              shortNames(importer.definedNames(kQualifier, true))),
                  o.file);
    if (!cls->isModule())
      throw Error(fmt::format("class '{}' is not a torch.nn.Module; an archive's root must be a "
                              "module",
                              name),
                  o.file);
    if (!cls->findMethod("forward"))
      throw Error(fmt::format("module '{}' has no forward method", name), o.file);
    root = initializedModule(cls, importer.userInit(qualname), o.file);
  }
  saveLoadable(Module(root, unit), o.output, "scripted");
  std::cout << fmt::format("{}: {} ({} methods)\n", o.output, root->type->name(),
                           root->type->methods().size());
}

}  // namespace

void registerScriptCommand(CLI::App& app) {
  auto opts = std::make_shared<ScriptOptions>();
  auto* cmd = app.add_subcommand("script", "Compile a TorchScript source file into an archive");
  cmd->add_option("FILE", opts->file, "Python source holding TorchScript classes and functions")
      ->required();
  auto* cls = cmd->add_option("--class", opts->className,
                              "The torch.nn.Module class to script (default: the only one)");
  auto* fn = cmd->add_option("--function", opts->functionName,
                             "Script this function (the archive's forward calls it)");
  cls->excludes(fn);
  fn->excludes(cls);
  cmd->add_option("-o,--output", opts->output, "The archive to write (.pt)")->required();
  cmd->callback([opts]() { runScript(*opts); });
}

}  // namespace torchless::cli
