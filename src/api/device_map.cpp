#include "api/device_map.h"

#include "core/error.h"
#include "ir/ir.h"
#include "ir/walk.h"

#include <sstream>

namespace torchless {

namespace {

Device parseTarget(const std::string& text, const std::string& spec) {
  Device d;
  try {
    d = Device::parse(text);
  } catch (const Error& e) {
    throw Error(fmt::format("device map '{}': {}", spec, e.firstLine()));
  }
  if (!d.isCpu())
    throw Error(fmt::format("device map '{}': cannot map to '{}': torchless runs on the CPU only",
                            spec, d.str()));
  return d;
}

bool matches(const DeviceMapping& rule, const Device& d) {
  if (!rule.from) return d != rule.to;
  if (rule.from->type != d.type) return false;
  return rule.from->index < 0 || rule.from->index == d.index;
}

}  // namespace

std::vector<DeviceMapping> parseDeviceMap(const std::string& spec) {
  std::vector<DeviceMapping> rules;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos) {
      rules.push_back({std::nullopt, parseTarget(item, spec)});
      continue;
    }
    DeviceMapping m;
    try {
      m.from = Device::parse(item.substr(0, eq));
    } catch (const Error& e) {
      throw Error(fmt::format("device map '{}': {}", spec, e.firstLine()));
    }
    m.to = parseTarget(item.substr(eq + 1), spec);
    rules.push_back(m);
  }
  if (rules.empty()) throw Error(fmt::format("device map '{}' names no device", spec));
  return rules;
}

DeviceRemapReport remapDeviceConstants(const Module& module,
                                       const std::vector<DeviceMapping>& rules) {
  DeviceRemapReport report;
  if (!module.unit()) return report;
  for (const auto& fn : module.unit()->functions()) {
    forEachNode(fn->graph()->block(), [&](Node* n) {
      if (n->kind() != prim::Constant || n->outputs().size() != 1 ||
          n->output()->type()->kind() != TypeKind::DeviceObjType || !n->hasAttribute(attr::value))
        return;
      Device d = Device::parse(n->s(attr::value));
      for (const auto& rule : rules) {
        if (!matches(rule, d)) continue;
        if (rule.to != d) {
          report.from.insert(d.str());
          n->s_(attr::value, rule.to.str());
          ++report.constants;
        }
        break;
      }
    });
  }
  return report;
}

}  // namespace torchless
