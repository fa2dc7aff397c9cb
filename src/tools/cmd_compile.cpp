// `torchless compile MODEL.pt [INPUT ...] -o OUT.pt [--precision fp32|bf16]` (cli.md): an engine
// embedded in an archive. Not implemented yet: the command exists so that scripts written
// against cli.md get a clear "not implemented" error (exit 1) instead of a usage error.
#include "core/error.h"
#include "tools/commands.h"

#include <memory>
#include <string>
#include <vector>

namespace torchless::cli {

void registerCompileCommand(CLI::App& app) {
  struct Options {
    std::string model, output, precision = "fp32";
    std::vector<std::string> inputs;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("compile", "Build the fused CPU engine into an archive (not implemented yet)");
  cmd->add_option("MODEL", o->model, "TorchScript archive (.pt)")->required();
  cmd->add_option("INPUT", o->inputs, "example inputs, as for run");
  cmd->add_option("-o,--output", o->output, "the archive to write")->required();
  cmd->add_option("--precision", o->precision, "fp32 or bf16")->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->callback([o] {
    throw Error(
        "torchless compile is not implemented yet (the engine of design.md); `torchless freeze "
        "MODEL.pt -o OUT.pt --optimize` followed by `torchless run` gives the fused CPU path today",
        o->model);
  });
}

}  // namespace torchless::cli
