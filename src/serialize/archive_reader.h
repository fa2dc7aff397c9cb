#pragma once
// ArchiveReader: the records of a TorchScript archive written by torch.jit.save
// (../shared/docs/torchscript-archive.md sections 1, 2, 5), read without compiling code/.
//
//   ArchiveReader ar("model.pt");          // zip, prefix, version, legacy checks
//   IValue consts = ar.readConstants(hooks);
//   IValue root = ar.readData(hooks);      // the module Object
//   auto src = ar.codeSource("__torch__.torch.nn.modules.conv");  // code/__torch__/.../conv.py
//
// The frontend hooks its importer in through UnpickleHooks: resolveClass is asked for every
// `__torch__.*` class the pickles name (in the order PyTorch's loader meets them), and it can
// read the class's source with codeSource(qualifier) on demand. Without hooks, placeholder
// classes are made from the pickled state (see unpickler.h).
//
// loadArchiveData(path) does all of it at once with placeholder classes, for tools and tests.

#include "core/ivalue.h"
#include "serialize/unpickler.h"
#include "serialize/zip_reader.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torchless {

/// File-format versions this reader accepts (PyTorch 1.13 and 2.x accept the same range).
constexpr uint64_t kMinSupportedFileFormatVersion = 1;
constexpr uint64_t kMaxSupportedFileFormatVersion = 10;

/// Parses a version record as PyTorch does (std::stoull: leading spaces, digits, then anything;
/// "-1" wraps around). Throws torchless::Error naming `place` for no digits or overflow; does not
/// check the supported range.
uint64_t parseVersionRecord(std::string_view text, const std::string& place);

/// How classes and types named in the pickles are resolved.
struct UnpickleHooks {
  ClassResolver resolveClass;
  TypeResolver resolveType;
};

class ArchiveReader {
 public:
  /// Opens the archive, finds the prefix, reads and checks the version, refuses the legacy
  /// model.json format and archives without data.pkl or constants.pkl. Throws torchless::Error.
  explicit ArchiveReader(const std::string& path, ZipReaderOptions options = {});
  /// Same, over bytes in memory (tests, fuzzing). `owner` keeps `data` alive.
  ArchiveReader(std::shared_ptr<void> owner, const void* data, size_t size, std::string name,
                ZipReaderOptions options = {});

  const ZipReader& zip() const { return *zip_; }
  const std::string& path() const { return zip_->displayName(); }
  /// The file-format version (1..10).
  uint64_t version() const { return version_; }
  /// "version" or ".data/version": the record the version came from.
  const std::string& versionRecord() const { return versionRecord_; }
  /// Every record below the prefix, in zip order.
  const std::vector<ZipRecordInfo>& records() const { return zip_->records(); }
  bool hasRecord(std::string_view name) const { return zip_->hasRecord(name); }
  RecordData readRecord(std::string_view name) const { return zip_->readRecord(name); }

  /// True for lite-interpreter archives (`bytecode.pkl` present; ignored by jit.load and us).
  bool hasBytecode() const { return hasRecord("bytecode.pkl"); }
  /// The `byteorder` record ("little"), or nullopt when absent (written by PyTorch >= 2.1).
  const std::optional<std::string>& byteorder() const { return byteorder_; }
  /// True when `.data/serialization_id` is present (PyTorch >= 2.1).
  bool hasSerializationId() const { return hasRecord(".data/serialization_id"); }

  /// Qualifiers of every code file: "code/__torch__/a/b.py" -> "__torch__.a.b".
  std::vector<std::string> codeQualifiers() const;
  /// The source text of `code/<qualifier with / for .>.py`, or nullopt when there is none
  /// (a qualifier may be a namespace only).
  std::optional<std::string> codeSource(const std::string& qualifier) const;
  /// The record name of a qualifier's source ("code/__torch__/a/b.py").
  static std::string codeRecordName(const std::string& qualifier);
  /// Names below `extra/` (the `_extra_files` of torch.jit.save).
  std::vector<std::string> extraFiles() const;
  /// The bytes of `extra/<name>`.
  std::string readExtraFile(const std::string& name) const;

