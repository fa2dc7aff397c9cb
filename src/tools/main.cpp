// The torchless command line (../shared/docs/cli.md). Exit codes: 0 success, 1 user error
// (torchless::Error: first stderr line says what and where), 2 usage error (CLI11).

#include "core/error.h"
#include "tools/commands.h"

#include <CLI/CLI.hpp>

#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"torchless: TorchScript models without Python or libtorch", "torchless"};
  app.set_version_flag("--version", std::string("torchless ") + TORCHLESS_VERSION);
  app.require_subcommand(0, 1);
  app.fallthrough(false);

  torchless::cli::registerOpsCommand(app);
  torchless::cli::registerInfoCommand(app);
  torchless::cli::registerGraphCommand(app);
  torchless::cli::registerCodeCommand(app);
  torchless::cli::registerRunCommand(app);
  torchless::cli::registerBenchCommand(app);
  torchless::cli::registerExportCommand(app);
  torchless::cli::registerFreezeCommand(app);
  torchless::cli::registerScriptCommand(app);
  torchless::cli::registerTraceCommand(app);
  torchless::cli::registerCompileCommand(app);

  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) std::cout << app.help();
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const torchless::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
