#pragma once
// The execution pipeline: what a method of a loaded module actually runs.
//
// Note [Execution pipeline]
// On the first call of a method (Module::runMethod), unless TORCHLESS_JIT=0:
//   1. freeze a copy of the module for that method (api/freeze.h: calls inlined, parameters
//      folded to constants, conv/linear + batch_norm folded, eval dropouts removed); a frozen
//      method that still reads or writes attributes keeps them on the module's own object
//      (Note [Module state in a frozen plan]); when freezing refuses the module (training
//      mode), the method runs as loaded, in the interpreter;
//   2. partition the frozen graph (convert/engine/partition.h): runs of nodes the engine
//      converters take become engines, the rest stays in the interpreter;
//   3. compile the result for the interpreter; each engine plans its input signature on the
//      first call that sees it (Note [Engine plans] in convert/engine/engine.h).
// The module, its graphs and anything saved or exported are never changed: the pipeline works
// on copies. `torchless graph MODEL.pt --pipeline execution` prints the graph that runs.
//
// Note [Module state in a frozen plan]
// A method may keep state in its module: a streaming model's hidden state (silero VAD, a
// keyword spotter), a flag set on the first call (torchvision's GeneralizedRCNN._has_warned),
// a cache (RAFT's corr_pyramid). torch.jit.freeze keeps such attributes and folds the rest;
// so does freezing here (the attributes the method writes, and those any other method of the
// module writes, as `reset_states()` does, stay attributes). The frozen graph then reads and
// writes them through GetAttr / SetAttr chains from self, by name, and the frozen class keeps
// the names. The plan retypes the graph's self to the module's own class and runs it on the
// module's own object: the calls see and move the state the module's other methods see, as
// when it ran as loaded, while the rest of the graph is frozen and partitioned into engines.
// Such a plan is never prepared (a preparation run would move the state on). `torchless
// compile` (stateInFrozenCopy) keeps the state in the frozen copy, which its archive holds.
// A method touching attributes of an object it neither owns nor creates (an object input)
// still runs as loaded.
//
// Note [Specialization]
// When the frozen graph reads tensor properties (passes::isTensorPropertyRead: dtype, dim,
// device, is_floating_point, is_nested, grad mode, `is None` tests), as nn.TransformerEncoder
// and nn.MultiheadAttention do around every layer, branches on them would cut the graph into
// many small engine segments. So the method is specialized per input signature, as PyTorch's
// profiling executor does:
//   - the signature of a call is, per input, None-ness, and dtype and rank of each tensor
//     (recursively in tuples and short lists); sizes are not part of it (engines plan sizes);
//   - the first call with a new signature runs an instrumented copy of the frozen graph in
//     the interpreter (its result is that call's result), recording the value of every
//     property read; a read that gave one value every time it ran becomes that constant, and
//     Optional inputs become None or their contained type (passes::specialize);
//   - the specialized graph is partitioned and compiled, and later calls with that signature
//     run it. At most kMaxSpecializations signatures are kept per method; calls with further
//     signatures run the unspecialized plan.
// The folding assumes, as PyTorch's guards on inputs do, that the rank, dtype and None-ness
// of intermediate values follow from the inputs' signature. Where they may not, reads are not
// folded (passes::valuesWithUnsettledProperties): the outputs of an If whose condition comes
// from tensor values, sizes or non-tensor inputs (`y = x * 2 if bool(x.sum() > 0) else None`;
// nn.TransformerEncoder's output, nested when its padding mask is left-aligned), carried
// Optionals of loops, and what is computed from them.

// Note [Preparing at load]
// The first call of a method builds (Note [Execution pipeline], [Specialization], Note [Engine
// plans] in convert/engine/engine.h): freezing and partitioning, the specialization, and per
// engine and input signature the oneDNN primitives, the weights reordered into their layouts
// and the arena. Built on that call, it made the first call 4-350x the steady one (issue 13's
// warm-up cliff). Module::prepare does it when the module is loaded and the inputs' shapes are
// known (`bench`, as ONNX Runtime's session creation and TensorRT's engine build do): it builds
// the plan and runs it on copies of the inputs, discarding the result, once more when the
// first run only specialized, and once more when it is built (Note [Settling run] in
// pipeline.cpp). Engine plans are keyed by sizes, dtypes, contiguity and the
// thread count, so the next call with inputs of the same signature finds everything built.
// An archive `torchless compile` wrote is not frozen again (it was frozen and partitioned
// when written; freezing would deep-copy its engines' weights) and runs as loaded; since its
// method only reads its Engine attributes, it is prepared the same way, and its engines plan
// the inputs at load as well.
// Nothing is run when running could be seen: a method that runs as loaded and touches other
// attributes (it may keep module state), a graph with prints, Python calls or random numbers (the
// op table's facts: OpInfo::hasSideEffects other than raising and aten::warn, which prints once per
// call site of the compiled graphs the calls run too; Node::isNondeterministic), or inputs that
// cannot be copied (objects, dicts: the method could mutate them). Inputs are copied because
// a frozen graph may still write into its inputs (`x.add_(1)`).

