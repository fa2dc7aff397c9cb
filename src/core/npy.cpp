#include "core/npy.h"

#include "core/atomic_file.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>

namespace torchless {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct Descr {
  ScalarType dtype;
  bool bigEndian;
};

std::optional<Descr> parseDescr(std::string_view d) {
  if (d.size() < 3) return std::nullopt;
  const char order = d[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') return std::nullopt;
  const std::string_view code = d.substr(1);
  std::optional<ScalarType> t;
  if (code == "f2")
    t = ScalarType::Half;
  else if (code == "f4")
    t = ScalarType::Float;
  else if (code == "f8")
    t = ScalarType::Double;
  else if (code == "i1")
    t = ScalarType::Char;
  else if (code == "i2")
    t = ScalarType::Short;
  else if (code == "i4")
    t = ScalarType::Int;
  else if (code == "i8")
    t = ScalarType::Long;
  else if (code == "u1")
    t = ScalarType::Byte;
  else if (code == "b1")
    t = ScalarType::Bool;
  else if (code == "c8")
    t = ScalarType::ComplexFloat;
  else if (code == "c16")
    t = ScalarType::ComplexDouble;
  if (!t) return std::nullopt;
  return Descr{*t, order == '>'};
}

// A tiny reader for the header's Python dict literal:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  void parse(std::string& descr, bool& fortran, IntList& shape) {
    bool haveDescr = false, haveOrder = false, haveShape = false;
    skipWs();
    expect('{');
    while (true) {
      skipWs();
      if (peek() == '}') break;
      std::string key = parseString();
      skipWs();
      expect(':');
      skipWs();
      if (key == "descr") {
        descr = parseString();
        haveDescr = true;
      } else if (key == "fortran_order") {
        fortran = parseBool();
        haveOrder = true;
      } else if (key == "shape") {
        shape = parseShape();
        haveShape = true;
      } else {
        fail(fmt::format("unexpected key '{}' in .npy header", key));
      }
      skipWs();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skipWs();
      if (peek() == '}') break;
      fail("expected ',' or '}' in .npy header");
    }
    if (!haveDescr || !haveOrder || !haveShape)
      fail("the .npy header lacks one of 'descr', 'fortran_order', 'shape'");
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(fmt::format("{} (header: {})", msg, std::string(s_.substr(0, 200))), name_);
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skipWs() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("expected '{}' in .npy header", c));
    ++i_;
  }
  std::string parseString() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string in .npy header");
    ++i_;
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] != q) ++i_;
    if (i_ >= s_.size()) fail("unterminated string in .npy header");
    std::string out(s_.substr(start, i_ - start));
    ++i_;
    return out;
  }
  bool parseBool() {
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    fail("expected True or False for 'fortran_order'");
  }
  IntList parseShape() {
    IntList shape;
    expect('(');
    while (true) {
      skipWs();
      if (peek() == ')') {
        ++i_;
        break;
      }
      if (peek() < '0' || peek() > '9') fail("expected a non-negative integer in 'shape'");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        const int digit = peek() - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10)
          fail("a dimension in 'shape' overflows int64");
        v = v * 10 + digit;
        ++i_;
      }
      if (peek() == 'L') ++i_;  // Python 2 longs
      shape.push_back(v);
      skipWs();
      if (peek() == ',') {
        ++i_;
      } else if (peek() != ')') {
        fail("expected ',' or ')' in 'shape'");
      }
      if (shape.size() > 64) fail("too many dimensions in 'shape'");
    }
    return shape;
  }

  std::string_view s_;
  const std::string& name_;
  size_t i_ = 0;
};

void byteSwap(std::byte* data, size_t count, size_t item) {
  if (item <= 1) return;
  for (size_t i = 0; i < count; ++i) {
    std::byte* p = data + i * item;
    for (size_t a = 0, b = item - 1; a < b; ++a, --b) std::swap(p[a], p[b]);
  }
}

std::string descrOf(ScalarType t) {
  switch (t) {
    case ScalarType::Half: return "<f2";
    case ScalarType::Float: return "<f4";
    case ScalarType::Double: return "<f8";
    case ScalarType::Char: return "|i1";
    case ScalarType::Short: return "<i2";
    case ScalarType::Int: return "<i4";
    case ScalarType::Long: return "<i8";
    case ScalarType::Byte: return "|u1";
    case ScalarType::Bool: return "|b1";
    case ScalarType::ComplexFloat: return "<c8";
    case ScalarType::ComplexDouble: return "<c16";
    default:
      throw Error(fmt::format("dtype {} has no numpy equivalent and cannot be saved as .npy",
                              dtypeName(t)));
  }
}

}  // namespace

