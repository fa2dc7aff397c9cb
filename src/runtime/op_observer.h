#pragma once
// Note [Op observer]
// A hook around every kernel call of the interpreter (each OP instruction, runtime/
// interpreter.cpp) for profilers (`torchless bench --profile`). Off by default: the interpreter
// then pays one relaxed atomic load per kernel. The observer may be called from several threads
// at once; onOpEnd is not called when the kernel throws.
//
// Spans are the work that is not one interpreter op: each engine layer of a call (category
// "layer", named after the layer, Note [Engine plans] in convert/engine/engine.h) and the steps
// that build what a method runs (category "build": freeze, partition, specialize, engine plan;
// Note [Execution pipeline] in api/pipeline.h). They are reported after they end, with their
// start; a span that throws is not reported.

#include <chrono>
#include <string>

namespace torchless {

class Node;

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  /// Before the kernel of `node` runs.
  virtual void onOpStart(const Node& node) = 0;
  /// After it returned.
  virtual void onOpEnd(const Node& node) = 0;
  /// A span of `category` ("layer", "build") named `name`, with `detail` (a layer's kind and
  /// source place; may be empty), from `start` to `end`. The strings live during the call only.
  virtual void onSpan(const char* category, const std::string& name, const std::string& detail,
                      std::chrono::steady_clock::time_point start,
                      std::chrono::steady_clock::time_point end) {
    (void)category, (void)name, (void)detail, (void)start, (void)end;
  }
};

/// Installs `observer` for every interpreter (nullptr removes it). The caller keeps it alive
/// until it is removed and no call is running.
void setOpObserver(OpObserver* observer);

/// The installed observer, or nullptr (one relaxed atomic load).
OpObserver* opObserver();

/// Reports a "build" span from its construction to its destruction to the observer installed
/// when it was made (nothing when none was); not reported when the scope is left by a throw.
class BuildSpan {
 public:
  explicit BuildSpan(const char* name, std::string detail = {})
      : obs_(opObserver()),
        name_(name),
        detail_(obs_ ? std::move(detail) : std::string()),
        start_(obs_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point()) {}
  ~BuildSpan();
  BuildSpan(const BuildSpan&) = delete;
  BuildSpan& operator=(const BuildSpan&) = delete;

 private:
  OpObserver* obs_;
  const char* name_;
  std::string detail_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace torchless
