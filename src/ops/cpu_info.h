#pragma once
// What this build runs on: the oneDNN library and the instruction set it dispatches to, and
// the CPU features the processor reports (for `torchless env` and bench reports).

#include <string>
#include <vector>

namespace torchless::ops {

/// oneDNN's version as the library reports it at run time: "2.6.3 (commit abc123)".
std::string onednnVersion();
/// The instruction set oneDNN's JIT kernels use on this CPU (dnnl::get_effective_cpu_isa):
/// "avx512_core_bf16", "avx2", ...
std::string onednnIsa();
/// The x86 features the CPU reports that matter to the kernels (GCC's __builtin_cpu_supports):
/// sse4.2, avx, avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512vnni, avx512bf16, avxvnni.
/// Empty on other architectures.
std::vector<std::string> cpuFeatures();
/// The processor's model name from /proc/cpuinfo ("" when unknown).
std::string cpuModelName();

}  // namespace torchless::ops
