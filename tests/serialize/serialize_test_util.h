#pragma once
// Helpers for the serialize tests: a tiny stored-only zip writer (so tests can build broken
// archives byte by byte), a pickle builder, and a byte checksum shared with gen_archives.py.

#include "core/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace torchless::test {

inline uint32_t crc32(const std::string& s) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

struct ZipEntry {
  std::string name;
  std::string data;
  // Overrides for broken archives (0 / -1 = computed).
  int64_t declaredSize = -1;
  int64_t declaredCrc = -1;
  uint16_t method = 0;  // the data is always written as is; 8 only to fake a deflated entry
};

/// A classic (non-zip64) zip with the entries stored as given.
inline std::string makeZip(const std::vector<ZipEntry>& entries) {
  std::string out, cd;
  auto u16 = [](std::string& s, uint32_t v) {
    s.push_back(static_cast<char>(v & 0xff));
    s.push_back(static_cast<char>((v >> 8) & 0xff));
  };
  auto u32 = [&](std::string& s, uint32_t v) {
    u16(s, v & 0xffff);
    u16(s, v >> 16);
  };
  for (const auto& e : entries) {
    uint32_t crc = e.declaredCrc >= 0 ? static_cast<uint32_t>(e.declaredCrc) : crc32(e.data);
    uint32_t usize = e.declaredSize >= 0 ? static_cast<uint32_t>(e.declaredSize)
                                         : static_cast<uint32_t>(e.data.size());
    uint32_t offset = static_cast<uint32_t>(out.size());
    u32(out, 0x04034b50);
    u16(out, 20);
    u16(out, 0);
    u16(out, e.method);
    u16(out, 0);
    u16(out, 0);
    u32(out, crc);
    u32(out, static_cast<uint32_t>(e.data.size()));
    u32(out, usize);
    u16(out, static_cast<uint32_t>(e.name.size()));
    u16(out, 0);
    out += e.name;
    out += e.data;
    u32(cd, 0x02014b50);
    u16(cd, 20);
    u16(cd, 20);
    u16(cd, 0);
    u16(cd, e.method);
    u16(cd, 0);
    u16(cd, 0);
    u32(cd, crc);
    u32(cd, static_cast<uint32_t>(e.data.size()));
    u32(cd, usize);
    u16(cd, static_cast<uint32_t>(e.name.size()));
    u16(cd, 0);
    u16(cd, 0);
    u16(cd, 0);
    u16(cd, 0);
    u32(cd, 0);
    u32(cd, offset);
    cd += e.name;
  }
  uint32_t cdOffset = static_cast<uint32_t>(out.size());
  out += cd;
  u32(out, 0x06054b50);
  u16(out, 0);
  u16(out, 0);
  u16(out, static_cast<uint32_t>(entries.size()));
  u16(out, static_cast<uint32_t>(entries.size()));
  u32(out, static_cast<uint32_t>(cd.size()));
  u32(out, cdOffset);
  u16(out, 0);
  return out;
}

