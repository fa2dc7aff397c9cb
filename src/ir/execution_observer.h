#pragma once
// Note [Execution observer]
// What a run of a graph does, node by node, told to an observer: the interpreter
// (runtime/observed_run.h runObserved) calls these hooks when it runs a graph compiled for
// observation, and the tracer (frontend/tracer.h) is one observer. The interface lives in ir/
// so that a layer that may not see the runtime (frontend/) can implement it.
//
// Events arrive in execution order. Every definition of an IR value is announced by exactly
// one event, so an observer can keep a map keyed by `const Value*` per call frame:
//  - graph inputs by enterCall; operator outputs by afterOp; prim::GetAttr's by afterGetAttr;
//  - a call node's outputs by exitCall; a prim::If's by exitIf;
//  - a loop body's inputs by enterLoop (first iteration) and endIteration (the next one: the
//    counter and the body's carried outputs become its inputs), a prim::Loop's outputs by
//    exitLoop (the body inputs' last values, or the loop's inputs when the body never ran).
// An observed run never uses the execution-graph rewrite (runtime/interpreter.h): the observer sees
// the graphs as they are. Values are released after their last use as a Python program
// releases its locals (so that reference counts match PyTorch's tracer), except that a loop
// keeps its carried values until it ends.

#include "core/ivalue.h"

#include <cstddef>
#include <vector>

namespace torchless {

class Graph;
class Node;
struct OpInfo;

class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  /// A call of `callee` starts; its inputs take args[0..n) (self first for methods). `caller`
  /// is the prim::CallFunction / prim::CallMethod node, or nullptr for the outermost call.
  virtual void enterCall(const Node* caller, const Graph& callee, const IValue* args, size_t n) = 0;
  /// That call returned outputs[0..n); the caller's node outputs take them.
  virtual void exitCall(const Node* caller, const Graph& callee, const IValue* outputs,
                        size_t n) = 0;
  /// Operator node `node` (matched to `op`, nullptr for schema-less prim ops) ran on `inputs`
  /// and returned outputs[0..n).
  virtual void afterOp(const Node& node, const OpInfo* op, const std::vector<IValue>& inputs,
                       const IValue* outputs, size_t n) = 0;
  /// prim::If `node` takes block `block` (0 then, 1 else); exitIf: its outputs are set.
  virtual void enterIf(const Node& node, size_t block) = 0;
  virtual void exitIf(const Node& node, size_t block) = 0;
  /// prim::Loop `node` starts (its body inputs hold the counter 0 and the loop's inputs), one
  /// iteration ended (the body's outputs are stored into its inputs), the loop ended.
  virtual void enterLoop(const Node& node) = 0;
  virtual void endIteration(const Node& node) = 0;
  virtual void exitLoop(const Node& node) = 0;
  /// prim::GetAttr `node` read `value`.
  virtual void afterGetAttr(const Node& node, const IValue& value) = 0;
  /// prim::SetAttr `node` is about to store `value` into `object`.
  virtual void beforeSetAttr(const Node& node, const IValue& object, const IValue& value) = 0;
};

}  // namespace torchless
