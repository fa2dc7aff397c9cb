// libFuzzer target: a whole archive from arbitrary bytes (zip container, version, both pickles,
// storages), with and without CRC checks. Only torchless::Error may escape; anything else is a bug.
#include "core/error.h"
#include "serialize/archive_reader.h"

#include <cstddef>
#include <cstdint>
#include <memory>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    // Odd sizes read without CRC checks (LoadOptions::checkCrc = false: our own inflate path).
    torchless::ZipReaderOptions options;
    options.checkCrc = (size & 1) == 0;
    torchless::ArchiveReader ar(nullptr, data, size, "fuzz.pt", options);
    ar.readConstants();
    auto r = ar.readData();
    (void)torchless::moduleTensors(r.value);
    for (const auto& q : ar.codeQualifiers()) (void)ar.codeSource(q);
  } catch (const torchless::Error&) {
  }
  return 0;
}
