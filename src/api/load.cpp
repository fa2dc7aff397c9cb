// torchless::load: archive records -> CompilationUnit (code/ compiled by the frontend) ->
// objects rebuilt from data.pkl. See api/module.h and ../shared/docs/torchscript-archive.md
// section 5 (how torch.jit.load resolves types), which this follows step by step:
//   1. open the zip, check the version (ArchiveReader);
//   2. unpickle constants.pkl, then data.pkl; every `__torch__.*` class they name is defined on
//      demand by the ScriptImporter from code/, with all its methods compiled, so objects get
//      their real types and slots (a class without code is an error, not a placeholder);
//   3. run the pending `__setstate__` methods (TorchBind objects: torchbind::setState) in the
//      order the reader recorded them (inner objects first), then check that they left no
//      non-Optional attribute None;
//   4. the root object and the unit are the Module.
// Code that does not compile fails the load with the emitter's error (file:line:col) and the
// context "while compiling <method>", "while loading <code file>", "while loading <archive>".
#include "api/module.h"

#include "convert/engine/partition.h"
#include "core/error.h"
#include "core/out_of_memory.h"
#include "frontend/script_importer.h"
#include "passes/passes.h"
#include "runtime/interpreter.h"
#include "runtime/kernel.h"
#include "runtime/torchbind.h"
#include "serialize/archive_reader.h"

#include <unordered_set>