#include "api/module.h"
#include "convert/engine/partition.h"
#include "runtime/interpreter.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace torchless {

/// What the pipeline made of one method.
struct ExecutionPlan {
  /// The graph that runs (self is input 0) and its compiled form.
  std::shared_ptr<Graph> graph;
  std::unique_ptr<Code> code;
  /// The object the graph runs on: the frozen module's (or the module's own when not frozen).
  ObjectPtr self;
  /// Segments and engines; empty when the method was not frozen.
  engine::PartitionReport report;
  /// Why the method runs as loaded ("" when frozen and partitioned).
  std::string notFrozen;

  /// One signature's specialized plan (Note [Specialization]).
  struct Specialization {
    std::vector<int64_t> signature;
    std::shared_ptr<Graph> graph;
    std::unique_ptr<Code> code;
    engine::PartitionReport report;
  };
  /// Set when the method is specialized per signature: the frozen graph before partitioning.
  std::shared_ptr<Graph> frozenGraph;
  std::string qualname;
  engine::PartitionOptions partitionOptions;
  /// Built so far, at most kMaxSpecializations; guarded by `mu`.
  mutable std::vector<std::shared_ptr<const Specialization>> specializations;
  mutable std::mutex mu;
  static constexpr size_t kMaxSpecializations = 8;
};

/// Options of the pipeline (the engine's partitioning options).
struct PipelineOptions {
  engine::PartitionOptions partition;
  /// When given (self excluded, defaults filled), a method that reads tensor properties is
  /// specialized once, to these inputs' signature (Note [Specialization]), and the plan's
  /// graph is that specialization: `torchless compile` writes it.
  std::vector<IValue> exampleInputs;
  /// Where a frozen method that keeps module state keeps it (Note [Module state in a frozen
  /// plan]): false runs the frozen graph on the module's own object, so calls and the module's
  /// other methods see one state; true keeps the frozen copy's, which `torchless compile`
  /// writes into its archive.
  bool stateInFrozenCopy = false;
};

/// Builds the execution plan of method `name` of `module` (Note [Execution pipeline]). Throws
/// torchless::Error when there is no such method, torchless::UnsupportedError when
/// partition.requireFullCompilation and part of the graph cannot run in an engine.
std::shared_ptr<ExecutionPlan> buildExecutionPlan(const Module& module, const std::string& name,
                                                  const PipelineOptions& options = {});

/// Runs `plan` with `inputs` (self excluded, defaults already filled): one output, or a tuple.
/// A call with a new signature may first specialize the plan (Note [Specialization]).
/// Throws what the model raises (torchless::Error).
IValue runExecutionPlan(const ExecutionPlan& plan, std::vector<IValue> inputs);

/// Builds what the first call of `plan` with inputs like `inputs` (self excluded, defaults
/// filled) would build, by running it on copies of them (Note [Preparing at load]). Returns
/// false, having run nothing, when that could be seen or the inputs cannot be copied; an
/// error of the preparation run is swallowed (false: the real call reports it).
bool preparePlan(const ExecutionPlan& plan, const std::vector<IValue>& inputs);

/// Calls method `name` of `module` once, as loaded, in the interpreter: no freezing, no
/// engines (the interpreter's own rewrites still apply), as PyTorch's profiling executor runs a
/// first call. For a single call (`torchless run`) that costs less time and memory than
/// building the plan (Note [One call runs as loaded] in module.cpp). Throws as
/// Module::runMethod.
IValue runMethodOnce(const Module& module, const std::string& name, std::vector<IValue> inputs);

/// The signature of `inputs` (Note [Specialization]), appended to `out`: per input, a tag,
/// and for tensors their dtype and rank; tuples and lists of up to 16 elements recursively.
void appendSignature(const std::vector<IValue>& inputs, std::vector<int64_t>& out);

}  // namespace torchless
