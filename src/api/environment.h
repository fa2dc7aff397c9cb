#pragma once
// Facts of this build and this machine, for `torchless env` and bug reports: the libraries
// and instruction sets kernels use, threads, and what torchless reads and writes.

#include <cstdint>
#include <string>
#include <vector>

namespace torchless {

struct Environment {
  std::string onednnVersion;             // "2.6.3 (commit ...)", as the loaded library reports
  std::string onednnIsa;                 // the ISA oneDNN's JIT kernels dispatch to on this CPU
  std::string cpuModel;                  // /proc/cpuinfo "model name"
  std::vector<std::string> cpuFeatures;  // sse4.2, avx2, avx512f, avx512bf16, ...
  int cores = 0;                         // logical processors OpenMP sees
  int defaultThreads = 0;                // threads a kernel uses without --threads
  std::string waitPolicy;  // OpenMP wait policy of idle threads (tools/launcher/launcher.cpp)
  int minOpset = 0, maxOpset = 0, defaultOpset = 0;       // ONNX export, default domain
  uint64_t minArchiveVersion = 0, maxArchiveVersion = 0;  // archive file-format versions read
};

/// Reads the environment. Throws nothing.
Environment environment();

/// Sets the number of threads kernels (and oneDNN) use for the calls the calling thread makes
/// from now on; n <= 0 restores the default, which uses the cores other processes leave idle
/// (ops/parallel.h). Per thread, as OpenMP keeps it: other threads keep their own setting (a
/// server gives each model instance's thread its own count). Throws nothing.
void setNumThreads(int n);

}  // namespace torchless
