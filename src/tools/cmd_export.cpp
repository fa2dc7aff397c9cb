// `torchless export MODEL.pt [INPUT ...] -o MODEL.onnx [--opset N] [--input-names a,b]
//  [--output-names y] [--dynamic-axes NAME:AXIS[,AXIS...] ...] [--external-data-threshold BYTES]
//  [--no-fold] [--qlinear] [--method NAME] [--threads N] [--progress]`
//
// Loads the module (torchless::load), takes forward's graph, inlines it (passes/inline.cpp),
// turns the attributes the method writes into state inputs and outputs (convert/onnx/
// module_state.h; their current values are written to OUT.state/NAME.npy),
// freezes it (every prim::GetAttr chain from self: tensors become parameter inputs exported
// as initializers named after the parameter, "layer1.0.conv1.weight"; bools, ints, floats,
// strings and None become constants), then exports (convert/onnx: prepare, pre-flight,
// convert, check) and writes the file atomically.
//
// MODEL may also be a graph in PyTorch's text format (a file ending in .ir or .graph, as
// `torchless graph` prints): the graph is exported as is, INPUT giving its inputs.
#include "api/cli_io.h"
#include "api/module.h"
#include "convert/conversion_ctx.h"
#include "convert/onnx/module_state.h"
#include "convert/onnx/onnx_export.h"
#include "core/error.h"
#include "core/npy.h"
#include "ir/ir_parser.h"
#include "ir/verifier.h"
#include "ops/parallel.h"
#include "passes/passes.h"
#include "tools/commands.h"
#include "tools/device_options.h"
#include "tools/input_options.h"
#include "tools/save_checked.h"

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unordered_map>

