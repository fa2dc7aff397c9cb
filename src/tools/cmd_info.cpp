// `torchless info MODEL.pt`: what is inside an archive. The records are read without compiling
// code/; then the archive is loaded (code/ compiled) for the methods, parameters vs buffers and
// the operators used. When the code does not compile, the first part is still printed, with
// the compile error.
#include "api/module.h"
#include "core/error.h"
#include "ir/operator_matching.h"
#include "ir/operator_registry.h"
#include "runtime/kernel.h"
#include "serialize/archive_reader.h"
#include "tools/commands.h"

#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <unordered_set>

namespace torchless::cli {

namespace {

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

/// Counts objects per class, walking every value reachable from `v` (depth is bounded by the
/// unpickler's limit, so recursion is safe).
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
    case IValue::Tag::List:
      for (const auto& e : v.toList()->list) countClasses(e, out, seen);
      return;
    case IValue::Tag::Tuple:
      for (const auto& e : v.toTuple()->elements) countClasses(e, out, seen);
      return;
    case IValue::Tag::Dict:
      for (const auto& [k, e] : v.toDict()->entries()) countClasses(e, out, seen);
      return;
    default: return;
  }
}

/// Counts the op-table entries called by `block`'s nodes, recursively.
struct OpUse {
  size_t count = 0;
  bool hasKernel = true;
};
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

uint64_t tensorBytes(const std::vector<std::pair<std::string, Tensor>>& ts) {
  uint64_t n = 0;
  for (const auto& [name, t] : ts) n += t.nbytes();
  return n;
}

/// The part of `info` that needs code/ compiled.
void printCompiled(const std::string& path) {
  Module m;
  try {
    m = load(path);
  } catch (const Error& e) {
    std::cout << "code: does not compile, so methods, parameters vs buffers and operators are "
                 "unknown:\n  "
              << e.firstLine() << "\n";
    for (const auto& c : e.context()) std::cout << "  " << c << "\n";
    return;
  }
  const auto& cls = m.object()->type;
  std::cout << fmt::format("code: compiles ({} functions)\n", m.unit()->functions().size());
  std::cout << fmt::format("methods of {}:\n", cls->name());
  for (const auto& name : m.methodNames())
    std::cout << "  " << m.findMethod(name)->schema().str() << "\n";
  auto params = m.namedParameters();
  auto buffers = m.namedBuffers();
  std::cout << fmt::format("parameters: {} tensors, {} ({} bytes)\n", params.size(),
                           humanBytes(tensorBytes(params)), tensorBytes(params));
  std::cout << fmt::format("buffers: {} tensors, {} ({} bytes)\n", buffers.size(),
                           humanBytes(tensorBytes(buffers)), tensorBytes(buffers));
  std::map<std::string, OpUse> ops;
  for (const auto& fn : m.unit()->functions()) countOperators(fn->graph()->block(), ops);
  size_t missing = 0;
  for (const auto& [k, u] : ops) missing += u.hasKernel ? 0 : 1;
  std::cout << fmt::format("operators used: {} distinct{}\n", ops.size(),
                           missing ? fmt::format(", {} without a kernel", missing) : "");
  for (const auto& [k, u] : ops)
    std::cout << fmt::format("  {:>5}  {}{}\n", u.count, k, u.hasKernel ? "" : "  [no kernel]");
}

void printInfo(const std::string& path) {
  auto t0 = std::chrono::steady_clock::now();
  ArchiveData d = loadArchiveData(path);
  auto t1 = std::chrono::steady_clock::now();
  double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();

  uint64_t total = 0;
  for (const auto& r : d.records) total += r.size;
  std::cout << fmt::format("archive: {} (folder '{}/')\n", d.path, d.prefix);
  std::cout << fmt::format("format version: {} (record '{}')\n", d.version, d.versionRecord);

  std::vector<std::string> hints;
  if (d.byteorder) hints.push_back(fmt::format("byteorder '{}' => PyTorch >= 2.1", *d.byteorder));
  if (d.hasSerializationId) hints.push_back(".data/serialization_id => PyTorch >= 2.1");
  bool tracedInputs = false;
  for (const auto& r : d.records) tracedInputs |= r.name == "traced_inputs.pkl";
  if (tracedInputs) hints.push_back("traced_inputs.pkl => PyTorch >= 2.0");
  if (d.hasBytecode) hints.push_back("bytecode.pkl => lite interpreter archive (ignored)");
  if (hints.empty()) hints.push_back("none (no 2.1+ markers, no bytecode.pkl)");
  std::cout << "producer hints:\n";
  for (const auto& h : hints) std::cout << "  " << h << "\n";

  // Tensors of module objects: parameters and buffers, indistinguishable until code/ is compiled.
  auto tensors = moduleTensors(d.root);
  uint64_t tensorBytes = 0;
  std::unordered_set<const StorageImpl*> storages;
  uint64_t storageBytes = 0;
  std::set<std::string> dtypes;
  for (const auto& nt : tensors) {
    tensorBytes += nt.tensor.nbytes();
    dtypes.insert(dtypeName(nt.tensor.dtype()));
    if (storages.insert(nt.tensor.storage().unsafeGetImpl()).second)
      storageBytes += nt.tensor.storage().nbytes();
  }
  std::cout << fmt::format(
      "parameters and buffers: {} tensors, {} ({} bytes) in {} storages{}\n", tensors.size(),
      humanBytes(tensorBytes), tensorBytes, storages.size(),
      dtypes.empty() ? "" : fmt::format(", dtypes {}", fmt::join(dtypes, ", ")));
  std::cout << "  (every tensor attribute of a module object; see below for parameters and "
               "buffers apart)\n";

  size_t constTensors = 0;
  for (const auto& c : d.constants->elements) constTensors += c.isTensor() ? 1 : 0;
  std::cout << fmt::format("constants: {} ({} tensors, {} storages)\n", d.constants->elements.size(),
                           constTensors, d.constantStorages.size());

  std::map<std::string, ClassStats> classes;
  std::unordered_set<const void*> seen;
  countClasses(d.root, classes, seen);
  countClasses(IValue(d.constants), classes, seen);
  std::cout << fmt::format("classes in data.pkl and constants.pkl: {}\n", classes.size());
  for (const auto& [name, s] : classes)
    std::cout << fmt::format("  {} ({}, {} object{}, {} attributes)\n", name,
                             s.isModule ? "module" : "class", s.objects, s.objects == 1 ? "" : "s",
                             s.attributes);
  if (!d.pendingSetState.empty())
    std::cout << fmt::format("objects waiting for __setstate__: {}\n", d.pendingSetState.size());

  std::cout << fmt::format("code files: {}\n", d.codeSources.size());
  if (!d.extraFiles.empty())
    std::cout << fmt::format("extra files: {}\n", fmt::join(d.extraFiles, ", "));
  for (const auto& w : d.warnings) std::cout << "warning: " << w << "\n";

  std::cout << fmt::format("records: {} ({} uncompressed)\n", d.records.size(), humanBytes(total));
  for (const auto& r : d.records)
    std::cout << fmt::format("  {:>12}  {:<8} {}\n", r.size, r.method == 0 ? "stored" : "deflated",
                             r.name);
  std::cout << fmt::format("load time: {:.1f} ms\n", ms);
  printCompiled(path);
}

}  // namespace

void registerInfoCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Show what is inside a TorchScript archive");
  auto path = std::make_shared<std::string>();
  cmd->add_option("model", *path, "TorchScript archive (.pt) written by torch.jit.save")
      ->required();
  cmd->callback([path]() { printInfo(*path); });
}

}  // namespace torchless::cli
