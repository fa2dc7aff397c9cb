#pragma once
// Runs a pipeline: a list of pass names (pipelines are data).
//
//   registerPasses();
//   PassManagerOptions o = PassManagerOptions::fromEnvironment();   // TORCHLESS_LOG=...
//   o.verify = true;                                                // tests always do
//   PassManager pm({"inline", "constant_propagation", "eliminate_dead_code"}, o);
//   bool changed = pm.run(*graph);
//
// Logging: TORCHLESS_LOG=constant_propagation,peephole prints the graph after each run of
// those passes on the log stream (stderr), as PyTorch's PYTORCH_JIT_LOG_LEVEL does;
// TORCHLESS_LOG=all (or `*`) after every pass.
//
// Bisecting: `stopAfter = N` runs only the first N pass executions (counting every run of
// every pass, fixed-point rounds included) and then stops, so `N` and `N-1` differ in exactly
// one pass: the one that broke the model. TORCHLESS_PASS_LIMIT=N sets it from the environment.

#include "passes/pass.h"

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace torchless::passes {

struct PassManagerOptions {
  /// Run the verifier after every pass; a failure throws torchless::Error naming the pass.
  bool verify = false;
  /// Print the graph after these passes ("all" or "*": after every pass).
  std::set<std::string> logAfter;
  /// Stop after this many pass executions (for bisecting); nullopt = no limit.
  std::optional<size_t> stopAfter;
  /// Repeat the whole pipeline until no pass changes anything (at most maxRounds rounds).
  bool fixedPoint = false;
  size_t maxRounds = 20;
  /// Where logs go; null means std::cerr.
  std::ostream* log = nullptr;

  /// logAfter from TORCHLESS_LOG (comma-separated names), stopAfter from
  /// TORCHLESS_PASS_LIMIT; everything else default.
  static PassManagerOptions fromEnvironment();
};

class PassManager {
 public:
  /// Resolves every name in `registry` now: an unknown name throws torchless::Error.
  explicit PassManager(const std::vector<std::string>& pipeline, PassManagerOptions options = {},
                       const PassRegistry& registry = PassRegistry::global());

  /// Runs the pipeline on `graph` (once, or to a fixed point); true when anything changed.
  bool run(Graph& graph);

  /// Pass executions so far (across run() calls).
  size_t executions() const { return executions_; }
  /// True once stopAfter was reached.
  bool stopped() const { return stopped_; }
  const std::vector<Pass*>& pipeline() const { return pipeline_; }

 private:
  bool runOnce(Graph& graph);

  std::vector<Pass*> pipeline_;
  PassManagerOptions options_;
  size_t executions_ = 0;
  bool stopped_ = false;
};

/// False when TORCHLESS_JIT is "0", "false" or "off": optional optimizations (the freeze
/// pipeline's folds and dropout removal, runtime fusions) are skipped; passes needed for
/// correctness still run. See Note [TORCHLESS_JIT] in pass_manager.cpp.
bool jitOptimizationsEnabled();

/// The pipeline `torchless` uses to optimize a graph before running it (safe to run to a
/// fixed point; unroll_loops is not in it).
const std::vector<std::string>& defaultPipeline();

}  // namespace torchless::passes
