#include "api/environment.h"

#include "ops/cpu_info.h"
#include "ops/parallel.h"
#include "serialize/archive_reader.h"

#include "convert/onnx/onnx_export.h"

#include <cstdlib>

namespace torchless {

Environment environment() {
  Environment e;
  e.onednnVersion = ops::onednnVersion();
  e.onednnIsa = ops::onednnIsa();
  e.cpuModel = ops::cpuModelName();
  e.cpuFeatures = ops::cpuFeatures();
  e.cores = omp_get_num_procs();
  e.defaultThreads = ops::getNumThreads();
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  if (policy)
    e.waitPolicy = std::string(policy) + " (OMP_WAIT_POLICY)";
  else if (spin)
    e.waitPolicy = std::string("GOMP_SPINCOUNT=") + spin;
  else
    e.waitPolicy =
        "GOMP_SPINCOUNT=1000 (torchless's default: idle threads spin ~20 us, then sleep)";
  e.minOpset = onnx_export::kMinOpset;
  e.maxOpset = onnx_export::kMaxOpset;
  e.defaultOpset = onnx_export::kDefaultOpset;
  e.minArchiveVersion = kMinSupportedFileFormatVersion;
  e.maxArchiveVersion = kMaxSupportedFileFormatVersion;
  return e;
}

void setNumThreads(int n) { ops::setNumThreads(n); }

}  // namespace torchless
