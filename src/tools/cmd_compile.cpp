// `torchless compile MODEL.pt [INPUT ...] -o OUT.pt [--input SPEC ...] [--precision fp32|bf16]
//  [--min-block-size N] [--torch-executed-op SCHEMA ...] [--require-full-compilation]
//  [--check-method-support]` (cli.md): forward frozen and partitioned into engines
// (api/compile.h), written as an archive whose forward calls them, with a report.
//
// --input SPEC, one per tensor parameter in order:
//   "[(1,3,224,224);(4,3,224,224);(8,3,224,224)]@fp32"   Torch-TensorRT's min;opt;max profile
//   1x3x224x224                                           a fixed shape (min = opt = max)
//   "[(1,8);(1,128);(1,512)]@int64"                       token ids (also int32, bool)
// Without --input, example INPUTs give the shapes with the batch dimension (0) free.
// Example inputs (or, without them, random float32 inputs of each profile's opt shape, seed 0)
// run once before writing, so the report shows each engine's memory plan.
#include "api/cli_io.h"
#include "api/compile.h"
#include "api/environment.h"
#include "api/freeze.h"
#include "convert/engine/engine_record.h"
#include "core/error.h"
#include "core/npy.h"
#include "tools/commands.h"
#include "tools/device_options.h"
#include "tools/save_checked.h"

#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace torchless::cli {

namespace {

struct CompileOptions {
  DeviceOptions device;  // --map-location / --device-map
  std::string model, output, precision = "fp32";
  std::vector<std::string> inputs, specs, torchExecutedOps;
  size_t minBlockSize = 3;
  bool requireFull = false, checkSupport = false;
  int threads = 0;
};

// The shape part of an --input spec.
engine::InputProfile parseShape(const std::string& spec, const std::string& s) {
  if (!s.empty() && s.front() == '[') return engine::parseProfile(s);
  IntList dims;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find('x', pos);
    std::string d = s.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    try {
      size_t used = 0;
      long long v = std::stoll(d, &used);
      if (used != d.size() || v <= 0) throw std::invalid_argument(d);
      dims.push_back(v);
    } catch (const std::exception&) {
      throw Error(
          fmt::format("--input '{}': '{}' is not a positive size (expected 1x3x224x224 or "
                      "\"[(1,3,224,224);(4,3,224,224);(8,3,224,224)]@fp32\")",
                      spec, d));
    }
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return engine::InputProfile{dims, dims, dims};
}

// A profile and the dtype of the example input made for it.
struct Spec {
  engine::InputProfile profile;
  ScalarType dtype = ScalarType::Float;
};

// "[(..);(..);(..)]@fp32" or "1x3x224x224" (or "...@int64": token ids).
Spec parseSpec(const std::string& spec) {
  std::string s = spec;
  Spec out;
  if (auto at = s.rfind('@'); at != std::string::npos) {
    const std::string dtype = s.substr(at + 1);
    // Torch-TensorRT's names and Python's.
    std::optional<ScalarType> t = dtype == "fp32" || dtype == "float" ? ScalarType::Float
                                  : dtype == "i64" || dtype == "long" ? ScalarType::Long
                                  : dtype == "i32" || dtype == "int"
                                      ? ScalarType::Int
                                      : scalarTypeFromDtypeName(dtype);
    if (!t || (*t != ScalarType::Float && *t != ScalarType::Long && *t != ScalarType::Int &&
               *t != ScalarType::Bool))
      throw Error(fmt::format(
          "--input '{}': dtype '{}' is not supported (fp32, int64, int32 or bool)", spec, dtype));
    out.dtype = *t;
    s = s.substr(0, at);
  }
  out.profile = parseShape(spec, s);
  return out;
}

Tensor randomTensor(const IntList& sizes, std::mt19937& gen) {
  std::normal_distribution<float> d(0.f, 1.f);
  Tensor t = Tensor::empty(sizes, ScalarType::Float);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(gen);
  return t;
}

void compileCommand(const CompileOptions& o) {
  if (o.threads > 0) setNumThreads(o.threads);
  Module m = loadWithDeviceMap(o.model, o.device);
  std::vector<ParamSpec> params = m.methodParams("forward");
  CompileSpec spec;
  spec.minBlockSize = o.minBlockSize;
  spec.torchExecutedOps = o.torchExecutedOps;
  spec.requireFullCompilation = o.requireFull;
  spec.precision = o.precision;
  std::vector<ScalarType> dtypes;
  for (const auto& s : o.specs) {
    Spec parsed = parseSpec(s);
    spec.inputs.push_back(parsed.profile);
    dtypes.push_back(parsed.dtype);
  }
  if (!o.inputs.empty())
    spec.exampleInputs =
        parseInputs(o.inputs, params, [](const std::string& p) { return loadNpy(p); });
  if (spec.inputs.empty()) {
    // Shapes from the examples, batch dimension free.
    for (const IValue& v : spec.exampleInputs) {
      if (!v.isTensor() || v.toTensor().dim() == 0) {
        spec.inputs.emplace_back();
        continue;
      }
      IntList sz = v.toTensor().sizes();
      engine::InputProfile p{sz, sz, sz};
      p.min[0] = 1;
      p.max[0] = std::numeric_limits<int32_t>::max();
      spec.inputs.push_back(p);
    }
  } else if (spec.exampleInputs.empty()) {
    std::mt19937 gen(0);
    for (size_t i = 0; i < spec.inputs.size(); ++i) {
      const IntList& opt = spec.inputs[i].opt;
      // Integer inputs (token ids) in [0, 10), bools 0/1, as `run --input 1x128:int64`.
      spec.exampleInputs.emplace_back(
          dtypes[i] == ScalarType::Float
              ? randomTensor(opt, gen)
              : tensorFromSpec(InputSpec{opt, dtypes[i], InputSpec::Fill::Random}, 0));
    }
  }
  if (o.checkSupport) {
    FreezeOptions fo;
    Module frozen = optimizeForInference(m, fo);
    engine::PartitionOptions po;
    po.torchExecutedOps = o.torchExecutedOps;
    auto unsupported = engine::findEngineUnsupported(*frozen.findMethod("forward")->graph(), po);
    if (unsupported.empty()) {
      std::cout << "every node of forward has an engine converter\n";
      return;
    }
    std::string details;
    for (const auto& u : unsupported) details += "  " + u.str() + "\n";
    details.pop_back();
    throw UnsupportedError(
        fmt::format("{} node{} of forward cannot run in an engine (listed below)",
                    unsupported.size(), unsupported.size() == 1 ? "" : "s"),
        o.model, details);
  }
  CompileResult c = compile(m, spec);
  std::cout << c.report.str();
  for (size_t i = 0; i < c.report.segments.size(); ++i) {
    const auto& s = c.report.segments[i];
    if (!s.engine) continue;
    std::cout << fmt::format("engine [{}]: {} layers, memory plan {} bytes\n", i,
                             s.built->network().layers().size(), s.built->arenaBytes());
    std::cout << s.built->network().str();
  }
  saveLoadable(c.module, o.output, "compiled");
  std::cout << fmt::format("wrote {} ({} engine{})\n", o.output, c.report.numEngines(),
                           c.report.numEngines() == 1 ? "" : "s");
}

}  // namespace

