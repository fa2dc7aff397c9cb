// fuse_conv_activation (execution-only conv + residual + activation fusion): which chains it
// rewrites, which it must leave alone, that the fused graph computes what the original did
// (1e-5), TORCHLESS_JIT=0, and that the interpreter's execution-graph hook compiles a rewritten
// copy while the function's own graph (what save and export see) keeps only PyTorch ops.
#include "pass_test_util.h"

#include "ir/function.h"
#include "ops/elementwise.h"
#include "passes/passes.h"
#include "runtime/interpreter.h"
#include "runtime/kernel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>

namespace torchless::passes::testing {
namespace {

Tensor filled(const IntList& sizes, double lo, double hi, uint32_t seed) {
  Tensor t = Tensor::empty(sizes, ScalarType::Float);
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(lo + (hi - lo) * ((s >> 8) / double(1 << 24)));
  }
  return t;
}

// Replaces graph input `name` by a prim::Constant holding t.
void bindConstant(Graph& g, const std::string& name, const Tensor& t) {
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    Value* in = g.inputs()[i];
    if (in->debugName() != name) continue;
    WithInsertPoint guard(g.nodes().front());
    Value* c = g.insertConstant(IValue(t));
    in->replaceAllUsesWith(c);
    g.eraseInput(i);
    return;
  }
  FAIL() << "no input " << name;
}

IValue run(const std::shared_ptr<Graph>& g, const std::vector<IValue>& args) {
  initKernels();
  GraphFunction fn("f", g->copy(), GraphFunction::schemaFromGraph("f", *g));
  return runFunction(fn, args);
}

void expectClose(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.sizes(), b.sizes());
  Tensor x = a.contiguous(), y = b.contiguous();
  for (int64_t i = 0; i < x.numel(); ++i)
    ASSERT_NEAR(x.doubleAt(i), y.doubleAt(i), tol * (1 + std::fabs(y.doubleAt(i)))) << "at " << i;
}

std::vector<std::string> kinds(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes())
    if (n->kind() != prim::Constant && n->kind() != prim::ListConstruct)
      out.push_back(n->kind().toQualString());
  return out;
}

const char* kHeader = R"IR(
  %i1 : int = prim::Constant[value=1]()
  %i0 : int = prim::Constant[value=0]()
  %f0 : float = prim::Constant[value=0.]()
  %f6 : float = prim::Constant[value=6.]()
  %none : NoneType = prim::Constant()
  %false : bool = prim::Constant[value=0]()
  %one : int[] = prim::ListConstruct(%i1, %i1)
  %zero : int[] = prim::ListConstruct(%i0, %i0))IR";

// `body` uses %x (input [2, 4, 7, 7]), %r (residual [2, 6, 7, 7]), %w ([6, 4, 3, 3]) and %b.
std::shared_ptr<Graph> graphOf(const std::string& body, bool constantWeight = true) {
  std::string text =
      "graph(%x : Tensor, %r : Tensor, %w : Tensor, %b : Tensor):" + std::string(kHeader) + "\n" +
      body;
  auto g = parseGraph(text);
  if (constantWeight) bindConstant(*g, "w", filled({6, 4, 3, 3}, -0.4, 0.4, 1));
  bindConstant(*g, "b", filled({6}, -1, 1, 2));
  return g;
}

std::vector<IValue> args(const Graph& g) {
  std::vector<IValue> a{IValue(filled({2, 4, 7, 7}, -2, 2, 3)),
                        IValue(filled({2, 6, 7, 7}, -2, 2, 4))};
  if (g.inputs().size() == 3) a.emplace_back(filled({6, 4, 3, 3}, -0.4, 0.4, 1));
  return a;
}

// Fuses `body`; checks the node kinds left and that the result is unchanged (1e-5).
void expectFused(const std::string& body, const std::vector<std::string>& wantKinds,
                 bool constantWeight = true) {
  auto g = graphOf(body, constantWeight);
  auto before = g->copy();
  const bool changed = runPasses(*g, {"fuse_conv_activation"});
  EXPECT_EQ(kinds(*g), wantKinds) << g->toString(false);
  EXPECT_TRUE(changed);
  auto a = args(*before);
  IValue got = run(g, a), want = run(before, a);
  if (want.isTensor()) return expectClose(got.toTensor(), want.toTensor());
  const auto& gs = got.toTuple()->elements;
  const auto& ws = want.toTuple()->elements;
  ASSERT_EQ(gs.size(), ws.size());
  for (size_t i = 0; i < ws.size(); ++i) expectClose(gs[i].toTensor(), ws[i].toTensor());
}

const std::vector<std::string> kFusedOnly = {"torchless::conv_fused"};

TEST(FuseConvActivation, ConvAddReluInPlaceChain) {
  expectFused(R"IR(
  %c : Tensor = aten::_convolution(%x, %w, %b, %one, %one, %one, %false, %zero, %i1, %false, %false, %false, %false)
  %s : Tensor = aten::add_(%c, %r, %i1)
  %y : Tensor = aten::relu_(%s)
  return (%y))IR",
              kFusedOnly);
}

