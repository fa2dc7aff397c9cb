#pragma once
// Writes a zip archive the way PyTorch's writer (caffe2/serialize/inline_container.cc, miniz)
// lays it out where it matters for loaders: every record stored (no compression), every
// record's data 64-byte aligned by an "FB" padding extra field in its local header (so
// tensors can be mapped in place), zip64 end records always present, UTF-8 names. CRC and
// sizes go in the local headers (no data descriptors), which every zip reader accepts.
//
// The file is written through an AtomicFile (Note [Atomic writes], core/atomic_file.h) and
// appears at the destination on finish(); if the writer is destroyed before finish(), or the
// process is killed, nothing is left at or beside the destination.

#include "core/atomic_file.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace torchless {

class ZipWriter {
 public:
  /// Opens the (unnamed where possible) temporary file for `path`; records go under `<prefix>/` (at
  /// the top level when `prefix` is empty, as in numpy's .npz). Throws torchless::Error.
  ZipWriter(std::string path, std::string prefix);
  ~ZipWriter();
  ZipWriter(const ZipWriter&) = delete;
  ZipWriter& operator=(const ZipWriter&) = delete;

  /// Appends record `<prefix>/<name>` holding `size` bytes at `data`. Throws on a duplicate
  /// name or a write error.
  void writeRecord(const std::string& name, const void* data, size_t size);
  /// Writes the central directory and end records, then calls `beforeCommit` (if set) with a
  /// path the complete archive can be read through (to check it loads; what it throws leaves
  /// nothing written), then puts the file at its path.
  void finish(const std::function<void(const std::string&)>& beforeCommit = {});

  static constexpr size_t kAlignment = 64;

 private:
  struct Entry {
    std::string name;
    uint32_t crc;
    uint64_t size;
    uint64_t headerOffset;
  };
  void put(const void* data, size_t n);
  void put16(uint16_t v);
  void put32(uint32_t v);
  void put64(uint64_t v);

  std::string path_, prefix_;
  AtomicFile file_;
  uint64_t offset_ = 0;
  std::vector<Entry> entries_;
  bool finished_ = false;
};

}  // namespace torchless
