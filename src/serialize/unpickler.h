#pragma once
// Unpickler: a restricted reader for the pickles inside TorchScript archives (data.pkl,
// constants.pkl; ../shared/docs/torchscript-archive.md section 2). Note [Restricted unpickling]
//
// Loading never runs anything the file names. The opcodes are the protocol-2 subset PyTorch
// writes (section 2.1) plus LIST, DICT, SETITEM and BINUNICODE8; any other opcode is an error.
// GLOBAL accepts a fixed allow-list (section 2.3) and `__torch__.*` classes; every other name is
// refused by name ("forbidden global 'os.system'") when it is read, before anything could use it.
// The allowed globals are not called either: REDUCE dispatches on them to our own rebuild code.
//
// Bounds: every length and count read from the file is checked against the bytes left before
// anything is allocated; the memo, the stack and the MARK stack are bounded; values may nest at
// most UnpicklerLimits::maxDepth deep. A container may not be modified after it has been put
// inside another value (PyTorch's pickler never does that), which also rules out cycles.
//
// Tensors: BINPERSID ('storage', <X>Storage, key, location, numel) loads the record for `key`
// once through UnpicklerOptions::readStorage; every tensor on that key shares one Storage that
// wraps the record's bytes (no copy). numel*itemsize larger than the record is an error; offsets,
// sizes and strides are checked by Tensor::fromStorage. Storages saved on any device load on the
// CPU (map_location="cpu"); the original locations are reported in UnpickleResult.
// Quantized tensors carry a QuantizerInfo. Sparse tensors are rejected with a clear error.
//
// Objects (GLOBAL '__torch__.x Name', NEWOBJ, BUILD): the class comes from
// UnpicklerOptions::resolveClass. When it returns null, a placeholder ClassType is made (one per
// qualified name, kept in a ClassRegistry) whose attributes are the keys of the BUILD state dict
// in order, typed from the values; it is a module when UnpicklerOptions::isModuleHint says so
// (ArchiveReader looks for `class Name(Module):` in code/) or else when its state has a
// `training` key. The
// frontend replaces these with the types compiled from code/.
//
// __setstate__: when BUILD's state is not a dict (or the resolved class has a __setstate__
// method), nothing is executed: the object keeps empty slots and {object, state} is appended to
// UnpickleResult::pendingSetState, in the order BUILD ran (inner objects first). Whoever can
// compile code/ runs `obj.__setstate__(state)` for each entry in that order.

#include "core/ivalue.h"
#include "core/type.h"
#include "serialize/zip_reader.h"

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torchless {

/// Resolves a qualified class name (`__torch__.foo.Bar`) to its ClassType, or returns nullptr.
using ClassResolver = std::function<ClassTypePtr(const std::string& qualname)>;
/// Returns the bytes of the storage record for a persistent-id key ("0" -> record "data/0").
/// Throws torchless::Error when the record is missing or unreadable.
using StorageReader = std::function<RecordData(const std::string& key)>;

/// Placeholder class and enum types made for names no resolver knew, shared across the
/// pickles of one archive (constants.pkl and data.pkl) so one name has one type.
struct ClassRegistry {
  std::map<std::string, ClassTypePtr> classes;
  std::map<std::string, std::shared_ptr<const EnumType>> enums;
};

struct UnpicklerLimits {
  size_t maxDepth = 200;              // nesting of containers and objects
  size_t maxMemo = size_t{1} << 24;   // memo entries
  size_t maxStack = size_t{1} << 24;  // stack entries
  size_t maxMarks = 4096;             // open MARKs
  size_t maxGlobalLength = 1024;      // `module\nname` text
  size_t maxTypeTagLength = 8192;     // restore_type_tag strings
};

struct UnpicklerOptions {
  /// Prefix of every error's place: "model.pt: record 'data.pkl'".
  std::string place = "pickle";
  /// The record folder of storages, only for messages: "data/" or "constants/".
  std::string storageDir = "data/";
  /// Where storages come from; null means a persistent id is an error.
  StorageReader readStorage;
  /// A storage whose record is shorter than the tensor needs gets a zero-filled placeholder
  /// (placeholderRecord) instead of an error: PyTorch writes the records of traced_inputs.pkl
  /// empty, keeping only shapes and dtypes.
  bool shortRecordsAsPlaceholders = false;
  /// Class lookup (the frontend's importer); may be null.
  ClassResolver resolveClass;
  /// Non-class types named in type tags and enums (`__torch__.Color`); may be null.
  TypeResolver resolveType;
  /// For placeholder classes: whether `qualname` is a module (e.g. from its `class N(Module):`
  /// line in code/). When null or nullopt, a class is a module if its state has `training`.
  std::function<std::optional<bool>(const std::string& qualname)> isModuleHint;
  /// Placeholder types are kept here; a fresh registry is used when null.
  std::shared_ptr<ClassRegistry> registry;
  UnpicklerLimits limits;
};

/// An object whose state must go through its class's __setstate__ (not run by the unpickler).
struct PendingSetState {
  ObjectPtr object;
  IValue state;
};

/// One storage loaded from a record.
struct LoadedStorage {
  std::string key;
  ScalarType dtype = ScalarType::Float;
  std::string location;  // as written ("cpu", "cuda:0"); the bytes are on the CPU regardless
  Storage storage;
};

struct UnpickleResult {
  IValue value;
  std::vector<PendingSetState> pendingSetState;
  /// Every storage, in the order first met.
  std::vector<LoadedStorage> storages;
  /// Non-fatal findings ("record 'data/3' holds 96 bytes, storage uses 64").
  std::vector<std::string> warnings;
};

/// Parses one pickle. Throws torchless::Error with place `options.place` and the byte offset
/// of the failing opcode.
UnpickleResult unpickle(const void* data, size_t size, const UnpicklerOptions& options);

/// The dtype named by a storage global (`FloatStorage` -> Float), or nullopt.
std::optional<ScalarType> dtypeFromStorageName(std::string_view name);

}  // namespace torchless