namespace torchless {

namespace {

/// Non-CPU devices in attribute values are mapped to `device` (tensors already load on CPU).
void mapDevices(const IValue& v, const Device& device, std::unordered_set<const void*>& seen) {
  switch (v.tag()) {
    case IValue::Tag::Object: {
      auto o = v.toObject();
      if (!seen.insert(o.get()).second) return;
      for (auto& slot : o->slots) {
        if (slot.isDevice())
          slot = IValue(device);
        else
          mapDevices(slot, device, seen);
      }
      return;
    }
    case IValue::Tag::List: {
      auto l = v.toList();
      if (!seen.insert(l.get()).second) return;
      for (auto& e : l->list) {
        if (e.isDevice())
          e = IValue(device);
        else
          mapDevices(e, device, seen);
      }
      return;
    }
    case IValue::Tag::Tuple:  // shared tuples and dicts once each too (Note [Shared values])
      if (!seen.insert(v.toTuple().get()).second) return;
      for (const auto& e : v.toTuple()->elements) mapDevices(e, device, seen);
      return;
    case IValue::Tag::Dict:
      if (!seen.insert(v.toDict().get()).second) return;
      for (const auto& [k, e] : v.toDict()->entries()) mapDevices(e, device, seen);
      return;
    default: return;
  }
}

/// After __setstate__: every attribute that cannot hold None must have been set.
void checkSetStateResult(const Object& obj, const std::string& archive) {
  const auto& attrs = obj.type->attributes();
  for (size_t i = 0; i < attrs.size(); ++i) {
    if (i < obj.slots.size() && obj.slots[i].isNone() && !canHoldNone(*attrs[i].type))
      throw Error(fmt::format("__setstate__ of '{}' left attribute '{}' of type {} unset (None)",
                              obj.type->name(), attrs[i].name, attrs[i].type->annotationStr()),
                  archive + ": record 'data.pkl'");
  }
}

Module loadArchive(const std::string& path, const LoadOptions& options) {
  initKernels();
  passes::installExecutionRewrites();  // conv fusion on the graphs run (never the saved ones)
  engine::registerEngineKernel();      // torchless::execute_engine (compiled archives, engines)
  ZipReaderOptions zipOptions;
  zipOptions.checkCrc = options.checkCrc;
  zipOptions.mapStoredRecords = options.mapRecords;
  // Note [Checking mapped records in the background] in serialize/zip_reader.cpp: checked by
  // finishChecks() below, before any code of the archive runs.
  zipOptions.checkMappedInBackground = options.mapRecords;
  ArchiveReader ar(path, zipOptions);
  if (!options.readTensorData) ar.usePlaceholderStorages();

  auto unit = std::make_shared<CompilationUnit>();
  std::vector<IValue> constants;
  frontend::ScriptImporter importer(
      unit,
      [&ar](const std::string& qualifier) -> std::optional<frontend::SourceFile> {
        // TorchBind namespaces: PyTorch writes an empty file; the classes are ours
        // (Note [TorchBind objects] in runtime/torchbind.h).
        if (qualifier.rfind(torchbind::kPrefix.substr(0, torchbind::kPrefix.size() - 1), 0) == 0) {
          if (std::optional<std::string> tb = torchbind::namespaceSource(qualifier))
            return frontend::SourceFile{"<TorchBind classes " + qualifier + ">", std::move(*tb)};
        }
        std::optional<std::string> text = ar.codeSource(qualifier);
        if (!text) return std::nullopt;
        return frontend::SourceFile{ArchiveReader::codeRecordName(qualifier), std::move(*text)};
      },
      &constants);

  std::string record = "constants.pkl";  // the pickle being read, for messages
  UnpickleHooks hooks;
  hooks.resolveClass = [&](const std::string& qualname) -> ClassTypePtr {
    if (ClassTypePtr c = importer.resolveClass(qualname)) return c;
    if (importer.resolveType(qualname)) return nullptr;  // a NamedTuple or enum: not a class
    if (qualname.rfind(frontend::kTorchBindPrefix, 0) == 0)
      throw Error(frontend::torchBindMessage(qualname), ar.path() + ": record '" + record + "'");
    std::string qualifier = qualname.substr(0, qualname.rfind('.'));
    throw Error(fmt::format("class '{}' has no code in the archive (expected a class statement "
                            "in {})",
                            qualname, ArchiveReader::codeRecordName(qualifier)),
                ar.path() + ": record '" + record + "'");
  };
  hooks.resolveType = [&](const std::string& qualname) { return importer.resolveType(qualname); };

  IValue rootValue;
  std::vector<PendingSetState> pending;
  try {
    UnpickleResult c = ar.readConstants(hooks);
    if (!c.value.isTuple())
      throw Error(fmt::format("constants table is a {}, not a tuple", c.value.tagName()),
                  ar.path() + ": record 'constants.pkl'");
    // The table is filled before data.pkl names any class, as in PyTorch; classes met in
    // constants.pkl itself compile against an empty table.
    constants = c.value.toTuple()->elements;
    pending = std::move(c.pendingSetState);
    record = "data.pkl";
    UnpickleResult r = ar.readData(hooks);
    ar.zip().finishChecks();
    rootValue = r.value;
    for (auto& p : r.pendingSetState) pending.push_back(std::move(p));
  } catch (Error& e) {
    if (e.place().empty()) e.withPlace(ar.path());
    e.addContext("while loading archive " + ar.path());
    throw;
  } catch (const std::bad_alloc&) {  // Note [Naming out of memory]
    throw Error(outOfMemoryMessage("reading record '" + record + "'"), ar.path());
  }
  if (!rootValue.isObject())
    throw Error(fmt::format("the root value is a {}, not a module object", rootValue.tagName()),
                ar.path() + ": record 'data.pkl'");

  for (const auto& p : pending) {
    const std::string& cls = p.object->type->name();
    if (torchbind::isKnownClass(cls)) {  // a TorchBind object: its __setstate__ is native
      try {
        torchbind::setState(*p.object, p.state);
      } catch (Error& e) {
        if (e.place().empty()) e.withPlace(ar.path());
        e.addContext(fmt::format("while rebuilding {} to load archive {}", cls, ar.path()));
        throw;
      }
      continue;
    }
    if (!p.object->type->findMethod("__setstate__"))
      throw Error(fmt::format("object of class '{}' was saved through __getstate__, but the class "
                              "has no __setstate__ method",
                              cls),
                  ar.path() + ": record 'data.pkl'");
    try {
      runMethod(p.object, "__setstate__", {p.state});
    } catch (Error& e) {
      e.addContext(fmt::format("while running {}.__setstate__ to load archive {}", cls, ar.path()));
      throw;
    }
    checkSetStateResult(*p.object, ar.path());
  }

  std::unordered_set<const void*> seen;
  mapDevices(rootValue, options.device, seen);
  return Module(rootValue.toObject(), std::move(unit));
}

}  // namespace

Module load(const std::string& path, const LoadOptions& options) {
  // Note [Naming out of memory]
  return namingOutOfMemory("loading archive " + path, path,
                           [&] { return loadArchive(path, options); });
}

}  // namespace torchless
