#include "serialize/archive_writer.h"

#include "core/error.h"
#include "serialize/pickler.h"
#include "serialize/zip_writer.h"

#include <filesystem>

namespace torchless {

void writeArchive(const std::string& path, const ArchiveContents& c) {
  TL_CHECK(c.root.isObject(), "the root of an archive must be a module object, got {}",
           c.root.tagName());
  TL_CHECK(c.version >= 1 && c.version <= 10, "file-format version {} is outside 1..10", c.version);
  std::string folder = c.folderName;
  if (folder.empty()) folder = std::filesystem::path(path).stem().string();
  if (folder.empty()) folder = "archive";

  // Pickle first: a value the format cannot hold fails before anything is written.
  Pickler constants;
  constants.setGetStateHook(c.getState);
  constants.pickle(IValue(TupleImpl::create(c.constants)));
  Pickler data;
  data.setGetStateHook(c.getState);
  data.pickle(c.root);

  ZipWriter zip(path, folder);
  for (const auto& [name, bytes] : c.extraFiles)
    zip.writeRecord("extra/" + name, bytes.data(), bytes.size());
  for (const auto& s : data.storages())
    zip.writeRecord("data/" + s.key, s.storage.data(), s.nbytes);
  zip.writeRecord("data.pkl", data.bytes().data(), data.bytes().size());
  for (const auto& [qualifier, text] : c.codeSources) {
    std::string file = qualifier;
    for (char& ch : file)
      if (ch == '.') ch = '/';
    zip.writeRecord("code/" + file + ".py", text.data(), text.size());
  }
  for (const auto& s : constants.storages())
    zip.writeRecord("constants/" + s.key, s.storage.data(), s.nbytes);
  zip.writeRecord("constants.pkl", constants.bytes().data(), constants.bytes().size());
  const std::string version = std::to_string(c.version) + "\n";
  zip.writeRecord(c.version >= 6 ? ".data/version" : "version", version.data(), version.size());
  zip.finish(c.beforeCommit);
}

}  // namespace torchless
