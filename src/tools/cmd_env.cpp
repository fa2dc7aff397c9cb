// `torchless env [--json]`: the version, oneDNN's version and the ISA it dispatches to, the
// CPU and its features, threads and wait policy, the ONNX opsets export writes and the archive
// format versions load reads — what a bug report needs (api/environment.h).
#include "api/environment.h"
#include "tools/commands.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

namespace torchless::cli {

namespace {

void envCommand(bool json) {
  Environment e = environment();
  if (json) {
    nlohmann::json j = {
        {"version", TORCHLESS_VERSION},
        {"onednn", {{"version", e.onednnVersion}, {"isa", e.onednnIsa}}},
        {"cpu", {{"model", e.cpuModel}, {"features", e.cpuFeatures}, {"cores", e.cores}}},
        {"threads", {{"default", e.defaultThreads}, {"wait_policy", e.waitPolicy}}},
        {"onnx_opsets", {{"min", e.minOpset}, {"max", e.maxOpset}, {"default", e.defaultOpset}}},
        {"archive_versions", {{"min", e.minArchiveVersion}, {"max", e.maxArchiveVersion}}},
    };
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("torchless {}\n", TORCHLESS_VERSION);
  std::cout << fmt::format("oneDNN: {}, ISA {}\n", e.onednnVersion, e.onednnIsa);
  std::cout << fmt::format("CPU: {} ({} logical cores)\n",
                           e.cpuModel.empty() ? "unknown" : e.cpuModel, e.cores);
  std::cout << fmt::format("CPU features: {}\n",
                           e.cpuFeatures.empty()
                               ? std::string("none detected")
                               : fmt::format("{}", fmt::join(e.cpuFeatures, " ")));
  std::cout << fmt::format("threads: {} by default (--threads N to choose), idle wait: {}\n",
                           e.defaultThreads, e.waitPolicy);
  std::cout << fmt::format("ONNX export: opsets {}..{} (default {})\n", e.minOpset, e.maxOpset,
                           e.defaultOpset);
  std::cout << fmt::format("archives read: file-format versions {}..{} (PyTorch 1.x and 2.x)\n",
                           e.minArchiveVersion, e.maxArchiveVersion);
}

}  // namespace

void registerEnvCommand(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto* cmd =
      app.add_subcommand("env", "Report the version, oneDNN, CPU features, threads and formats");
  cmd->add_flag("--json", *json, "print the report as JSON");
  cmd->callback([json]() { envCommand(*json); });
}

}  // namespace torchless::cli
