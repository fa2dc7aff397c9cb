#pragma once
// Passes: graph rewrites, one a file (style.md items 4-5).
//
// Note [Passes]
// A pass has a name (the file's name and the `--pass` flag: eliminate_dead_code.cpp,
// `torchless graph m.ir --pass eliminate_dead_code`), one paragraph saying what it rewrites
// and what it leaves alone, and `run(graph) -> changed`. A pass leaves the graph valid (the
// verifier passes) and reports whether it changed anything, so a PassManager can run a list
// to a fixed point. Passes are registered explicitly by registerPasses() (no static
// registrars: the linker drops them from static libraries).
//
// Each pass is also a plain function (passes.h), so passes can call each other
// (constant_propagation ends with eliminate_dead_code, as PyTorch's does).

#include "ir/ir.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace torchless::passes {

/// One graph rewrite.
class Pass {
 public:
  virtual ~Pass() = default;
  /// The name `--pass` takes (`eliminate_dead_code`); equals the file name.
  virtual const std::string& name() const = 0;
  /// One paragraph: what the pass rewrites and what it leaves alone.
  virtual const std::string& description() const = 0;
  /// Rewrites `graph` in place; true when anything changed.
  virtual bool run(Graph& graph) = 0;
};

/// A Pass made of a name, a description and a function.
class FunctionPass : public Pass {
 public:
  FunctionPass(std::string name, std::string description, std::function<bool(Graph&)> fn)
      : name_(std::move(name)), description_(std::move(description)), fn_(std::move(fn)) {}
  const std::string& name() const override { return name_; }
  const std::string& description() const override { return description_; }
  bool run(Graph& graph) override { return fn_(graph); }

 private:
  std::string name_;
  std::string description_;
  std::function<bool(Graph&)> fn_;
};

/// Passes by name. Use PassRegistry::global() (filled by registerPasses()); separate
/// instances are for tests.
class PassRegistry {
 public:
  PassRegistry() = default;
  PassRegistry(const PassRegistry&) = delete;
  PassRegistry& operator=(const PassRegistry&) = delete;

  /// The process-wide registry. registerPasses() fills it; call that first.
  static PassRegistry& global();

  /// Adds a pass; throws torchless::Error when the name is taken.
  void add(std::unique_ptr<Pass> pass);
  /// The pass named `name`, or nullptr.
  Pass* find(const std::string& name) const;
  /// As find, but throws torchless::Error("unknown pass 'x' (known: ...)").
  Pass& expect(const std::string& name) const;
  /// Every pass, sorted by name.
  std::vector<Pass*> all() const;

 private:
  std::map<std::string, std::unique_ptr<Pass>, std::less<>> passes_;
};

/// Fills PassRegistry::global() once with every pass of src/passes/ (later calls do nothing).
void registerPasses();
/// Adds every pass to `registry` (for tests with their own registry).
void registerPasses(PassRegistry& registry);

}  // namespace torchless::passes
