// libFuzzer target: a whole archive from arbitrary bytes (zip container, version, both pickles,
// storages). Only torchless::Error may escape; anything else is a bug.
#include "core/error.h"
#include "serialize/archive_reader.h"

#include <cstddef>
#include <cstdint>
#include <memory>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    torchless::ArchiveReader ar(nullptr, data, size, "fuzz.pt");
    ar.readConstants();
    auto r = ar.readData();
    (void)torchless::moduleTensors(r.value);
    for (const auto& q : ar.codeQualifiers()) (void)ar.codeSource(q);
  } catch (const torchless::Error&) {
  }
  return 0;
}
