#pragma once
// Observed runs of the interpreter (Note [Execution observer] in ir/execution_observer.h): the
// tracer's evaluator (frontend/tracer.h, api/trace.cpp).

#include "core/ivalue.h"
#include "ir/execution_observer.h"
#include "ir/function.h"

#include <vector>

namespace torchless {

/// Calls `fn` with `args` (self first for methods) as runFunction (runtime/interpreter.h)
/// does, telling `observer` every step: the graphs of `fn` and of what it calls run as they
/// are (no execution-graph rewrite), each compiled once for this run with the observer's
/// hooks and with registers released after their values' last use. Returns the graph's
/// outputs. Errors as runFunction's, plus what the observer throws.
std::vector<IValue> runObserved(const GraphFunction& fn, std::vector<IValue> args,
                                ExecutionObserver& observer);

}  // namespace torchless
