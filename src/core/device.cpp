#include "core/device.h"

#include "core/error.h"

#include <array>
#include <charconv>

namespace torchless {
namespace {
constexpr std::array<const char*, 21> kNames = {
    "cpu",  "cuda", "mkldnn", "opengl", "opencl", "ideep", "hip",
    "fpga", "ort",  "xla",    "vulkan", "metal",  "xpu",   "mps",
    "meta", "hpu",  "ve",     "lazy",   "ipu",    "mtia",  "privateuseone"};
}

const char* deviceTypeName(DeviceType t) {
  auto i = static_cast<size_t>(t);
  return i < kNames.size() ? kNames[i] : "unknown";
}

Device Device::parse(std::string_view text) {
  std::string_view name = text;
  int16_t index = -1;
  auto colon = text.find(':');
  if (colon != std::string_view::npos) {
    name = text.substr(0, colon);
    auto digits = text.substr(colon + 1);
    int v = -1;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || v < 0 ||
        v > 32767)
      throw Error(fmt::format("invalid device string '{}'", text));
    index = static_cast<int16_t>(v);
  }
  for (size_t i = 0; i < kNames.size(); ++i)
    if (name == kNames[i]) return Device(static_cast<DeviceType>(i), index);
  throw Error(fmt::format("unknown device type in device string '{}'", text));
}

std::string Device::str() const {
  std::string s = deviceTypeName(type);
  if (index >= 0) s += ":" + std::to_string(index);
  return s;
}

}  // namespace torchless
