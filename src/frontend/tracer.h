#pragma once
// The tracer: torch.jit.trace's recording of what a method runs (api/trace.h is the public
// entry point; it runs the method in the interpreter with this observer).
//
// Note [Tracing]
// A method runs on example inputs in the interpreter, which tells the tracer every step
// (runObserved, Note [Execution observer] in ir/execution_observer.h); the tracer records a
// straight-line graph specialized to the inputs, as PyTorch's tracer does:
//  - every executed operator that returns a tensor becomes a node with the same Symbol and
//    schema (inputs mapped to the traced values), except that conv1d/2d/3d, conv_transpose and
//    aten::convolution are recorded as aten::_convolution, as PyTorch's DONT_RECORD_TRACE does;
//  - control flow disappears: the branch taken is inlined, loops are unrolled, calls inlined;
//  - tensors are mapped to traced values by identity (the TensorImpl), wherever they travel
//    (lists, tuples, dicts, attributes); parameters, buffers and other tensor attributes of the
//    module tree are read from `self` through prim::GetAttr chains (one per attribute path, and
//    one per submodule whose method is called, as PyTorch's inlined traced graphs have them);
//  - sizes stay symbolic: aten::size (and len() of a tensor, recorded as aten::size(x, 0)) are
//    nodes, and int/float/bool operators computing on them are recorded too, so that
//    `x.view(x.size(0), -1)` generalizes to other batch sizes;
//  - every other value (ints, lists, tensors the trace did not produce) becomes a constant.
// Values derived from tensor *data* (aten::Bool/Int/Float/item of a tensor), branches taken
// on sizes, torch.tensor(...) results and in-place writes into storage that other live tensors
// share are specialized with PyTorch's TracerWarning texts (TraceWarning).
//
// Differences from PyTorch's tracer, on purpose: tensor types in the traced graph carry no
// shapes (`Tensor`, not `Float(1, 3, 224, 224, ...)`); len(tensor) is recorded as aten::size
// instead of a constant; int arithmetic on sizes is recorded as int operators instead of
// prim::NumToTensor + tensor arithmetic + aten::Int; the in-place warning is given always, not
// only with _force_outplace; a check-input output mismatch is an error, not a warning.

#include "core/ivalue.h"
#include "ir/execution_observer.h"
#include "ir/function.h"
#include "ir/ir.h"

#include <memory>
#include <string>
#include <vector>

namespace torchless {

/// One TracerWarning: PyTorch's message and the TorchScript source place that caused it.
struct TraceWarning {
  std::string message;
  /// "code/__torch__/m.py:12:4", or "" when the node has no source location.
  std::string place;
  /// "code/__torch__/m.py:12:4: TracerWarning: <message>", as Python's warnings print.
  std::string str() const;
};

/// A traced graph and the warnings given while tracing it (one trace, no checks).
struct TracedGraph {
  std::shared_ptr<Graph> graph;
  std::vector<TraceWarning> warnings;
};

/// Records one trace of a method of the module `self` (Note [Tracing]). Use:
///   auto t = Tracer::create(self);
///   std::vector<IValue> args = t->begin(fn, inputs);
///   std::vector<IValue> outs = runObserved(fn, args, *t);   // runtime/observed_run.h
///   TracedGraph g = t->finish(outs);
/// One Tracer traces one call.
class Tracer : public ExecutionObserver {
 public:
  static std::unique_ptr<Tracer> create(ObjectPtr self);
  /// Makes the traced graph's inputs (self, then one per input) and returns the arguments of
  /// `fn` (self, `inputs`, then the defaults of missing trailing arguments, which become
  /// constants). Inputs must be tensors or (nested) tuples, lists and dicts of tensors, as
  /// torch.jit.trace requires; anything else, too many inputs or a missing one without a
  /// default throws torchless::Error naming the argument.
  virtual std::vector<IValue> begin(const GraphFunction& fn, const std::vector<IValue>& inputs) = 0;
  /// After the observed run returned `outputs`: the traced graph (outputs registered, unused
  /// nodes removed, verified) and the warnings given.
  virtual TracedGraph finish(const std::vector<IValue>& outputs) = 0;
};

/// The graph printed without source locations and with values renumbered in order (`%0`,
/// `%1`, ...): equal texts mean the same graph modulo value names (what check inputs compare).
std::string canonicalGraphText(const Graph& graph);

}  // namespace torchless
