// The pass registry, registerPasses() and the PassManager (Note [Passes] in pass.h).
#include "passes/pass_manager.h"

#include "core/error.h"
#include "ir/verifier.h"
#include "passes/passes.h"

#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>

namespace torchless::passes {

// ---- registry -------------------------------------------------------------------------------

PassRegistry& PassRegistry::global() {
  static PassRegistry registry;
  return registry;
}

void PassRegistry::add(std::unique_ptr<Pass> pass) {
  TL_INTERNAL_ASSERT(pass != nullptr, "null pass");
  std::string name = pass->name();
  if (passes_.count(name)) throw Error(fmt::format("pass '{}' is registered twice", name));
  passes_.emplace(std::move(name), std::move(pass));
}

Pass* PassRegistry::find(const std::string& name) const {
  auto it = passes_.find(name);
  return it == passes_.end() ? nullptr : it->second.get();
}

Pass& PassRegistry::expect(const std::string& name) const {
  if (Pass* p = find(name)) return *p;
  std::string known;
  for (const auto& [n, p] : passes_) known += (known.empty() ? "" : ", ") + n;
  throw Error(fmt::format("unknown pass '{}' (known: {})", name, known));
}

std::vector<Pass*> PassRegistry::all() const {
  std::vector<Pass*> out;
  for (const auto& [n, p] : passes_) out.push_back(p.get());
  return out;
}

void registerPasses(PassRegistry& r) {
  auto add = [&](const char* name, const char* description, bool (*fn)(Graph&)) {
    r.add(std::make_unique<FunctionPass>(name, description, fn));
  };
  add("eliminate_dead_code", kEliminateDeadCodeDescription,
      static_cast<bool (*)(Graph&)>(&eliminateDeadCode));
  add("constant_propagation", kConstantPropagationDescription, &constantPropagation);
  add("common_subexpression_elimination", kCommonSubexpressionEliminationDescription,
      &commonSubexpressionElimination);
  add("inline", kInlineDescription, &inlineCalls);
  add("unroll_loops", kUnrollLoopsDescription, &unrollLoops);
  add("peephole", kPeepholeDescription, &peephole);
  add("lower_tuples", kLowerTuplesDescription, &lowerTuples);
  add("lower_local_objects", kLowerLocalObjectsDescription, &lowerLocalObjects);
  add("fuse_conv_activation", kFuseConvActivationDescription, &fuseConvActivation);
  add("freeze", kFreezeDescription, &freeze);
  add("remove_dropout", kRemoveDropoutDescription, &removeDropout);
  add("fold_conv_bn", kFoldConvBnDescription, &foldConvBn);
  add("fold_conv_add_mul", kFoldConvAddMulDescription, &foldConvAddMul);
  add("fold_linear_bn", kFoldLinearBnDescription, &foldLinearBn);
  add("fold_linear_mul", kFoldLinearMulDescription, &foldLinearMul);
  add("remove_mutation", kRemoveMutationDescription, &removeMutation);
  add("lower_nested_tensors", kLowerNestedTensorsDescription, &lowerNestedTensors);
}

void registerPasses() {
  static std::once_flag once;
  std::call_once(once, [] { registerPasses(PassRegistry::global()); });
}

const std::vector<std::string>& defaultPipeline() {
  // unroll_loops is left out: it is not idempotent (an unrolled loop with a dynamic trip
  // count is again a small for-loop), so it does not belong in a fixed-point pipeline.
  static const std::vector<std::string> pipeline = {"inline",
                                                    "peephole",
                                                    "constant_propagation",
                                                    "lower_tuples",
                                                    "common_subexpression_elimination",
                                                    "eliminate_dead_code"};
  return pipeline;
}

// Note [TORCHLESS_JIT]
// TORCHLESS_JIT=0 (or "false", "off") turns off every optional optimization: torchless::freeze
// and optimizeForInference then only do what freezing needs (attributes to constants,
// constant propagation inside the freeze pass) and skip remove_dropout and the folds;
// runtime-level fusions ask the same function. Read here, once per call (cheap: getenv).
bool jitOptimizationsEnabled() {
  const char* v = std::getenv("TORCHLESS_JIT");
  if (!v) return true;
  std::string s(v);
  return !(s == "0" || s == "false" || s == "off" || s == "OFF" || s == "False");
}

// ---- manager --------------------------------------------------------------------------------

PassManagerOptions PassManagerOptions::fromEnvironment() {
  PassManagerOptions o;
  if (const char* log = std::getenv("TORCHLESS_LOG")) {
    std::stringstream ss(log);
    std::string item;
    while (std::getline(ss, item, ',')) {
      while (!item.empty() && item.front() == ' ') item.erase(item.begin());
      while (!item.empty() && item.back() == ' ') item.pop_back();
      if (!item.empty()) o.logAfter.insert(item);
    }
  }
  if (const char* limit = std::getenv("TORCHLESS_PASS_LIMIT")) {
    char* end = nullptr;
    unsigned long long n = std::strtoull(limit, &end, 10);
    if (end == limit || *end != '\0')
      throw Error(fmt::format("TORCHLESS_PASS_LIMIT must be a number, not '{}'", limit));
    o.stopAfter = static_cast<size_t>(n);
  }
  return o;
}

PassManager::PassManager(const std::vector<std::string>& pipeline, PassManagerOptions options,
                         const PassRegistry& registry)
    : options_(std::move(options)) {
  for (const std::string& name : pipeline) pipeline_.push_back(&registry.expect(name));
  // A misspelt TORCHLESS_LOG name would otherwise log nothing, silently.
  for (const std::string& name : options_.logAfter) {
    if (name == "all" || name == "*" || registry.find(name)) continue;
    std::vector<std::string> known;
    for (const Pass* p : registry.all()) known.push_back(p->name());
    throw Error(fmt::format("TORCHLESS_LOG names an unknown pass '{}' (passes: all, {})", name,
                            fmt::join(known, ", ")));
  }
}

bool PassManager::runOnce(Graph& graph) {
  bool changed = false;
  std::ostream& log = options_.log ? *options_.log : std::cerr;
  for (Pass* pass : pipeline_) {
    if (options_.stopAfter && executions_ >= *options_.stopAfter) {
      stopped_ = true;
      return changed;
    }
    ++executions_;
    bool c = pass->run(graph);
    changed |= c;
    if (options_.verify) {
      try {
        verify(graph);
      } catch (Error& e) {
        e.addContext(fmt::format("after pass {} (execution {}), which left:\n{}", pass->name(),
                                 executions_, graph.toString()));
        throw;
      }
    }
    if (options_.logAfter.count(pass->name()) || options_.logAfter.count("all") ||
        options_.logAfter.count("*")) {
      log << "[" << executions_ << "] after " << pass->name() << (c ? "" : " (unchanged)") << ":\n"
          << graph.toString();
    }
  }
  return changed;
}

bool PassManager::run(Graph& graph) {
  if (!options_.fixedPoint) return runOnce(graph);
  bool changed = false;
  for (size_t round = 0; round < options_.maxRounds && !stopped_; ++round) {
    if (!runOnce(graph)) break;
    changed = true;
  }
  return changed;
}

}  // namespace torchless::passes
