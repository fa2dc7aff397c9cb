// The interpreter on graphs in PyTorch's text format: control flow, loops with carried values,
// lists, tuples, calls, attributes, the model's own exceptions, and unsupported operators.
#include "runtime/interpreter.h"
#include "core/error.h"
#include "core/storage.h"
#include "core/tensor.h"
#include "ir/function.h"
#include "ir/ir_parser.h"
#include "runtime/kernel.h"

#include <gtest/gtest.h>

using namespace torchless;

namespace {

class Interpreter : public ::testing::Test {
 protected:
  void SetUp() override { initKernels(); }

  static std::shared_ptr<Graph> parse(const char* text) {
    auto g = std::make_shared<Graph>();
    parseIR(text, g.get());
    return g;
  }
  static std::vector<IValue> run(const char* text, std::vector<IValue> inputs) {
    Code code(parse(text), "test");
    Stack stack = std::move(inputs);
    code.run(stack);
    return stack;
  }
};

// def f(n: int) -> int:
//   s = 0
//   for i in range(n):
//     if i % 2 == 0:
//       s += i
//   return s
// (printed by PyTorch 1.13, source comments dropped)
const char* kLoopSum = R"IR(
graph(%n.1 : int):
  %13 : int = prim::Constant[value=1]()
  %8 : int = prim::Constant[value=2]()
  %1 : bool = prim::Constant[value=1]()
  %s.1 : int = prim::Constant[value=0]()
  %s : int = prim::Loop(%n.1, %1, %s.1)
    block0(%i.1 : int, %s.11 : int):
      %9 : int = aten::remainder(%i.1, %8)
      %11 : bool = aten::eq(%9, %s.1)
      %s.9 : int = prim::If(%11)
        block0():
          %s.3 : int = aten::add(%s.11, %i.1)
          -> (%s.3)
        block1():
          -> (%s.11)
      -> (%1, %s.9)
  return (%s)
)IR";

TEST_F(Interpreter, LoopWithCarriedValueAndIf) {
  EXPECT_EQ(run(kLoopSum, {IValue(10)})[0].toInt(), 0 + 2 + 4 + 6 + 8);
  EXPECT_EQ(run(kLoopSum, {IValue(0)})[0].toInt(), 0);
}

// while loop: a trip count of INT64_MAX and a condition carried out of the body.
TEST_F(Interpreter, WhileLoopStopsOnCondition) {
  const char* text = R"IR(
graph(%x.1 : int):
  %max : int = prim::Constant[value=9223372036854775807]()
  %two : int = prim::Constant[value=2]()
  %lim : int = prim::Constant[value=100]()
  %c0 : bool = aten::lt(%x.1, %lim)
  %x : int = prim::Loop(%max, %c0, %x.1)
    block0(%i : int, %x.3 : int):
      %x.5 : int = aten::mul(%x.3, %two)
      %c : bool = aten::lt(%x.5, %lim)
      -> (%c, %x.5)
  return (%x)
)IR";
  EXPECT_EQ(run(text, {IValue(3)})[0].toInt(), 192);
  EXPECT_EQ(run(text, {IValue(500)})[0].toInt(), 500);
}

TEST_F(Interpreter, ListsAndTuples) {
  const char* text = R"IR(
graph(%a : int, %b : int):
  %l : int[] = prim::ListConstruct(%a, %b)
  %c : int = prim::Constant[value=7]()
  %l2 : int[] = aten::append(%l, %c)
  %n : int = aten::len(%l)
  %z : int = prim::Constant[value=-1]()
  %last : int = aten::__getitem__(%l, %z)
  %t : (int, int) = prim::TupleConstruct(%n, %last)
  %p : int, %q : int = prim::TupleUnpack(%t)
  %r : int = aten::sub(%p, %q)
  return (%r, %t)
)IR";
  auto out = run(text, {IValue(1), IValue(2)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].toInt(), 3 - 7);
  EXPECT_EQ(out[1].repr(), "(3, 7)");
}

