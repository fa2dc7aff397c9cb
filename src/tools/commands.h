#pragma once
// Each subcommand of the CLI lives in its own cmd_<name>.cpp and registers itself on the app.
// A command's callback throws torchless::Error for user errors; main() maps it to exit 1.

#include <CLI/CLI.hpp>

namespace torchless::cli {

void registerOpsCommand(CLI::App& app);
void registerInfoCommand(CLI::App& app);
void registerGraphCommand(CLI::App& app);
void registerCodeCommand(CLI::App& app);
void registerRunCommand(CLI::App& app);
void registerBenchCommand(CLI::App& app);
void registerExportCommand(CLI::App& app);
void registerFreezeCommand(CLI::App& app);
void registerScriptCommand(CLI::App& app);
void registerTraceCommand(CLI::App& app);
void registerCompileCommand(CLI::App& app);
void registerEnvCommand(CLI::App& app);
void registerServeCommand(CLI::App& app);

}  // namespace torchless::cli