namespace torchless::cli {
namespace {

struct ExportCliOptions {
  DeviceOptions device;  // --map-location / --device-map
  std::string model;
  std::vector<std::string> inputs;
  std::string output;
  int opset = onnx_export::kDefaultOpset;
  std::string inputNames, outputNames;
  std::vector<std::string> dynamicAxes;
  size_t externalDataThreshold = onnx_export::kDefaultExternalDataThreshold;
  bool noCheck = false;
  bool noFold = false;
  bool qlinear = false;
  std::string method = "forward";
  int threads = 0;
  InputOptions in;
  bool progress = false;
};

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// "x:0,2" -> {"x", {0, 2}}. A malformed spec is a usage error (CLI::ValidationError: exit 2).
std::pair<std::string, std::vector<int64_t>> parseDynamicAxes(const std::string& spec) {
  auto colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
    throw CLI::ValidationError("--dynamic-axes",
                               fmt::format("expects NAME:AXIS[,AXIS...], got '{}'", spec));
  std::vector<int64_t> axes;
  for (const auto& a : splitComma(spec.substr(colon + 1))) {
    try {
      size_t used = 0;
      axes.push_back(std::stoll(a, &used));
      if (used != a.size()) throw std::invalid_argument(a);
    } catch (const std::exception&) {
      throw CLI::ValidationError("--dynamic-axes",
                                 fmt::format("'{}' is not an axis number in '{}'", a, spec));
    }
  }
  return {spec.substr(0, colon), axes};
}

// Freezes a method graph: GetAttr chains from self (input 0) become parameter inputs
// (tensors, named by path) or constants; self goes. Returns the parameter names and values,
// in the order of the new inputs (after the method's own inputs).
std::vector<std::pair<std::string, Tensor>> freezeGraph(Graph& g, const ObjectPtr& self,
                                                        const std::string& method) {
  std::vector<std::pair<std::string, Tensor>> params;
  std::unordered_map<const Value*, IValue> objects{{g.inputs()[0], IValue(self)}};
  std::unordered_map<const Value*, std::string> paths{{g.inputs()[0], ""}};
  std::unordered_map<std::string, Value*> byPath;
  std::vector<Node*> getAttrs;
  std::function<void(Block*)> collect = [&](Block* b) {
    for (Node* n : b->nodes()) {
      if (n->kind() == prim::GetAttr) getAttrs.push_back(n);
      for (Block* sub : n->blocks()) collect(sub);
    }
  };
  collect(g.block());
  for (Node* n : getAttrs) {
    auto it = objects.find(n->input(0));
    if (it == objects.end() || !it->second.isObject()) continue;
    const std::string& name = n->s(attr::name);
    IValue value = it->second.toObject()->getAttr(name);
    std::string path = paths.at(n->input(0));
    path = path.empty() ? name : path + "." + name;
    // A TorchBind object (quantized packed params) is a constant, not a submodule.
    if (value.isObject() &&
        value.toObject()->type->name().rfind("__torch__.torch.classes.", 0) != 0) {
      objects[n->output()] = value;
      paths[n->output()] = path;
      continue;
    }
    Value* replacement = nullptr;
    auto paramInput = [&](const std::string& p, const Tensor& t, TypePtr type) {
      auto found = byPath.find(p);
      if (found == byPath.end()) {
        Value* in = g.addInput();
        in->setType(std::move(type));
        params.emplace_back(p, t);
        found = byPath.emplace(p, in).first;
      }
      return found->second;
    };
    bool tensorList = value.isList() && !value.toList()->list.empty();
    if (tensorList)
      for (const auto& e : value.toList()->list) tensorList &= e.isTensor();
    if (value.isTensor()) {
      replacement = paramInput(path, value.toTensor(), n->output()->type());
    } else if (tensorList) {
      // A list of parameters (nn.LSTM's _flat_weights): one parameter input each, named after
      // the module's _flat_weights_names when it has them ("rnn.weight_ih_l0"), and a list.
      const auto& items = value.toList()->list;
      std::vector<std::string> names;
      const ObjectPtr& owner = it->second.toObject();
      if (name == "_flat_weights" && owner->type->findAttributeSlot("_flat_weights_names")) {
        IValue ns = owner->getAttr("_flat_weights_names");
        if (ns.isList())
          for (const auto& e : ns.toList()->list)
            if (e.isString()) names.push_back(e.toStringRef());
      }
      const std::string prefix = paths.at(n->input(0)).empty() ? "" : paths.at(n->input(0)) + ".";
      std::vector<Value*> ins;
      for (size_t i = 0; i < items.size(); ++i)
        ins.push_back(paramInput(
            names.size() == items.size() ? prefix + names[i] : fmt::format("{}.{}", path, i),
            items[i].toTensor(), TensorType::get()));
      WithInsertPoint guard(n);
      replacement = g.insertNode(g.createList(TensorType::get(), ins))->output();
    } else {
      WithInsertPoint guard(n);
      replacement = g.insertConstant(value, n->sourceRange(), n->scope());
    }
    n->output()->replaceAllUsesWith(replacement);
  }
  for (auto it = getAttrs.rbegin(); it != getAttrs.rend(); ++it)
    if (!(*it)->hasUses()) (*it)->destroy();
  if (g.inputs()[0]->hasUses()) {
    // Name the first use (prim::SetAttr of a stateful model, a method call left uninlined).
    const Node* user = g.inputs()[0]->uses().front().user;
    throw Error(
        fmt::format(
            "{} uses the module object itself ({}), not only its attributes; it cannot be frozen "
            "for export",
            method, user->kind().toQualString()),
        convert::nodePlace(*user));
  }
  g.eraseInput(0);
  return params;
}

void exportCommand(const ExportCliOptions& o) {
  onnx_export::ExportOptions options;
  options.opset = o.opset;
  options.check = !o.noCheck;
  options.fold = !o.noFold;
  options.qlinearOps = o.qlinear;
  options.inputNames = splitComma(o.inputNames);
  options.outputNames = splitComma(o.outputNames);
  for (const auto& spec : o.dynamicAxes) {
    auto [name, axes] = parseDynamicAxes(spec);
    options.dynamicAxes[name] = axes;
  }
  if (o.threads > 0) ops::setNumThreads(o.threads);
  // Progress on stderr when it is a terminal (or with --progress): long exports (fcn_resnet50
  // takes seconds) say what they are doing.
  const bool showProgress = o.progress || ::isatty(STDERR_FILENO);
  auto progress = [&](const std::string& what) {
    if (showProgress) std::cerr << "export: " << what << "\n" << std::flush;
  };
  options.progress = progress;
  TensorLoader loadTensor = inputLoader(o.in);
  const std::vector<std::string> words = inputWords(o.in, o.inputs);
  std::shared_ptr<Graph> graph;
  std::vector<IValue> inputs;
  std::vector<onnx_export::ModuleStateSlot> state;
  const bool irText = o.model.ends_with(".ir") || o.model.ends_with(".graph");
  if (irText) {
    std::ifstream f(o.model, std::ios::binary);
    if (!f) throw Error("cannot read the graph file", o.model);
    std::stringstream ss;
    ss << f.rdbuf();
    graph = std::make_shared<Graph>();
    ParseIROptions po;
    po.filename = o.model;
    parseIR(ss.str(), graph.get(), po);
    try {
      verify(*graph);  // as `graph` does: a prim::If without blocks is refused here
    } catch (Error& e) {
      e.withPlace(o.model);
      throw;
    }
    std::vector<ParamSpec> params;
    for (const Value* v : graph->inputs())
      params.push_back({v->debugName(), v->type(), std::nullopt});
    inputs = parseInputs(words, params, loadTensor);
  } else {
    progress("loading " + o.model);
    Module m = loadWithDeviceMap(o.model, o.device);
    const GraphFunction* method = m.findMethod(o.method);
    if (!method) throw Error(fmt::format("the module has no {} method", o.method), o.model);
    inputs = parseInputs(words, m.methodParams(o.method), loadTensor);
    graph = method->graph()->copy();
    passes::inlineCalls(*graph);
    passes::lowerLocalObjects(*graph);  // ImageList and other objects the method builds
    // Attributes the method writes: state inputs and outputs (convert/onnx/module_state.h).
    state = onnx_export::lowerModuleState(*graph, m.object());
    for (const auto& s : state) {
      if (s.kind == onnx_export::ModuleStateSlot::Kind::Scalar) continue;
      options.stateOutputs[s.input - 1] = s.output;  // freezeGraph drops self (input 0)
      options.graphOutputNames[s.output] = s.path + ".out";
      inputs.push_back(s.initial);
    }
    auto params = freezeGraph(*graph, m.object(), o.method);
    const size_t first = inputs.size();
    for (size_t j = 0; j < params.size(); ++j) {
      options.constantInputs[first + j] = params[j].first;
      inputs.emplace_back(params[j].second);
    }
    passes::eliminateDeadCode(*graph);
  }
  std::string stateList, scalarList;
  for (const auto& s : state) {
    if (s.kind == onnx_export::ModuleStateSlot::Kind::Scalar) {
      scalarList += (scalarList.empty() ? "" : ", ") + s.path;
      continue;
    }
    stateList += (stateList.empty() ? "" : ", ") + s.path;
    options.metadata["torchless.state." + s.path] = s.path + ".out";
  }
  onnx_export::ExportReport report;
  ::onnx::ModelProto model;
  try {
    model = onnx_export::exportGraph(*graph, inputs, options, &report);
  } catch (Error& e) {
    e.addContext(fmt::format("while exporting {} to ONNX", o.model));
    throw;
  }
  onnx_export::SaveOptions save;
  save.externalDataThreshold = o.externalDataThreshold;
  progress("writing " + o.output);
  createParentDirectory(o.output);
  const bool external = onnx_export::saveModel(model, o.output, save);
  size_t nodes = 0;
  for (const auto& [op, count] : report.opCounts) nodes += static_cast<size_t>(count);
  std::cout << fmt::format(
      "{}: opset {}, {} nodes, {} initializers{}{}\n", o.output, o.opset, nodes,
      report.numInitializers, external ? fmt::format(" (data in {}.data)", o.output) : "",
      report.checked ? ", checked"
      : o.noCheck    ? " (not checked: --no-check)"
                     : fmt::format(" (not checked: the ONNX library checks opsets up to {})",
                                   onnx_export::checkerMaxOpset()));
  if (!stateList.empty()) {
    // The state's values before the first call, for the caller to feed (module_state.h).
    const std::string dir = o.output + ".state";
    std::filesystem::create_directories(dir);
    for (const auto& s : state) {
      if (s.kind == onnx_export::ModuleStateSlot::Kind::Scalar) continue;
      // An empty state may have been given its later rank (ExportReport::stateInitial).
      auto adjusted = report.stateInitial.find(s.input - 1);
      saveNpy(dir + "/" + s.path + ".npy",
              adjusted != report.stateInitial.end() ? adjusted->second : s.initial.toTensor());
    }
    std::cout << fmt::format(
        "module state: inputs {} (values before the first call in {}/), their values after the "
        "call are the outputs NAME.out\n",
        stateList, dir);
  }
  if (!scalarList.empty())
    std::cerr << "note: the method also writes " << scalarList
              << "; each call starts from their values at export time\n";
  if (!report.runError.empty())
    std::cerr << "warning: the example run failed (" << report.runError
              << "); sizes came from the graph's types only\n";
}

}  // namespace

void registerExportCommand(CLI::App& app) {
  auto opts = std::make_shared<ExportCliOptions>();
  auto* cmd = app.add_subcommand("export", "Export a TorchScript archive (or an IR graph) to ONNX");
  cmd->add_option("MODEL", opts->model,
                  "the .pt archive, or a graph in PyTorch's text format (.ir, .graph)")
      ->required();
  addDeviceOptions(cmd, opts->device);
  cmd->add_option("INPUT", opts->inputs, "example inputs, one per argument, as for `run`");
  cmd->add_option("-o,--output", opts->output, "the .onnx file to write")->required();
  addInputOptions(*cmd, opts->in);
  cmd->add_option("--opset", opts->opset, "ONNX opset (13 to 18, default 17)")
      ->check(CLI::Range(onnx_export::kMinOpset, onnx_export::kMaxOpset));
  cmd->add_option("--input-names", opts->inputNames, "names of the tensor inputs, comma-separated");
  cmd->add_option("--output-names", opts->outputNames, "names of the outputs, comma-separated");
  cmd->add_option("--dynamic-axes", opts->dynamicAxes,
                  "NAME:AXIS[,AXIS...]: axes of an input or output free in size (repeat per name)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::Validator(
          [](std::string& spec) -> std::string {  // malformed: a usage error, exit 2
            try {
              parseDynamicAxes(spec);
              return {};
            } catch (const Error& e) {
              return e.message();
            }
          },
          "NAME:AXIS[,AXIS...]"));
  cmd->add_option(
      "--external-data-threshold", opts->externalDataThreshold,
      "write initializers of 1 KiB and more to OUTPUT.data when the model reaches this many "
      "bytes (default: just under protobuf's 2 GB limit; 0: always)");
  cmd->add_flag(
      "--no-check", opts->noCheck,
      "write the model without running the ONNX checker and shape inference (to inspect a "
      "model the checker rejects)");
  cmd->add_flag(
      "--no-fold", opts->noFold,
      "keep batch norms as BatchNormalization (by default they fold into the convolution or "
      "linear before them, as torch.onnx does)");
  cmd->add_flag(
      "--qlinear", opts->qlinear,
      "quantized convs and linears as QLinearConv (ONNX Runtime's fused int8 "
      "kernels; within one quantum of PyTorch per layer) instead of ConvInteger / MatMulInteger "
      "with PyTorch's requantization (its integers exactly)");
  cmd->add_option("--method", opts->method, "the method to export (default forward)");
  cmd->add_option("--threads", opts->threads,
                  "threads for the example run's kernels (default: all cores)")
      ->check(CLI::Range(1, 4096));
  cmd->add_flag("--progress", opts->progress,
                "print each step on stderr (the default when stderr is a terminal)");
  cmd->callback([opts]() { exportCommand(*opts); });
}

}  // namespace torchless::cli
