#include "serialize/zip_reader.h"

#include "core/error.h"
#include "core/mapped_file.h"
#include "core/memory_budget.h"
#include "core/prefault.h"

#include <libdeflate.h>
#include <zip.h>
#include <zlib.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <system_error>
#include <thread>
#include <unordered_set>

namespace torchless {

namespace {

constexpr size_t kAlign = 64;

std::string zipErrorText(zip_error_t* err) {
  int code = zip_error_code_zip(err);
  switch (code) {
    case ZIP_ER_NOZIP: return "not a zip archive (no end of central directory record found)";
    case ZIP_ER_INCONS: return "zip archive is inconsistent (truncated or corrupt)";
    case ZIP_ER_CRC: return "CRC-32 mismatch (the record is corrupt)";
    case ZIP_ER_INVAL:  // libzip says only "Invalid argument": say what it refused
      return "the zip structure is malformed (libzip: Invalid argument)";
    case ZIP_ER_SEEK: return "zip archive is truncated or corrupt (libzip: seek error)";
    case ZIP_ER_READ:
      return fmt::format("cannot read the file (libzip: {})", zip_error_strerror(err));
    case ZIP_ER_MULTIDISK: return "multi-disk zip archives are not supported";
    case ZIP_ER_COMPNOTSUPP: return "a record uses an unsupported compression method";
    default: return fmt::format("libzip: {}", zip_error_strerror(err));
  }
}

/// A 64-byte aligned heap buffer owned through shared_ptr<void>.
std::shared_ptr<void> alignedBuffer(size_t nbytes) {
  size_t rounded = (nbytes + kAlign - 1) / kAlign * kAlign;
  if (rounded == 0) rounded = kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (!p) throw Error(fmt::format("out of memory allocating {} bytes", nbytes));
  prefaultFreshBuffer(p, nbytes);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

/// Recognizable non-zip formats, so the message says what the file is.
std::optional<std::string> sniffOtherFormat(const std::byte* d, size_t n) {
  auto at = [&](size_t i) { return static_cast<unsigned char>(d[i]); };
  if (n >= 2 && at(0) == 0x80 && at(1) <= 5)
    return "this is a legacy torch.save pickle file, not a TorchScript zip archive "
           "(save the model with torch.jit.save)";
  if (n >= 8 && std::memcmp(d, "PYTORCH1", 8) == 0)
    return "unsupported PyTorch 1.0 'PYTORCH1' format (re-save the model with torch.jit.save)";
  if (n >= 8 && std::memcmp(d + 4, "PTMF", 4) == 0)
    return "unsupported flatbuffer mobile format (PTMF); save with torch.jit.save";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> checkZipEntryName(std::string_view name) {
  if (name.empty()) return "empty entry name";
  if (name.front() == '/') return "absolute path";
  for (unsigned char c : name) {
    if (c == '\\') return "backslash in name";
    if (c < 0x20 || c == 0x7f) return "control character in name";
  }
  size_t start = 0;
  bool first = true;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    std::string_view part = name.substr(start, end - start);
    if (part == "..") return "'..' in path";
    if (part == ".") return "'.' component in path";
    if (first && part.size() >= 2 && part.back() == ':') return "absolute path (drive letter)";
    if (part.empty() && end != name.size()) return "empty path component ('//')";
    first = false;
    start = end + 1;
  }
  return std::nullopt;
}

std::unique_ptr<ZipReader> ZipReader::open(const std::string& path, ZipReaderOptions options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("cannot open file: {}", std::strerror(errno)), path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw Error(fmt::format("cannot stat file: {}", std::strerror(e)), path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("not a regular file", path);
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    throw Error("file is empty (expected a TorchScript zip archive)", path);
  }
  std::unique_ptr<ZipReader> r(new ZipReader());
  r->fd_ = fd;  // closed by ~ZipReader
  std::byte head[8] = {};
  ssize_t got = ::pread(fd, head, sizeof head, 0);
  if (got < 0) throw Error(fmt::format("cannot read file: {}", std::strerror(errno)), path);
  r->size_ = size;
  r->displayName_ = path;
  r->options_ = options;
  if (auto other = sniffOtherFormat(head, static_cast<size_t>(got))) r->fail(*other);
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_file_create(path.c_str(), 0, -1, &err);
  if (!src) {
    std::string msg = zipErrorText(&err);
    zip_error_fini(&err);
    r->fail(msg);
  }
  zip_error_fini(&err);
  r->init(src);
  return r;
}

std::unique_ptr<ZipReader> ZipReader::openBuffer(std::shared_ptr<void> owner, const void* data,
                                                 size_t size, std::string displayName,
                                                 ZipReaderOptions options) {
  std::unique_ptr<ZipReader> r(new ZipReader());
  r->owner_ = std::move(owner);
  r->data_ = static_cast<const std::byte*>(data);
  r->size_ = size;
  r->displayName_ = std::move(displayName);
  r->options_ = options;
  if (size == 0) r->fail("file is empty (expected a TorchScript zip archive)");
  if (auto other = sniffOtherFormat(r->data_, size)) r->fail(*other);
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_buffer_create(r->data_, size, 0, &err);
  if (!src) {
    std::string msg = zipErrorText(&err);
    zip_error_fini(&err);
    r->fail(msg);
  }
  zip_error_fini(&err);
  r->init(src);
  return r;
}

// Note [Checking mapped records in the background]
// A mapped record's CRC-32 is the first read of its pages, and for resnet50's 98 MB of weights
// that was 50 ms of a 330 ms `torchless run` (the pages come from the page cache, yet reading
// them the first time runs at ~2 GB/s on our VMs, where libdeflate does 13 GB/s in cache), all
// of it on the loading thread while the other core idled. With checkMappedInBackground, the
// mapping's first use starts a thread of the reader's own that populates and checks every
// mapped tensor record (data/ and constants/: bytes nothing interprets while loading) in
// directory order, while the loader unpickles and compiles the archive's code; readRecord
// hands such a record out at once (populated again, which costs nothing when the thread got
// there first: a file shorter than its directory says is still an error there). finishChecks()
// waits for the thread and throws for the first corrupt or short record that was handed out (in
// directory order; a record nobody read fails nothing, as before), so a load still fails
// naming it before anything of the archive runs (load.cpp calls it right after data.pkl,
// before any __setstate__). Records read after finishChecks() are checked as they are read.
// The thread only reads the mapping, which it keeps alive, and stops early when the reader is
// destroyed (a load that failed for another reason).
struct ZipReader::BackgroundChecks {
  std::shared_ptr<MappedFile> map;
  const std::vector<ZipRecordInfo>& all;  // the reader's records_
  std::vector<size_t> checked;            // indices into `all`, in directory order
  std::vector<char> handedOut;            // by index into `all`: readRecord gave it out
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};                  // the thread threw: its results are incomplete
  std::vector<std::pair<size_t, std::string>> bad;  // index into `all`, reason
  std::thread worker;

  BackgroundChecks(std::shared_ptr<MappedFile> m, const std::vector<ZipRecordInfo>& records,
                   std::vector<size_t> indices)
      : map(std::move(m)), all(records), checked(std::move(indices)), handedOut(records.size(), 0) {
    worker = std::thread([this] {
      try {
        run();
      } catch (...) {  // out of memory for a message: finishChecks() checks on its own thread
        failed = true;
      }
    });
  }
  ~BackgroundChecks() {
    stop = true;
    if (worker.joinable()) worker.join();
  }
  void run() {
    constexpr size_t kSlice = size_t{4} << 20;  // `stop` is looked at between slices
    for (size_t i : checked) {
      const ZipRecordInfo& info = all[i];
      const auto offset = static_cast<size_t>(info.dataOffset);
      const auto size = static_cast<size_t>(info.size);
      if (!map->populate(offset, size)) {
        bad.emplace_back(i, fmt::format("truncated: cannot read the record's {} bytes: the "
                                        "file is shorter than when it was opened",
                                        info.size));
        continue;
      }
      uint32_t crc = 0;
      for (size_t done = 0; done < size; done += kSlice) {
        if (stop.load(std::memory_order_relaxed)) return;
        crc = libdeflate_crc32(crc, map->data() + offset + done, std::min(kSlice, size - done));
      }
      if (crc != info.crc) bad.emplace_back(i, "CRC-32 mismatch (the record is corrupt)");
    }
  }
};

bool ZipReader::checkedInBackground(const ZipRecordInfo& info) const {
  return options_.checkCrc && options_.checkMappedInBackground && !checksFinished_ &&
         info.dataOffset >= 0 && info.dataOffset % static_cast<int64_t>(kAlign) == 0 &&
         (info.name.rfind("data/", 0) == 0 || info.name.rfind("constants/", 0) == 0);
}

void ZipReader::finishChecks() const {
  checksFinished_ = true;  // records read from now on are checked as they are read
  if (!checks_) return;
  checks_->worker.join();
  if (checks_->failed) {  // the thread could not finish: check what was handed out here
    for (size_t i = 0; i < records_.size(); ++i) {
      if (!checks_->handedOut[i]) continue;
      const ZipRecordInfo& info = records_[i];
      if (libdeflate_crc32(0, map_->data() + info.dataOffset, info.size) != info.crc) {
        checks_.reset();
        throw Error("CRC-32 mismatch (the record is corrupt)", recordPlace(info.name));
      }
    }
    checks_.reset();
    return;
  }
  // Only records the caller read count, as when each is checked as it is read.
  std::optional<std::pair<std::string, std::string>> first;
  for (const auto& [i, reason] : checks_->bad)
    if (checks_->handedOut[i]) {
      first.emplace(records_[i].name, reason);
      break;
    }
  checks_.reset();
  if (first) throw Error(first->second, recordPlace(first->first));
}

ZipReader::~ZipReader() {
  checks_.reset();  // stops the checking thread before the mapping and the file go
  if (zip_) zip_discard(zip_);
  if (fd_ >= 0) ::close(fd_);
}

void ZipReader::fail(const std::string& message) const { throw Error(message, displayName_); }

std::string ZipReader::recordPlace(std::string_view name) const {
  return fmt::format("{}: record '{}'", displayName_, name);
}

void ZipReader::init(zip_source_t* src) {
  zip_error_t err;
  zip_error_init(&err);
  zip_ = zip_open_from_source(src, ZIP_RDONLY, &err);
  if (!zip_) {
    zip_source_free(src);
    std::string msg = zipErrorText(&err);
    zip_error_fini(&err);
    fail(msg);
  }
  zip_error_fini(&err);

  zip_int64_t n = zip_get_num_entries(zip_, 0);
  if (n <= 0) fail("zip archive has no entries");

  std::unordered_set<std::string> seen;
  const uint64_t bombLimit =
      (size_ > (UINT64_MAX - (1u << 20)) / options_.maxExpansion)
          ? UINT64_MAX
          : static_cast<uint64_t>(size_) * options_.maxExpansion + (1u << 20);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(zip_, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW, &st) != 0)
      fail(fmt::format("cannot read central directory entry {}: {}", i,
                       zipErrorText(zip_get_error(zip_))));
    if (!(st.valid & ZIP_STAT_NAME) || !st.name) fail(fmt::format("entry {} has no name", i));
    std::string name = st.name;
    if (auto why = checkZipEntryName(name))
      fail(fmt::format("bad entry name '{}': {}", name, *why));
    if (!seen.insert(name).second) fail(fmt::format("duplicate entry '{}'", name));

