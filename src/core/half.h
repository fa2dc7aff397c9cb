#pragma once
// 16-bit floating types stored as bits, converted through float (IEEE binary16 and bfloat16,
// round to nearest even, as c10::Half and c10::BFloat16 do).

#include <cstdint>
#include <cstring>

namespace torchless {

struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(fromFloat(f)) {}             // NOLINT(google-explicit-constructor)
  operator float() const { return toFloat(bits); }  // NOLINT(google-explicit-constructor)

  static uint16_t fromFloat(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u)
      return static_cast<uint16_t>(sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
    if (absx < 0x38800000u) {                                               // subnormal or zero
      float af;
      std::memcpy(&af, &absx, 4);
      // scale so that the subnormal lsb is 1, then round to nearest even
      float scaled = af * 16777216.0f;  // 2^24
      auto v = static_cast<uint32_t>(scaled);
      float rem = scaled - static_cast<float>(v);
      if (rem > 0.5f || (rem == 0.5f && (v & 1u))) ++v;
      return static_cast<uint16_t>(sign | v);
    }
    uint32_t mant_odd = (absx >> 13) & 1u;
    absx += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round
    return static_cast<uint16_t>(sign | (absx >> 13));
  }
  static float toFloat(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
      if (mant == 0) {
        x = sign;
      } else {
        float f = static_cast<float>(mant) / 16777216.0f;  // mant * 2^-24
        std::memcpy(&x, &f, 4);
        x |= sign;
      }
    } else if (exp == 31) {
      x = sign | 0x7f800000u | (mant << 13);
    } else {
      x = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(fromFloat(f)) {}         // NOLINT(google-explicit-constructor)
  operator float() const { return toFloat(bits); }  // NOLINT(google-explicit-constructor)

  static uint16_t fromFloat(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
  static float toFloat(uint16_t b) {
    uint32_t x = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

}  // namespace torchless
