// torchless::save: Module -> printed code + pickled objects -> archive (api/module.h).
#include "api/module.h"
#include "core/error.h"
#include "runtime/interpreter.h"
#include "runtime/torchbind.h"
#include "serialize/archive_writer.h"
#include "serialize/python_print.h"

namespace torchless {

void save(const Module& module, const std::string& path) {
  TL_CHECK(module.defined(), "cannot save an empty module");
  PythonPrinter printer;
  printer.addClass(module.object()->type);
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
  try {
    writeArchive(path, contents);
  } catch (Error& e) {
    e.withPlace(path);
    throw;
  }
}

}  // namespace torchless
