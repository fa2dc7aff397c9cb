// `torchless ops`: every registered operator schema, one a line.
#include "tools/commands.h"

#include <iostream>

namespace torchless::cli {

void registerOpsCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "Print every registered operator schema, one a line");
  cmd->callback([]() {
    // Filled in once the operator registry exists (ir/operator_registry.h).
  });
}

}  // namespace torchless::cli