TEST_F(Interpreter, RaiseExceptionCarriesModelMessageAndPlace) {
  const char* text = R"IR(
graph(%flag : bool):
  %msg : str = prim::Constant[value="bad flag"]()
  %cls : str = prim::Constant[value="builtins.RuntimeError"]()
  %one : int = prim::Constant[value=1]()
   = prim::If(%flag)
    block0():
       = prim::RaiseException(%msg, %cls) # m.py:12:6
      -> ()
    block1():
      -> ()
  return (%one)
)IR";
  EXPECT_EQ(run(text, {IValue(false)})[0].toInt(), 1);
  try {
    run(text, {IValue(true)});
    FAIL() << "expected the model's exception";
  } catch (const ModelError& e) {
    EXPECT_EQ(e.firstLine(), "m.py:12:6: RuntimeError: bad flag");
  }
}

TEST_F(Interpreter, PythonIntegerSemantics) {
  const char* text = R"IR(
graph(%a : int, %b : int):
  %q : int = aten::floordiv(%a, %b)
  %r : int = aten::remainder(%a, %b)
  %d : float = aten::div(%a, %b)
  return (%q, %r, %d)
)IR";
  auto out = run(text, {IValue(-7), IValue(2)});
  EXPECT_EQ(out[0].toInt(), -4);  // Python: -7 // 2 == -4
  EXPECT_EQ(out[1].toInt(), 1);   // Python: -7 % 2 == 1
  EXPECT_EQ(out[2].toDouble(), -3.5);
  try {
    run(text, {IValue(1), IValue(0)});
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("ZeroDivisionError"), std::string::npos) << e.what();
  }
}

TEST_F(Interpreter, UnsupportedOperatorsAreListedTogether) {
  const char* text = R"IR(
graph(%x : Tensor):
  %y : Tensor = aten::frobnicate_not_an_op(%x) # a.py:1:1
  %z : Tensor = aten::other_missing(%y) # a.py:2:1
  return (%z)
)IR";
  try {
    Code code(parse(text), "forward");
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.firstLine(), "2 unsupported operators in forward");
    EXPECT_NE(
        what.find("aten::frobnicate_not_an_op (no schema matches its inputs) used at a.py:1:1"),
        std::string::npos)
        << what;
    EXPECT_NE(what.find("a.py:2:1"), std::string::npos) << what;
  }
}

TEST_F(Interpreter, MethodCallsAndAttributes) {
  // class M: count : int; def bump(self, k): self.count = self.count + k; return self.count
  auto cls = ClassType::create("__torch__.M", true);
  cls->addAttribute("count", IntType::get());
  ParseIROptions opts;
  opts.resolver = [&](const std::string& n) -> TypePtr {
    return n == "__torch__.M" ? TypePtr(cls) : nullptr;
  };
  auto bumpGraph = std::make_shared<Graph>();
  parseIR(R"IR(
graph(%self : __torch__.M, %k : int):
  %c : int = prim::GetAttr[name="count"](%self)
  %c2 : int = aten::add(%c, %k)
   = prim::SetAttr[name="count"](%self, %c2)
  return (%c2)
)IR",
          bumpGraph.get(), opts);
  GraphFunction bump("__torch__.M.bump", bumpGraph,
                     GraphFunction::schemaFromGraph("bump", *bumpGraph));
  cls->addMethod(&bump);
  auto fwdGraph = std::make_shared<Graph>();
  parseIR(R"IR(
graph(%self : __torch__.M):
  %one : int = prim::Constant[value=1]()
  %a : int = prim::CallMethod[name="bump"](%self, %one)
  %b : int = prim::CallMethod[name="bump"](%self, %a)
  return (%b)
)IR",
          fwdGraph.get(), opts);
  GraphFunction forward("__torch__.M.forward", fwdGraph,
                        GraphFunction::schemaFromGraph("forward", *fwdGraph));
  cls->addMethod(&forward);
  auto obj = Object::create(cls);
  obj->setAttr("count", IValue(5));
  EXPECT_EQ(runMethod(obj, "forward", {}).toInt(), 12);  // 5+1=6, 6+6=12
  EXPECT_EQ(obj->getAttr("count").toInt(), 12);
}

