// `torchless trace MODEL.pt [INPUT ...] -o OUT.pt [--check-input A,B,...]... [--method NAME]`:
// torch.jit.trace for an archive (api/trace.h). Runs the method on the inputs (cli.md's INPUT
// words), records the straight-line graph specialized to them, checks it against each
// --check-input set, and writes a module whose forward is the traced graph.
//
// Each --check-input is one set of inputs for the method, its words separated by commas
// (`--check-input a.npy,b.npy`); an @list:/@dict: word must come last in its set and takes the
// rest of it. TracerWarnings go to stderr, one line each, as Python prints them. A failed check
// (TracingCheckError) or any error exits 1 with the report on stderr (the trace's warnings
// after it) and writes nothing.
#include "api/cli_io.h"
#include "api/environment.h"
#include "api/module.h"
#include "api/trace.h"
#include "core/error.h"
#include "core/npy.h"
#include "tools/commands.h"
#include "tools/device_options.h"
#include "tools/input_options.h"
#include "tools/save_checked.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <unistd.h>

namespace torchless::cli {
namespace {

struct TraceCmdOptions {
  DeviceOptions device;  // --map-location / --device-map
  std::string model;
  std::vector<std::string> inputs;
  std::string output;
  std::vector<std::string> checkInputs;
  std::string method = "forward";
  InputOptions in;
  int threads = 0;
};

/// "a.npy,3,@list:b.npy,c.npy" -> {"a.npy", "3", "@list:b.npy,c.npy"}.
std::vector<std::string> splitCheckSet(const std::string& s) {
  std::vector<std::string> words;
  size_t start = 0;
  while (start <= s.size()) {
    if (s.compare(start, 6, "@list:") == 0 || s.compare(start, 6, "@dict:") == 0) {
      words.push_back(s.substr(start));
      break;
    }
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    words.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return words;
}

/// The arguments the words give (defaults of the missing trailing parameters left out: the
/// traced graph takes only what was given, as torch.jit.trace's example inputs).
std::vector<IValue> givenArgs(const std::vector<std::string>& words,
                              const std::vector<ParamSpec>& params, const TensorLoader& load) {
  std::vector<IValue> args = parseInputs(words, params, load);
  size_t used = 0, given = 0;
  for (const auto& p : params) {
    if (used >= words.size()) break;
    const auto* tuple = p.type->cast<TupleType>();
    used += tuple ? tuple->elements().size() : 1;
    ++given;
  }
  args.resize(given);
  return args;
}

void traceCommand(const TraceCmdOptions& o) {
  if (o.threads > 0) setNumThreads(o.threads);
  Module m = loadWithDeviceMap(o.model, o.device);
  if (!m.findMethod(o.method)) throw m.noSuchMethod(o.method).withPlace(o.model);
  const std::vector<ParamSpec> params = m.methodParams(o.method);
  TraceOptions options;
  options.method = o.method;
  std::vector<IValue> args = givenArgs(inputWords(o.in, o.inputs), params, inputLoader(o.in));
  for (size_t i = 0; i < o.checkInputs.size(); ++i) {
    try {
      options.checkInputs.push_back(
          givenArgs(splitCheckSet(o.checkInputs[i]), params, inputLoader(o.in)));
    } catch (Error& e) {
      e.addContext(fmt::format("in --check-input {} ('{}')", i + 1, o.checkInputs[i]));
      throw;
    }
  }
  TraceResult r;
  try {
    r = trace(m, std::move(args), options);
  } catch (const TracingCheckError& e) {
    // The first stderr line stays the error (cli.md); the trace's warnings follow the report.
    std::string details = e.details();
    for (const auto& w : e.warnings()) details += "\n" + w.str();
    throw TracingCheckError(details, e.warnings());
  } catch (Error& e) {
    e.addContext(fmt::format("while tracing {} of {}", o.method, o.model));
    throw;
  }
  for (const auto& w : r.warnings) std::cerr << w.str() << "\n";
  saveLoadable(r.module, o.output, "traced");
  size_t nodes = 0;
  for (const Node* n : r.graph->nodes())
    if (n->kind() != prim::Constant) ++nodes;
  std::cout << fmt::format("{}: traced {} ({} nodes, {} warning{}{})\n", o.output, o.method, nodes,
                           r.warnings.size(), r.warnings.size() == 1 ? "" : "s",
                           o.checkInputs.empty()
                               ? ""
                               : fmt::format(", {} check input set{} passed", o.checkInputs.size(),
                                             o.checkInputs.size() == 1 ? "" : "s"));
}

}  // namespace

void registerTraceCommand(CLI::App& app) {
  auto opts = std::make_shared<TraceCmdOptions>();
  auto* cmd =
      app.add_subcommand("trace", "Trace a method on example inputs into a straight-line module");
  cmd->add_option("MODEL", opts->model, "TorchScript archive (.pt)")->required();
  addDeviceOptions(cmd, opts->device);
  cmd->add_option("INPUT", opts->inputs,
                  "example inputs, one per argument: x.npy, @list:a.npy,b.npy, @dict:k=a.npy");
  cmd->add_option("-o,--output", opts->output, "the traced archive to write")->required();
  addInputOptions(*cmd, opts->in);
  cmd->add_option("--threads", opts->threads, "threads for kernels (default: the idle cores)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--check-input", opts->checkInputs,
                  "another input set, words separated by commas (repeatable): re-trace and "
                  "compare graphs and outputs")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--method", opts->method, "method to trace (default forward)");
  cmd->callback([opts]() { traceCommand(*opts); });
}

}  // namespace torchless::cli