    if (i == 0) {
      auto slash = name.find('/');
      if (slash == std::string::npos)
        fail(
            fmt::format("first entry '{}' is not in a folder (a TorchScript archive keeps every "
                        "record under one top-level folder)",
                        name));
      prefix_ = name.substr(0, slash);
    }
    if (name.size() <= prefix_.size() || name.compare(0, prefix_.size(), prefix_) != 0 ||
        name[prefix_.size()] != '/')
      fail(fmt::format("entry '{}' lies outside the archive folder '{}/'", name, prefix_));
    std::string rec = name.substr(prefix_.size() + 1);
    if (rec.empty() || rec.back() == '/') continue;  // a directory entry

    ZipRecordInfo info;
    info.name = rec;
    info.index = static_cast<uint64_t>(i);
    info.size = st.size;
    info.compressedSize = st.comp_size;
    info.method = static_cast<uint16_t>(st.comp_method);
    info.crc = st.crc;
    auto place = recordPlace(rec);
    if (st.encryption_method != ZIP_EM_NONE)
      throw Error("encrypted records are not supported", place);
    if (info.method != ZIP_CM_STORE && info.method != ZIP_CM_DEFLATE)
      throw Error(fmt::format("unsupported compression method {}", info.method), place);
    if (info.compressedSize > size_)
      throw Error(
          fmt::format("compressed size {} exceeds the file size {}", info.compressedSize, size_),
          place);
    if (info.method == ZIP_CM_STORE && info.size != info.compressedSize)
      throw Error(fmt::format("stored record declares {} bytes but occupies {}", info.size,
                              info.compressedSize),
                  place);
    if (info.size > bombLimit || info.size > options_.maxRecordBytes)
      throw Error(fmt::format("declared uncompressed size {} is absurd for a file of {} bytes "
                              "(zip bomb?)",
                              info.size, size_),
                  place);
    // Issue #18: source is small; a code record that inflates past this is refused before
    // anything is inflated (PyTorch's largest generated files are a few MB).
    constexpr uint64_t kMaxCodeRecordBytes = uint64_t{64} << 20;
    if ((rec.starts_with("code/") || rec.ends_with(".debug_pkl")) &&
        info.size > kMaxCodeRecordBytes)
      throw Error(fmt::format("code record declares {} bytes; source records are limited to {} "
                              "MiB",
                              info.size, kMaxCodeRecordBytes >> 20),
                  place);
    byName_.emplace(rec, records_.size());
    records_.push_back(std::move(info));
  }
  locateStoredData();
}

