// canonicalizeOps: the rewrite PyTorch's executor requires (Note [0-dim tensor constants] in
// runtime/canonicalize_ops.h). The dtypes asserted are PyTorch 1.13's for a traced
// `x + 2.5` / `torch.div(x, 2.5, rounding_mode="floor")` with int64 `x`, saved and reloaded
// (torch.jit.save / torch.jit.load): float32 for add, float64 for div.Tensor_mode.
#include "runtime/canonicalize_ops.h"
#include "ir/ir_parser.h"
#include "runtime/interpreter.h"
#include "runtime/kernel.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace torchless;

namespace {

// What torch.jit.trace records for lambda x: (x + 2.5, torch.div(x, 2.5, rounding_mode="floor"))
const char* kTraced = R"IR(
graph(%x : Long(5, strides=[1], requires_grad=0, device=cpu)):
  %1 : Double(requires_grad=0, device=cpu) = prim::Constant[value={2.5}]()
  %2 : int = prim::Constant[value=1]()
  %3 : Tensor = aten::add(%x, %1, %2)
  %4 : str = prim::Constant[value="floor"]()
  %5 : Tensor = aten::div(%x, %1, %4)
  %6 : (Tensor, Tensor) = prim::TupleConstruct(%3, %5)
  return (%6)
)IR";

std::shared_ptr<Graph> parse(const char* text) {
  auto g = std::make_shared<Graph>();
  parseIR(text, g.get());
  return g;
}

std::string print(const Graph& g) {
  std::ostringstream out;
  out << g;
  return out.str();
}

TEST(CanonicalizeOps, ZeroDimConstantOfAddBecomesANumberAsInPyTorchsExecutor) {
  initKernels();
  Code code(parse(kTraced), "traced");
  Stack stack{IValue(Tensor::fromVector(std::vector<int64_t>{0, 1, 2, 3, 4}, {5}))};
  code.run(stack);
  ASSERT_EQ(stack.size(), 1u);
  const auto& outs = stack[0].toTuple()->elements;
  EXPECT_EQ(outs[0].toTensor().dtype(), ScalarType::Float);   // add.Scalar: the default dtype
  EXPECT_EQ(outs[1].toTensor().dtype(), ScalarType::Double);  // div.Tensor_mode: not rewritten
  EXPECT_DOUBLE_EQ(outs[0].toTensor().doubleAt(4), 6.5);
}

TEST(CanonicalizeOps, CopiesOnlyWhenItChangesSomethingAndNeverEditsTheGraph) {
  initKernels();
  auto g = parse(kTraced);
  const std::string before = print(*g);
  auto rewritten = canonicalizeOps(g);
  EXPECT_NE(rewritten.get(), g.get());
  EXPECT_EQ(print(*g), before);
  EXPECT_NE(print(*rewritten).find("float = prim::Constant[value=2.5]()"), std::string::npos)
      << *rewritten;

  auto plain = parse(R"IR(
graph(%x : Tensor, %y : Tensor):
  %2 : int = prim::Constant[value=1]()
  %3 : Tensor = aten::add(%x, %y, %2)
  return (%3)
)IR");
  EXPECT_EQ(canonicalizeOps(plain).get(), plain.get());
}

}  // namespace
