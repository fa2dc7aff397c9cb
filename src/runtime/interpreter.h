#pragma once
// The interpreter: runs any Graph the frontend produces (control flow, calls, attributes,
// lists, tuples, dicts, strings, Optionals).
//
// Note [Interpreter]
// A Graph is compiled once into a flat instruction list over numbered registers (one per IR
// value). prim::If becomes a conditional jump, prim::Loop a test-and-jump loop, prim::GetAttr
// and prim::SetAttr a slot index resolved from the object's ClassType, prim::CallFunction and
// prim::CallMethod a direct call of the callee's compiled Code (interface-typed receivers
// dispatch on the object's class, cached per class), constants are preloaded, and every other
// node runs the Operation its kernel made for it at compile time. At run time nothing is
// looked up by string.
//
// Compiling checks every node first and throws one torchless::UnsupportedError listing all
// operators without a kernel, each with where it is used: those of the graph and of every
// function and method it calls (issue 15: a model's missing operators spread over its
// submodules used to come one per run). Errors raised while running (a
// kernel's torchless::Error, the model's own prim::RaiseException) get the place of the node
// that raised them and, for calls, one context line per calling frame.

#include "core/ivalue.h"
#include "ir/function.h"
#include "ir/ir.h"
#include "runtime/kernel.h"

#include <memory>
#include <string>
#include <vector>

namespace torchless {

class Code;

/// The compiled form of a graph. Immutable after construction; run() may be called from
/// several threads at once (each call has its own registers).
class Code {
 public:
  /// Compiles `graph` (after the rewrite PyTorch's executor requires: canonicalizeOps in
  /// runtime/canonicalize_ops.h, on a copy when it changes anything). `name` is used in
  /// messages ("forward"). Throws UnsupportedError listing every node without a kernel: in
  /// `graph` and, with `checkCallees`, in every function and method it calls, transitively
  /// (interface methods, known only when running, are checked when called). The interpreter
  /// compiles a callee at its first call without checkCallees: its caller's compile checked it.
  Code(std::shared_ptr<Graph> graph, std::string name, bool checkCallees = true);
  ~Code();
  Code(const Code&) = delete;
  Code& operator=(const Code&) = delete;

  /// Pops the graph's inputs from `stack` (first input deepest) and pushes its outputs.
  void run(Stack& stack) const;

  const std::shared_ptr<Graph>& graph() const { return graph_; }
  const std::string& name() const { return name_; }
  /// The instruction list, one per line (for debugging and tests).
  std::string dump() const;

  struct Impl;

 private:
  std::shared_ptr<Graph> graph_;
  std::string name_;
  std::unique_ptr<Impl> impl_;
};

/// The compiled Code of a function, built on first use and cached in the function (from the
/// graph the execution-graph rewrite returns, when one is set).
const Code& codeFor(const GraphFunction& fn);

/// A rewrite of a function's graph for execution only: returns `graph` itself or a rewritten
/// copy (never edits `graph`, which may be saved or exported). Set once at start-up
/// (passes::installExecutionRewrites); null = none.
using ExecutionGraphRewrite = std::shared_ptr<Graph> (*)(const std::shared_ptr<Graph>& graph);
void setExecutionGraphRewrite(ExecutionGraphRewrite rewrite);

/// Calls `fn` with `args` (self first for methods); returns its single output, or a tuple
/// when the graph has several.
IValue runFunction(const GraphFunction& fn, std::vector<IValue> args);

/// Calls method `name` of `self` (its class's method) with `args` (self not included).
/// Throws torchless::Error when the class has no such method.
IValue runMethod(const ObjectPtr& self, const std::string& name, std::vector<IValue> args);

}  // namespace torchless