namespace {
uint16_t le16(const std::byte* p) {
  return static_cast<uint16_t>(static_cast<unsigned>(p[0]) | static_cast<unsigned>(p[1]) << 8);
}
uint32_t le32(const std::byte* p) { return le16(p) | static_cast<uint32_t>(le16(p + 2)) << 16; }
uint64_t le64(const std::byte* p) { return le32(p) | static_cast<uint64_t>(le32(p + 4)) << 32; }
}  // namespace

bool ZipReader::readAt(uint64_t offset, std::byte* out, size_t n) const {
  if (offset > size_ || n > size_ - offset) return false;
  if (n == 0) return true;  // out may be null (an empty vector's data())
  if (data_) {
    std::memcpy(out, data_ + offset, n);
    return true;
  }
  size_t done = 0;
  while (done < n) {
    ssize_t got = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
  }
  return true;
}

// Note [Checking records]
// libzip checks a record's CRC-32 with zlib while it reads it, and does so for stored records
// even when asked for the raw bytes (ZIP_FL_COMPRESSED): a tenth of a resnet50 `run` was zlib's
// crc32. So libzip validates the archive (init above), and the stored records, which are the
// tensors, are then read with one pread each at their data offset and checked with libdeflate's
// CRC-32 (carry-less multiply, several times zlib's speed). libzip does not publish the data
// offset, so it is found here: the central directory (end record, zip64 end record and extra
// field) gives each entry's local header, whose name and extra lengths give the data. Every
// entry is cross-checked against libzip's (same order, name, method, sizes, CRC; local header
// signature, name and method); an entry that disagrees in anything keeps dataOffset = -1 and
// is read through libzip as before. Deflated records (code, pickles) always go through libzip.
void ZipReader::locateStoredData() {
  bool anyStored = false;
  for (const auto& r : records_) anyStored |= r.method == ZIP_CM_STORE && r.size > 0;
  if (!anyStored) return;
  // End of central directory: 22 bytes plus a comment of at most 65535.
  const size_t tail = static_cast<size_t>(std::min<uint64_t>(size_, 22 + 65535));
  std::vector<std::byte> end(tail);
  if (tail < 22 || !readAt(size_ - tail, end.data(), tail)) return;
  size_t eocd = tail - 22 + 1;
  while (eocd-- > 0)
    if (le32(end.data() + eocd) == 0x06054b50 && eocd + 22 + le16(end.data() + eocd + 20) == tail)
      break;
  if (eocd == static_cast<size_t>(-1)) return;
  uint64_t entries = le16(end.data() + eocd + 10);
  uint64_t cdSize = le32(end.data() + eocd + 12);
  uint64_t cdOffset = le32(end.data() + eocd + 16);
  if (entries == 0xffff || cdSize == 0xffffffff || cdOffset == 0xffffffff) {
    // zip64: the locator sits just before the end record and points at the zip64 end record.
    const uint64_t eocdAt = size_ - tail + eocd;
    std::byte loc[20], z64[56];
    if (eocdAt < 20 || !readAt(eocdAt - 20, loc, sizeof loc) || le32(loc) != 0x07064b50) return;
    if (!readAt(le64(loc + 8), z64, sizeof z64) || le32(z64) != 0x06064b50) return;
    entries = le64(z64 + 32);
    cdSize = le64(z64 + 40);
    cdOffset = le64(z64 + 48);
  }
  if (cdOffset > size_ || cdSize > size_ - cdOffset || cdSize / 46 < entries) return;
  std::vector<std::byte> cd(static_cast<size_t>(cdSize));
  if (!readAt(cdOffset, cd.data(), cd.size())) return;

  std::unordered_map<uint64_t, size_t> byIndex;  // libzip index -> records_
  for (size_t i = 0; i < records_.size(); ++i) byIndex.emplace(records_[i].index, i);
  size_t at = 0;
  for (uint64_t index = 0; index < entries; ++index) {
    if (cd.size() - at < 46 || le32(cd.data() + at) != 0x02014b50) return;
    const std::byte* h = cd.data() + at;
    const uint16_t method = le16(h + 10);
    const uint32_t crc = le32(h + 16);
    uint64_t csize = le32(h + 20), usize = le32(h + 24), local = le32(h + 42);
    const size_t nameLen = le16(h + 28), extraLen = le16(h + 30), commentLen = le16(h + 32);
    if (cd.size() - at - 46 < nameLen + extraLen + commentLen) return;
    std::string_view name(reinterpret_cast<const char*>(h + 46), nameLen);
    // The zip64 extra field (id 1) holds, in order, the fields whose 32-bit value is all ones.
    for (size_t e = 0; e + 4 <= extraLen;) {
      const std::byte* x = h + 46 + nameLen + e;
      const size_t len = le16(x + 2);
      if (e + 4 + len > extraLen) break;
      if (le16(x) == 1) {
        size_t k = 4;
        auto take = [&](uint64_t& v) {
          if (v != 0xffffffff) return;
          v = k + 8 <= len + 4 ? le64(x + k) : UINT64_MAX;
          k += 8;
        };
        take(usize);
        take(csize);
        take(local);
      }
      e += 4 + len;
    }
    at += 46 + nameLen + extraLen + commentLen;
    auto it = byIndex.find(index);
    if (it == byIndex.end()) continue;  // a directory entry
    ZipRecordInfo& r = records_[it->second];
    if (method != ZIP_CM_STORE || r.method != ZIP_CM_STORE || r.size == 0) continue;
    if (name != prefix_ + "/" + r.name || crc != r.crc || csize != r.compressedSize ||
        usize != r.size)
      continue;
    std::byte lh[30];
    if (local > size_ || !readAt(local, lh, sizeof lh) || le32(lh) != 0x04034b50 ||
        le16(lh + 8) != ZIP_CM_STORE || le16(lh + 26) != nameLen)
      continue;
    std::string localName(nameLen, '\0');
    if (!readAt(local + 30, reinterpret_cast<std::byte*>(localName.data()), nameLen) ||
        localName != name)
      continue;
    const uint64_t data = local + 30 + nameLen + le16(lh + 28);
    if (data > size_ || r.size > size_ - data) continue;
    r.dataOffset = static_cast<int64_t>(data);
  }
}

