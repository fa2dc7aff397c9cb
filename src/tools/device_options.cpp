#include "tools/device_options.h"

#include "api/device_map.h"
#include "core/error.h"

#include <iostream>

namespace torchless::cli {

void addDeviceOptions(CLI::App* cmd, DeviceOptions& o) {
  cmd->add_option(
      "--map-location", o.mapLocation,
      "load a model saved on another device onto this one (only 'cpu'), device constants "
      "in its code included (torch.jit.load's map_location does not remap those)");
  cmd->add_option("--device-map", o.deviceMap,
                  "FROM=TO[,FROM=TO...]: as --map-location, per device (cuda:0=cpu,cuda:1=cpu)");
}

Module loadWithDeviceMap(const std::string& path, const DeviceOptions& o,
                         const LoadOptions& options) {
  std::vector<DeviceMapping> rules;
  try {
    if (!o.mapLocation.empty()) {
      if (o.mapLocation.find('=') != std::string::npos)
        throw Error(fmt::format("'{}' is a device map; give it to --device-map", o.mapLocation));
      for (auto& r : parseDeviceMap(o.mapLocation)) rules.push_back(r);
    }
    if (!o.deviceMap.empty())
      for (auto& r : parseDeviceMap(o.deviceMap)) rules.push_back(r);
  } catch (const Error& e) {
    throw CLI::ValidationError(o.deviceMap.empty() ? "--map-location" : "--device-map",
                               e.firstLine());
  }
  Module m = load(path, options);
  if (rules.empty()) return m;
  DeviceRemapReport report = remapDeviceConstants(m, rules);
  if (report.constants)
    std::cerr << fmt::format("note: {}: {} device constant{} ({}) in the code remapped to cpu\n",
                             path, report.constants, report.constants == 1 ? "" : "s",
                             fmt::join(report.from, ", "));
  return m;
}

}  // namespace torchless::cli
