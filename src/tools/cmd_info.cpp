// `torchless info MODEL.pt [--json]`: what is inside an archive.
//
// A summary comes first: the root class and its training flag, the methods with their
// signatures, parameters and buffers (count and bytes), the inputs a trace was made with
// (traced_inputs.pkl, PyTorch >= 2.0), and the operators used, those without a kernel named.
// The details follow: producer hints, constants, classes, code files, records.
//
// Reading facts never materializes a tensor: both reads (the records without compiling code/,
// then the module with code/ compiled) use placeholder storages (Note [Placeholder storages] in
// serialize/archive_reader.cpp), so `info` on a 500 MB archive stays a few MB resident.
//
// An archive whose code does not compile still gets the part that could be read, then an error
// and exit status 1 (cli.md "Errors").
#include "api/module.h"
#include "core/error.h"
#include "ir/operator_matching.h"
#include "ir/operator_registry.h"
#include "runtime/kernel.h"
#include "serialize/archive_reader.h"
#include "tools/commands.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

namespace torchless::cli {

namespace {

using Json = nlohmann::ordered_json;

std::string humanBytes(uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  if (n < 1024 * 1024) return fmt::format("{:.1f} KiB", n / 1024.0);
  if (n < 1024ull * 1024 * 1024) return fmt::format("{:.1f} MiB", n / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", n / (1024.0 * 1024 * 1024));
}

struct ClassStats {
  bool isModule = false;
  size_t objects = 0;
  size_t attributes = 0;
};

/// Counts objects per class, walking every value reachable from `v` once (depth is bounded by
/// the unpickler's limit, so recursion is safe; `seen` keeps shared values from being walked
/// again).
void countClasses(const IValue& v, std::map<std::string, ClassStats>& out,
                  std::unordered_set<const void*>& seen) {
  switch (v.tag()) {
    case IValue::Tag::Object: {
      auto o = v.toObject();
      if (!seen.insert(o.get()).second) return;
      auto& s = out[o->type->name()];
      s.isModule = o->type->isModule();
      s.objects++;
      s.attributes = o->type->attributes().size();
      for (const auto& slot : o->slots) countClasses(slot, out, seen);
      return;
    }
    // Containers are visited once each too: a pickle may share one many times (Note [Shared
    // values] in core/ivalue.cpp).
    case IValue::Tag::List:
      if (!seen.insert(v.toList().get()).second) return;
      for (const auto& e : v.toList()->list) countClasses(e, out, seen);
      return;
    case IValue::Tag::Tuple:
      if (!seen.insert(v.toTuple().get()).second) return;
      for (const auto& e : v.toTuple()->elements) countClasses(e, out, seen);
      return;
    case IValue::Tag::Dict:
      if (!seen.insert(v.toDict().get()).second) return;
      for (const auto& [k, e] : v.toDict()->entries()) countClasses(e, out, seen);
      return;
    default: return;
  }
}

struct OpUse {
  size_t count = 0;
  bool hasKernel = true;
};

/// Counts the op-table entries called by `block`'s nodes, recursively.
void countOperators(const Block* block, std::map<std::string, OpUse>& out) {
  const auto& ops = OperatorRegistry::global();
  for (const Node* n : block->nodes()) {
    if (const OpInfo* op = matchOperator(n, ops)) {
      auto& u = out[op->key];
      u.count++;
      u.hasKernel = u.hasKernel && KernelRegistry::global().hasKernel(*n, op);
    }
    for (const Block* b : n->blocks()) countOperators(b, out);
  }
}

/// One traced example input, as `Tensor float32 [1, 3, 224, 224]`, `int 3`, `(a, b)`.
/// Containers show at most 16 elements and 8 levels.
std::string describeValue(const IValue& v, int depth = 0) {
  if (depth > 8) return "...";
  auto items = [&](const std::vector<IValue>& xs, const char* open, const char* close) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < xs.size() && i < 16; ++i)
      parts.push_back(describeValue(xs[i], depth + 1));
    if (xs.size() > 16) parts.push_back(fmt::format("... ({} in all)", xs.size()));
    return fmt::format("{}{}{}", open, fmt::join(parts, ", "), close);
  };
  switch (v.tag()) {
    case IValue::Tag::Tensor: {
      const Tensor& t = v.toTensor();
      return fmt::format("Tensor {} [{}]", dtypeName(t.dtype()), fmt::join(t.sizes(), ", "));
    }
    case IValue::Tag::Int: return fmt::format("int {}", v.toInt());
    case IValue::Tag::Double: return fmt::format("float {}", v.toDouble());
    case IValue::Tag::Bool: return v.toBool() ? "bool True" : "bool False";
    case IValue::Tag::None: return "None";
    case IValue::Tag::String: return "str";
    case IValue::Tag::Tuple: return items(v.toTuple()->elements, "(", ")");
    case IValue::Tag::List: return items(v.toList()->list, "[", "]");
    case IValue::Tag::Dict: return fmt::format("dict of {}", v.toDict()->size());
    default: return v.tagName();
  }
}

struct TensorGroup {
  size_t count = 0;
  uint64_t bytes = 0;
};

TensorGroup sumTensors(const std::vector<std::pair<std::string, Tensor>>& ts) {
  TensorGroup g;
  for (const auto& [name, t] : ts) {
    g.count++;
    g.bytes += t.nbytes();
  }
  return g;
}

/// The facts `info` reports, gathered once and printed as text or JSON.
struct InfoReport {
  ArchiveData data;
  double readMs = 0;
  std::vector<std::string> hints;
  // Tensors of module objects, before code/ tells parameters from buffers.
  TensorGroup moduleTensors;
  size_t storages = 0;
  uint64_t storageBytes = 0;
  std::set<std::string> dtypes;
  size_t constantTensors = 0;
  std::map<std::string, ClassStats> classes;
  // Traced inputs: method -> descriptions of its example inputs.
  std::vector<std::pair<std::string, std::vector<std::string>>> tracedInputs;
  // From the compiled module; unset when code/ does not compile.
  std::optional<Error> compileError;
  std::string rootClass;
  std::optional<bool> training;
  size_t functions = 0;
  std::vector<std::pair<std::string, std::string>> methods;  // name, schema
  TensorGroup parameters, buffers;
  std::map<std::string, OpUse> operators;
  size_t operatorsWithoutKernel = 0;
};

std::vector<std::string> producerHints(const ArchiveData& d) {
  std::vector<std::string> hints;
  if (d.byteorder) hints.push_back(fmt::format("byteorder '{}' => PyTorch >= 2.1", *d.byteorder));
  if (d.hasSerializationId) hints.push_back(".data/serialization_id => PyTorch >= 2.1");
  bool tracedInputs = false;
  for (const auto& r : d.records) tracedInputs |= r.name == "traced_inputs.pkl";
  if (tracedInputs) hints.push_back("traced_inputs.pkl => PyTorch >= 2.0");
  if (d.hasBytecode) hints.push_back("bytecode.pkl => lite interpreter archive (ignored)");
  return hints;
}

void collectCompiled(const std::string& path, InfoReport& r) {
  LoadOptions options;
  options.readTensorData = false;
  Module m;
  try {
    m = load(path, options);
  } catch (const Error& e) {
    r.compileError = e;
    return;
  }
  const auto& root = m.object();
  r.rootClass = root->type->name();
  if (auto slot = root->type->findAttributeSlot("training");
      slot && *slot < root->slots.size() && root->slots[*slot].isBool())
    r.training = root->slots[*slot].toBool();
  r.functions = m.unit()->functions().size();
  for (const auto& name : m.methodNames())
    r.methods.emplace_back(name, m.findMethod(name)->schema().str());
  r.parameters = sumTensors(m.namedParameters());
  r.buffers = sumTensors(m.namedBuffers());
  for (const auto& fn : m.unit()->functions()) countOperators(fn->graph()->block(), r.operators);
  for (const auto& [k, u] : r.operators) r.operatorsWithoutKernel += u.hasKernel ? 0 : 1;
}

InfoReport collect(const std::string& path) {
  InfoReport r;
  ArchiveDataOptions options;
  options.readTensorData = false;
  auto t0 = std::chrono::steady_clock::now();
  r.data = loadArchiveData(path, {}, options);
  r.readMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const ArchiveData& d = r.data;
  r.hints = producerHints(d);

  std::unordered_set<const StorageImpl*> storages;
  for (const auto& nt : moduleTensors(d.root)) {
    r.moduleTensors.count++;
    r.moduleTensors.bytes += nt.tensor.nbytes();
    r.dtypes.insert(dtypeName(nt.tensor.dtype()));
    if (storages.insert(nt.tensor.storage().unsafeGetImpl()).second)
      r.storageBytes += nt.tensor.storage().nbytes();
  }
  r.storages = storages.size();
  for (const auto& c : d.constants->elements) r.constantTensors += c.isTensor() ? 1 : 0;
  std::unordered_set<const void*> seen;
  countClasses(d.root, r.classes, seen);
  countClasses(IValue(d.constants), r.classes, seen);

  if (d.tracedInputs.isDict()) {
    for (const auto& [k, v] : d.tracedInputs.toDict()->entries()) {
      std::vector<std::string> inputs;
      if (v.isList())
        for (const auto& x : v.toList()->list) inputs.push_back(describeValue(x));
      else
        inputs.push_back(describeValue(v));
      r.tracedInputs.emplace_back(k.isString() ? k.toStringRef() : describeValue(k),
                                  std::move(inputs));
    }
  }
  collectCompiled(path, r);
  return r;
}

std::string groupText(const TensorGroup& g) {
  return fmt::format("{} tensors, {} ({} bytes)", g.count, humanBytes(g.bytes), g.bytes);
}

void printSummary(const InfoReport& r) {
  const ArchiveData& d = r.data;
  std::cout << fmt::format("archive: {} (format version {})\n", d.path, d.version);
  if (r.compileError) {
    std::cout << "code: does not compile, so methods, parameters vs buffers and operators are "
                 "unknown:\n  "
              << r.compileError->firstLine() << "\n";
    for (const auto& c : r.compileError->context()) std::cout << "  " << c << "\n";
  } else {
    std::cout << fmt::format(
        "module: {}{}\n", r.rootClass,
        r.training ? fmt::format(" (training: {})", *r.training ? "True" : "False") : "");
    std::cout << fmt::format("code: compiles ({} functions)\n", r.functions);
    std::cout << fmt::format("methods of {}:\n", r.rootClass);
    for (const auto& [name, schema] : r.methods) std::cout << "  " << schema << "\n";
    std::cout << fmt::format("parameters: {}\n", groupText(r.parameters));
    std::cout << fmt::format("buffers: {}\n", groupText(r.buffers));
  }
  if (r.tracedInputs.empty()) {
    std::cout << "traced inputs: none recorded\n";
  } else {
    std::cout << "traced inputs (traced_inputs.pkl):\n";
    for (const auto& [method, inputs] : r.tracedInputs)
      std::cout << fmt::format("  {}: {}\n", method, fmt::join(inputs, ", "));
  }
  if (!r.compileError) {
    std::cout << fmt::format("operators used: {} distinct{}\n", r.operators.size(),
                             r.operatorsWithoutKernel
                                 ? fmt::format(", {} without a kernel", r.operatorsWithoutKernel)
                                 : ", all with kernels");
    for (const auto& [k, u] : r.operators)
      if (!u.hasKernel) std::cout << fmt::format("  no kernel: {}\n", k);
  }
}

void printDetails(const InfoReport& r) {
  const ArchiveData& d = r.data;
  std::cout << "\ndetails:\n";
  std::cout << fmt::format("archive folder: '{}/'\n", d.prefix);
  std::cout << fmt::format("format version: {} (record '{}')\n", d.version, d.versionRecord);
  std::cout << "producer hints:\n";
  if (r.hints.empty()) std::cout << "  none (no 2.1+ markers, no bytecode.pkl)\n";
  for (const auto& h : r.hints) std::cout << "  " << h << "\n";
  std::cout << fmt::format(
      "parameters and buffers: {} tensors, {} ({} bytes) in {} storages{}\n", r.moduleTensors.count,
      humanBytes(r.moduleTensors.bytes), r.moduleTensors.bytes, r.storages,
      r.dtypes.empty() ? "" : fmt::format(", dtypes {}", fmt::join(r.dtypes, ", ")));
  std::cout << "  (every tensor attribute of a module object)\n";
  std::cout << fmt::format("constants: {} ({} tensors, {} storages)\n",
                           d.constants->elements.size(), r.constantTensors,
                           d.constantStorages.size());
  std::cout << fmt::format("classes in data.pkl and constants.pkl: {}\n", r.classes.size());
  for (const auto& [name, s] : r.classes)
    std::cout << fmt::format("  {} ({}, {} object{}, {} attributes)\n", name,
                             s.isModule ? "module" : "class", s.objects, s.objects == 1 ? "" : "s",
                             s.attributes);
  if (!d.pendingSetState.empty())
    std::cout << fmt::format("objects waiting for __setstate__: {}\n", d.pendingSetState.size());
  std::cout << fmt::format("code files: {}\n", d.codeSources.size());
  if (!d.extraFiles.empty())
    std::cout << fmt::format("extra files: {}\n", fmt::join(d.extraFiles, ", "));
  for (const auto& w : d.warnings) std::cout << "warning: " << w << "\n";
  uint64_t total = 0;
  for (const auto& rec : d.records) total += rec.size;
  std::cout << fmt::format("records: {} ({} uncompressed)\n", d.records.size(), humanBytes(total));
  for (const auto& rec : d.records)
    std::cout << fmt::format("  {:>12}  {:<8} {}\n", rec.size,
                             rec.method == 0 ? "stored" : "deflated", rec.name);
  std::cout << fmt::format("read time (records, no tensor data): {:.1f} ms\n", r.readMs);
  if (!r.compileError) {
    std::cout << "operators (calls, schema):\n";
    for (const auto& [k, u] : r.operators)
      std::cout << fmt::format("  {:>5}  {}{}\n", u.count, k, u.hasKernel ? "" : "  [no kernel]");
  }
}

Json groupJson(const TensorGroup& g) { return Json{{"count", g.count}, {"bytes", g.bytes}}; }

void printJson(const InfoReport& r) {
  const ArchiveData& d = r.data;
  Json j;
  j["archive"] = d.path;
  j["folder"] = d.prefix;
  j["format_version"] = d.version;
  j["version_record"] = d.versionRecord;
  j["producer_hints"] = r.hints;
  if (r.compileError) {
    j["code"] = {{"compiles", false}, {"error", r.compileError->firstLine()}};
  } else {
    j["code"] = {{"compiles", true}, {"functions", r.functions}};
    j["module"] = {{"class", r.rootClass},
                   {"training", r.training ? Json(*r.training) : Json(nullptr)}};
    Json methods = Json::array();
    for (const auto& [name, schema] : r.methods)
      methods.push_back({{"name", name}, {"schema", schema}});
    j["methods"] = methods;
    j["parameters"] = groupJson(r.parameters);
    j["buffers"] = groupJson(r.buffers);
  }
  Json traced = Json::object();
  for (const auto& [method, inputs] : r.tracedInputs) traced[method] = inputs;
  j["traced_inputs"] = r.tracedInputs.empty() ? Json(nullptr) : traced;
  if (!r.compileError) {
    Json ops = Json::array();
    Json missing = Json::array();
    for (const auto& [k, u] : r.operators) {
      ops.push_back({{"schema", k}, {"calls", u.count}, {"has_kernel", u.hasKernel}});
      if (!u.hasKernel) missing.push_back(k);
    }
    j["operators"] = ops;
    j["operators_without_kernel"] = missing;
  }
  j["module_tensors"] = {{"count", r.moduleTensors.count},
                         {"bytes", r.moduleTensors.bytes},
                         {"storages", r.storages},
                         {"storage_bytes", r.storageBytes},
                         {"dtypes", r.dtypes}};
  j["constants"] = {{"count", d.constants->elements.size()},
                    {"tensors", r.constantTensors},
                    {"storages", d.constantStorages.size()}};
  Json classes = Json::array();
  for (const auto& [name, s] : r.classes)
    classes.push_back({{"name", name},
                       {"kind", s.isModule ? "module" : "class"},
                       {"objects", s.objects},
                       {"attributes", s.attributes}});
  j["classes"] = classes;
  j["code_files"] = d.codeSources.size();
  j["extra_files"] = d.extraFiles;
  j["warnings"] = d.warnings;
  Json records = Json::array();
  for (const auto& rec : d.records)
    records.push_back({{"name", rec.name},
                       {"bytes", rec.size},
                       {"compression", rec.method == 0 ? "stored" : "deflated"}});
  j["records"] = records;
  std::cout << j.dump(2) << "\n";
}

void infoCommand(const std::string& path, bool json) {
  InfoReport r = collect(path);
  if (json)
    printJson(r);
  else {
    printSummary(r);
    printDetails(r);
  }
  std::cout.flush();
  if (r.compileError) {
    Error e = *r.compileError;
    e.addContext("torchless info printed what could be read without compiling code/");
    throw e;
  }
}

}  // namespace

void registerInfoCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("info",
                                 "Show what is inside a TorchScript archive: a summary "
                                 "(methods, parameters, traced inputs, operators), then "
                                 "the records");
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("MODEL", *path, "TorchScript archive (.pt)")->required();
  cmd->add_flag("--json", *json, "print the report as one JSON object (for scripts)");
  cmd->callback([path, json]() { infoCommand(*path, *json); });
}

}  // namespace torchless::cli
