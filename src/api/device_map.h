#pragma once
// Device maps for archives saved on a GPU (`run --map-location cpu`, `--device-map cuda:0=cpu`).
//
// torch.jit.load(map_location=...) moves the saved tensors; the device constants a trace baked
// into the code (`torch.zeros([2], device=torch.device("cuda:0"))`) stay, so the model still
// fails on a CPU-only machine. Tensors always load on the CPU here; remapDeviceConstants() also
// rewrites those constants, which PyTorch does not do, and reports what it changed so the
// command can say so.

#include "api/module.h"
#include "core/device.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace torchless {

/// One rule: constants on `from` become `to`. `from` unset matches every device that is not
/// `to`; a `from` without an index ("cuda") matches every index of its type.
struct DeviceMapping {
  std::optional<Device> from;
  Device to;
};

/// Parses a --map-location value ("cpu": every device to the CPU) or a --device-map value
/// ("cuda:0=cpu,cuda:1=cpu"). Only the CPU can be a target (torchless runs on the CPU only).
/// Throws torchless::Error naming the bad part.
std::vector<DeviceMapping> parseDeviceMap(const std::string& spec);

/// What remapDeviceConstants() changed.
struct DeviceRemapReport {
  size_t constants = 0;        // Device constants rewritten
  std::set<std::string> from;  // the devices they named ("cuda:0")
};

/// Rewrites every prim::Constant of type Device in the graphs of `module`'s compilation unit
/// that a rule matches (the first matching rule wins). Call it before the first run: plans
/// are built from these graphs. Never throws for a well-formed module.
DeviceRemapReport remapDeviceConstants(const Module& module,
                                       const std::vector<DeviceMapping>& rules);

}  // namespace torchless
