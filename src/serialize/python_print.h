#pragma once
// Printing IR back to TorchScript source (torch/csrc/jit/serialization/python_print.cpp in
// purpose): the code/ files an archive needs so that torch.jit.load (and our importer) can
// compile the module again after we changed it (freezing, tracing, scripting a user's file).
//
// Note [Printed code]
// The output is the TorchScript subset PyTorch's importer reads (torchscript-archive.md 3.5):
// aten ops as `torch.op(...)` with trailing default arguments dropped and kwarg-only ones
// named, other namespaces as `ops.ns.op(...)`, constants inline (tensors and non-ASCII strings
// through CONSTANTS.cN), `annotate(List[T], [])` for containers whose type inference would
// differ, prim::If as if/else assigning the node's outputs in each branch, prim::Loop as
// `for i in range(n):` when its condition is constantly true and as `while` otherwise, with
// loop-carried values reassigned in one tuple assignment at the end of the body. Every
// non-constant value gets a name; expressions are not re-nested, so the text is longer than
// PyTorch's but means the same.

#include "core/ivalue.h"
#include "ir/function.h"

#include <map>
#include <string>
#include <vector>

namespace torchless {

/// Code for a set of classes and functions, grouped by qualifier (file).
struct PrintedCode {
  /// "__torch__.a" -> the text of code/__torch__/a.py.
  std::map<std::string, std::string> sources;
  /// The CONSTANTS table the code refers to.
  std::vector<IValue> constants;
  /// max(3, the upgrader bump of every versioned operator called).
  uint64_t minVersion = 3;
};

/// Prints classes (with their attributes and methods) and free functions. Classes reached
/// through attribute types and calls are printed too. Throws torchless::Error for IR the
/// printer cannot express (naming the node and its place).
class PythonPrinter {
 public:
  /// Adds a class and everything it reaches.
  void addClass(const std::shared_ptr<const ClassType>& cls);
  /// Adds a free function (`__torch__.helper`) and everything it reaches.
  void addFunction(const GraphFunction& fn);
  /// The result; call after adding everything.
  PrintedCode finish();

  /// One function as a `def`, indented by `indent` levels (2 spaces each), without classes.
  /// Used for methods and in tests.
  std::string printFunction(const GraphFunction& fn, int indent = 0);

 private:
  std::string printClass(const ClassType& cls);
  void noteType(const TypePtr& t);
  std::string qualifierOf(const std::string& qualname) const;

  std::vector<std::shared_ptr<const ClassType>> classes_;
  std::vector<const GraphFunction*> functions_;
  std::map<std::string, bool> seen_;
  PrintedCode out_;
};

}  // namespace torchless
