#pragma once
// Writes a TorchScript archive that torch.jit.load accepts (PyTorch 1.13 here; the format
// rules of ../shared/docs/torchscript-archive.md section 6 for 2.x): code/ sources, data.pkl
// with the module object tree, constants.pkl, one data/<key> record per storage, the version
// record, aligned as PyTorch aligns them. The file appears only when complete.

#include "core/ivalue.h"
#include "serialize/pickler.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace torchless {

struct ArchiveContents {
  /// The top-level folder; empty = the file's basename without its last extension, as
  /// torch.jit.save names it ("archive" when that is empty).
  std::string folderName;
  /// File-format version: max(3, the bump of every versioned operator the code calls)
  /// (div 4, full 5, linspace 8, logspace 9, gelu 10). Records >= 6 are named `.data/version`.
  uint64_t version = 3;
  /// The root module object (data.pkl).
  IValue root;
  /// The table behind CONSTANTS.cN (constants.pkl).
  std::vector<IValue> constants;
  /// Printed TorchScript source by qualifier: "__torch__.m" -> code/__torch__/m.py.
  std::map<std::string, std::string> codeSources;
  /// extra/<name> records (torch.jit.save's _extra_files).
  std::vector<std::pair<std::string, std::string>> extraFiles;
  /// States of objects pickled through __getstate__ (TorchBind objects, classes with a
  /// __getstate__ method); see Pickler::setGetStateHook. May be empty.
  GetStateHook getState;
  /// Called with a readable path of the complete archive before it is put at its path (see
  /// ZipWriter::finish); what it throws leaves nothing written. May be empty.
  std::function<void(const std::string&)> beforeCommit;
};

/// Writes `contents` to `path` (atomically: Note [Atomic writes], core/atomic_file.h). Throws
/// torchless::Error for values an archive cannot hold or write failures; nothing is left at
/// `path` then.
void writeArchive(const std::string& path, const ArchiveContents& contents);

}  // namespace torchless
