#pragma once
// Device: c10::Device ("cpu", "cuda:0", "mps", "meta" ...). Only CPU runs; the others parse,
// print, and are refused at run time (tensors saved on them load onto the CPU, as
// map_location="cpu" does).

#include <cstdint>
#include <string>
#include <string_view>

namespace torchless {

enum class DeviceType : int8_t {
  CPU = 0,
  CUDA = 1,
  MKLDNN = 2,
  OPENGL = 3,
  OPENCL = 4,
  IDEEP = 5,
  HIP = 6,
  FPGA = 7,
  ORT = 8,
  XLA = 9,
  Vulkan = 10,
  Metal = 11,
  XPU = 12,
  MPS = 13,
  Meta = 14,
  HPU = 15,
  VE = 16,
  Lazy = 17,
  IPU = 18,
  MTIA = 19,
  PrivateUse1 = 20,
};

/// c10::Device: a type and an index (-1 = "current", printed without ":N").
struct Device {
  DeviceType type = DeviceType::CPU;
  int16_t index = -1;

  Device() = default;
  explicit Device(DeviceType t, int16_t i = -1) : type(t), index(i) {}

  /// Parses "cpu", "cuda", "cuda:1", "meta" ... Throws torchless::Error on anything else.
  static Device parse(std::string_view text);
  /// "cpu", "cuda:0": as str(torch.device(...)).
  std::string str() const;
  bool isCpu() const { return type == DeviceType::CPU; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

/// "cpu", "cuda", ... the lower-case name of a DeviceType as PyTorch prints it.
const char* deviceTypeName(DeviceType t);

}  // namespace torchless
