// Export preparation's list lowering (Note [List writes] in convert/onnx/prepare.cpp), in
// PyTorch's graph text: a graph as torch.jit.script prints it (before), the graph after
// carryListWrites (golden text, names normalised), and the numbers: both run in the interpreter
// on the same input and agree exactly.
#include "../passes/pass_test_util.h"

#include "convert/onnx/prepare.h"
#include "ir/function.h"
#include "runtime/interpreter.h"
#include "runtime/kernel.h"

#include <gtest/gtest.h>

namespace torchless::passes::testing {
namespace {

Tensor runOnRamp(const std::shared_ptr<Graph>& g) {
  initKernels();
  Tensor x = Tensor::empty({3}, ScalarType::Float);
  for (int64_t i = 0; i < 3; ++i) x.data<float>()[i] = static_cast<float>(i);
  GraphFunction fn("f", g->copy(), GraphFunction::schemaFromGraph("f", *g));
  return runFunction(fn, {IValue(x)}).toTensor();
}

// l = [x, x * 2.0]
// for i in range(2):
//     l.insert(0, x + float(i))
//     l.pop()
// return torch.stack(l, 0) * float(len(l))
TEST(PrepareLists, WritesInALoopRebindTheListAndCarryIt) {
  const char* before = R"IR(
graph(%x.1 : Tensor):
  %21 : int = prim::Constant[value=-1]()
  %17 : int = prim::Constant[value=1]()
  %9 : bool = prim::Constant[value=1]()
  %3 : float = prim::Constant[value=2.]()
  %6 : int = prim::Constant[value=2]()
  %12 : int = prim::Constant[value=0]()
  %4 : Tensor = aten::mul(%x.1, %3)
  %l.1 : Tensor[] = prim::ListConstruct(%x.1, %4)
   = prim::Loop(%6, %9)
    block0(%i.1 : int):
      %16 : float = aten::Float(%i.1)
      %18 : Tensor = aten::add(%x.1, %16, %17)
       = aten::insert(%l.1, %12, %18)
      %22 : Tensor = aten::pop(%l.1, %21)
      -> (%9)
  %n.1 : int = aten::len(%l.1)
  %26 : Tensor = aten::stack(%l.1, %12)
  %29 : float = aten::Float(%n.1)
  %30 : Tensor = aten::mul(%26, %29)
  return (%30)
)IR";
  // Each write is followed by a copy (aten::list) that the readers after it read; the list is
  // loop-carried, and what follows the loop reads the loop's output.
  const char* after = R"IR(
graph(%x.1 : Tensor):
  %21 : int = prim::Constant[value=-1]()
  %17 : int = prim::Constant[value=1]()
  %9 : bool = prim::Constant[value=1]()
  %3 : float = prim::Constant[value=2.]()
  %6 : int = prim::Constant[value=2]()
  %12 : int = prim::Constant[value=0]()
  %4 : Tensor = aten::mul(%x.1, %3)
  %l.1 : Tensor[] = prim::ListConstruct(%x.1, %4)
  %l.2 : Tensor[] = prim::Loop(%6, %9, %l.1)
    block0(%i.1 : int, %l.3 : Tensor[]):
      %16 : float = aten::Float(%i.1)
      %18 : Tensor = aten::add(%x.1, %16, %17)
       = aten::insert(%l.3, %12, %18)
      %l.4 : Tensor[] = aten::list(%l.3)
      %22 : Tensor = aten::pop(%l.4, %21)
      %l.5 : Tensor[] = aten::list(%l.4)
      -> (%9, %l.5)
  %n.1 : int = aten::len(%l.2)
  %26 : Tensor = aten::stack(%l.2, %12)
  %29 : float = aten::Float(%n.1)
  %30 : Tensor = aten::mul(%26, %29)
  return (%30)
)IR";
  auto g = parseGraph(before);
  auto original = g->copy();
  onnx_export::carryListWrites(*g);
  verify(*g);
  const std::string got = normalizeNames(g->toString(false));
  EXPECT_EQ(got, canonical(after)) << got;
  Tensor a = runOnRamp(original), b = runOnRamp(g);
  ASSERT_EQ(a.sizes(), b.sizes());
  ASSERT_EQ(a.sizes(), (std::vector<int64_t>{2, 3}));
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.doubleAt(i), b.doubleAt(i)) << i;
  EXPECT_EQ(b.doubleAt(0), 2.0);  // (x + 1) * 2, as PyTorch: [[2, 4, 6], [0, 2, 4]]
  EXPECT_EQ(b.doubleAt(3), 0.0);
}

}  // namespace
}  // namespace torchless::passes::testing
