#pragma once
// ZipReader: the zip container of a TorchScript archive (../shared/docs/torchscript-archive.md
// section 1), read through libzip: from the file with plain reads (open()), or from memory
// (openBuffer()). Nothing is extracted to disk.
//
// Note [Reading records once]
// A record is read straight into the 64-byte aligned buffer that its tensors then wrap (no
// second copy). By default the file is not mmapped: mapping it *and* reading into buffers
// would count the mapped pages in the process's resident size next to the buffers (a 330 MB
// model would peak at twice its size); with reads, the peak stays near the size of the tensors
// (see the memory test in tests/serialize/extra.cmake). With ZipReaderOptions::mapStoredRecords
// the stored, 64-byte aligned records are not read at all: their tensors point into one
// copy-on-write mapping of the file (Note [Mapped archives] in core/mapped_file.h), and the
// resident size is again the tensors' bytes, now page-cache pages.
//
// What it checks, beyond what libzip does:
//   - PyTorch's prefix rule: the first entry's name up to its first '/' is the archive folder;
//     every other entry must lie below that same folder (a single common prefix);
//   - entry names: no `..` component, no absolute path, no backslash, no NUL, no duplicates;
//   - sizes: a stored entry's sizes must agree, and no entry may declare an uncompressed size
//     that is absurd for the file's size (a zip bomb) or above ZipReaderOptions::maxRecordBytes;
//   - CRC-32 of every record read (PyTorch skips this check; we do it unless
//     ZipReaderOptions::checkCrc is false).
// Every failure is a torchless::Error whose place names the file and, when there is one, the
// record: "model.pt: record 'data/3': CRC-32 mismatch".

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct zip;
struct zip_source;

namespace torchless {

class MappedFile;

/// One file inside the archive folder.
struct ZipRecordInfo {
  std::string name;    // below the prefix: "data/0", "code/__torch__.py", "version"
  uint64_t index = 0;  // libzip's entry index
  uint64_t size = 0;   // uncompressed bytes
  uint64_t compressedSize = 0;
  uint16_t method = 0;  // 0 stored, 8 deflated
  uint32_t crc = 0;
  /// Where a stored record's bytes start in the file (Note [Checking records]), or -1 when
  /// they are read through libzip.
  int64_t dataOffset = -1;
};

/// The bytes of one record, kept alive by `owner`; 64-byte aligned so that storages can wrap
/// them without a copy.
struct RecordData {
  std::shared_ptr<void> owner;
  const std::byte* data = nullptr;
  size_t size = 0;

  std::string_view view() const { return {reinterpret_cast<const char*>(data), size}; }
};

/// A zero-filled placeholder of `nbytes` standing for a record's bytes: an anonymous private
/// mapping that takes no resident memory until written (Note [Placeholder storages] in
/// zip_reader.cpp). Throws torchless::Error naming `place` when the mapping fails.
RecordData placeholderRecord(size_t nbytes, const std::string& place);

struct ZipReaderOptions {
  /// Upper bound for one record's uncompressed size.
  uint64_t maxRecordBytes = uint64_t{1} << 40;
  /// An uncompressed size above fileSize * maxExpansion (+ 1 MiB) is rejected as a zip bomb.
  /// Deflate cannot expand more than ~1032:1.
  uint64_t maxExpansion = 1100;
  /// Verify each record's CRC-32 when it is read (PyTorch never does). When false, a record
  /// whose bytes do not match its CRC loads as it is.
  bool checkCrc = true;
  /// Hand out stored records whose data is 64-byte aligned in the file (PyTorch aligns every
  /// tensor record) as views of a copy-on-write mapping of the file instead of reading them
  /// into buffers (Note [Mapped archives] in core/mapped_file.h: a file that shrinks while
  /// mapped ends the process with a message naming it, not a bare SIGBUS). Only for files
  /// (open()); each record is still checked (populated without SIGBUS, CRC-32) when handed out.
  bool mapStoredRecords = false;
  /// With mapStoredRecords: the mapped tensor records (data/, constants/) are populated and
  /// their CRC-32 checked by a thread of the reader's own, started with the mapping, while the
  /// caller goes on; ZipReader::finishChecks() reports a bad one (Note [Checking mapped records
  /// in the background]). The caller must call finishChecks() before it trusts their bytes;
  /// the destructor stops the thread without reporting.
  bool checkMappedInBackground = false;
};

/// Read-only view of a TorchScript zip archive. Not thread-safe.
class ZipReader {
 public:
  /// Opens `path` (read with plain file reads, see Note [Reading records once]); the path
  /// names the file in errors.
  /// Throws torchless::Error for an unreadable file, an empty file, something that is not a
  /// zip, or a zip that breaks the rules above.
  static std::unique_ptr<ZipReader> open(const std::string& path, ZipReaderOptions options = {});
  /// Opens an archive held in memory (`owner` keeps `data` alive). For tests and fuzzers.
  static std::unique_ptr<ZipReader> openBuffer(std::shared_ptr<void> owner, const void* data,
                                               size_t size, std::string displayName,
                                               ZipReaderOptions options = {});
  ~ZipReader();
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;

