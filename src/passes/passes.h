#pragma once
// Every pass as a plain function (see Note [Passes] in pass.h). Each returns true when it
// changed the graph. The descriptions are at the top of each pass's file.

#include "core/scalar_type.h"
#include "ir/ir.h"

#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

namespace torchless::passes {

/// eliminate_dead_code.cpp. `block` limits the sweep to one block and the blocks inside it
/// when `recurse` (PyTorch's EliminateDeadCode(Block*, recurse)).
bool eliminateDeadCode(Graph& graph);
bool eliminateDeadCode(Block* block, bool recurse = true);
/// constant_propagation.cpp.
bool constantPropagation(Graph& graph);
/// common_subexpression_elimination.cpp.
bool commonSubexpressionElimination(Graph& graph);
/// inline.cpp.
bool inlineCalls(Graph& graph);
/// unroll_loops.cpp.
bool unrollLoops(Graph& graph);
/// peephole.cpp.
bool peephole(Graph& graph);
/// lower_tuples.cpp.
bool lowerTuples(Graph& graph);
/// lower_objects.cpp: reads of attributes of class objects the graph creates
/// (prim::CreateObject) and only writes (in the creating block) and reads become the values
/// last written; such objects go (torchvision's ImageList). Lowers tuples first. Throws
/// nothing; objects used otherwise stay.
bool lowerLocalObjects(Graph& graph);
/// fuse_conv_activation.cpp (execution only: it creates torchless:: ops; Note [Execution
/// rewrites]). Does nothing when TORCHLESS_JIT=0.
bool fuseConvActivation(Graph& graph);
/// Makes the interpreter compile every function from a copy of its graph rewritten by
/// fuseConvActivation (runtime/interpreter.h setExecutionGraphRewrite). Idempotent; called when
/// an archive is loaded.
void installExecutionRewrites();

/// specialize.cpp: true for the nodes Note [Specialization] folds (api/pipeline.h): reads of
/// a tensor's dtype, dim, device, is_floating_point, is_nested ..., grad/autocast mode, and
/// `is None` / `is not None` tests of Optional values.
bool isTensorPropertyRead(const Node& n);
/// lower_nested.cpp: the values that may hold a nested tensor at run time (Note [Values that
/// may be nested]): outputs of aten::_nested_tensor_from_mask and what is computed from them,
/// through If and Loop outputs, up to aten::to_padded_tensor; numbers are never nested.
std::unordered_set<const Value*> valuesThatMayBeNested(const Graph& graph);
/// specialize.cpp: the property reads (isTensorPropertyRead nodes) whose answer may differ
/// between two calls with the same input signature (Note [Specialization] in api/pipeline.h),
/// so that specialization must not fold them: `is None` tests of a value that an If whose
/// condition comes from tensor values, sizes or non-tensor inputs sets to None on one side
/// only (`y = x * 2 if bool(x.sum() > 0) else None`) or that a loop carries as an Optional,
/// and `is_nested` of a value nested on one side only (nn.TransformerEncoder's output, nested
/// when its padding mask is left-aligned); reads whose input follows from those, too.
std::unordered_set<const Node*> propertyReadsNotSettled(const Graph& graph);
/// specialize.cpp: containers built in straight-line code become SSA values: reads of a
/// constant dict/list nothing writes are evaluated; `l.append(x)` after `l = []` and
/// `d[k] = v` (constant k) after `d = {}` in one block, followed only by reads, become one
/// ListConstruct / DictConstruct; `d[k]` of such a dict becomes the value; lists only
/// appended to are removed. Then constants are propagated. (PyTorch's RemoveListMutation,
/// extended to dicts.)
bool simplifyContainers(Graph& graph);
/// specialize.cpp: replaces each fact node by a constant of its observed value, then, for
/// graph input i with inputIsNone[i] set and an Optional type, uses None (true) or refines
/// the input to the contained type (false); then propagates constants (taken branches
/// inlined), removes no-op casts, lists only appended to, and dead code. The graph is then
/// valid only for inputs with the observed signature. The fact nodes must be in `graph`.
///
/// With `guards` (a specialization that is saved, as `torchless compile` writes it), checks
/// go at the top of the graph so that a call with another signature raises a RuntimeError
/// naming the input instead of computing with folded facts: per guard, `x is not None` for
/// an input specialized to None, else the tensor's dtype and rank.
struct SignatureGuard {
  size_t input = 0;                      // graph input index (self is 0)
  bool isNone = false;                   // specialized to None
  std::optional<ScalarType> scalarType;  // a tensor: its dtype ...
  int64_t rank = 0;                      // ... and rank
};
bool specialize(Graph& graph, const std::vector<std::pair<Node*, IValue>>& facts,
                const std::vector<std::optional<bool>>& inputIsNone,
                const std::vector<SignatureGuard>* guards = nullptr);

/// remove_dropout.cpp.
bool removeDropout(Graph& graph);
/// fold_conv_bn.cpp.
bool foldConvBn(Graph& graph);
/// fold_conv_add_mul.cpp.
bool foldConvAddMul(Graph& graph);
/// fold_linear_bn.cpp.
bool foldLinearBn(Graph& graph);
/// fold_linear_mul.cpp.
bool foldLinearMul(Graph& graph);
/// lower_nested.cpp: nn.TransformerEncoder's nested-tensor fast path on the padded batch.
bool lowerNestedTensors(Graph& graph);
/// remove_mutation.cpp. Throws torchless::Error (naming the op and its place) where a write's
/// aliasing cannot be resolved.
bool removeMutation(Graph& graph);
/// As removeMutation; with strict false, writes that cannot be made functional stay in the
/// graph instead of throwing (export preparation runs it again, strict, once dead branches
/// are gone).
bool removeMutation(Graph& graph, bool strict);

// ---- freeze.cpp ----

/// What freezing a graph needs besides the graph and the module object.
struct FreezeGraphOptions {
  /// Attribute paths ("count", "sub.n") that some other preserved method writes: kept.
  std::set<std::string> mutatedAttributes;
  /// Attribute paths the caller keeps (PyTorch's preserved_attrs): kept with everything
  /// under them.
  std::set<std::string> preservedAttributes;
  /// Erase graph input 0 (self) when nothing uses it any more (a standalone function; module
  /// methods keep self, as PyTorch's frozen methods do).
  bool dropSelf = false;
};

/// What freezing left of the module.
struct FreezeGraphResult {
  /// Names of self's attributes the frozen graph still reads or writes (GetAttr/SetAttr on
  /// graph input 0).
  std::set<std::string> keptAttributes;
};

/// Replaces `self.training` (and `self.sub.training`, module objects only) by its value from
/// `self` and runs constant propagation, so that training-only branches (and the buffers
/// they update, num_batches_tracked) are gone before mutatedAttributes looks. Does nothing
/// when the graph writes some `training`.
bool foldTrainingAttributes(Graph& graph, const ObjectPtr& self);

/// Attribute paths rooted at graph input 0 that `graph` (inlined) may write: SetAttr
/// targets, tensors/lists/dicts written through an alias, objects used as values. Throws
/// torchless::Error when self itself is used as a value.
std::set<std::string> mutatedAttributes(Graph& graph);

/// Freezes `graph` (a method of `self`'s class, self = input 0) in place: see freeze.cpp.
/// Throws torchless::Error when the graph reads an attribute the object lacks or uses self
/// as a value.
bool freezeGraph(Graph& graph, const ObjectPtr& self, const FreezeGraphOptions& options = {},
                 FreezeGraphResult* result = nullptr);

/// Binds the module object the `freeze` pass reads, on this thread, while alive (scopes
/// nest). The registered pass takes only a Graph; this is how it finds the module.
class FreezeModuleScope {
 public:
  FreezeModuleScope(ObjectPtr self, FreezeGraphOptions options = {});
  ~FreezeModuleScope();
  FreezeModuleScope(const FreezeModuleScope&) = delete;
  FreezeModuleScope& operator=(const FreezeModuleScope&) = delete;

