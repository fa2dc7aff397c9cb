#include "serialize/zip_writer.h"

#include "core/error.h"

#include <zlib.h>

#include <cstring>
#include <limits>
#include <unordered_set>

namespace torchless {
namespace {
constexpr uint32_t kLocalHeaderSig = 0x04034b50, kCentralSig = 0x02014b50,
                   kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50, kEndSig = 0x06054b50;
constexpr uint16_t kFlagUtf8 = 0x0800;
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01
constexpr uint16_t kVersionMadeBy = 0x031e, kVersionNeeded = 45;
constexpr uint64_t k4G = 0xffffffffULL;
}  // namespace

ZipWriter::ZipWriter(std::string path, std::string prefix)
    : path_(path), prefix_(std::move(prefix)), file_(std::move(path)) {}

ZipWriter::~ZipWriter() = default;

void ZipWriter::put(const void* data, size_t n) {
  file_.write(data, n);
  offset_ += n;
}
void ZipWriter::put16(uint16_t v) { put(&v, 2); }
void ZipWriter::put32(uint32_t v) { put(&v, 4); }
void ZipWriter::put64(uint64_t v) { put(&v, 8); }

void ZipWriter::writeRecord(const std::string& record, const void* data, size_t size) {
  TL_INTERNAL_ASSERT(!finished_, "writeRecord after finish");
  const std::string name = prefix_.empty() ? record : prefix_ + "/" + record;
  for (const auto& e : entries_)
    if (e.name == name) throw Error(fmt::format("record '{}' written twice", record), path_);
  if (name.size() > 0xffff) throw Error("record name too long", path_);
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* bytes = static_cast<const Bytef*>(data);
  for (size_t done = 0; done < size;) {
    const auto chunk = static_cast<uInt>(std::min<size_t>(size - done, 1u << 30));
    crc = crc32(crc, bytes + done, chunk);
    done += chunk;
  }
  const bool big = size >= k4G;
  const uint64_t headerOffset = offset_;
  // Data start without padding: header, name, the 4-byte FB field header, zip64 extra if big.
  const uint64_t start = headerOffset + 30 + name.size() + 4 + (big ? 20 : 0);
  const auto pad = static_cast<uint16_t>((kAlignment - start % kAlignment) % kAlignment);
  put32(kLocalHeaderSig);
  put16(big ? kVersionNeeded : 20);
  put16(kFlagUtf8);
  put16(0);  // stored
  put16(0);  // time
  put16(kDosDate);
  put32(static_cast<uint32_t>(crc));
  put32(big ? static_cast<uint32_t>(k4G) : static_cast<uint32_t>(size));
  put32(big ? static_cast<uint32_t>(k4G) : static_cast<uint32_t>(size));
  put16(static_cast<uint16_t>(name.size()));
  put16(static_cast<uint16_t>(4 + pad + (big ? 20 : 0)));
  put(name.data(), name.size());
  if (big) {
    put16(0x0001);
    put16(16);
    put64(size);
    put64(size);
  }
  put16(0x4246);  // "FB": PyTorch's alignment padding
  put16(pad);
  static const std::string zs(kAlignment, 'Z');
  put(zs.data(), pad);
  TL_INTERNAL_ASSERT(offset_ % kAlignment == 0, "record data not aligned");
  put(data, size);
  entries_.push_back({name, static_cast<uint32_t>(crc), size, headerOffset});
}

void ZipWriter::finish(const std::function<void(const std::string&)>& beforeCommit) {
  TL_INTERNAL_ASSERT(!finished_, "finish called twice");
  const uint64_t cdStart = offset_;
  for (const auto& e : entries_) {
    const bool bigSize = e.size >= k4G;
    const bool bigOffset = e.headerOffset >= k4G;
    const uint16_t extraLen = static_cast<uint16_t>(
        (bigSize || bigOffset) ? 4 + (bigSize ? 16 : 0) + (bigOffset ? 8 : 0) : 0);
    put32(kCentralSig);
    put16(kVersionMadeBy);
    put16(bigSize || bigOffset ? kVersionNeeded : 20);
    put16(kFlagUtf8);
    put16(0);
    put16(0);
    put16(kDosDate);
    put32(e.crc);
    put32(bigSize ? static_cast<uint32_t>(k4G) : static_cast<uint32_t>(e.size));
    put32(bigSize ? static_cast<uint32_t>(k4G) : static_cast<uint32_t>(e.size));
    put16(static_cast<uint16_t>(e.name.size()));
    put16(extraLen);
    put16(0);  // comment
    put16(0);  // disk
    put16(0);  // internal attributes
    put32(0);  // external attributes
    put32(bigOffset ? static_cast<uint32_t>(k4G) : static_cast<uint32_t>(e.headerOffset));
    put(e.name.data(), e.name.size());
    if (extraLen) {
      put16(0x0001);
      put16(static_cast<uint16_t>(extraLen - 4));
      if (bigSize) {
        put64(e.size);
        put64(e.size);
      }
      if (bigOffset) put64(e.headerOffset);
    }
  }
  const uint64_t cdSize = offset_ - cdStart;
  const uint64_t zip64End = offset_;
  put32(kZip64EndSig);
  put64(44);
  put16(kVersionMadeBy);
  put16(kVersionNeeded);
  put32(0);
  put32(0);
  put64(entries_.size());
  put64(entries_.size());
  put64(cdSize);
  put64(cdStart);
  put32(kZip64LocatorSig);
  put32(0);
  put64(zip64End);
  put32(1);
  const bool many = entries_.size() >= 0xffff;
  put32(kEndSig);
  put16(0);
  put16(0);
  put16(many ? 0xffff : static_cast<uint16_t>(entries_.size()));
  put16(many ? 0xffff : static_cast<uint16_t>(entries_.size()));
  put32(cdSize >= k4G ? static_cast<uint32_t>(k4G) : static_cast<uint32_t>(cdSize));
  put32(cdStart >= k4G ? static_cast<uint32_t>(k4G) : static_cast<uint32_t>(cdStart));
  put16(0);
  if (beforeCommit) beforeCommit(file_.readablePath());
  file_.commit();
  finished_ = true;
}

}  // namespace torchless
