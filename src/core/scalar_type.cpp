#include "core/scalar_type.h"

#include "core/error.h"

#include <array>

namespace torchless {
namespace {

struct Info {
  ScalarType type;
  const char* name;
  const char* dtype;
  size_t size;
};

constexpr std::array<Info, kNumScalarTypes> kInfo = {{
    {ScalarType::Byte, "Byte", "uint8", 1},
    {ScalarType::Char, "Char", "int8", 1},
    {ScalarType::Short, "Short", "int16", 2},
    {ScalarType::Int, "Int", "int32", 4},
    {ScalarType::Long, "Long", "int64", 8},
    {ScalarType::Half, "Half", "float16", 2},
    {ScalarType::Float, "Float", "float32", 4},
    {ScalarType::Double, "Double", "float64", 8},
    {ScalarType::ComplexHalf, "ComplexHalf", "complex32", 4},
    {ScalarType::ComplexFloat, "ComplexFloat", "complex64", 8},
    {ScalarType::ComplexDouble, "ComplexDouble", "complex128", 16},
    {ScalarType::Bool, "Bool", "bool", 1},
    {ScalarType::QInt8, "QInt8", "qint8", 1},
    {ScalarType::QUInt8, "QUInt8", "quint8", 1},
    {ScalarType::QInt32, "QInt32", "qint32", 4},
    {ScalarType::BFloat16, "BFloat16", "bfloat16", 2},
    {ScalarType::QUInt4x2, "QUInt4x2", "quint4x2", 1},
    {ScalarType::QUInt2x4, "QUInt2x4", "quint2x4", 1},
    {ScalarType::Bits1x8, "Bits1x8", "bits1x8", 1},
    {ScalarType::Bits2x4, "Bits2x4", "bits2x4", 1},
    {ScalarType::Bits4x2, "Bits4x2", "bits4x2", 1},
    {ScalarType::Bits8, "Bits8", "bits8", 1},
    {ScalarType::Bits16, "Bits16", "bits16", 2},
    {ScalarType::Float8_e5m2, "Float8_e5m2", "float8_e5m2", 1},
    {ScalarType::Float8_e4m3fn, "Float8_e4m3fn", "float8_e4m3fn", 1},
    {ScalarType::Float8_e5m2fnuz, "Float8_e5m2fnuz", "float8_e5m2fnuz", 1},
    {ScalarType::Float8_e4m3fnuz, "Float8_e4m3fnuz", "float8_e4m3fnuz", 1},
    {ScalarType::UInt16, "UInt16", "uint16", 2},
    {ScalarType::UInt32, "UInt32", "uint32", 4},
    {ScalarType::UInt64, "UInt64", "uint64", 8},
}};

const Info* find(ScalarType t) {
  auto i = static_cast<int>(t);
  if (i < 0 || i >= kNumScalarTypes) return nullptr;
  return &kInfo[static_cast<size_t>(i)];
}

}  // namespace

size_t elementSize(ScalarType t) {
  const Info* info = find(t);
  TL_INTERNAL_ASSERT(info, "elementSize of undefined ScalarType");
  return info->size;
}

const char* toString(ScalarType t) {
  const Info* info = find(t);
  return info ? info->name : "Undefined";
}

const char* dtypeName(ScalarType t) {
  const Info* info = find(t);
  return info ? info->dtype : "undefined";
}

std::optional<ScalarType> scalarTypeFromString(std::string_view name) {
  for (const auto& i : kInfo)
    if (name == i.name) return i.type;
  return std::nullopt;
}

std::optional<ScalarType> scalarTypeFromDtypeName(std::string_view name) {
  for (const auto& i : kInfo)
    if (name == i.dtype) return i.type;
  if (name == "float") return ScalarType::Float;
  if (name == "double") return ScalarType::Double;
  if (name == "half") return ScalarType::Half;
  if (name == "long") return ScalarType::Long;
  if (name == "int") return ScalarType::Int;
  return std::nullopt;
}

std::optional<ScalarType> scalarTypeFromInt(int64_t v) {
  if (v < 0 || v >= kNumScalarTypes) return std::nullopt;
  return static_cast<ScalarType>(v);
}

bool isFloatingType(ScalarType t) {
  switch (t) {
    case ScalarType::Half:
    case ScalarType::Float:
    case ScalarType::Double:
    case ScalarType::BFloat16:
    case ScalarType::Float8_e5m2:
    case ScalarType::Float8_e4m3fn:
    case ScalarType::Float8_e5m2fnuz:
    case ScalarType::Float8_e4m3fnuz: return true;
    default: return false;
  }
}

bool isComplexType(ScalarType t) {
  return t == ScalarType::ComplexHalf || t == ScalarType::ComplexFloat ||
         t == ScalarType::ComplexDouble;
}

bool isIntegralType(ScalarType t, bool includeBool) {
  switch (t) {
    case ScalarType::Byte:
    case ScalarType::Char:
    case ScalarType::Short:
    case ScalarType::Int:
    case ScalarType::Long:
    case ScalarType::UInt16:
    case ScalarType::UInt32:
    case ScalarType::UInt64: return true;
    case ScalarType::Bool: return includeBool;
    default: return false;
  }
}

bool isQuantizedType(ScalarType t) {
  return t == ScalarType::QInt8 || t == ScalarType::QUInt8 || t == ScalarType::QInt32 ||
         t == ScalarType::QUInt4x2 || t == ScalarType::QUInt2x4;
}

ScalarType promoteTypes(ScalarType a, ScalarType b) {
  if (a == b) return a;
  // c10's promotion table for the 12 basic types, in the order
  // u1 i1 i2 i4 i8 f2 f4 f8 c2 c4 c8 b1 (+ bf16 handled below).
  constexpr auto u1 = ScalarType::Byte, i1 = ScalarType::Char, i2 = ScalarType::Short,
                 i4 = ScalarType::Int, i8 = ScalarType::Long, f2 = ScalarType::Half,
                 f4 = ScalarType::Float, f8 = ScalarType::Double, c2 = ScalarType::ComplexHalf,
                 c4 = ScalarType::ComplexFloat, c8 = ScalarType::ComplexDouble,
                 b1 = ScalarType::Bool, bf = ScalarType::BFloat16;
  static constexpr ScalarType table[13][13] = {
      /*        u1  i1  i2  i4  i8  f2  f4  f8  c2  c4  c8  b1  bf*/
      /* u1 */ {u1, i2, i2, i4, i8, f2, f4, f8, c2, c4, c8, u1, bf},
      /* i1 */ {i2, i1, i2, i4, i8, f2, f4, f8, c2, c4, c8, i1, bf},
      /* i2 */ {i2, i2, i2, i4, i8, f2, f4, f8, c2, c4, c8, i2, bf},
      /* i4 */ {i4, i4, i4, i4, i8, f2, f4, f8, c2, c4, c8, i4, bf},
      /* i8 */ {i8, i8, i8, i8, i8, f2, f4, f8, c2, c4, c8, i8, bf},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f4, f8, c2, c4, c8, f2, f4},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f8, c4, c4, c8, f4, f4},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, c8, c8, c8, f8, f8},
      /* c2 */ {c2, c2, c2, c2, c2, c2, c4, c8, c2, c4, c8, c2, c4},
      /* c4 */ {c4, c4, c4, c4, c4, c4, c4, c8, c4, c4, c8, c4, c4},
      /* c8 */ {c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8},
      /* b1 */ {u1, i1, i2, i4, i8, f2, f4, f8, c2, c4, c8, b1, bf},
      /* bf */ {bf, bf, bf, bf, bf, f4, f4, f8, c4, c4, c8, bf, bf},
  };
  auto index = [](ScalarType t) -> int {
    int i = static_cast<int>(t);
    if (i <= 11) return i;
    if (t == ScalarType::BFloat16) return 12;
    return -1;
  };
  int ia = index(a), ib = index(b);
  if (ia < 0 || ib < 0)
    throw Error(
        fmt::format("promoteTypes with unsupported dtype {} and {}", dtypeName(a), dtypeName(b)));
  return table[ia][ib];
}

}  // namespace torchless