  /// The archive folder every entry lives in ("resnet18_traced", "archive").
  const std::string& prefix() const { return prefix_; }
  /// The name used in error places (the path given to open()).
  const std::string& displayName() const { return displayName_; }
  /// Total size of the file in bytes.
  size_t fileSize() const { return size_; }
  /// Every file record below the prefix, in central-directory order (directory entries are
  /// left out).
  const std::vector<ZipRecordInfo>& records() const { return records_; }
  /// The record named `name` (below the prefix), or nullptr.
  const ZipRecordInfo* findRecord(std::string_view name) const;
  bool hasRecord(std::string_view name) const { return findRecord(name) != nullptr; }
  /// Reads a record fully into a 64-byte aligned buffer (inflating if needed, checking the
  /// CRC). Throws torchless::Error naming the record when it is missing or corrupt.
  RecordData readRecord(std::string_view name) const;
  /// readRecord as a string (text records: version, code).
  std::string readRecordString(std::string_view name) const;

  /// "model.pt: record 'data/3'": the place used in errors about one record.
  std::string recordPlace(std::string_view name) const;

  /// Waits for the background checks (ZipReaderOptions::checkMappedInBackground) and throws
  /// torchless::Error for the first bad record in directory order: "model.pt: record 'data/3':
  /// CRC-32 mismatch (the record is corrupt)", or "truncated: ..." for a file that shrank.
  /// Returns at once when nothing runs in the background; records read afterwards are checked
  /// as they are read.
  void finishChecks() const;

 private:
  ZipReader() = default;
  /// Opens the zip over `src` (file or buffer; freed on failure) and checks every entry.
  void init(struct zip_source* src);
  /// Reads a record's bytes, inflating deflated ones, into `out` of info.size bytes; returns
  /// their CRC-32 when options_.checkCrc (else 0). Throws torchless::Error naming `place`
  /// when truncated or corrupt.
  uint32_t readRaw(const ZipRecordInfo& info, std::byte* out, const std::string& place) const;
  [[noreturn]] void fail(const std::string& message) const;
  /// Note [Checking records]: fills dataOffset of the stored records whose central-directory
  /// and local headers agree with what libzip read; the others keep -1.
  void locateStoredData();
  /// Reads `n` bytes at `offset` of the file or buffer into `out`; false when short.
  bool readAt(uint64_t offset, std::byte* out, size_t n) const;

  std::shared_ptr<void> owner_;
  const std::byte* data_ = nullptr;
  int fd_ = -1;  // the file open() read, kept open for stored records' preads
  size_t size_ = 0;
  std::string displayName_;
  ZipReaderOptions options_;
  struct zip* zip_ = nullptr;
  std::string prefix_;
  std::vector<ZipRecordInfo> records_;
  std::unordered_map<std::string, size_t> byName_;
  mutable std::shared_ptr<MappedFile> map_;  // mapStoredRecords: made on first use
  mutable bool mapTried_ = false;
  struct BackgroundChecks;  // checkMappedInBackground: zip_reader.cpp
  /// Note [Checking mapped records in the background]: a record the thread checks.
  bool checkedInBackground(const ZipRecordInfo& info) const;
  mutable std::unique_ptr<BackgroundChecks> checks_;
  mutable bool checksFinished_ = false;
};

/// Checks one entry name from a zip central directory; returns a reason when it must be
/// rejected ("name contains '..'"), nullopt when fine.
std::optional<std::string> checkZipEntryName(std::string_view name);

}  // namespace torchless
