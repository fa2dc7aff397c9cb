// One case per diagnostic kind the IR emitter gives, with TorchScript's messages.
#include "frontend/compiler.h"
#include "frontend/parser.h"
#include "ir/verifier.h"

#include <gtest/gtest.h>

#include <map>

namespace torchless::frontend {
namespace {

/// Compiles every def of `text` (m.py), the last one first; returns the error text or
/// "no error". Functions resolve among themselves by name.
std::string compileError(const std::string& text, const TypePtr& selfType = nullptr) {
  Module m = parseFile("m.py", text);
  CompilationUnit unit;
  std::map<std::string, Def> defs;
  for (Stmt s : m.body())
    if (s.kind() == TreeKind::Def) defs.emplace(Def(s.tree()).name().name(), Def(s.tree()));
  CompileEnv env;
  env.unit = &unit;
  std::function<GraphFunction*(const std::string&)> resolve =
      [&](const std::string& q) -> GraphFunction* {
    std::string name = q.substr(q.rfind('.') + 1);
    if (GraphFunction* f = unit.findFunction("__torch__." + name)) return f;
    auto it = defs.find(name);
    if (it == defs.end()) return nullptr;
    return unit.addFunction(compileFunction(it->second, "__torch__." + name, nullptr, env));
  };
  env.resolveFunction = resolve;
  try {
    Def last = Def(m.body()[m.body().size() - 1].tree());
    auto fn = compileFunction(last, "__torch__.f", selfType, env);
    verify(*fn->graph());
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string firstLine(const std::string& text, const TypePtr& selfType = nullptr) {
  std::string all = compileError(text, selfType);
  return all.substr(0, all.find('\n'));
}

TEST(frontend_emitter_diagnostics, UndefinedValue) {
  EXPECT_EQ(compileError("def f(x: int) -> int:\n  return foo + x\n"),
            "m.py:2:10: undefined value foo\n"
            "  File \"m.py\", line 2\n"
            "  return foo + x\n"
            "         ~~~ <--- HERE\n"
            "  while compiling __torch__.f");
}

TEST(frontend_emitter_diagnostics, ArgumentTypeMismatch) {
  EXPECT_EQ(firstLine("def g(a: int, b: int) -> int:\n  return a\n"
                      "def f(x: int) -> int:\n  return g(x, \"s\")\n"),
            "m.py:4:10: g(int a, int b) -> int:");
  std::string all = compileError(
      "def g(a: int, b: int) -> int:\n  return a\n"
      "def f(x: int) -> int:\n  return g(x, \"s\")\n");
  EXPECT_NE(
      all.find("Expected a value of type 'int' for argument 'b' but instead found type 'str'."),
      std::string::npos)
      << all;
}

TEST(frontend_emitter_diagnostics, NoMatchingOverload) {
  std::string all = compileError("def f(x: Tensor) -> Tensor:\n  return torch.add(x, \"a\")\n");
  EXPECT_EQ(all.substr(0, all.find('\n')), "m.py:2:10: Arguments for call are not valid.");
  EXPECT_NE(all.find("The following variants are available:"), std::string::npos) << all;
  EXPECT_NE(all.find("  aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor:\n"
                     "  Expected a value of type 'Tensor' for argument 'other' but instead found "
                     "type 'str'."),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("The original call is"), std::string::npos) << all;
}

TEST(frontend_emitter_diagnostics, UnknownBuiltin) {
  EXPECT_EQ(firstLine("def f(x: Tensor) -> Tensor:\n  return torch.no_such_op(x)\n"),
            "m.py:2:10: Unknown builtin op: aten::no_such_op.");
}

TEST(frontend_emitter_diagnostics, NotDefinedInBranch) {
  EXPECT_EQ(firstLine("def f(c: bool) -> int:\n  if c:\n    y = 1\n  return y\n"),
            "m.py:4:10: y is not defined in the false branch");
}

TEST(frontend_emitter_diagnostics, ReassignDifferentType) {
  EXPECT_EQ(firstLine("def f(c: bool) -> int:\n  y = 1\n  if c:\n    y = \"a\"\n  return 0\n"),
            "m.py:4:5: Variable 'y' previously had type int but is now being assigned to a value "
            "of type str");
}

TEST(frontend_emitter_diagnostics, ReturnTypeMismatch) {
  EXPECT_EQ(firstLine("def f(x: int) -> str:\n  return x\n"),
            "m.py:2:3: Return value was annotated as having type str but is actually of type int");
}

TEST(frontend_emitter_diagnostics, BranchTypeMismatch) {
  EXPECT_EQ(
      firstLine("def f(c: bool) -> int:\n  if c:\n    y = 1\n  else:\n    y = \"s\"\n  return y\n"),
      "m.py:6:10: Type mismatch: y is set to type int in the true branch and type str in the "
      "false branch");
}

TEST(frontend_emitter_diagnostics, UnsupportedConstruct) {
  EXPECT_EQ(firstLine("def f(x: int) -> int:\n  def g(y: int) -> int:\n    return y\n  return x\n"),
            "m.py:2:3: nested function definitions are only supported for fork, which torchless "
            "does not compile");
}

// PyTorch 1.13's Python frontend rejects these (torch/jit/frontend.py, build_ListComp and
// build_DictComp) with the same messages.
TEST(frontend_emitter_diagnostics, ComprehensionIfs) {
  EXPECT_EQ(firstLine("def f(xs: List[int]) -> List[int]:\n  return [x for x in xs if x > 0]\n"),
            "m.py:2:10: Comprehension ifs are not supported yet");
  EXPECT_EQ(firstLine("def f(xs: List[str]) -> Dict[str, int]:\n"
                      "  return {k: 1 for k in xs if k != 'a'}\n"),
            "m.py:2:10: Comprehension ifs are not supported yet");
  EXPECT_EQ(firstLine("def f(xs: List[int]) -> List[int]:\n  return [x for x in xs for y in xs]\n"),
            "m.py:2:10: Only a single generator is currently supported");
}

TEST(frontend_emitter_diagnostics, ReturnInUnrolledLoop) {
  EXPECT_EQ(firstLine("def f(t: Tuple[int, int]) -> int:\n  for v in t:\n    if v > 1:\n"
                      "      return v\n  return 0\n"),
            "m.py:2:3: return statements are not supported yet in unrolled loops (over tuples "
            "and module lists)");
}

TEST(frontend_emitter_diagnostics, MissingAttribute) {
  auto cls = ClassType::create("__torch__.M", true);
  cls->addAttribute("training", BoolType::get());
  EXPECT_EQ(
      firstLine("def forward(self: __torch__.M, x: Tensor) -> Tensor:\n  return self.w\n", cls),
      "m.py:2:10: Module '__torch__.M' has no attribute 'w' ");
}

TEST(frontend_emitter_diagnostics, TooManyArguments) {
  std::string all = compileError(
      "def g(a: int) -> int:\n  return a\n"
      "def f(x: int) -> int:\n  return g(x, x)\n");
  EXPECT_NE(all.find("Expected at most 1 arguments but found 2 positional arguments."),
            std::string::npos)
      << all;
}

// Methods: attribute loads, stores and calls on a hand-built class type.
TEST(frontend_emitter_methods, GetAttrSetAttrLocations) {
  auto cls = ClassType::create("__torch__.M", true);
  cls->addAttribute("training", BoolType::get());
  cls->addAttribute("count", IntType::get());
  Module m = parseFile("m.py",
                       "def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
                       "  self.count = self.count + 1\n"
                       "  return torch.mul(x, self.count)\n");
  CompileEnv env;
  auto fn = compileFunction(Def(m.body()[0].tree()), "__torch__.M.forward", cls, env);
  verify(*fn->graph());
  std::string text = fn->graph()->toString();
  EXPECT_NE(text.find("prim::SetAttr[name=\"count\"](%self"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::mul(%x.1, %"), std::string::npos) << text;
  // Locations: 1-based line, 0-based column, as PyTorch prints them.
  EXPECT_NE(text.find("aten::add(%"), std::string::npos) << text;
  EXPECT_NE(text.find("# m.py:2:15"), std::string::npos) << text;
  EXPECT_EQ(fn->schema().str(), "forward(__torch__.M self, Tensor x) -> Tensor");
}

}  // namespace
}  // namespace torchless::frontend