const ZipRecordInfo* ZipReader::findRecord(std::string_view name) const {
  auto it = byName_.find(std::string(name));
  return it == byName_.end() ? nullptr : &records_[it->second];
}

RecordData ZipReader::readRecord(std::string_view name) const {
  const ZipRecordInfo* info = findRecord(name);
  if (!info) throw Error(fmt::format("missing record '{}'", name), displayName_);
  auto place = recordPlace(name);
  if (info->size > std::numeric_limits<size_t>::max() - kAlign)
    throw Error("record too large for this machine", place);
  RecordData out;
  out.size = static_cast<size_t>(info->size);
  // Note [Mapped archives]: a view of the file's mapping, populated and checked now.
  if (options_.mapStoredRecords && fd_ >= 0 && info->dataOffset >= 0 &&
      info->dataOffset % static_cast<int64_t>(kAlign) == 0) {
    if (!mapTried_) {
      mapTried_ = true;
      map_ = MappedFile::map(fd_, size_, displayName_);
      if (map_ && options_.checkCrc && options_.checkMappedInBackground) {
        std::vector<size_t> tensors;
        for (size_t i = 0; i < records_.size(); ++i) {
          const ZipRecordInfo& r = records_[i];
          if (checkedInBackground(r) && static_cast<uint64_t>(r.dataOffset) <= size_ &&
              r.size <= size_ - r.dataOffset)
            tensors.push_back(i);
        }
        try {
          if (!tensors.empty())
            checks_ = std::make_unique<BackgroundChecks>(map_, records_, std::move(tensors));
        } catch (const std::system_error&) {
          // No thread to be had (a pids limit): each record is checked as it is read.
        }
      }
    }
    if (map_) {
      try {
        checkAllocation(out.size, "reading the record");  // as a read: Note [Memory budget]
      } catch (Error& e) {
        e.withPlace(place);
        throw;
      }
      const size_t offset = static_cast<size_t>(info->dataOffset);
      if (!map_->populate(offset, out.size))
        throw Error(fmt::format("truncated: cannot read the record's {} bytes: the file is "
                                "shorter than when it was opened",
                                info->size),
                    place);
      out.data = map_->data() + offset;
      out.owner = std::shared_ptr<void>(map_, const_cast<std::byte*>(out.data));
      // Note [Checking mapped records in the background]: a tensor record the thread checks.
      const bool later = checks_ && checkedInBackground(*info);
      if (later) checks_->handedOut[static_cast<size_t>(info - records_.data())] = 1;
      if (options_.checkCrc && !later && libdeflate_crc32(0, out.data, out.size) != info->crc)
        throw Error("CRC-32 mismatch (the record is corrupt)", place);
      return out;
    }
  }
  try {
    checkAllocation(out.size, "reading the record");  // Note [Memory budget]
    out.owner = alignedBuffer(out.size);
  } catch (Error& e) {
    e.withPlace(place);
    throw;
  }
  auto* buf = static_cast<std::byte*>(out.owner.get());
  out.data = buf;

  const uint32_t crc = readRaw(*info, buf, place);
  // Checked with libdeflate's CRC-32 (Note [Checking records]); same check, same message as
  // libzip's.
  if (options_.checkCrc && crc != info->crc)
    throw Error("CRC-32 mismatch (the record is corrupt)", place);
  return out;
}

