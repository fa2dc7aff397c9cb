#include "server/protocol.h"

#include <fmt/format.h>

#include <cstring>

namespace torchless::serve {

int ServeError::httpStatus() const {
  switch (kind_) {
    case ErrorKind::BadRequest:
    case ErrorKind::NotFound: return 400;
    case ErrorKind::Unavailable: return 429;
    case ErrorKind::ModelFailed:
    case ErrorKind::Internal: return 500;
    case ErrorKind::Timeout: return 504;
  }
  return 500;
}

void badRequest(const std::string& message) { throw ServeError(ErrorKind::BadRequest, message); }

namespace {
struct DatatypeName {
  const char* name;
  std::optional<ScalarType> type;
};
const DatatypeName kDatatypes[] = {
    {"BOOL", ScalarType::Bool},     {"UINT8", ScalarType::Byte},    {"UINT16", ScalarType::UInt16},
    {"UINT32", ScalarType::UInt32}, {"UINT64", ScalarType::UInt64}, {"INT8", ScalarType::Char},
    {"INT16", ScalarType::Short},   {"INT32", ScalarType::Int},     {"INT64", ScalarType::Long},
    {"FP16", ScalarType::Half},     {"BF16", ScalarType::BFloat16}, {"FP32", ScalarType::Float},
    {"FP64", ScalarType::Double},   {"BYTES", std::nullopt},
};
}  // namespace

bool isDatatype(const std::string& datatype) {
  for (const auto& d : kDatatypes)
    if (datatype == d.name) return true;
  return false;
}

std::optional<ScalarType> scalarTypeOf(const std::string& datatype, const std::string& what) {
  for (const auto& d : kDatatypes)
    if (datatype == d.name) return d.type;
  badRequest(
      fmt::format("{}: unknown datatype '{}' (expected BOOL, UINT8, UINT16, UINT32, UINT64, "
                  "INT8, INT16, INT32, INT64, FP16, BF16, FP32, FP64 or BYTES)",
                  what, datatype));
}

std::string datatypeOf(ScalarType t) {
  for (const auto& d : kDatatypes)
    if (d.type && *d.type == t) return d.name;
  badRequest(fmt::format("the v2 protocol has no datatype for {}", toString(t)));
}

int64_t elementCount(const std::vector<int64_t>& shape, const std::string& what) {
  constexpr int64_t kLimit = int64_t{1} << 40;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) badRequest(fmt::format("{}: negative dimension {} in shape", what, d));
    if (d != 0 && n > kLimit / d) badRequest(fmt::format("{}: shape has too many elements", what));
    n *= d;
  }
  return n;
}

Tensor tensorFromBytes(const std::string& name, ScalarType dtype, const std::vector<int64_t>& shape,
                       const char* bytes, size_t size) {
  const std::string what = fmt::format("input '{}'", name);
  const int64_t n = elementCount(shape, what);
  const size_t expected = static_cast<size_t>(n) * elementSize(dtype);
  if (size != expected)
    badRequest(fmt::format("{}: {} bytes of data, but shape [{}] of {} needs {}", what, size,
                           fmt::join(shape, ", "), datatypeOf(dtype), expected));
  Tensor t = Tensor::empty(IntList(shape.begin(), shape.end()), dtype);
  if (size) std::memcpy(t.rawData(), bytes, size);
  return t;
}

std::vector<std::string> stringsFromBytes(const std::string& name, int64_t count, const char* bytes,
                                          size_t size) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < size) {
    if (size - pos < 4)
      badRequest(fmt::format("input '{}': BYTES data truncated in the length of element {}", name,
                             out.size()));
    uint32_t len = 0;
    std::memcpy(&len, bytes + pos, 4);  // little-endian on every machine we build for
    pos += 4;
    if (len > size - pos)
      badRequest(fmt::format("input '{}': BYTES element {} says {} bytes but {} are left", name,
                             out.size(), len, size - pos));
    if (static_cast<int64_t>(out.size()) >= count)
      badRequest(fmt::format("input '{}': more BYTES elements than the shape's {}", name, count));
    out.emplace_back(bytes + pos, len);
    pos += len;
  }
  if (static_cast<int64_t>(out.size()) != count)
    badRequest(fmt::format("input '{}': {} BYTES elements, but the shape has {}", name, out.size(),
                           count));
  return out;
}

size_t tensorByteSize(const WireTensor& t) {
  if (t.datatype != "BYTES") return t.tensor.nbytes();
  size_t n = 0;
  for (const auto& s : t.strings) n += 4 + s.size();
  return n;
}

void appendTensorBytes(const WireTensor& t, std::string& out) {
  if (t.datatype == "BYTES") {
    for (const auto& s : t.strings) {
      const uint32_t len = static_cast<uint32_t>(s.size());
      out.append(reinterpret_cast<const char*>(&len), 4);
      out += s;
    }
    return;
  }
  out.append(static_cast<const char*>(t.tensor.rawData()), t.tensor.nbytes());
}

std::string tensorBytes(const WireTensor& t) {
  std::string out;
  out.reserve(tensorByteSize(t));
  appendTensorBytes(t, out);
  return out;
}

}  // namespace torchless::serve
