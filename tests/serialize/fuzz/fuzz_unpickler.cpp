// libFuzzer target: the restricted unpickler on arbitrary bytes. Every storage key reads the same
// 256-byte record, so tensor rebuilding is exercised too. Only torchless::Error may escape
// unpickle(); anything else (a crash, a sanitizer report, another exception) is a bug.
#include "core/error.h"
#include "serialize/unpickler.h"

#include <cstddef>
#include <cstdint>
#include <memory>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static auto record =
      std::shared_ptr<std::byte>(new std::byte[256](), [](std::byte* p) { delete[] p; });
  torchless::UnpicklerOptions opt;
  opt.place = "fuzz";
  opt.readStorage = [](const std::string&) {
    torchless::RecordData r;
    r.owner = record;
    r.data = record.get();
    r.size = 256;
    return r;
  };
  try {
    torchless::unpickle(data, size, opt);
  } catch (const torchless::Error&) {
  }
  return 0;
}