  /// Unpickles constants.pkl (storages from constants/) into the table behind CONSTANTS.cN.
  /// Must be called before readData() to follow PyTorch's order.
  UnpickleResult readConstants(const UnpickleHooks& hooks = {});
  /// Unpickles data.pkl (storages from data/). Its value must be an object (the root module).
  UnpickleResult readData(const UnpickleHooks& hooks = {});
  /// Unpickles traced_inputs.pkl (storages from traced_inputs/), which torch.jit.trace writes
  /// since PyTorch 2.0: a Dict[str, List[Any]] from method name to the example inputs it was
  /// traced with. Returns nullopt when the archive has no such record.
  std::optional<UnpickleResult> readTracedInputs(const UnpickleHooks& hooks = {});
  /// From now on, storages are placeholders instead of the records' bytes: zero-filled buffers
  /// of each record's size, mapped from anonymous memory that takes no resident memory until
  /// written (Note [Placeholder storages]). Nothing is read from data/, constants/ or
  /// traced_inputs/ records, and their CRC is not checked. For reading facts (shapes, dtypes,
  /// sizes) of a large archive without materializing its tensors.
  void usePlaceholderStorages() { placeholderStorages_ = true; }
  /// Placeholder classes made so far (shared by both pickles).
  const std::shared_ptr<ClassRegistry>& registry() const { return registry_; }

 private:
  void init();
  UnpickleResult readPickle(const std::string& record, const std::string& storageDir,
                            const UnpickleHooks& hooks, bool shortRecordsAsPlaceholders = false);

  std::unique_ptr<ZipReader> zip_;
  uint64_t version_ = 0;
  std::string versionRecord_;
  std::optional<std::string> byteorder_;
  std::optional<bool> moduleHint(const std::string& qualname);

  std::shared_ptr<ClassRegistry> registry_ = std::make_shared<ClassRegistry>();
  bool placeholderStorages_ = false;
  std::map<std::string, std::string> codeCache_;  // qualifier -> code text ("" when none)
};

/// Everything loadArchiveData() reads.
struct ArchiveData {
  std::string path;
  std::string prefix;
  uint64_t version = 0;
  std::string versionRecord;
  IValue root;         // the root module Object from data.pkl
  TuplePtr constants;  // constants.pkl: item i backs CONSTANTS.c<i>
  std::vector<ZipRecordInfo> records;
  /// "__torch__.torch.nn.modules.conv" -> text of code/__torch__/torch/nn/modules/conv.py
  std::map<std::string, std::string> codeSources;
  std::vector<std::string> extraFiles;
  bool hasBytecode = false;
  bool hasSerializationId = false;
  std::optional<std::string> byteorder;
  /// Objects waiting for __setstate__, constants.pkl's first, then data.pkl's.
  std::vector<PendingSetState> pendingSetState;
  /// Storages of constants.pkl and data.pkl ("constants/0", "data/0" as keys' places).
  std::vector<LoadedStorage> constantStorages, dataStorages;
  std::vector<std::string> warnings;
  std::shared_ptr<ClassRegistry> registry;
  /// traced_inputs.pkl's value (method name -> example inputs), None when absent.
  IValue tracedInputs;
};

/// What loadArchiveData() reads beside the records' names.
struct ArchiveDataOptions {
  /// false: tensors are zero-filled placeholders of their true sizes
  /// (ArchiveReader::usePlaceholderStorages), for tools that only report facts.
  bool readTensorData = true;
};

/// Opens `path` and reads everything without compiling code/: version, constants.pkl, data.pkl,
/// code sources, extra file names. Classes are placeholders unless `hooks` resolve them.
/// Throws torchless::Error naming the file and record on any problem.
ArchiveData loadArchiveData(const std::string& path, const UnpickleHooks& hooks = {},
                            const ArchiveDataOptions& options = {});

}  // namespace torchless

namespace torchless {

/// A tensor attribute of a module object, named as PyTorch names parameters and buffers
/// ("layer1.0.conv1.weight").
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// Every tensor attribute of every module object reachable from `root` through module-typed
/// attributes, depth first in slot order; a tensor met twice (same tensor object) is listed
/// once, under its first name, as nn.Module.named_parameters() does. Until code/ is compiled the
/// parameter/buffer split is unknown, so this is "parameters and buffers" together (plus any
/// plain tensor attributes of modules).
std::vector<NamedTensor> moduleTensors(const IValue& root);

}  // namespace torchless
