// `torchless run MODEL.pt [INPUT ...] [--output-dir DIR] [--method NAME] [--threads N]`:
// runs a method on inputs given as cli.md says and writes its outputs as out0.npy, out1.npy ...
#include "api/cli_io.h"
#include "api/module.h"
#include "api/pipeline.h"
#include "core/error.h"
#include "core/npy.h"
#include "ops/parallel.h"
#include "tools/commands.h"
#include "tools/device_options.h"
#include "tools/input_options.h"
#include "tools/output_formats.h"
#include "tools/save_checked.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace torchless::cli {
namespace {

struct RunOptions {
  DeviceOptions device;  // --map-location / --device-map
  std::string model;
  std::vector<std::string> inputs;
  std::string outputDir = ".";
  std::string method = "forward";
  int threads = 0;
  bool print = false;
  InputOptions in;
  std::string format = "npy";       // npy (one file per value), npz or json (one file)
  std::vector<std::string> expect;  // expected outputs, in output order
  double rtol = 1e-4, atol = 1e-5;
};

/// Compares one output with its expected file as numpy.allclose(actual, expected, rtol, atol)
/// (NaN equal to NaN); a .txt expects the same text. Prints one line; returns whether it
/// matches. Shapes must be equal; dtypes must be of one kind (floating, integer, bool).
bool compareOutput(const FlatOutput& out, const std::string& expectedPath, double rtol,
                   double atol) {
  const std::string name = out.fileName;
  if (out.text) {
    std::ifstream in(expectedPath, std::ios::binary);
    if (!in) throw Error("cannot open expected output", expectedPath);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string want = ss.str();
    while (!want.empty() && want.back() == '\n') want.pop_back();
    const bool ok = want == *out.text;
    std::cout << fmt::format("{}: text {} {}\n", name, ok ? "equal to" : "differs from",
                             expectedPath);
    return ok;
  }
  Tensor want = loadNpy(expectedPath);
  const Tensor& got = *out.tensor;
  if (got.sizes() != want.sizes()) {
    std::cout << fmt::format("{}: shape [{}] but {} has [{}]\n", name, fmt::join(got.sizes(), ", "),
                             expectedPath, fmt::join(want.sizes(), ", "));
    return false;
  }
  auto kind = [](ScalarType t) { return isFloatingType(t) ? 0 : t == ScalarType::Bool ? 2 : 1; };
  if (kind(got.scalarType()) != kind(want.scalarType())) {
    std::cout << fmt::format("{}: dtype {} but {} has {}\n", name, dtypeName(got.scalarType()),
                             expectedPath, dtypeName(want.scalarType()));
    return false;
  }
  Tensor a = got.to(ScalarType::Double).contiguous(), b = want.to(ScalarType::Double).contiguous();
  double maxAbs = 0, maxRel = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<double>()[i], y = b.data<double>()[i];
    // As numpy.allclose(equal_nan=True): NaN matches NaN and an infinity matches itself.
    if ((std::isnan(x) && std::isnan(y)) || x == y) continue;
    const double d = std::isnan(x) || std::isnan(y) ? INFINITY : std::fabs(x - y);
    maxAbs = std::max(maxAbs, d);
    if (y != 0) maxRel = std::max(maxRel, d / std::fabs(y));
    if (!(d <= atol + rtol * std::fabs(y))) ++bad;
  }
  std::cout << fmt::format(
      "{}: max abs error {:.3g}, max rel error {:.3g} (rtol {:g}, atol {:g}): {}\n", name, maxAbs,
      maxRel, rtol, atol,
      bad == 0 ? "ok" : fmt::format("{} of {} elements differ", bad, a.numel()));
  return bad == 0;
}