/// Builds protocol-2 pickles opcode by opcode.
class Pickle {
 public:
  Pickle() { bytes_ = "\x80\x02"; }
  Pickle& raw(const std::string& s) {
    bytes_ += s;
    return *this;
  }
  Pickle& op(char c) {
    bytes_.push_back(c);
    return *this;
  }
  Pickle& global(const std::string& module, const std::string& name) {
    return op('c').raw(module + "\n" + name + "\n");
  }
  Pickle& mark() { return op('('); }
  Pickle& tuple() { return op('t'); }
  Pickle& emptyTuple() { return op(')'); }
  Pickle& emptyList() { return op(']'); }
  Pickle& appends() { return op('e'); }
  Pickle& emptyDict() { return op('}'); }
  Pickle& setitems() { return op('u'); }
  Pickle& newobj() { return op('\x81'); }
  Pickle& build() { return op('b'); }
  Pickle& reduce() { return op('R'); }
  Pickle& persid() { return op('Q'); }
  Pickle& none() { return op('N'); }
  Pickle& boolean(bool b) { return op(b ? '\x88' : '\x89'); }
  Pickle& stop() { return op('.'); }
  Pickle& put(uint32_t id) {
    if (id < 256) return op('q').raw(std::string(1, static_cast<char>(id)));
    op('r');
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<char>((id >> (8 * i)) & 0xff));
    return *this;
  }
  Pickle& get(uint32_t id) {
    if (id < 256) return op('h').raw(std::string(1, static_cast<char>(id)));
    op('j');
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<char>((id >> (8 * i)) & 0xff));
    return *this;
  }
  Pickle& integer(int64_t v) {
    if (v >= 0 && v < 256) return op('K').raw(std::string(1, static_cast<char>(v)));
    if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
      return *this;
    }
    op('\x8a').raw(std::string(1, '\x08'));
    for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  Pickle& real(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    op('G');
    for (int i = 7; i >= 0; --i) bytes_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    return *this;
  }
  Pickle& str(const std::string& s) {
    op('X');
    uint32_t n = static_cast<uint32_t>(s.size());
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    return raw(s);
  }
  Pickle& ints(const std::vector<int64_t>& v) {
    mark();
    for (auto x : v) integer(x);
    return tuple();
  }
  /// `_rebuild_tensor_v2((storage, type, key, 'cpu', numel), offset, sizes, strides, False, OD())`
  Pickle& tensor(const std::string& key, int64_t numel, int64_t offset,
                 const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                 const std::string& storageType = "FloatStorage",
                 const std::string& location = "cpu") {
    global("torch._utils", "_rebuild_tensor_v2").mark();
    mark().str("storage").global("torch", storageType).str(key).str(location).integer(numel);
    tuple().persid();
    integer(offset).ints(sizes).ints(strides).boolean(false);
    global("collections", "OrderedDict").emptyTuple().reduce();
    return tuple().reduce();
  }
  /// `GLOBAL '__torch__ <name>' ) NEWOBJ {` then the caller adds items, then endObject().
  Pickle& beginObject(const std::string& qualifier, const std::string& name) {
    return global(qualifier, name).emptyTuple().newobj().emptyDict().mark();
  }
  Pickle& endObject() { return setitems().build(); }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

/// A minimal valid archive (section 6 of the spec): module M with one float tensor `w` of two
/// elements on storage '0'.
inline Pickle minimalDataPkl() {
  Pickle p;
  p.beginObject("__torch__", "M").str("w").tensor("0", 2, 0, {2}, {1});
  p.str("training").boolean(true).endObject().stop();
  return p;
}

inline std::string twoFloats() {
  float f[2] = {1.5f, -2.0f};
  return std::string(reinterpret_cast<const char*>(f), sizeof f);
}

inline std::vector<ZipEntry> minimalArchive(const std::string& dataPkl = minimalDataPkl().bytes(),
                                            const std::string& version = "3\n") {
  return {
      {"archive/version", version},
      {
          "archive/constants.pkl",
          std::string("\x80\x02)."),
      },
      {"archive/data.pkl", dataPkl},
      {"archive/data/0", twoFloats()},
      {"archive/code/__torch__.py",
       "class M(Module):\n  __parameters__ = [\"w\", ]\n  w : Tensor\n  training : bool\n"},
  };
}

/// A scratch file below the build folder; returns its path.
inline std::string writeTemp(const std::string& name, const std::string& bytes) {
  std::filesystem::path dir = std::filesystem::path(TORCHLESS_BINARY_DIR) / "serialize_tmp";
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path.string();
}

inline std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// sum(byte[i] * (i % 251 + 1)) mod 2^64 over the tensor's elements in row-major order
/// (the same checksum gen_archives.py writes).
inline uint64_t tensorChecksum(const Tensor& t) {
  size_t item = t.itemsize();
  auto* base = reinterpret_cast<const unsigned char*>(t.storage().data());
  int64_t n = t.numel();
  std::vector<int64_t> idx(t.dim(), 0);
  uint64_t sum = 0, pos = 0;
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = t.storageOffset();
    for (int64_t d = 0; d < t.dim(); ++d) off += idx[d] * t.stride(d);
    const unsigned char* p = base + static_cast<size_t>(off) * item;
    for (size_t b = 0; b < item; ++b, ++pos) sum += uint64_t{p[b]} * (pos % 251 + 1);
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++idx[d] < t.size(d)) break;
      idx[d] = 0;
    }
  }
  return sum;
}

}  // namespace torchless::test
