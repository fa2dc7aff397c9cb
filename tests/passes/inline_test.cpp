// inline: hand-written golden cases (torch._C.parse_ir cannot make function constants or
// classes with methods, so there is no PyTorch-generated case).
#include "ir/function.h"
#include "pass_test_util.h"

#include <gtest/gtest.h>

namespace torchless::passes::testing {
namespace {

std::shared_ptr<Graph> parseWith(const std::string& text, const ParseIROptions& o) {
  auto g = std::make_shared<Graph>();
  parseIR(text, g.get(), o);
  verify(*g);
  return g;
}

struct Fixture {
  std::shared_ptr<ClassType> cls = ClassType::create("__torch__.M", true);
  ParseIROptions opts;
  std::vector<std::unique_ptr<GraphFunction>> fns;
  std::map<std::string, GraphFunction*> byName;

  Fixture() {
    cls->addAttribute("scale", IntType::get());
    opts.filename = "m.py";
    opts.resolver = [this](const std::string& n) -> TypePtr {
      if (n == "Function") return FunctionType::create(nullptr);  // set per test
      return n == "__torch__.M" ? TypePtr(cls) : nullptr;
    };
  }
  GraphFunction* function(const std::string& qualname, const std::string& text) {
    auto g = parseWith(text, opts);
    std::string name = qualname.substr(qualname.rfind('.') + 1);
    fns.push_back(
        std::make_unique<GraphFunction>(qualname, g, GraphFunction::schemaFromGraph(name, *g)));
    byName[qualname] = fns.back().get();
    return fns.back().get();
  }
  GraphFunction* method(const std::string& name, const std::string& text) {
    GraphFunction* f = function("__torch__.M." + name, text);
    cls->addMethod(f);
    return f;
  }
  // Parses `text`, then gives each `%fn_<name>` value the FunctionType of function <name>.
  std::shared_ptr<Graph> caller(const std::string& text) {
    auto g = std::make_shared<Graph>();
    std::unordered_map<std::string, Value*> vmap;
    parseIR(text, g.get(), vmap, opts);
    for (auto& [name, v] : vmap)
      if (name.rfind("fn_", 0) == 0)
        v->setType(FunctionType::create(byName.at("__torch__." + name.substr(3))));
    verify(*g);
    return g;
  }
};

// Runs inline on `g` and compares with `expected` parsed with the same options.
void expectInline(std::shared_ptr<Graph> g, const std::string& expected, const ParseIROptions& o) {
  bool changed = runPasses(*g, {"inline"});
  EXPECT_TRUE(changed);
  EXPECT_EQ(normalizeNames(g->toString(false)),
            normalizeNames(parseWith(expected, o)->toString(false)));
}

TEST(Inline, FunctionsRecursivelyWithNamesAndLocations) {
  Fixture f;
  f.function("__torch__.double", R"IR(
graph(%a : Tensor):
  %two : int = prim::Constant[value=2]() # m.py:2:8
  %r : Tensor = aten::mul(%a, %two) # m.py:2:4
  return (%r)
)IR");
  f.function("__torch__.quad", R"IR(
graph(%b : Tensor):
  %fn_double : Function = prim::Constant[name="double"]()
  %c : Tensor = prim::CallFunction(%fn_double, %b) # m.py:5:4
  %d : Tensor = prim::CallFunction(%fn_double, %c) # m.py:5:11
  return (%d)
)IR");
  // `quad`'s body refers to `double` through a FunctionType set on its constant.
  {
    auto& g = *f.byName["__torch__.quad"]->graph();
    for (Node* n : g.nodes())
      if (n->kind() == prim::Constant)
        n->output()->setType(FunctionType::create(f.byName["__torch__.double"]));
  }
  auto g = f.caller(R"IR(
graph(%x : Tensor):
  %fn_quad : Function = prim::Constant[name="quad"]()
  %y : Tensor = prim::CallFunction(%fn_quad, %x) # m.py:9:4
  return (%y)
)IR");
  EXPECT_TRUE(runPasses(*g, {"inline"}));
  std::string got = g->toString(true);
  EXPECT_EQ(got, R"IR(graph(%x : Tensor):
  %fn_quad : Function = prim::Constant[name="quad"]()
  %fn_double : Function = prim::Constant[name="double"]()
  %two.1 : int = prim::Constant[value=2]() # m.py:2:8
  %c : Tensor = aten::mul(%x, %two.1) # m.py:2:4
  %two : int = prim::Constant[value=2]() # m.py:2:8
  %y : Tensor = aten::mul(%c, %two) # m.py:2:4
  return (%y)
)IR") << got;
  // The function constants are dead now; eliminate_dead_code removes them.
  EXPECT_TRUE(runPasses(*g, {"eliminate_dead_code"}));
  EXPECT_EQ(g->toString(false).find("Function"), std::string::npos);
}

TEST(Inline, MethodsOnClassReceivers) {
  Fixture f;
  f.method("scaled", R"IR(
graph(%self : __torch__.M, %v : int):
  %s : int = prim::GetAttr[name="scale"](%self)
  %r : int = aten::mul(%v, %s)
  return (%r)
)IR");
  auto g = parseWith(R"IR(
graph(%self : __torch__.M, %x : int):
  %y : int = prim::CallMethod[name="scaled"](%self, %x)
  %z : int = prim::CallMethod[name="scaled"](%self, %y)
  return (%z)
)IR",
                     f.opts);
  expectInline(g, R"IR(
graph(%self : __torch__.M, %x : int):
  %s.1 : int = prim::GetAttr[name="scale"](%self)
  %y : int = aten::mul(%x, %s.1)
  %s : int = prim::GetAttr[name="scale"](%self)
  %z : int = aten::mul(%y, %s)
  return (%z)
)IR",
               f.opts);
}

TEST(Inline, LeavesInterfaceCallsAndGraphsWithoutCalls) {
  const char* noCalls = R"IR(
graph(%x : int):
  %y : int = aten::mul(%x, %x)
  return (%y)
)IR";
  expectPass("inline", noCalls, noCalls);
  // A method the receiver's class does not have (or an unknown receiver) stays a call.
  Fixture f;
  auto g = parseWith(R"IR(
graph(%self : __torch__.M, %x : int):
  %y : int = prim::CallMethod[name="missing"](%self, %x)
  return (%y)
)IR",
                     f.opts);
  std::string before = g->toString(false);
  EXPECT_FALSE(runPasses(*g, {"inline"}));
  EXPECT_EQ(g->toString(false), before);
}

TEST(Inline, InsideBlocks) {
  Fixture f;
  f.method("inc", R"IR(
graph(%self : __torch__.M, %v : int):
  %one : int = prim::Constant[value=1]()
  %r : int = aten::add(%v, %one)
  return (%r)
)IR");
  auto g = parseWith(R"IR(
graph(%self : __torch__.M, %x : int, %c : bool):
  %y : int = prim::If(%c)
    block0():
      %a : int = prim::CallMethod[name="inc"](%self, %x)
      -> (%a)
    block1():
      -> (%x)
  return (%y)
)IR",
                     f.opts);
  expectInline(g, R"IR(
graph(%self : __torch__.M, %x : int, %c : bool):
  %y : int = prim::If(%c)
    block0():
      %one : int = prim::Constant[value=1]()
      %a : int = aten::add(%x, %one)
      -> (%a)
    block1():
      -> (%x)
  return (%y)
)IR",
               f.opts);
}

}  // namespace
}  // namespace torchless::passes::testing
