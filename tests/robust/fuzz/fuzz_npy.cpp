// libFuzzer target: the .npy reader (core/npy.cpp) on arbitrary bytes. Only torchless::Error
// may escape; a crash, a sanitizer report or another exception is a bug.
#include "core/error.h"
#include "core/npy.h"
#include "core/tensor.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    torchless::Tensor t = torchless::parseNpy(data, size, "fuzz.npy");
    (void)t.numel();
  } catch (const torchless::Error&) {
  }
  return 0;
}
