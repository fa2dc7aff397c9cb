// The pass registry and the PassManager: registration, unknown names, verification after
// each pass, logging, stop-after-N, fixed point.
#include "pass_test_util.h"
#include "passes/passes.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

namespace torchless::passes::testing {
namespace {

const char* kSimple = R"IR(
graph(%x : int):
  %1 : int = prim::Constant[value=1]()
  %2 : int = prim::Constant[value=2]()
  %y : int = aten::add(%1, %2)
  %z : int = aten::add(%x, %y)
  return (%z)
)IR";

TEST(PassRegistry, HasEveryPassWithADescription) {
  registerPasses();
  registerPasses();  // a second call does nothing
  std::vector<std::string> names;
  for (const Pass* p : PassRegistry::global().all()) {
    names.push_back(p->name());
    EXPECT_GT(p->description().size(), 80u) << p->name();
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "common_subexpression_elimination", "constant_propagation", "eliminate_dead_code",
                "fold_conv_add_mul", "fold_conv_bn", "fold_linear_bn", "fold_linear_mul", "freeze",
                "fuse_conv_activation", "inline", "lower_local_objects", "lower_nested_tensors",
                "lower_tuples", "peephole", "remove_dropout", "remove_mutation", "unroll_loops"}));
  for (const std::string& n : defaultPipeline()) EXPECT_NE(PassRegistry::global().find(n), nullptr);
}

TEST(PassRegistry, DuplicateAndUnknownNames) {
  PassRegistry r;
  registerPasses(r);
  EXPECT_THROW(
      r.add(std::make_unique<FunctionPass>("peephole", "again", [](Graph&) { return false; })),
      Error);
  EXPECT_EQ(r.find("dce"), nullptr);
  try {
    r.expect("dce");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown pass 'dce'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("eliminate_dead_code"), std::string::npos);
  }
  EXPECT_THROW(PassManager({"peephole", "nope"}, {}, r), Error);
}

// A registry of counting passes: "a" and "b" change the graph `budget` times in total.
struct Counting {
  PassRegistry registry;
  int budget = 0;
  std::vector<std::string> ran;
  Counting() {
    for (const char* name : {"a", "b"}) {
      registry.add(std::make_unique<FunctionPass>(name, "counts", [this, name](Graph&) {
        ran.push_back(name);
        if (budget == 0) return false;
        --budget;
        return true;
      }));
    }
  }
};

TEST(PassManager, StopsAfterN) {
  Counting c;
  auto g = parseGraph(kSimple);
  PassManagerOptions o;
  o.stopAfter = 3;
  o.fixedPoint = true;
  c.budget = 100;
  PassManager pm({"a", "b"}, o, c.registry);
  EXPECT_TRUE(pm.run(*g));
  EXPECT_EQ(c.ran, (std::vector<std::string>{"a", "b", "a"}));
  EXPECT_TRUE(pm.stopped());
  EXPECT_EQ(pm.executions(), 3u);
}

TEST(PassManager, RunsToAFixedPoint) {
  Counting c;
  c.budget = 3;
  auto g = parseGraph(kSimple);
  PassManagerOptions o;
  o.fixedPoint = true;
  PassManager pm({"a", "b"}, o, c.registry);
  EXPECT_TRUE(pm.run(*g));
  // Round 1: a, b change; round 2: a changes, b not; round 3: nothing changes.
  EXPECT_EQ(c.ran, (std::vector<std::string>{"a", "b", "a", "b", "a", "b"}));
  Counting once;
  once.budget = 3;
  PassManager single({"a", "b"}, {}, once.registry);
  single.run(*g);
  EXPECT_EQ(once.ran.size(), 2u);
}

TEST(PassManager, VerifiesAfterEachPassAndNamesTheCulprit) {
  PassRegistry r;
  r.add(std::make_unique<FunctionPass>("break_order", "moves a node after its user", [](Graph& g) {
    Node* first = g.nodes().front();
    first->moveAfter(g.nodes().back());
    return true;
  }));
  auto g = parseGraph(kSimple);
  PassManagerOptions o;
  o.verify = true;
  PassManager pm({"break_order"}, o, r);
  try {
    pm.run(*g);
    FAIL() << "expected the verifier to fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("after pass break_order"), std::string::npos) << e.what();
  }
}

TEST(PassManager, LogsAfterNamedPasses) {
  registerPasses();
  std::ostringstream log;
  PassManagerOptions o;
  o.logAfter = {"constant_propagation"};
  o.log = &log;
  auto g = parseGraph(kSimple);
  PassManager pm({"peephole", "constant_propagation", "eliminate_dead_code"}, o);
  pm.run(*g);
  std::string text = log.str();
  EXPECT_NE(text.find("[2] after constant_propagation:"), std::string::npos) << text;
  EXPECT_EQ(text.find("after peephole"), std::string::npos) << text;
  EXPECT_NE(text.find("prim::Constant[value=3]"), std::string::npos) << text;
}

TEST(PassManager, OptionsFromEnvironment) {
  ::setenv("TORCHLESS_LOG", "peephole, inline", 1);
  ::setenv("TORCHLESS_PASS_LIMIT", "4", 1);
  PassManagerOptions o = PassManagerOptions::fromEnvironment();
  EXPECT_EQ(o.logAfter, (std::set<std::string>{"inline", "peephole"}));
  EXPECT_EQ(o.stopAfter, std::optional<size_t>(4));
  ::setenv("TORCHLESS_PASS_LIMIT", "x", 1);
  EXPECT_THROW(PassManagerOptions::fromEnvironment(), Error);
  ::unsetenv("TORCHLESS_LOG");
  ::unsetenv("TORCHLESS_PASS_LIMIT");
}

}  // namespace
}  // namespace torchless::passes::testing