Tensor parseNpy(const void* data, size_t size, const std::string& name) {
  const auto* p = static_cast<const unsigned char*>(data);
  if (size < kMagicLen + 2 || std::memcmp(p, kMagic, kMagicLen) != 0)
    throw Error("not a .npy file (bad magic)", name);
  const int major = p[6];
  const int minor = p[7];
  size_t headerLen = 0, pos = 0;
  if (major == 1) {
    if (size < 10) throw Error("truncated .npy header", name);
    headerLen = static_cast<size_t>(p[8]) | (static_cast<size_t>(p[9]) << 8);
    pos = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) throw Error("truncated .npy header", name);
    headerLen = static_cast<size_t>(p[8]) | (static_cast<size_t>(p[9]) << 8) |
                (static_cast<size_t>(p[10]) << 16) | (static_cast<size_t>(p[11]) << 24);
    pos = 12;
  } else {
    throw Error(fmt::format("unsupported .npy format version {}.{}", major, minor), name);
  }
  if (headerLen > size - pos)
    throw Error(fmt::format(".npy header length {} exceeds the file size {}", headerLen, size),
                name);
  std::string_view header(reinterpret_cast<const char*>(p + pos), headerLen);
  pos += headerLen;

  std::string descr;
  bool fortran = false;
  IntList shape;
  HeaderParser(header, name).parse(descr, fortran, shape);
  auto d = parseDescr(descr);
  if (!d) throw Error(fmt::format("unsupported .npy dtype '{}'", descr), name);

  int64_t numel = 0;
  try {
    numel = checkedNumel(shape);
  } catch (const Error& e) {
    throw Error(e.message(), name);
  }
  const size_t item = elementSize(d->dtype);
  const size_t available = size - pos;
  if (static_cast<uint64_t>(numel) > available / item)
    throw Error(fmt::format(".npy data is short: shape {} of '{}' needs {} elements of {} bytes "
                            "but {} bytes remain",
                            sizesToString(shape), descr, numel, item, available),
                name);
  const size_t nbytes = static_cast<size_t>(numel) * item;

  IntList sizes = shape;
  Tensor t;
  if (fortran && shape.size() > 1) {
    // Column-major: the data is the transpose laid out contiguously.
    IntList rev(shape.rbegin(), shape.rend());
    Tensor raw = Tensor::empty(rev, d->dtype);
    std::memcpy(raw.rawData(), p + pos, nbytes);
    if (d->bigEndian)
      byteSwap(static_cast<std::byte*>(raw.rawData()), static_cast<size_t>(numel), item);
    const IntList rs = contiguousStrides(rev);
    IntList st(rs.rbegin(), rs.rend());
    t = raw.asStrided(shape, st, 0).contiguous();
  } else {
    t = Tensor::empty(shape, d->dtype);
    std::memcpy(t.rawData(), p + pos, nbytes);
    if (d->bigEndian)
      byteSwap(static_cast<std::byte*>(t.rawData()), static_cast<size_t>(numel), item);
  }
  if (d->dtype == ScalarType::Bool) {
    // numpy bools are 0/1 bytes; normalize anything else so that bool loads stay valid.
    auto* b = static_cast<unsigned char*>(t.rawData());
    for (int64_t i = 0; i < numel; ++i) b[i] = b[i] != 0;
  }
  return t;
}

Tensor loadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error("cannot open .npy file", path);
  const std::streamoff end = in.tellg();
  if (end < 0) throw Error("cannot read .npy file", path);
  std::string buf(static_cast<size_t>(end), '\0');
  in.seekg(0);
  if (!in.read(buf.data(), end)) throw Error("cannot read .npy file", path);
  return parseNpy(buf.data(), buf.size(), path);
}

std::string npyBytes(const Tensor& t) {
  std::string shape;
  if (t.dim() == 1)
    shape = fmt::format("({},)", t.size(0));
  else
    shape = fmt::format("({})", fmt::join(t.sizes(), ", "));
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                 descrOf(t.dtype()), shape);
  // Pad with spaces so that magic + length + header + '\n' is a multiple of 64.
  size_t prefix = kMagicLen + 2 + 2;
  int major = 1;
  if (dict.size() + 1 + prefix > 65535 + prefix) {
    major = 2;
    prefix = kMagicLen + 2 + 4;
  }
  const size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicLen);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const size_t len = dict.size();
  out.push_back(static_cast<char>(len & 0xff));
  out.push_back(static_cast<char>((len >> 8) & 0xff));
  if (major == 2) {
    out.push_back(static_cast<char>((len >> 16) & 0xff));
    out.push_back(static_cast<char>((len >> 24) & 0xff));
  }
  out += dict;
  Tensor c = t.contiguous();
  out.append(static_cast<const char*>(c.rawData()), c.nbytes());
  return out;
}

void saveNpy(const std::string& path, const Tensor& t) { writeFileAtomically(path, npyBytes(t)); }

}  // namespace torchless
