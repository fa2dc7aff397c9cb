#pragma once
// `--map-location DEVICE` and `--device-map FROM=TO[,...]` for the commands that load and run a
// model (run, bench, export, compile, trace, freeze): archives saved on a GPU run on the CPU,
// device constants baked into traced code included (api/device_map.h).

#include "api/module.h"

#include <CLI/CLI.hpp>

#include <string>

namespace torchless::cli {

struct DeviceOptions {
  std::string mapLocation;  // "cpu"
  std::string deviceMap;    // "cuda:0=cpu,cuda:1=cpu"
};

/// Adds --map-location and --device-map to `cmd`, storing into `o`.
void addDeviceOptions(CLI::App* cmd, DeviceOptions& o);

/// Loads `path`; with a device map, rewrites the device constants of its code and says so on
/// stderr ("note: model.pt: 3 device constants (cuda:0) remapped to cpu"). A malformed map
/// is a usage error (CLI::ValidationError, exit 2); load errors throw torchless::Error.
/// `options` as torchless::load takes them.
Module loadWithDeviceMap(const std::string& path, const DeviceOptions& o,
                         const LoadOptions& options = {});

}  // namespace torchless::cli
