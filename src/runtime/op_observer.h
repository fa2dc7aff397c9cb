#pragma once
// Note [Op observer]
// A hook around every kernel call of the interpreter (each OP instruction, runtime/
// interpreter.cpp) for profilers (`torchless bench --profile`). Off by default: the interpreter
// then pays one relaxed atomic load per kernel. The observer may be called from several threads
// at once; onOpEnd is not called when the kernel throws.

namespace torchless {

class Node;

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  /// Before the kernel of `node` runs.
  virtual void onOpStart(const Node& node) = 0;
  /// After it returned.
  virtual void onOpEnd(const Node& node) = 0;
};

/// Installs `observer` for every interpreter (nullptr removes it). The caller keeps it alive
/// until it is removed and no call is running.
void setOpObserver(OpObserver* observer);

}  // namespace torchless
