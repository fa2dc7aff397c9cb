#pragma once
// Graph preparation for export: from a graph as the frontend, the tracer or the importer made
// it to one the ONNX converters can take.
//
// Input: an inlined graph whose parameters are either constants already (frozen) or extra
// graph inputs named in `constantInputs`, and example inputs for every graph input.
// Steps, in order:
//   1. parameter inputs and non-tensor inputs become constants (tensors keep their parameter
//      names for the initializers); a module object input (`self`) is an error: freeze first;
//   2. prim::If with a constant condition is replaced by the branch it takes (drops
//      training-only branches: `if self.training:` of frozen models);
//   3. transformer fast paths are decomposed (decomposeFastPaths); in-place ops and writes
//      through views become functional (passes/remove_mutation.cpp); lists appended to in
//      loops / ifs become loop-carried values / If outputs; lists grown by aten::append at
//      the top level become one prim::ListConstruct per reader;
//   4. the graph runs once on the example inputs in the interpreter, which specializes it:
//      every top-level tensor gets its dtype and sizes, every int/float/bool/int[] is known;
//      with dynamic axes two more runs, on inputs grown by one and doubled along those axes,
//      tell which values follow them (those stay computed in the ONNX graph: Shape, Gather,
//      Range ...; Note [Dynamic axes by grown runs] in prepare.cpp); with module state, one
//      more run on the state the first one left tells which values follow the state (Note
//      [State by a second call]);
//   5. values that are known and do not follow a dynamic axis are folded to constants
//      (aten::size, shape arithmetic, prim::NumToTensor of traced graphs, dict keys, devices;
//      each output of a node on its own: `n, c, h, w = x.size()` keeps only a dynamic n
//      computed), then dead code goes; loops over a constant count (at most 16) that compute no
//      tensor are unrolled (F.interpolate's `[s for _ in range(dim)]`); steps 4-5 repeat while
//      folding makes prim::If conditions constant or unrolls loops (the nodes of an inlined
//      branch or an unrolled loop are observed on the next run);
//   6. eval-mode batch norms fold into the convolution or linear before them (unless
//      foldBatchNorm is off; after 5, which makes scripted modules' `training` flags constant);
//      dicts filled by aten::_set_item with constant keys become plain values (a returned dict
//      a prim::DictConstruct).
// Value-dependent prim::If / prim::Loop stay; the converter turns them into ONNX If / Loop.

#include "convert/onnx/onnx_ctx.h"
#include "core/ivalue.h"
#include "ir/ir.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace torchless::onnx_export {

struct PrepareOptions {
  /// Graph inputs (by index) that are parameters: they become constants named so.
  std::map<size_t, std::string> constantInputs;
  /// Dynamic axes by graph input index.
  std::map<size_t, std::vector<int64_t>> dynamicAxes;
  /// Dynamic axes of the elements of List[Tensor] / Dict[str, Tensor] inputs (each one ONNX
  /// input): (graph input index, element index) -> axes.
  std::map<std::pair<size_t, size_t>, std::vector<int64_t>> elementDynamicAxes;
  /// Fold eval-mode batch norms into the convolution / linear before them (passes/
  /// fold_conv_bn.cpp, fold_linear_bn.cpp), as torch.onnx does.
  bool foldBatchNorm = true;
  /// Fold tensors computed from constants when they have at most this many elements.
  int64_t foldTensorLimit = 64;
  /// Module state (module_state.h): graph input index -> index of the graph output that holds
  /// its value after the call. Note [State by a second call] in prepare.cpp.
  std::map<size_t, size_t> stateOutputs;
};

struct PreparedGraph {
  std::shared_ptr<Graph> graph;
  /// For each input of `graph`, the index of the original input it came from.
  std::vector<size_t> inputOrigin;
  /// Parameter names of constants (values of `graph`).
  std::unordered_map<const Value*, std::string> weightNames;
  /// Facts of top-level tensor values of `graph`.
  std::unordered_map<const Value*, ValueFacts> facts;
  /// Values that follow a dynamic axis (never folded).
  std::unordered_set<const Value*> dynamic;
  /// Module state inputs (by original input index) whose example was replaced: an empty state
  /// whose rank differs from the state the call leaves (silero's `_h`: [0] before the first
  /// call, [2, 1, 64] after) becomes an empty tensor of the later rank ([0, 1, 64]) when the
  /// graph computes the same with it (Note [State by a second call]); ONNX inputs have one rank.
  std::map<size_t, Tensor> stateInitial;
  /// False when the example run failed (then only IR types are known); `runError` says why.
  bool specialized = false;
  std::string runError;
};

/// Prepares a copy of `graph` (which is not changed). `inputs` holds one example per graph
/// input. Throws torchless::Error for a wrong input count or a module object input.
PreparedGraph prepareForExport(const Graph& graph, const std::vector<IValue>& inputs,
                               const PrepareOptions& options = {});

/// Gives the tensors inside blocks that no example run reached (a branch taken only at other
/// sizes of a dynamic axis) the rank, and where it follows the dtype, that the ops making them
/// imply (Note [Facts of branches no run took], infer_facts.cpp). Values with facts keep them;
/// a value no rule covers gets none. Throws nothing.
void inferUnobservedFacts(PreparedGraph& out);

/// What the example run observed of a value (null when nothing).
using FactsOf = std::function<const ValueFacts*(const Value*)>;

/// Replaces PyTorch's transformer fast paths (aten::_native_multi_head_attention,
/// aten::_transformer_encoder_layer_fwd) by the ops they compute (decompose.cpp), as
/// torch.onnx's traced slow path exports them, masks included. A node whose sizes, heads and
/// flags are not constants, or whose mask's dtype (or, for an undecided mask type, sizes) `facts`
/// does not tell, stays. Returns whether any node went.
bool decomposeFastPaths(Graph& g, const FactsOf& facts = nullptr);

/// Whether a value of type `t` may hold a tensor: Tensor, and lists, tuples and optionals of
/// something that may (an int[] may not); unknown types may.
bool mayHoldTensor(const TypePtr& t);

/// Step 3's list lowering (Note [List writes] in prepare.cpp): each write of a tensor list
/// (aten::insert, pop, _set_item, Delete) is followed by an aten::list copy that later readers
/// read, and lists written or appended to inside prim::Loop / prim::If flow out of them as
/// loop-carried values / If outputs. The graph computes what it computed before.
void carryListWrites(Graph& g);

/// Removes nodes whose outputs are unused and that have no side effects (nested blocks too).
void removeDeadNodes(Block* block);

}  // namespace torchless::onnx_export
