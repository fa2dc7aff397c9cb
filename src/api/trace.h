#pragma once
// Tracing without Python: torch.jit.trace for loaded modules (api/module.h).
//
//   torchless::Module m = torchless::load("model.pt");
//   torchless::TraceOptions o;
//   o.checkInputs.push_back({IValue(otherX)});
//   torchless::TraceResult r = torchless::trace(m, {IValue(x)}, o);   // may throw TracingCheckError
//   for (const auto& w : r.warnings) std::cerr << w.str() << "\n";
//   torchless::save(r.module, "traced.pt");
//
// Note [Tracing]
// A method runs on example inputs in a tracing evaluator (trace.cpp) that walks the method's
// IR, runs every operator with the interpreter's own kernels (runtime/kernel.h) and records a
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

#include "api/module.h"
#include "core/error.h"
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

/// How to trace.
struct TraceOptions {
  /// The method to trace (self excluded from its inputs).
  std::string method = "forward";
  /// torch.jit.trace's check_inputs: each set re-traces the method (the graphs must print the
  /// same, modulo value names) and runs the traced graph against the original method.
  std::vector<std::vector<IValue>> checkInputs;
  /// check_tolerance: outputs compare as |traced - original| <= atol + rtol * |original|.
  double checkRtol = 1e-5;
  double checkAtol = 1e-5;
};

/// What tracing made.
struct TraceResult {
  /// A module of a new class with the original's name and attributes (sharing submodules,
  /// parameters and buffers) whose only method, `forward`, is the traced graph.
  Module module;
  /// The traced graph (forward's graph; input 0 is self).
  std::shared_ptr<Graph> graph;
  /// Warnings of the first trace, in order, each (message, place) once.
  std::vector<TraceWarning> warnings;
};

/// torch.jit.TracingCheckError: the traced graph did not hold up on the check inputs. The
/// message starts "Tracing failed sanity checks!" and holds PyTorch's sections ("ERROR: Graphs
/// differed across invocations!" with a unified diff of the two graphs, "Output nr N. of the
/// traced function does not match ...").
class TracingCheckError : public Error {
 public:
  TracingCheckError(std::string details, std::vector<TraceWarning> warnings)
      : Error("Tracing failed sanity checks!", "", std::move(details)), warnings_(std::move(warnings)) {}
  /// The warnings of the first trace (as TraceResult::warnings).
  const std::vector<TraceWarning>& warnings() const { return warnings_; }

 private:
  std::vector<TraceWarning> warnings_;
};

/// A traced graph and the warnings given while tracing it (one trace, no checks).
struct TracedGraph {
  std::shared_ptr<Graph> graph;
  std::vector<TraceWarning> warnings;
};

/// Runs `method` of `module` on `inputs` (self excluded; missing trailing arguments take their
/// defaults and become constants) and records the traced graph. Inputs must be tensors or
/// (nested) tuples, lists and dicts of tensors, as torch.jit.trace requires; anything else
/// throws torchless::Error naming the argument. Errors of the method itself propagate.
TracedGraph traceGraph(const Module& module, const std::string& method, std::vector<IValue> inputs);

/// traceGraph, then (for each options.checkInputs set) re-traces and compares graphs and runs
/// the traced graph against the original method; throws TracingCheckError listing what
/// differed. The module is mutated only as running the method mutates it.
TraceResult trace(const Module& module, std::vector<IValue> inputs, const TraceOptions& options = {});

/// The graph printed without source locations and with values renumbered in order (`%0`,
/// `%1`, ...): equal texts mean the same graph modulo value names (what check inputs compare).
std::string canonicalGraphText(const Graph& graph);

/// A unified diff (`--- a`, `+++ b`, `@@ -l,n +l,n @@` hunks with 3 lines of context) of two
/// texts split at newlines; "" when they are equal.
std::string unifiedDiff(const std::string& a, const std::string& b, const std::string& nameA,
                        const std::string& nameB);

}  // namespace torchless