TEST(FuseConvActivation, EachActivation) {
  const char* acts[] = {
      "%y : Tensor = aten::relu(%c)",
      "%y : Tensor = aten::hardtanh_(%c, %f0, %f6)",
      "%y : Tensor = aten::hardtanh(%c, %f0, %f6)",
      "%y : Tensor = aten::clamp(%c, %f0, %none)",
      "%y : Tensor = aten::clamp_(%c, %none, %f6)",
      "%y : Tensor = aten::sigmoid(%c)",
      "%y : Tensor = aten::silu_(%c)",
      "%y : Tensor = aten::hardswish(%c)",
      "%y : Tensor = aten::relu6(%c)",
      "%a : str = prim::Constant[value=\"none\"]()\n  %y : Tensor = aten::gelu(%c, %a)",
      "%a : str = prim::Constant[value=\"tanh\"]()\n  %y : Tensor = aten::gelu(%c, %a)",
  };
  for (const char* act : acts) {
    SCOPED_TRACE(act);
    expectFused(std::string("  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %one, %one, %i1)\n  ") +
                    act + "\n  return (%y)",
                kFusedOnly);
  }
}

TEST(FuseConvActivation, ResidualOnEitherSideOfOutOfPlaceAdd) {
  expectFused(R"IR(
  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %one, %one, %i1)
  %s : Tensor = aten::add(%r, %c, %i1)
  %y : Tensor = aten::hardtanh(%s, %f0, %f6)
  return (%y))IR",
              kFusedOnly);
  // add_ writing the residual is not fused (the residual would change): conv alone fuses.
  expectFused(R"IR(
  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %one, %one, %i1)
  %s : Tensor = aten::add_(%r, %c, %i1)
  return (%s))IR",
              {"torchless::conv_fused", "aten::add_"});
}

TEST(FuseConvActivation, LeavesObservableIntermediatesAlone) {
  // The conv output is also returned: the relu must stay separate.
  expectFused(R"IR(
  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %one, %one, %i1)
  %y : Tensor = aten::relu(%c)
  return (%y, %c))IR",
              {"torchless::conv_fused", "aten::relu"});
  // alpha 2 is not a plain residual add; a clamp with a tensor bound is not fused.
  expectFused(R"IR(
  %i2 : int = prim::Constant[value=2]()
  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %one, %one, %i1)
  %s : Tensor = aten::add(%c, %r, %i2)
  %y : Tensor = aten::clamp(%s, %r, %none)
  return (%y))IR",
              {"torchless::conv_fused", "aten::add", "aten::clamp"});
}

TEST(FuseConvActivation, NonConstantWeightFusesButIsNotCached) {
  auto g = graphOf(R"IR(
  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %one, %one, %i1)
  %y : Tensor = aten::relu(%c)
  return (%y))IR",
                   /*constantWeight=*/false);
  EXPECT_TRUE(runPasses(*g, {"fuse_conv_activation"}));
  const Node* fused = nullptr;
  for (const Node* n : g->nodes())
    if (n->kind().toQualString() == std::string("torchless::conv_fused")) fused = n;
  ASSERT_NE(fused, nullptr);
  auto flag = toIValue(fused->input(11));
  ASSERT_TRUE(flag.has_value());
  EXPECT_FALSE(flag->toBool());
  // A bare conv with an input weight has nothing to gain: unchanged.
  auto bare = graphOf(R"IR(
  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %one, %one, %i1)
  return (%c))IR",
                      false);
  EXPECT_FALSE(runPasses(*bare, {"fuse_conv_activation"}));
}

TEST(FuseConvActivation, TransposedAndStringPaddingConvsAreLeftAlone) {
  auto g = parseGraph(R"IR(
graph(%x : Tensor, %w : Tensor):
  %i1 : int = prim::Constant[value=1]()
  %true : bool = prim::Constant[value=1]()
  %false : bool = prim::Constant[value=0]()
  %one : int[] = prim::ListConstruct(%i1, %i1)
  %same : str = prim::Constant[value="same"]()
  %c : Tensor = aten::_convolution(%x, %w, %w, %one, %one, %one, %true, %one, %i1, %false, %false, %false, %false)
  %d : Tensor = aten::relu(%c)
  %e : Tensor = aten::conv2d(%x, %w, %w, %one, %same, %one, %i1)
  %f : Tensor = aten::relu(%e)
  return (%d, %f))IR");
  EXPECT_FALSE(runPasses(*g, {"fuse_conv_activation"}));
}

TEST(FuseConvActivation, DisabledByTorchlessJit0) {
  auto g = graphOf(R"IR(
  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %one, %one, %i1)
  %y : Tensor = aten::relu(%c)
  return (%y))IR");
  setenv("TORCHLESS_JIT", "0", 1);
  const bool changed = runPasses(*g, {"fuse_conv_activation"});
  unsetenv("TORCHLESS_JIT");
  EXPECT_FALSE(changed);
  EXPECT_EQ(kinds(*g), (std::vector<std::string>{"aten::conv2d", "aten::relu"}));
}

TEST(FuseConvActivation, ExecutionHookCompilesACopyAndKeepsTheFunctionGraph) {
  auto g = graphOf(R"IR(
  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %one, %one, %i1)
  %y : Tensor = aten::relu_(%c)
  return (%y))IR");
  setExecutionGraphRewrite([](const std::shared_ptr<Graph>& graph) -> std::shared_ptr<Graph> {
    auto copy = graph->copy();
    return fuseConvActivation(*copy) ? copy : graph;
  });
  initKernels();
  GraphFunction fn("f", g, GraphFunction::schemaFromGraph("f", *g));
  const Code& code = codeFor(fn);
  setExecutionGraphRewrite(nullptr);
  EXPECT_EQ(kinds(*code.graph()), kFusedOnly);
  EXPECT_EQ(kinds(*fn.graph()), (std::vector<std::string>{"aten::conv2d", "aten::relu_"}));
  auto a = args(*g);
  Tensor want = run(g, a).toTensor();  // a new function: compiled without the hook
  Stack stack(a.begin(), a.end());
  code.run(stack);
  expectClose(stack.back().toTensor(), want);
}

}  // namespace
}  // namespace torchless::passes::testing
