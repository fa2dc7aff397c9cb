// torchless::save: Module -> printed code + pickled objects -> archive (api/module.h).
#include "api/module.h"
#include "core/error.h"
#include "runtime/interpreter.h"
#include "runtime/torchbind.h"
#include "serialize/archive_writer.h"
#include "serialize/python_print.h"

#include <functional>
#include <unordered_set>

namespace torchless {

namespace {

/// Adds the class of every object reachable from `v` (an attribute typed with an interface
/// holds an object of some other class, which the archive must define too, as PyTorch's
/// exporter collects the classes of the objects it pickles).
void addObjectClasses(PythonPrinter& printer, const IValue& v,
                      std::unordered_set<const Object*>& seen) {
  if (v.isObject()) {
    const ObjectPtr& o = v.toObject();
    if (!seen.insert(o.get()).second) return;
    printer.addClass(o->type);
    for (const IValue& slot : o->slots) addObjectClasses(printer, slot, seen);
  } else if (v.isList()) {
    for (const IValue& e : v.toList()->list) addObjectClasses(printer, e, seen);
  } else if (v.isTuple()) {
    for (const IValue& e : v.toTuple()->elements) addObjectClasses(printer, e, seen);
  } else if (v.isDict()) {
    for (const auto& [k, e] : v.toDict()->entries()) {
      addObjectClasses(printer, k, seen);
      addObjectClasses(printer, e, seen);
    }
  }
}

}  // namespace

void save(const Module& module, const std::string& path) { save(module, path, {}); }

void save(const Module& module, const std::string& path,
          const std::function<void(const std::string& readablePath)>& beforeCommit) {
  TL_CHECK(module.defined(), "cannot save an empty module");
  PythonPrinter printer;
  printer.addClass(module.object()->type);
  std::unordered_set<const Object*> seen;
  addObjectClasses(printer, IValue(module.object()), seen);
  PrintedCode code = printer.finish();
  ArchiveContents contents;
  contents.version = code.minVersion;
  contents.root = IValue(module.object());
  contents.constants = std::move(code.constants);
  contents.codeSources = std::move(code.sources);
  // TorchBind objects pickle their native state; other classes with __getstate__ run it
  // (quantized modules), as PyTorch's pickler does.
  contents.getState = [](const ObjectPtr& o) -> std::optional<IValue> {
    if (torchbind::isKnownClass(o->type->name())) return torchbind::getState(*o);
    if (o->type->findMethod("__getstate__")) return runMethod(o, "__getstate__", {});
    return std::nullopt;
  };
  contents.beforeCommit = beforeCommit;
  try {
    writeArchive(path, contents);
  } catch (Error& e) {
    e.withPlace(path);
    throw;
  }
}

}  // namespace torchless