void runCommand(const RunOptions& o) {
  if (o.threads > 0) ops::setNumThreads(o.threads);
  // One short-lived call: the records are mapped, not read (Note [Mapped archives]).
  LoadOptions load;
  load.mapRecords = true;
  Module m = loadWithDeviceMap(o.model, o.device, load);
  if (!m.findMethod(o.method)) throw m.noSuchMethod(o.method).withPlace(o.model);
  std::vector<ParamSpec> params = m.methodParams(o.method);
  std::vector<IValue> args = commandInputs(o.in, o.inputs, params, o.model, o.method);
  // One call: as loaded, no plan built (Note [One call runs as loaded] in api/module.cpp).
  IValue result = runMethodOnce(m, o.method, std::move(args));
  std::vector<FlatOutput> outputs = flattenOutputs(result);
  createOutputDirectory(o.outputDir);
  if (o.format != "npy") {
    const std::string file = o.format == "npz" ? "outputs.npz" : "outputs.json";
    const std::string path = (std::filesystem::path(o.outputDir) / file).string();
    if (o.format == "npz")
      writeNpz(result, path);
    else
      writeJson(result, path);
    std::cout << fmt::format("{}: {} value{}\n", file, outputs.size(),
                             outputs.size() == 1 ? "" : "s");
  }
  for (const auto& out : outputs) {
    if (o.format == "npy") {
      const std::string path = (std::filesystem::path(o.outputDir) / out.fileName).string();
      if (out.text)
        writeTextAtomically(path, *out.text);
      else
        saveNpy(path, out.tensor->contiguous());
      std::cout << describeOutput(out) << "\n";
    }
    // Python prints a number as itself (7.5, True), a tensor as print(tensor) does.
    if (o.print)
      std::cout << (out.text     ? *out.text
                    : out.scalar ? out.scalar->repr()
                                 : out.tensor->toString())
                << "\n";
  }
  if (o.expect.empty()) return;
  if (o.expect.size() > outputs.size())
    throw Error(fmt::format("--expect gives {} files but the method has {} output{}",
                            o.expect.size(), outputs.size(), outputs.size() == 1 ? "" : "s"));
  size_t mismatches = 0;
  for (size_t i = 0; i < o.expect.size(); ++i)
    mismatches += compareOutput(outputs[i], o.expect[i], o.rtol, o.atol) ? 0 : 1;
  if (mismatches)
    throw Error(fmt::format("{} of {} compared output{} differ{} from the expected values",
                            mismatches, o.expect.size(), o.expect.size() == 1 ? "" : "s",
                            mismatches == 1 ? "s" : ""));
}

}  // namespace

void registerRunCommand(CLI::App& app) {
  auto opts = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a method of a TorchScript archive on inputs");
  cmd->add_option("MODEL", opts->model, "TorchScript archive (.pt)")->required();
  addDeviceOptions(cmd, opts->device);
  cmd->add_option("INPUT", opts->inputs,
                  "one per argument: x.npy, 13, -2.5, true, false, none, a word (str), "
                  "@list:a.npy,b.npy, @dict:k=a.npy");
  addInputOptions(*cmd, opts->in);
  cmd->add_option("--output-dir", opts->outputDir, "where out0.npy ... go (default .)");
  cmd->add_option("--method", opts->method, "method to run (default forward)");
  cmd->add_option("--threads", opts->threads, "threads for kernels (default: all cores)")
      ->check(CLI::Range(1, 4096));
  cmd->add_flag("--print", opts->print, "also print each output as PyTorch prints it");
  cmd->add_option(
         "--output-format", opts->format,
         "npy: out0.npy, out1.npy ... (default); npz: outputs.npz, json: outputs.json, one "
         "file keeping tuple, list and dict structure")
      ->check(CLI::IsMember({"npy", "npz", "json"}));
  cmd->add_option("--expect", opts->expect,
                  "expected outputs (out0 first), comma-separated .npy/.txt files: prints the max "
                  "error of each and exits 1 when one differs beyond --rtol/--atol")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--rtol", opts->rtol, "relative tolerance of --expect (default 1e-4)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--atol", opts->atol, "absolute tolerance of --expect (default 1e-5)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([opts]() { runCommand(*opts); });
}

}  // namespace torchless::cli
