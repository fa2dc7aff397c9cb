// `torchless ops`: every registered operator schema, one a line, sorted. `--kernels` keeps
// only the schemas the interpreter has a kernel for; `--coverage` prints how many do.
// `--onnx` keeps the schemas ONNX export converts, each followed by the opsets it writes.
// `--table` prints the coverage table: per schema, kernel × ONNX × engine (one home for the
// counts: ops/op_coverage.tsv in tests/ is this output, checked by the ops.coverage_file test).
#include "convert/engine/engine_ctx.h"
#include "convert/onnx/onnx_export.h"
#include "ir/operator_registry.h"
#include "runtime/kernel.h"
#include "tools/commands.h"

#include <iostream>
#include <memory>
#include <string>

namespace torchless::cli {

namespace {

/// `ops --table`: a header, then `schema<TAB>kernel|-<TAB>LO-HI|-<TAB>native|plugin|-` per
/// schema of the op table (in the table's order), for schemas containing `filter`.
std::string coverageTable(const std::string& filter) {
  const auto& onnxRegistry = onnx_export::onnxConverters();
  engine::EngineConverterRegistry native("engine");
  engine::registerEngineNativeConverters(native);
  const auto& engineAll = engine::engineConverters();
  std::string out =
      "# The op table's coverage (torchless ops --table; regenerate with scripts/op_coverage.sh):\n"
      "# schema, interpreter kernel, ONNX converter opsets, engine converter (native oneDNN\n"
      "# layer or plugin running the kernel).\n"
      "schema\tkernel\tonnx\tengine\n";
  for (const OpInfo* op : OperatorRegistry::global().all()) {
    if (!filter.empty() && op->key.find(filter) == std::string::npos) continue;
    const std::string_view key(op->key);
    std::string onnxCol = "-";
    if (onnxRegistry.find(key)) {
      auto [lo, hi] = onnx_export::converterOpsets(op->key);
      onnxCol = fmt::format("{}-{}", lo, hi);
    }
    const char* engineCol = native.find(key) ? "native" : engineAll.find(key) ? "plugin" : "-";
    out +=
        fmt::format("{}\t{}\t{}\t{}\n", op->key, op->kernel ? "kernel" : "-", onnxCol, engineCol);
  }
  return out;
}

}  // namespace

void registerOpsCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "Print every registered operator schema, one a line");
  auto filter = std::make_shared<std::string>();
  auto count = std::make_shared<bool>(false);
  auto kernels = std::make_shared<bool>(false);
  auto coverage = std::make_shared<bool>(false);
  auto onnx = std::make_shared<bool>(false);
  auto table = std::make_shared<bool>(false);
  cmd->add_option("--filter", *filter, "Only schemas containing this substring");
  cmd->add_flag("--count", *count, "Print only the number of matching schemas");
  cmd->add_flag("--kernels", *kernels, "Only schemas that have an interpreter kernel");
  cmd->add_flag("--coverage", *coverage,
                "Print one summary line: how many of the matching schemas have a kernel");
  cmd->add_flag("--onnx", *onnx,
                "Only schemas that ONNX export converts, each with the opsets it is written at "
                "(\"opsets 13-18\")");
  cmd->add_flag("--table", *table,
                "Print the coverage table: per schema (tab-separated) whether it has a kernel, the "
                "ONNX opsets it converts at, and its engine converter (native or plugin)");
  cmd->callback([filter, count, kernels, coverage, onnx, table]() {
    initOperatorRegistry();
    initKernels();
    if (*table) {
      std::cout << coverageTable(*filter);
      return;
    }
    size_t n = 0, withKernel = 0;
    std::string out;
    const auto& onnxRegistry = onnx_export::onnxConverters();
    for (const OpInfo* op : OperatorRegistry::global().all()) {
      if (!filter->empty() && op->key.find(*filter) == std::string::npos) continue;
      const bool has = op->kernel != nullptr;
      if (*coverage) {
        ++n;
        withKernel += has ? 1 : 0;
        continue;
      }
      if (*kernels && !has) continue;
      if (*onnx && !onnxRegistry.find(std::string_view(op->key))) continue;
      ++n;
      if (!*count) {
        out += op->key;
        if (*onnx) {
          auto [lo, hi] = onnx_export::converterOpsets(op->key);
          out += fmt::format("  opsets {}-{}", lo, hi);
        }
        out += '\n';
      }
    }
    if (*coverage) {
      out = fmt::format("{} of {} schemas have kernels ({:.1f}%)\n", withKernel, n,
                        n ? 100.0 * static_cast<double>(withKernel) / static_cast<double>(n) : 0.0);
      // The engine column: native converters (oneDNN layers and the layers they fuse) and
      // plugin/shape converters (the op's kernel inside an engine). Torch-TensorRT's TorchScript
      // frontend has about 160 converter schemas, all native TensorRT layers.
      engine::EngineConverterRegistry native("engine");
      engine::registerEngineNativeConverters(native);
      size_t engineAll = 0, engineNative = 0;
      const auto& all = engine::engineConverters();
      for (const OpInfo* op : OperatorRegistry::global().all()) {
        if (!filter->empty() && op->key.find(*filter) == std::string::npos) continue;
        engineAll += all.find(std::string_view(op->key)) ? 1 : 0;
        engineNative += native.find(std::string_view(op->key)) ? 1 : 0;
      }
      out += fmt::format(
          "{} of {} schemas have engine converters: {} native (oneDNN layers), {} plugin "
          "(the kernel inside an engine); Torch-TensorRT's TorchScript frontend: about 160\n",
          engineAll, n, engineNative, engineAll - engineNative);
      size_t onnxAll = 0;
      for (const OpInfo* op : OperatorRegistry::global().all()) {
        if (!filter->empty() && op->key.find(*filter) == std::string::npos) continue;
        onnxAll += onnxRegistry.find(std::string_view(op->key)) ? 1 : 0;
      }
      out += fmt::format("{} of {} schemas have ONNX converters (opsets {}-{})\n", onnxAll, n,
                         onnx_export::kMinOpset, onnx_export::kMaxOpset);
    } else if (*count)
      out = std::to_string(n) + "\n";
    std::cout << out;
  });
}

}  // namespace torchless::cli
