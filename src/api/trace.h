#pragma once
// Tracing without Python: torch.jit.trace for loaded modules (api/module.h).
//
//   torchless::Module m = torchless::load("model.pt");
//   torchless::TraceOptions o;
//   o.checkInputs.push_back({IValue(otherX)});
//   // may throw TracingCheckError:
//   torchless::TraceResult r = torchless::trace(m, {IValue(x)}, o);
//   for (const auto& w : r.warnings) std::cerr << w.str() << "\n";
//   torchless::save(r.module, "traced.pt");
//
// How it works: Note [Tracing] in frontend/tracer.h. The check inputs' graph diff is
// core/unified_diff.h.

#include "api/module.h"
#include "core/error.h"
#include "core/unified_diff.h"
#include "frontend/tracer.h"
#include "ir/ir.h"

#include <memory>
#include <string>
#include <vector>

namespace torchless {

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
      : Error("Tracing failed sanity checks!", "", std::move(details)),
        warnings_(std::move(warnings)) {}
  /// The warnings of the first trace (as TraceResult::warnings).
  const std::vector<TraceWarning>& warnings() const { return warnings_; }

 private:
  std::vector<TraceWarning> warnings_;
};

/// Runs `method` of `module` on `inputs` (self excluded; missing trailing arguments take their
/// defaults and become constants) and records the traced graph. Inputs must be tensors or
/// (nested) tuples, lists and dicts of tensors, as torch.jit.trace requires; anything else
/// throws torchless::Error naming the argument. Errors of the method itself propagate.
TracedGraph traceGraph(const Module& module, const std::string& method, std::vector<IValue> inputs);

/// traceGraph, then (for each options.checkInputs set) re-traces and compares graphs and runs
/// the traced graph against the original method; throws TracingCheckError listing what
/// differed. The module is mutated only as running the method mutates it.
TraceResult trace(const Module& module, std::vector<IValue> inputs,
                  const TraceOptions& options = {});

}  // namespace torchless
