#pragma once
// Kernels as the interpreter calls them: stack-based, as PyTorch's Operation.
//
// Note [Stack convention]
// An Operation pops its inputs from the end of the stack (the first input deepest) and pushes
// its outputs in order. The interpreter pushes a node's inputs, runs the node's Operation,
// and stores the outputs into registers. Nothing is looked up by name at run time: each node
// gets its Operation when the graph is compiled (runtime/interpreter.cpp).
//
// Registration is explicit (Note [One op table] in ir/operator_registry.h): registerXxxKernels()
// functions called by initKernels() bind Operations to op-table entries by their exact schema
// string, and prim nodes without a schema (prim::ListConstruct, prim::TupleUnpack ...) to
// their Symbol. A schema that is not in the op table stops start-up.

#include "core/ivalue.h"
#include "ir/ir.h"
#include "ir/operator_registry.h"
#include "ir/symbol.h"

#include <deque>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace torchless {

using Stack = std::vector<IValue>;
/// A ready-to-run kernel (see Note [Stack convention]).
using Operation = std::function<void(Stack&)>;
/// Makes the Operation for one node (for kernels that need the node: input count, types).
using OperationCreator = std::function<Operation(const Node&)>;

/// The runtime's entry hanging off OpInfo::kernel.
struct KernelEntry {
  OperationCreator create;
};

/// Kernels by schema (through the op table) and by Symbol for schema-less prim nodes.
class KernelRegistry {
 public:
  /// The process-wide registry; initKernels() fills it once.
  static KernelRegistry& global();

  /// Binds `op` to the op-table entry with exactly this schema string. Throws
  /// torchless::Error when the schema is not in the table or already has a kernel.
  void registerKernel(std::string_view schema, Operation op);
  /// As registerKernel, for kernels that specialize on the node.
  void registerKernelCreator(std::string_view schema, OperationCreator create);
  /// Replaces the kernel of `schema` by `wrap(old creator)`: how register_quantized.cpp sends
  /// quantized tensors given to aten ops (relu, max_pool2d ...) to quantized kernels. Throws
  /// torchless::Error when the schema is not in the table or has no kernel yet.
  void wrapKernel(std::string_view schema,
                  const std::function<OperationCreator(OperationCreator)>& wrap);
  /// A kernel for nodes of `kind` that have no schema (prim::ListConstruct ...).
  void registerNodeKernel(Symbol kind, OperationCreator create);

  /// The Operation for `node`: its schema's kernel, else its kind's node kernel, else null.
  /// `op` is the node's op-table entry (may be null).
  Operation operationFor(const Node& node, const OpInfo* op) const;
  /// True when some kernel can run this node.
  bool hasKernel(const Node& node, const OpInfo* op) const;
  /// Number of op-table entries with a kernel.
  size_t numSchemaKernels() const { return entries_.size(); }
  /// The op-table entries with a kernel, in registration order (no need to parse the whole
  /// table to find them: Note [Lazy schemas] in ir/operator_registry.h).
  const std::vector<const OpInfo*>& opsWithKernels() const { return kernelOps_; }

 private:
  OpInfo& entryFor(std::string_view schema);
  std::deque<KernelEntry> entries_;
  std::vector<const OpInfo*> kernelOps_;
  std::unordered_map<Symbol, OperationCreator> nodeKernels_;
};

/// Fills KernelRegistry::global() once: prim and builtin kernels, tensor kernels.
void initKernels();

// Registration functions of the kernel families (each in its own file).
void registerPrimKernels(KernelRegistry& r);
void registerBuiltinKernels(KernelRegistry& r);      // builtin_ops.cpp: int/float/bool/complex
void registerBuiltinListKernels(KernelRegistry& r);  // builtin_list_ops.cpp
void registerBuiltinDictKernels(KernelRegistry& r);  // builtin_dict_ops.cpp
void registerBuiltinStrKernels(KernelRegistry& r);   // builtin_str_ops.cpp
// Tensor kernels, one file per ops/ family (register_<family>.cpp).
void registerElementwiseKernels(KernelRegistry& r);
void registerReductionKernels(KernelRegistry& r);
void registerShapeKernels(KernelRegistry& r);
void registerLinalgKernels(KernelRegistry& r);
void registerConvKernels(KernelRegistry& r);
void registerPoolKernels(KernelRegistry& r);
void registerNormKernels(KernelRegistry& r);
void registerNnKernels(KernelRegistry& r);
void registerLossKernels(KernelRegistry& r);
void registerRnnKernels(KernelRegistry& r);
// register_indexing_extra.cpp: scatter, index_add, searchsorted, unique, einsum, embedding_bag,
// torchvision::nms / roi_align.
void registerIndexingExtraKernels(KernelRegistry& r);
// register_prepacked.cpp: xnnpack contexts and quantized packed params (runtime/torchbind.h).
void registerPrepackedKernels(KernelRegistry& r);
// register_quantized.cpp: quantized tensors and kernels (ops/quantized.h); runs last, as it
// routes quantized inputs of aten ops registered before it.
void registerQuantizedKernels(KernelRegistry& r);

// ---- stack helpers ----
inline IValue pop(Stack& s) {
  IValue v = std::move(s.back());
  s.pop_back();
  return v;
}
/// The i-th of the last n values (peek(s, 0, 2) is the deeper of two).
inline IValue& peek(Stack& s, size_t i, size_t n) { return s[s.size() - n + i]; }
inline void drop(Stack& s, size_t n) { s.resize(s.size() - n); }
template <typename... Ts>
void push(Stack& s, Ts&&... vs) {
  (s.emplace_back(std::forward<Ts>(vs)), ...);
}

}  // namespace torchless
