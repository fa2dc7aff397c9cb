#include "runtime/kernel.h"

#include "core/error.h"
#include "ops/core_parallelism.h"

#include <mutex>

namespace torchless {

KernelRegistry& KernelRegistry::global() {
  static KernelRegistry registry;
  return registry;
}

OpInfo& KernelRegistry::entryFor(std::string_view schema) {
  OpInfo* op = OperatorRegistry::global().findMutable(schema);
  if (!op) throw Error(fmt::format("kernel for unknown operator schema '{}'", schema));
  if (op->kernel) throw Error(fmt::format("operator '{}' has two kernels", schema));
  return *op;
}

void KernelRegistry::registerKernel(std::string_view schema, Operation op) {
  registerKernelCreator(schema, [op = std::move(op)](const Node&) { return op; });
}

void KernelRegistry::registerKernelCreator(std::string_view schema, OperationCreator create) {
  OpInfo& op = entryFor(schema);
  entries_.push_back(KernelEntry{std::move(create)});
  op.kernel = &entries_.back();
  kernelOps_.push_back(&op);
}

void KernelRegistry::wrapKernel(std::string_view schema,
                                const std::function<OperationCreator(OperationCreator)>& wrap) {
  OpInfo* op = OperatorRegistry::global().findMutable(schema);
  if (!op) throw Error(fmt::format("kernel for unknown operator schema '{}'", schema));
  if (!op->kernel) throw Error(fmt::format("operator '{}' has no kernel to wrap", schema));
  entries_.push_back(KernelEntry{wrap(op->kernel->create)});
  op->kernel = &entries_.back();
}

void KernelRegistry::registerNodeKernel(Symbol kind, OperationCreator create) {
  if (nodeKernels_.count(kind))
    throw Error(fmt::format("node kind {} has two kernels", kind.toQualString()));
  nodeKernels_.emplace(kind, std::move(create));
}

Operation KernelRegistry::operationFor(const Node& node, const OpInfo* op) const {
  if (op && op->kernel) return op->kernel->create(node);
  auto it = nodeKernels_.find(node.kind());
  if (it != nodeKernels_.end()) return it->second(node);
  return nullptr;
}

bool KernelRegistry::hasKernel(const Node& node, const OpInfo* op) const {
  return (op && op->kernel) || nodeKernels_.count(node.kind()) > 0;
}

void initKernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    initOperatorRegistry();
    ops::installCoreParallelism();
    auto& r = KernelRegistry::global();
    registerPrimKernels(r);
    registerBuiltinKernels(r);
    registerBuiltinListKernels(r);
    registerBuiltinDictKernels(r);
    registerBuiltinStrKernels(r);
    registerElementwiseKernels(r);
    registerReductionKernels(r);
    registerShapeKernels(r);
    registerLinalgKernels(r);
    registerConvKernels(r);
    registerPoolKernels(r);
    registerNormKernels(r);
    registerNnKernels(r);
    registerLossKernels(r);
    registerRnnKernels(r);
    registerIndexingExtraKernels(r);
    registerPrepackedKernels(r);
    registerQuantizedKernels(r);
  });
}

}  // namespace torchless