uint32_t ZipReader::readRaw(const ZipRecordInfo& info, std::byte* out,
                            const std::string& place) const {
  if (info.dataOffset >= 0) {  // Note [Checking records]
    // In slices that stay in the cache between the read and the CRC over them.
    constexpr size_t kSlice = size_t{256} << 10;
    const size_t size = static_cast<size_t>(info.size);
    uint32_t crc = 0;
    for (size_t done = 0; done < size; done += kSlice) {
      const size_t n = std::min(kSlice, size - done);
      if (!readAt(static_cast<uint64_t>(info.dataOffset) + done, out + done, n))
        throw Error(fmt::format("truncated: cannot read the record's {} bytes: {}", info.size,
                                data_ ? "past the end" : std::strerror(errno)),
                    place);
      if (options_.checkCrc) crc = libdeflate_crc32(crc, out + done, n);
    }
    return crc;
  }
  // ZIP_FL_COMPRESSED: libzip hands over the raw bytes (still computing the CRC of a stored
  // record as it reads, Note [Checking records]); deflated records are inflated here.
  zip_file_t* f = zip_fopen_index(zip_, info.index, ZIP_FL_COMPRESSED);
  if (!f) throw Error(fmt::format("cannot open: {}", zipErrorText(zip_get_error(zip_))), place);
  auto fail = [&](const std::string& what) {
    zip_fclose(f);
    throw Error(what, place);
  };
  auto readAll = [&](std::byte* dst, size_t n) {
    size_t done = 0;
    while (done < n) {
      zip_int64_t got = zip_fread(f, dst + done, n - done);
      if (got < 0) fail(zipErrorText(zip_file_get_error(f)));
      if (got == 0) fail(fmt::format("truncated: got {} of {} declared bytes", done, n));
      done += static_cast<size_t>(got);
    }
  };
  const size_t size = static_cast<size_t>(info.size);
  if (info.method == ZIP_CM_STORE) {
    readAll(out, size);
  } else {
    std::vector<std::byte> packed(static_cast<size_t>(info.compressedSize));
    readAll(packed.data(), packed.size());
    z_stream zs{};
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) fail("cannot start inflating");
    size_t inGiven = 0, outGiven = 0;
    bool overflow = false;  // output full: inflating into a 1-byte probe
    unsigned char probe = 0;
    int rc = Z_OK;
    do {
      if (zs.avail_in == 0 && inGiven < packed.size()) {
        const size_t chunk = std::min<size_t>(packed.size() - inGiven, UINT32_MAX);
        zs.next_in = reinterpret_cast<Bytef*>(packed.data() + inGiven);
        zs.avail_in = static_cast<uInt>(chunk);
        inGiven += chunk;
      }
      if (zs.avail_out == 0) {
        if (outGiven < size) {
          const size_t chunk = std::min<size_t>(size - outGiven, UINT32_MAX);
          zs.next_out = reinterpret_cast<Bytef*>(out + outGiven);
          zs.avail_out = static_cast<uInt>(chunk);
          outGiven += chunk;
        } else {
          overflow = true;
          zs.next_out = &probe;
          zs.avail_out = 1;
        }
      }
      rc = inflate(&zs, Z_NO_FLUSH);
      if (overflow && zs.avail_out == 0) {
        inflateEnd(&zs);
        fail(fmt::format("record holds more than its declared {} bytes", size));
      }
    } while (rc == Z_OK);
    const size_t produced = overflow ? size : outGiven - zs.avail_out;
    std::string zmsg = zs.msg ? zs.msg : "corrupt deflate data";
    inflateEnd(&zs);
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_MEM_ERROR)
      fail(fmt::format("cannot inflate: {}", zmsg));
    if (produced < size)
      fail(fmt::format("truncated: got {} of {} declared bytes", produced, size));
    if (rc != Z_STREAM_END) fail("cannot inflate: the deflate stream does not end");
  }
  zip_fclose(f);
  return options_.checkCrc ? libdeflate_crc32(0, out, size) : 0;
}