// Note [Values die at their last use]: each intermediate of a chain is freed after the node that
// reads it last, so its block serves the next one. Kept to the return, the chain below would
// leave four 1 MiB blocks idle in the caching allocator after the call instead of one.
TEST_F(Interpreter, IntermediatesDieAtTheirLastUse) {
  Tensor x = Tensor::empty({262144}, ScalarType::Float);  // 1 MiB, a cached size class
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 1.0f;
  Code code(parse(R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %x, %one)
  %b : Tensor = aten::add(%a, %a, %one)
  %c : Tensor = aten::add(%b, %b, %one)
  %d : Tensor = aten::add(%c, %c, %one)
  %e : Tensor = aten::add(%d, %d, %one)
  return (%e)
)IR"),
            "chain");
  Storage::releaseCachedBlocks();
  Stack stack{IValue(x)};
  code.run(stack);
  EXPECT_EQ(stack.at(0).toTensor().data<float>()[7], 32.0f);
  EXPECT_EQ(Storage::cachedBytes(), size_t{1} << 20);
  Storage::releaseCachedBlocks();
}

// An argument whose last use is a method call is let go by the caller before the callee runs,
// so the callee's drops free it: with the caller holding `y` through the call, `b` would need a
// third block and two would be idle afterwards.
TEST_F(Interpreter, CallArgumentsDieInTheCallee) {
  auto cls = ClassType::create("__torch__.N", true);
  ParseIROptions opts;
  opts.resolver = [&](const std::string& n) -> TypePtr {
    return n == "__torch__.N" ? TypePtr(cls) : nullptr;
  };
  auto subGraph = std::make_shared<Graph>();
  parseIR(R"IR(
graph(%self : __torch__.N, %y : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%y, %y, %one)
  %b : Tensor = aten::add(%a, %a, %one)
  return (%b)
)IR",
          subGraph.get(), opts);
  GraphFunction sub("__torch__.N.sub", subGraph, GraphFunction::schemaFromGraph("sub", *subGraph));
  cls->addMethod(&sub);
  auto fwdGraph = std::make_shared<Graph>();
  parseIR(R"IR(
graph(%self : __torch__.N, %x : Tensor):
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::add(%x, %x, %one)
  %z : Tensor = prim::CallMethod[name="sub"](%self, %y)
  return (%z)
)IR",
          fwdGraph.get(), opts);
  GraphFunction forward("__torch__.N.forward", fwdGraph,
                        GraphFunction::schemaFromGraph("forward", *fwdGraph));
  cls->addMethod(&forward);
  Tensor x = Tensor::empty({262144}, ScalarType::Float);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 1.0f;
  Storage::releaseCachedBlocks();
  IValue z = runMethod(Object::create(cls), "forward", {IValue(x)});
  EXPECT_EQ(z.toTensor().data<float>()[7], 8.0f);
  EXPECT_EQ(Storage::cachedBytes(), size_t{1} << 20);
  Storage::releaseCachedBlocks();
}

// prim::tolist (Emitter::emitToList): nested lists of the annotated element type, read from a
// strided tensor; PyTorch's errors when the tensor's dtype or dimension differs from the
// annotation's.
TEST_F(Interpreter, ToList) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %d : int = prim::Constant[value=2]()
  %e : int = prim::Constant[value=1]()
  %a : float[][] = prim::tolist(%x, %d, %e)
  return (%a)
)IR";
  Tensor base = Tensor::fromVector(std::vector<float>{0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor t = base.asStrided({3, 2}, {1, 3}, 0);  // base.t()
  IValue out = run(ir, {IValue(t)})[0];
  const auto& rows = out.toList()->list;
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].toList()->list.size(), 2u);
  EXPECT_EQ(rows[1].toList()->list[0].toDouble(), 1.0);
  EXPECT_EQ(rows[2].toList()->list[1].toDouble(), 5.0);
  EXPECT_EQ(out.toList()->elementType->str(), "float[]");
  auto error = [&](const Tensor& x) {
    try {
      run(ir, {IValue(x)});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(Tensor::fromVector(std::vector<int64_t>{1, 2}, {1, 2}))
                .find("Output annotation element type and runtime tensor element type must match"),
            std::string::npos);
  EXPECT_NE(error(Tensor::fromVector(std::vector<float>{1, 2}, {2}))
                .find("Output annotation list dimension and runtime tensor dimension must match"),
            std::string::npos);
}

}  // namespace
