// `torchless run MODEL.pt [INPUT ...] [--output-dir DIR] [--method NAME] [--threads N]`:
// runs a method on inputs given as cli.md says and writes its outputs as out0.npy, out1.npy ...
#include "api/cli_io.h"
#include "api/module.h"
#include "core/error.h"
#include "core/npy.h"
#include "ops/parallel.h"
#include "tools/commands.h"
#include "tools/input_options.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

namespace torchless::cli {
namespace {

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::string outputDir = ".";
  std::string method = "forward";
  int threads = 0;
  bool print = false;
  InputOptions in;
};

// Writes text to path through a temporary file renamed at the end.
void writeTextAtomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) {
      std::remove(tmp.c_str());
      throw Error("cannot write output", path);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error("cannot write output", path);
  }
}

void runCommand(const RunOptions& o) {
  if (o.threads > 0) ops::setNumThreads(o.threads);
  Module m = load(o.model);
  std::vector<ParamSpec> params = m.methodParams(o.method);
  std::vector<IValue> args = parseInputs(inputWords(o.in, o.inputs), params, inputLoader(o.in));
  IValue result = m.runMethod(o.method, std::move(args));
  std::vector<FlatOutput> outputs = flattenOutputs(result);
  std::error_code ec;
  std::filesystem::create_directories(o.outputDir, ec);
  if (ec) throw Error(fmt::format("cannot create output directory: {}", ec.message()), o.outputDir);
  for (const auto& out : outputs) {
    const std::string path = (std::filesystem::path(o.outputDir) / out.fileName).string();
    if (out.text) writeTextAtomically(path, *out.text);
    else saveNpy(path, out.tensor->contiguous());
    std::cout << describeOutput(out) << "\n";
    if (o.print) std::cout << (out.text ? *out.text : out.tensor->toString()) << "\n";
  }
}

}  // namespace

void registerRunCommand(CLI::App& app) {
  auto opts = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a method of a TorchScript archive on inputs");
  cmd->add_option("model", opts->model, "the .pt archive")->required();
  cmd->add_option("inputs", opts->inputs,
                  "one per argument: x.npy, 13, -2.5, true, false, none, a word (str), "
                  "@list:a.npy,b.npy, @dict:k=a.npy");
  addInputOptions(*cmd, opts->in);
  cmd->add_option("--output-dir", opts->outputDir, "where out0.npy ... go (default .)");
  cmd->add_option("--method", opts->method, "method to run (default forward)");
  cmd->add_option("--threads", opts->threads, "threads for kernels (default: all cores)")
      ->check(CLI::Range(1, 4096));
  cmd->add_flag("--print", opts->print, "also print each output as PyTorch prints it");
  cmd->callback([opts]() { runCommand(*opts); });
}

}  // namespace torchless::cli
