// `torchless graph FILE`: the IR in PyTorch's print format (../shared/docs/cli.md).
//
// For now FILE is a text file holding a graph as PyTorch prints it (`str(fn.graph)`, a .ir
// file): it is parsed, verified, optionally run through passes, and printed. Archives (.pt)
// with --method / --inline / --frozen come with the archive loader.
#include "core/error.h"
#include "ir/ir.h"
#include "ir/ir_parser.h"
#include "ir/verifier.h"
#include "tools/commands.h"

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

namespace torchless::cli {

namespace {

struct GraphOptions {
  std::string file;
  std::string method = "forward";
  bool inlineCalls = false;
  bool frozen = false;
  std::vector<std::string> passes;
  bool listPasses = false;
};

/// The passes `--pass` accepts, by name. Empty until passes/ exists.
const std::vector<std::pair<std::string, std::string>>& knownPasses() {
  static const std::vector<std::pair<std::string, std::string>> passes;
  return passes;
}

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void runGraph(const GraphOptions& o) {
  if (o.listPasses) {
    if (knownPasses().empty()) std::cout << "(no passes are registered yet)\n";
    for (const auto& [name, doc] : knownPasses()) std::cout << name << "\t" << doc << "\n";
    return;
  }
  if (o.file.empty()) throw CLI::RequiredError("FILE");
  for (const auto& p : o.passes) {
    bool known = false;
    for (const auto& k : knownPasses()) known |= k.first == p;
    if (!known)
      throw Error(fmt::format("unknown pass '{}' (torchless graph --list-passes lists them)", p));
  }
  std::string text = readText(o.file);
  if (text.size() >= 4 && text.compare(0, 4, "PK\x03\x04") == 0)
    throw Error(
        "reading model archives in `graph` is not implemented yet; give a file holding "
        "graph text (what PyTorch prints for fn.graph)",
        o.file);
  if (o.inlineCalls || o.frozen || o.method != "forward")
    throw Error("--method, --inline and --frozen apply to model archives, not to graph text",
                o.file);
  auto g = std::make_shared<Graph>();
  parseIR(text, g.get(), ParseIROptions{o.file, nullptr});
  try {
    verify(*g);
  } catch (Error& e) {
    e.withPlace(o.file);
    throw;
  }
  std::cout << *g;
}

}  // namespace

void registerGraphCommand(CLI::App& app) {
  auto opts = std::make_shared<GraphOptions>();
  auto* cmd = app.add_subcommand("graph", "Print the IR in PyTorch's graph format");
  cmd->add_option("FILE", opts->file, "A file holding graph text (.ir); archives come later");
  cmd->add_option("--method", opts->method, "Method of an archive to print (default: forward)");
  cmd->add_flag("--inline", opts->inlineCalls, "Inline calls before printing (archives)");
  cmd->add_flag("--frozen", opts->frozen, "Freeze the module before printing (archives)");
  cmd->add_option("--pass", opts->passes, "Run a pass before printing (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--list-passes", opts->listPasses, "List the passes --pass accepts");
  cmd->callback([opts]() { runGraph(*opts); });
}

}  // namespace torchless::cli
