// The oracle for passes: every graph here runs in the interpreter unoptimized and after the
// default pipeline (to a fixed point, verified after each pass), and both must give the same
// outputs for every input (style.md item 6: unoptimized for optimized).
#include "pass_test_util.h"
#include "runtime/interpreter.h"

#include <gtest/gtest.h>

namespace torchless::passes::testing {
namespace {

std::vector<IValue> runGraph(const std::shared_ptr<Graph>& g, const std::vector<IValue>& inputs) {
  Code code(g, "f");
  Stack stack(inputs.begin(), inputs.end());
  code.run(stack);
  return stack;
}

void expectSameResults(const std::string& text, const std::vector<std::vector<IValue>>& inputs) {
  initKernels();
  auto plain = parseGraph(text);
  auto optimized = parseGraph(text);
  registerPasses();
  PassManagerOptions o;
  o.verify = true;
  o.fixedPoint = true;
  PassManager(defaultPipeline(), o).run(*optimized);
  for (const auto& in : inputs) {
    std::vector<IValue> a = runGraph(plain, in);
    std::vector<IValue> b = runGraph(optimized, in);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(a[i].equals(b[i]))
          << "output " << i << ": " << a[i].repr() << " vs " << b[i].repr() << "\noptimized:\n"
          << optimized->toString();
  }
}

TEST(OptimizedVsUnoptimized, ArithmeticBranchesLoopsTuplesLists) {
  expectSameResults(R"IR(
graph(%x : int, %n : int, %c : bool):
  %true : bool = prim::Constant[value=1]()
  %0 : int = prim::Constant[value=0]()
  %1 : int = prim::Constant[value=1]()
  %2 : int = prim::Constant[value=2]()
  %3 : int = prim::Constant[value=3]()
  %none : NoneType = prim::Constant()
  %a : int = aten::add(%x, %0)
  %b : int = aten::mul(%a, %1)
  %k : int = aten::add(%2, %3)
  %isn : bool = aten::__is__(%b, %none)
  %t : (int, int) = prim::If(%c)
    block0():
      %t1 : (int, int) = prim::TupleConstruct(%b, %k)
      -> (%t1)
    block1():
      %t2 : (int, int) = prim::TupleConstruct(%k, %b)
      -> (%t2)
  %p : int, %q : int = prim::TupleUnpack(%t)
  %acc : (int, int) = prim::TupleConstruct(%p, %q)
  %res : (int, int) = prim::Loop(%3, %true, %acc)
    block0(%i : int, %s : (int, int)):
      %u : int, %v : int = prim::TupleUnpack(%s)
      %u2 : int = aten::add(%u, %i)
      %v2 : int = aten::mul(%v, %2)
      %s2 : (int, int) = prim::TupleConstruct(%u2, %v2)
      -> (%true, %s2)
  %r1 : int, %r2 : int = prim::TupleUnpack(%res)
  %m : int = prim::Loop(%n, %true, %r1)
    block0(%j : int, %w : int):
      %w2 : int = aten::add(%w, %j)
      -> (%true, %w2)
  %l : int[] = prim::ListConstruct(%m, %r2, %k)
  %len : int = aten::len(%l)
  %out : int = aten::add(%m, %len)
  return (%out, %r2, %isn)
)IR",
                    {{IValue(int64_t(5)), IValue(int64_t(0)), IValue(true)},
                     {IValue(int64_t(-3)), IValue(int64_t(4)), IValue(false)},
                     {IValue(int64_t(7)), IValue(int64_t(11)), IValue(true)},
                     {IValue(int64_t(1)), IValue(int64_t(20)), IValue(false)}});
}

}  // namespace
}  // namespace torchless::passes::testing
