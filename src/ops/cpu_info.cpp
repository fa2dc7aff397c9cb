#include "ops/cpu_info.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <fmt/format.h>

#include <fstream>

namespace torchless::ops {

std::string onednnVersion() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("{}.{}.{} (commit {})", v->major, v->minor, v->patch, v->hash ? v->hash : "?");
}

std::string onednnIsa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::all: return "all";
    default: return "other";
  }
}

std::vector<std::string> cpuFeatures() {
  std::vector<std::string> out;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
#define TORCHLESS_FEATURE(name) \
  if (__builtin_cpu_supports(name)) out.emplace_back(name);
  TORCHLESS_FEATURE("sse4.2")
  TORCHLESS_FEATURE("avx")
  TORCHLESS_FEATURE("avx2")
  TORCHLESS_FEATURE("fma")
  TORCHLESS_FEATURE("f16c")
  TORCHLESS_FEATURE("avx512f")
  TORCHLESS_FEATURE("avx512bw")
  TORCHLESS_FEATURE("avx512vl")
  TORCHLESS_FEATURE("avx512vnni")
  TORCHLESS_FEATURE("avx512bf16")
  TORCHLESS_FEATURE("avxvnni")
#undef TORCHLESS_FEATURE
#endif
  return out;
}

std::string cpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    size_t start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return "";
}

}  // namespace torchless::ops
