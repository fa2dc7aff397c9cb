#pragma once
// The execution pipeline: what a method of a loaded module actually runs.
//
// Note [Execution pipeline]
// On the first call of a method (Module::runMethod), unless TORCHLESS_JIT=0:
//   1. freeze a copy of the module for that method (api/freeze.h: calls inlined, parameters
//      folded to constants, conv/linear + batch_norm folded, eval dropouts removed); when the
//      frozen method still reads or writes attributes (it mutates module state), or freezing
//      refuses the module (training mode), the method runs as loaded, in the interpreter;
//   2. partition the frozen graph (convert/engine/partition.h): runs of nodes the engine
//      converters take become engines, the rest stays in the interpreter;
//   3. compile the result for the interpreter; each engine plans its input signature on the
//      first call that sees it (Note [Engine plans] in convert/engine/engine.h).
// The module, its graphs and anything saved or exported are never changed: the pipeline works
// on copies. `torchless graph MODEL.pt --pipeline execution` prints the graph that runs.

#include "api/module.h"
#include "convert/engine/partition.h"
#include "runtime/interpreter.h"

#include <memory>
#include <string>

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
};

/// Options of the pipeline (the engine's partitioning options).
struct PipelineOptions {
  engine::PartitionOptions partition;
};

/// Builds the execution plan of method `name` of `module` (Note [Execution pipeline]). Throws
/// torchless::Error when there is no such method, torchless::UnsupportedError when
/// partition.requireFullCompilation and part of the graph cannot run in an engine.
std::shared_ptr<ExecutionPlan> buildExecutionPlan(const Module& module, const std::string& name,
                                                  const PipelineOptions& options = {});

/// Runs `plan` with `inputs` (self excluded, defaults already filled): one output, or a tuple.
IValue runExecutionPlan(const ExecutionPlan& plan, std::vector<IValue> inputs);

}  // namespace torchless
