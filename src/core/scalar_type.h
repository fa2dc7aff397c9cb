#pragma once
// ScalarType, Layout, MemoryFormat: numbered exactly as c10 numbers them, because TorchScript
// passes them as plain ints (`dtype=6` is float32) and archives print those ints.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace torchless {

/// c10::ScalarType, same numbering (c10/core/ScalarType.h).
enum class ScalarType : int8_t {
  Byte = 0,         // uint8
  Char = 1,         // int8
  Short = 2,        // int16
  Int = 3,          // int32
  Long = 4,         // int64
  Half = 5,         // float16
  Float = 6,        // float32
  Double = 7,       // float64
  ComplexHalf = 8,  // complex32
  ComplexFloat = 9,
  ComplexDouble = 10,
  Bool = 11,
  QInt8 = 12,
  QUInt8 = 13,
  QInt32 = 14,
  BFloat16 = 15,
  QUInt4x2 = 16,
  QUInt2x4 = 17,
  Bits1x8 = 18,
  Bits2x4 = 19,
  Bits4x2 = 20,
  Bits8 = 21,
  Bits16 = 22,
  Float8_e5m2 = 23,
  Float8_e4m3fn = 24,
  Float8_e5m2fnuz = 25,
  Float8_e4m3fnuz = 26,
  UInt16 = 27,
  UInt32 = 28,
  UInt64 = 29,
  Undefined = 127,
};

constexpr int kNumScalarTypes = 30;

/// Bytes per element (1 for the packed sub-byte quantized types, as PyTorch reports).
size_t elementSize(ScalarType t);
/// c10's name: "Float", "Long", "ComplexFloat" ... (used for `<Name>Storage` globals).
const char* toString(ScalarType t);
/// Python's dtype name: "float32", "int64", "complex64", "bool" ...
const char* dtypeName(ScalarType t);
/// The letter-free short name used in IR tensor types: Float, Double, Long, Int, Bool ...
/// (same as toString). Returns nullopt for an unknown name.
std::optional<ScalarType> scalarTypeFromString(std::string_view name);
/// From Python's dtype name ("float32", "int64"...) or numpy's descr kind + size.
std::optional<ScalarType> scalarTypeFromDtypeName(std::string_view name);
/// Checks an int read from a file or an IValue; nullopt when it names no ScalarType.
std::optional<ScalarType> scalarTypeFromInt(int64_t v);

bool isFloatingType(ScalarType t);  // Half, Float, Double, BFloat16, Float8*
bool isComplexType(ScalarType t);
bool isIntegralType(ScalarType t, bool includeBool);
bool isQuantizedType(ScalarType t);

/// torch.promote_types for the types a CPU kernel computes in (c10::promoteTypes).
/// Throws torchless::Error for quantized/bits types.
ScalarType promoteTypes(ScalarType a, ScalarType b);

/// c10::Layout numbering.
enum class Layout : int8_t { Strided = 0, Sparse = 1, SparseCsr = 2, Mkldnn = 3 };
/// c10::MemoryFormat numbering.
enum class MemoryFormat : int8_t {
  Contiguous = 0,
  Preserve = 1,
  ChannelsLast = 2,
  ChannelsLast3d = 3
};

}  // namespace torchless
