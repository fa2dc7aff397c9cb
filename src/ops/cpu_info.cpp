#include "ops/cpu_info.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <fmt/format.h>

#include <fstream>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

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
  // f16c and avxvnni from CPUID: clang 14's __builtin_cpu_supports does not know them (the
  // fuzz targets are built with clang).
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29))) out.emplace_back("f16c");
  TORCHLESS_FEATURE("avx512f")
  TORCHLESS_FEATURE("avx512bw")
  TORCHLESS_FEATURE("avx512vl")
  TORCHLESS_FEATURE("avx512vnni")
  TORCHLESS_FEATURE("avx512bf16")
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4))) out.emplace_back("avxvnni");
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
