// `torchless ops`: every registered operator schema, one a line, sorted.
#include "ir/operator_registry.h"
#include "tools/commands.h"

#include <iostream>
#include <memory>
#include <string>

namespace torchless::cli {

void registerOpsCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "Print every registered operator schema, one a line");
  auto filter = std::make_shared<std::string>();
  auto count = std::make_shared<bool>(false);
  cmd->add_option("--filter", *filter, "Only schemas containing this substring");
  cmd->add_flag("--count", *count, "Print only the number of matching schemas");
  cmd->callback([filter, count]() {
    initOperatorRegistry();
    size_t n = 0;
    std::string out;
    for (const OpInfo* op : OperatorRegistry::global().all()) {
      if (!filter->empty() && op->key.find(*filter) == std::string::npos) continue;
      ++n;
      if (!*count) {
        out += op->key;
        out += '\n';
      }
    }
    if (*count) out = std::to_string(n) + "\n";
    std::cout << out;
  });
}

}  // namespace torchless::cli