std::string ZipReader::readRecordString(std::string_view name) const {
  RecordData d = readRecord(name);
  return std::string(d.view());
}

// Note [Placeholder storages]
// `torchless info` reports shapes, dtypes and byte counts; it never looks at tensor values.
// Reading a 500 MB archive's records only to report their sizes would take 500 MB, and the
// values would be read for nothing. A placeholder storage is a private anonymous mapping of the
// record's size: reads see zeros through the kernel's shared zero page, so untouched pages take
// no resident memory, and a write (a __setstate__ that fills a buffer) copies only the pages it
// touches. MAP_NORESERVE keeps a huge record from being refused by overcommit accounting; the
// size itself is the zip directory's, which ZipReader has already checked against the file.
// traced_inputs.pkl is the one place where the size comes from the pickle (PyTorch writes those
// records empty): a mapping only reserves addresses, so a hostile size costs no memory, and one
// beyond the address space fails here with an error.
RecordData placeholderRecord(size_t nbytes, const std::string& place) {
  size_t mapped = std::max<size_t>(nbytes, 1);
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw Error(fmt::format("cannot map a placeholder of {} bytes for the record", nbytes), place);
  RecordData rd;
  rd.owner = std::shared_ptr<void>(p, [mapped](void* q) { munmap(q, mapped); });
  rd.data = static_cast<const std::byte*>(p);
  rd.size = nbytes;
  return rd;
}

}  // namespace torchless