void registerCompileCommand(CLI::App& app) {
  auto o = std::make_shared<CompileOptions>();
  auto* cmd = app.add_subcommand("compile",
                                 "Compile forward into fused CPU engines, written into an archive");
  cmd->add_option("MODEL", o->model, "TorchScript archive (.pt)")->required();
  addDeviceOptions(cmd, o->device);
  cmd->add_option("INPUT", o->inputs, "example inputs, as for run");
  cmd->add_option("-o,--output", o->output, "the archive to write");
  cmd->add_option("--input", o->specs,
                  "shape profile per tensor input: 1x3x224x224 or "
                  "\"[(1,3,224,224);(4,3,224,224);(8,3,224,224)]@fp32\" (@int64, @int32, @bool: "
                  "the example input's dtype)")
      ->allow_extra_args(false);  // one per --input: CLI11 would split "[...]" at its commas
  cmd->add_option("--precision", o->precision, "fp32 or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option("--min-block-size", o->minBlockSize, "fewest nodes in an engine (default 3)")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--torch-executed-op", o->torchExecutedOps,
                  "an op kept in the interpreter (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--require-full-compilation", o->requireFull,
                "fail unless all of forward runs in engines");
  cmd->add_flag(
      "--check-method-support", o->checkSupport,
      "list the nodes no engine converter takes, with their places; exit 0 when there are none");
  cmd->add_option("--threads", o->threads, "threads for kernels (default: the idle cores)")
      ->check(CLI::Range(1, 4096));
  cmd->callback([o, cmd] {
    if (!o->checkSupport && o->output.empty()) throw CLI::RequiredError("--output");
    (void)cmd;
    compileCommand(*o);
  });
}

}  // namespace torchless::cli