  /// The innermost scope of this thread, or nullptr.
  static const FreezeModuleScope* current();
  const ObjectPtr& self() const { return self_; }
  const FreezeGraphOptions& options() const { return options_; }
  /// The result of the last `freeze` run under this scope.
  const FreezeGraphResult& lastResult() const { return lastResult_; }

 private:
  friend bool freeze(Graph& graph);
  ObjectPtr self_;
  FreezeGraphOptions options_;
  const FreezeModuleScope* previous_;
  mutable FreezeGraphResult lastResult_;
};

/// The registered `freeze` pass: freezeGraph with the current FreezeModuleScope's object and
/// options; throws torchless::Error when no scope is bound.
bool freeze(Graph& graph);

// Descriptions (the one paragraph each pass file starts with), for the registry.
extern const char* const kEliminateDeadCodeDescription;
extern const char* const kConstantPropagationDescription;
extern const char* const kCommonSubexpressionEliminationDescription;
extern const char* const kInlineDescription;
extern const char* const kUnrollLoopsDescription;
extern const char* const kPeepholeDescription;
extern const char* const kLowerTuplesDescription;
extern const char* const kLowerLocalObjectsDescription;
extern const char* const kFuseConvActivationDescription;
extern const char* const kFreezeDescription;
extern const char* const kRemoveDropoutDescription;
extern const char* const kFoldConvBnDescription;
extern const char* const kFoldConvAddMulDescription;
extern const char* const kFoldLinearBnDescription;
extern const char* const kFoldLinearMulDescription;
extern const char* const kRemoveMutationDescription;
extern const char* const kLowerNestedTensorsDescription;

}  // namespace torchless::passes
