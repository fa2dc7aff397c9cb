// `torchless graph FILE`: the IR in PyTorch's print format (../shared/docs/cli.md).
//
// For now FILE is a text file holding a graph as PyTorch prints it (`str(fn.graph)`, a .ir
// file): it is parsed, verified, optionally run through passes (`--pass NAME`, repeatable, in
// order; the graph is verified after each), and printed. TORCHLESS_LOG=pass1,pass2 prints the
// graph after those passes on stderr; `--stop-after N` runs only the first N passes (to
// bisect which pass broke a graph). FILE may also be a model archive (.pt): it is loaded
// (code/ compiled) and the graph of --method (default forward) is printed, with calls
// inlined for --inline, frozen (torchless::freeze, api/freeze.h) for --frozen.
#include "api/freeze.h"
#include "api/module.h"
#include "api/pipeline.h"
#include "core/error.h"
#include "ir/ir.h"
#include "ir/ir_parser.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/passes.h"
#include "tools/commands.h"

#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

namespace torchless::cli {

namespace {

struct GraphOptions {
  std::string file;
  std::string method = "forward";
  bool inlineCalls = false;
  bool frozen = false;
  std::string pipeline;  // "" or "execution"
  std::vector<std::string> passes;
  bool listPasses = false;
  bool fixedPoint = false;
  int64_t stopAfter = -1;
};

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The graph of method `o.method` of an archive's root module (a copy: passes may change
/// it), with calls inlined for --inline. `loaded` receives the module (`--pass freeze` reads
/// its attributes).
std::shared_ptr<Graph> archiveGraph(const GraphOptions& o, Module& loaded) {
  Module m = load(o.file);
  loaded = m;
  const GraphFunction* fn = m.findMethod(o.method);
  if (!fn) throw m.noSuchMethod(o.method).withPlace(o.file);
  if (o.pipeline == "execution") {
    // --pipeline execution: the graph Module::runMethod runs (api/pipeline.h), with its
    // engine segments, then the partition report on stderr.
    std::shared_ptr<const ExecutionPlan> plan = m.executionPlan(o.method);
    if (!plan->notFrozen.empty())
      std::cerr << "runs as loaded: " << plan->notFrozen << "\n";
    else
      std::cerr << plan->report.str();
    return plan->graph->copy();
  }
  if (o.frozen) {
    // --frozen: the method as torchless::freeze leaves it (api/freeze.h; inlined).
    FreezeOptions fo;
    if (o.method != "forward") fo.preservedAttrs.push_back(o.method);
    try {
      Module f = freeze(m, fo);
      return f.findMethod(o.method)->graph()->copy();
    } catch (Error& e) {
      e.withPlace(o.file);
      throw;
    }
  }
  std::shared_ptr<Graph> g = fn->graph()->copy();
  if (o.inlineCalls) passes::inlineCalls(*g);
  return g;
}

void runGraph(const GraphOptions& o) {
  passes::registerPasses();
  const auto& registry = passes::PassRegistry::global();
  if (o.listPasses) {
    for (const passes::Pass* p : registry.all())
      std::cout << p->name() << "\t" << p->description() << "\n";
    return;
  }
  if (o.file.empty()) throw CLI::RequiredError("FILE");
  for (const auto& p : o.passes) {
    if (!registry.find(p))
      throw CLI::ValidationError(
          "--pass", fmt::format("unknown pass '{}' (torchless graph --list-passes lists them)", p));
  }
  std::string text = readText(o.file);
  std::shared_ptr<Graph> g;
  Module loaded;
  if (text.size() >= 4 && text.compare(0, 4, "PK\x03\x04") == 0) {
    g = archiveGraph(o, loaded);
  } else {
    if (o.inlineCalls || o.frozen || o.method != "forward" || !o.pipeline.empty())
      throw Error(
          "--method, --inline, --frozen and --pipeline apply to model archives, not to graph text",
          o.file);
    g = std::make_shared<Graph>();
    parseIR(text, g.get(), ParseIROptions{o.file, nullptr});
    try {
      verify(*g);
    } catch (Error& e) {
      e.withPlace(o.file);
      throw;
    }
  }
  if (!o.passes.empty()) {
    passes::PassManagerOptions pmo = passes::PassManagerOptions::fromEnvironment();
    pmo.verify = true;
    pmo.fixedPoint = o.fixedPoint;
    if (o.stopAfter >= 0) pmo.stopAfter = static_cast<size_t>(o.stopAfter);
    passes::PassManager pm(o.passes, pmo, registry);
    // `--pass freeze` on an archive folds the loaded module's attributes (passes/freeze.cpp).
    std::optional<passes::FreezeModuleScope> freezeScope;
    if (loaded.defined() && !o.frozen) freezeScope.emplace(loaded.object());
    try {
      pm.run(*g);
    } catch (Error& e) {
      e.withPlace(o.file);
      throw;
    }
  }
  std::cout << *g;
}

}  // namespace

void registerGraphCommand(CLI::App& app) {
  auto opts = std::make_shared<GraphOptions>();
  auto* cmd = app.add_subcommand("graph", "Print the IR in PyTorch's graph format");
  cmd->add_option("FILE", opts->file, "A model archive (.pt) or a file holding graph text (.ir)");
  cmd->add_option("--method", opts->method, "Method of an archive to print (default: forward)");
  cmd->add_flag("--inline", opts->inlineCalls, "Inline calls before printing (archives)");
  cmd->add_flag("--frozen", opts->frozen, "Freeze the module before printing (archives)");
  cmd->add_option("--pipeline", opts->pipeline,
                  "'execution': print the graph that runs (frozen, engine segments as "
                  "torchless::execute_engine) and the partition report")
      ->check(CLI::IsMember({"execution"}));
  cmd->add_option("--pass", opts->passes, "Run a pass before printing (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--list-passes", opts->listPasses, "List the passes --pass accepts");
  cmd->add_flag("--fixed-point", opts->fixedPoint,
                "Repeat the --pass list until no pass changes the graph");
  cmd->add_option("--stop-after", opts->stopAfter,
                  "Run only the first N passes (to bisect which pass breaks a graph)");
  cmd->callback([opts]() { runGraph(*opts); });
}

}  // namespace torchless::cli
