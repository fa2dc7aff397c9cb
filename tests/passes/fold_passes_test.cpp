// Golden IR tests of the frozen-graph folds (fold_conv_bn, fold_conv_add_mul, fold_linear_bn,
// fold_linear_mul), remove_dropout and the freeze pass, each with cases where the rewrite must
// not happen.
// Tensor constants are bound from graph inputs (bindConstants) with deterministic values;
// printed tensor values are masked in the text comparison, and every fold is checked
// numerically: the graph before and after runs in the interpreter on the same input and the
// outputs agree to 1e-5.
#include "pass_test_util.h"

#include "ir/function.h"
#include "passes/passes.h"
#include "runtime/interpreter.h"
#include "runtime/kernel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>

namespace torchless::passes::testing {
namespace {

/// Deterministic values in [lo, hi) (a small LCG).
Tensor filled(const IntList& sizes, double lo, double hi, uint32_t seed,
              ScalarType dtype = ScalarType::Float) {
  Tensor t = Tensor::empty(sizes, ScalarType::Double);
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data<double>()[i] = lo + (hi - lo) * ((s >> 8) / double(1 << 24));
  }
  return t.to(dtype);
}

/// Replaces the graph inputs named in `values` by prim::Constant nodes holding them (at the
/// top of the graph) and erases those inputs.
void bindConstants(Graph& g, const std::map<std::string, Tensor>& values) {
  for (const auto& [name, t] : values) {
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      Value* in = g.inputs()[i];
      if (in->debugName() != name) continue;
      WithInsertPoint guard(g.nodes().empty() ? g.returnNode() : g.nodes().front());
      Value* c = g.insertConstant(IValue(t));
      in->replaceAllUsesWith(c);
      g.eraseInput(i);
      c->setDebugName(name);
      break;
    }
  }
  verify(g);
}

/// The text with tensor values masked: `[value=<at::print text>]` -> `[value=<Tensor>]`.
std::string masked(const std::string& text) {
  static const std::regex atPrint(R"(\[value=[^\]\[]*\[ CPU\w+Type\{[0-9,]*\} \]\])");
  static const std::regex scalar(R"(\[value=\{[-0-9.e+]+\}\])");
  std::string out = std::regex_replace(text, atPrint, "[value=<Tensor>]");
  return std::regex_replace(out, scalar, "[value=<Tensor>]");
}

IValue run(const std::shared_ptr<Graph>& g, const std::vector<IValue>& args) {
  initKernels();
  GraphFunction fn("f", g->copy(), GraphFunction::schemaFromGraph("f", *g));
  return runFunction(fn, args);
}

void expectClose(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.sizes(), b.sizes());
  ASSERT_EQ(a.dtype(), b.dtype());
  Tensor x = a.contiguous(), y = b.contiguous();
  for (int64_t i = 0; i < x.numel(); ++i)
    ASSERT_NEAR(x.doubleAt(i), y.doubleAt(i), tol * (1 + std::fabs(y.doubleAt(i)))) << "at " << i;
}

struct FoldCase {
  std::string pass;
  std::string input;  // graph text; constants come from `constants`
  std::map<std::string, Tensor> constants;
  std::string expected;      // masked, names normalised; "" = unchanged
  std::vector<IValue> args;  // for the numeric check
};

/// Runs the case: structure (masked text), change report, and numbers.
void expectFold(const FoldCase& c) {
  auto g = parseGraph(c.input);
  bindConstants(*g, c.constants);
  auto before = g->copy();
  std::string beforeText = masked(normalizeNames(before->toString(false)));
  bool changed = runPasses(*g, {c.pass});
  std::string got = masked(normalizeNames(g->toString(false)));
  if (c.expected.empty()) {
    EXPECT_FALSE(changed) << got;
    EXPECT_EQ(got, beforeText);
  } else {
    EXPECT_TRUE(changed);
    EXPECT_EQ(got, masked(normalizeNames(c.expected)));
  }
  if (!c.args.empty()) {
    IValue want = run(before, c.args), have = run(g, c.args);
    expectClose(have.toTensor(), want.toTensor());
  }
}

// Shapes: x [2, 3, 5, 5], conv 3 -> 4 channels, kernel 3x3 (weight 108 elements: <Tensor>).
const char* kConvBn = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %gamma : Tensor, %beta : Tensor, %mean : Tensor, %var : Tensor):
  %one : int[] = prim::ListConstruct(%i1, %i1)
  %zero : int[] = prim::ListConstruct(%i0, %i0)
  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %zero, %one, %i1)
  %y : Tensor = aten::batch_norm(%c, %gamma, %beta, %mean, %var, %false, %mom, %eps, %true)
  return (%y)
)IR";

std::string withConstants(const std::string& body) {
  // Scalar constants first (parsed as nodes), then the body.
  std::string header = R"IR(
  %i1 : int = prim::Constant[value=1]()
  %i0 : int = prim::Constant[value=0]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %mom : float = prim::Constant[value=0.10000000000000001]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]())IR";
  size_t colon = body.find("):\n");
  return body.substr(0, colon + 2) + header + body.substr(colon + 2);
}

std::map<std::string, Tensor> bnParams(int64_t channels, uint32_t seed) {
  return {{"gamma", filled({channels}, 0.5, 1.5, seed + 1)},
          {"beta", filled({channels}, -0.5, 0.5, seed + 2)},
          {"mean", filled({channels}, -0.3, 0.3, seed + 3)},
          {"var", filled({channels}, 0.2, 2.0, seed + 4)}};
}

std::map<std::string, Tensor> convBnConstants() {
  auto m = bnParams(4, 10);
  m["w"] = filled({4, 3, 3, 3}, -0.5, 0.5, 1);
  m["b"] = filled({4}, -0.2, 0.2, 2);
  return m;
}

std::vector<IValue> xArg(const IntList& sizes = {2, 3, 5, 5}) {
  return {IValue(filled(sizes, -1, 1, 99))};
}

TEST(FoldConvBn, FoldsConv2dWithBias) {
  expectFold({"fold_conv_bn", withConstants(kConvBn), convBnConstants(), R"IR(graph(%x : Tensor):
  %i1 : int = prim::Constant[value=1]()
  %i0 : int = prim::Constant[value=0]()
  %one : int[] = prim::ListConstruct(%i1, %i1)
  %zero : int[] = prim::ListConstruct(%i0, %i0)
  %w_fused_bn : Float(4, 3, 3, 3, strides=[27, 9, 3, 1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %b_fused_bn : Float(4, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %c : Tensor = aten::conv2d(%x, %w_fused_bn, %b_fused_bn, %one, %zero, %one, %i1)
  return (%c)
)IR",
              xArg()});
}

TEST(FoldConvBn, ConvWithoutBiasAndBnWithoutAffine) {
  // bias None -> zeros_like(running_mean); bn weight/bias None -> ones / zeros.
  std::string in = withConstants(R"IR(
graph(%x : Tensor, %w : Tensor, %mean : Tensor, %var : Tensor):
  %none : NoneType = prim::Constant()
  %one : int[] = prim::ListConstruct(%i1, %i1)
  %zero : int[] = prim::ListConstruct(%i0, %i0)
  %c : Tensor = aten::conv2d(%x, %w, %none, %one, %zero, %one, %i1)
  %y : Tensor = aten::batch_norm(%c, %none, %none, %mean, %var, %false, %mom, %eps, %true)
  return (%y)
)IR");
  auto g = parseGraph(in);
  auto k = bnParams(4, 20);
  bindConstants(
      *g, {{"w", filled({4, 3, 3, 3}, -0.5, 0.5, 3)}, {"mean", k["mean"]}, {"var", k["var"]}});
  auto before = g->copy();
  EXPECT_TRUE(runPasses(*g, {"fold_conv_bn"}));
  std::string text = g->toString(false);
  EXPECT_EQ(text.find("batch_norm"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::conv2d(%x, %w_fused_bn, %"), std::string::npos) << text;
  expectClose(run(g, xArg()).toTensor(), run(before, xArg()).toTensor());
}

TEST(FoldConvBn, Conv1dConv3dAndConvolution) {
  for (const char* kind : {"conv1d", "conv3d", "_convolution"}) {
    SCOPED_TRACE(kind);
    std::string k(kind);
    int dims = k == "conv1d" ? 1 : k == "conv3d" ? 3 : 2;
    std::string ones = "%i1", zeros = "%i0";
    for (int d = 1; d < dims; ++d) ones += ", %i1", zeros += ", %i0";
    std::string call =
        k == "_convolution"
            ? "aten::_convolution(%x, %w, %b, %one, %zero, %one, %false, %zero, %i1, %false, "
              "%false, %true, %true)"
            : "aten::" + k + "(%x, %w, %b, %one, %zero, %one, %i1)";
    std::string in = withConstants(
        "\ngraph(%x : Tensor, %w : Tensor, %b : Tensor, %gamma : Tensor, %beta : Tensor, %mean : "
        "Tensor, %var : Tensor):\n  %one : int[] = prim::ListConstruct(" +
        ones + ")\n  %zero : int[] = prim::ListConstruct(" + zeros + ")\n  %c : Tensor = " + call +
        "\n  %y : Tensor = aten::batch_norm(%c, %gamma, %beta, %mean, %var, %false, %mom, %eps, "
        "%true)\n  return (%y)\n");
    auto g = parseGraph(in);
    IntList wSizes{4, 3}, xSizes{2, 3};
    for (int d = 0; d < dims; ++d) wSizes.push_back(2), xSizes.push_back(4);
    auto c = bnParams(4, 30);
    c["w"] = filled(wSizes, -0.5, 0.5, 5);
    c["b"] = filled({4}, -0.2, 0.2, 6);
    bindConstants(*g, c);
    auto before = g->copy();
    EXPECT_TRUE(runPasses(*g, {"fold_conv_bn"}));
    EXPECT_EQ(g->toString(false).find("batch_norm"), std::string::npos);
    expectClose(run(g, xArg(xSizes)).toTensor(), run(before, xArg(xSizes)).toTensor());
  }
}

TEST(FoldConvBn, NotWhenConvOutputUsedTwice) {
  std::string in = withConstants(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %gamma : Tensor, %beta : Tensor, %mean : Tensor, %var : Tensor):
  %one : int[] = prim::ListConstruct(%i1, %i1)
  %zero : int[] = prim::ListConstruct(%i0, %i0)
  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %zero, %one, %i1)
  %y : Tensor = aten::batch_norm(%c, %gamma, %beta, %mean, %var, %false, %mom, %eps, %true)
  %z : Tensor = aten::add(%y, %c, %i1)
  return (%z)
)IR");
  expectFold({"fold_conv_bn", in, convBnConstants(), "", xArg()});
}

TEST(FoldConvBn, NotWithNonConstantBnParameters) {
  // running_mean stays a graph input.
  auto c = convBnConstants();
  c.erase("mean");
  expectFold({"fold_conv_bn", withConstants(kConvBn), c, "", {}});
}

TEST(FoldConvBn, NotInTrainingMode) {
  std::string in = withConstants(kConvBn);
  in.replace(in.find("%var, %false"), 12, "%var, %true");
  expectFold({"fold_conv_bn", in, convBnConstants(), "", {}});
}

TEST(FoldConvBn, NotForHalfWeights) {
  auto c = convBnConstants();
  c["w"] = c["w"].to(ScalarType::Half);
  expectFold({"fold_conv_bn", withConstants(kConvBn), c, "", {}});
}

// ---- fold_conv_add_mul ----

std::string convThen(const std::string& op) {
  return withConstants(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %k : Tensor):
  %f2 : float = prim::Constant[value=2.5]()
  %one : int[] = prim::ListConstruct(%i1, %i1)
  %zero : int[] = prim::ListConstruct(%i0, %i0)
  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %zero, %one, %i1)
  %y : Tensor = )IR" + op +
                       R"IR(
  return (%y)
)IR");
}

void expectAddMulFolds(const std::string& op, const Tensor& k, bool folds, bool withBias = true) {
  SCOPED_TRACE(op);
  auto g = parseGraph(convThen(op));
  std::map<std::string, Tensor> c{{"w", filled({4, 3, 3, 3}, -0.5, 0.5, 7)}, {"k", k}};
  if (withBias) c["b"] = filled({4}, -0.2, 0.2, 8);
  bindConstants(*g, c);
  if (!withBias) {
    // %b is still an input: make it None.
    WithInsertPoint guard(g->nodes().front());
    Value* none = g->insertConstant(IValue());
    g->inputs()[1]->replaceAllUsesWith(none);
    g->eraseInput(1);
  }
  auto before = g->copy();
  std::string beforeText = before->toString(false);
  bool changed = runPasses(*g, {"fold_conv_add_mul"});
  EXPECT_EQ(changed, folds) << g->toString(false);
  std::string text = g->toString(false);
  if (folds) {
    EXPECT_EQ(text.find("aten::add"), std::string::npos) << text;
    EXPECT_EQ(text.find("aten::sub"), std::string::npos) << text;
    EXPECT_EQ(text.find("aten::mul"), std::string::npos) << text;
    EXPECT_EQ(text.find("aten::div"), std::string::npos) << text;
    EXPECT_NE(text.find("return (%c)"), std::string::npos) << text;
  } else {
    EXPECT_EQ(text, beforeText);
  }
  expectClose(run(g, xArg()).toTensor(), run(before, xArg()).toTensor());
}

TEST(FoldConvAddMul, FoldsScalarsAndChannelTensors) {
  Tensor perChannel = filled({1, 4, 1, 1}, 0.5, 2.0, 9);
  Tensor one = filled({1}, 0.5, 2.0, 10);
  expectAddMulFolds("aten::add(%c, %f2, %i1)", perChannel, true);
  expectAddMulFolds("aten::add(%c, %k, %f2)", perChannel, true);
  expectAddMulFolds("aten::sub(%c, %k, %i1)", one, true);
  expectAddMulFolds("aten::mul(%c, %k)", perChannel, true);
  expectAddMulFolds("aten::mul(%c, %f2)", perChannel, true);
  expectAddMulFolds("aten::div(%c, %k)", perChannel, true);
  expectAddMulFolds("aten::add(%c, %k, %i1)", perChannel, true, /*withBias=*/false);
  expectAddMulFolds("aten::mul(%c, %k)", perChannel, true, /*withBias=*/false);
}

TEST(FoldConvAddMul, NotWhenTheOperandBroadcastsOrPromotes) {
  // [4, 1, 1] lines up with the output's dim 1 (height 3) only by broadcasting: no fold.
  expectAddMulFolds("aten::add(%c, %k, %i1)", filled({4, 1, 1}, 0.5, 2.0, 11), false);
  // Another float dtype with dims would make the result float64 in eager.
  expectAddMulFolds("aten::mul(%c, %k)", filled({1, 4, 1, 1}, 0.5, 2.0, 12, ScalarType::Double),
                    false);
  // The operand is the conv output itself, not a constant.
  expectAddMulFolds("aten::mul(%c, %c)", filled({1}, 0.5, 2.0, 13), false);
}

TEST(FoldConvAddMul, NotWhenConvOutputUsedTwice) {
  std::string in = withConstants(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %f2 : float = prim::Constant[value=2.5]()
  %one : int[] = prim::ListConstruct(%i1, %i1)
  %zero : int[] = prim::ListConstruct(%i0, %i0)
  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %zero, %one, %i1)
  %y : Tensor = aten::mul(%c, %f2)
  %z : Tensor = aten::add(%y, %c, %i1)
  return (%z)
)IR");
  expectFold({"fold_conv_add_mul",
              in,
              {{"w", filled({4, 3, 3, 3}, -0.5, 0.5, 7)}, {"b", filled({4}, -0.2, 0.2, 8)}},
              "",
              xArg()});
}

TEST(FoldConvAddMul, NotIntoALoopBody) {
  // The mul runs each trip of the loop, the conv once before it.
  expectFold({"fold_conv_add_mul",
              withConstants(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %n : int):
  %f2 : float = prim::Constant[value=2.]()
  %one : int[] = prim::ListConstruct(%i1, %i1)
  %zero : int[] = prim::ListConstruct(%i0, %i0)
  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %zero, %one, %i1)
  %r : Tensor = prim::Loop(%n, %true, %c)
    block0(%i : int, %acc : Tensor):
      %y : Tensor = aten::mul(%c, %f2)
      %z : Tensor = aten::add(%acc, %y, %i1)
      -> (%true, %z)
  return (%r)
)IR"),
              {{"w", filled({4, 3, 3, 3}, -0.5, 0.5, 7)}, {"b", filled({4}, -0.2, 0.2, 8)}},
              "",
              {}});
}

// ---- fold_linear_bn ----

const char* kLinearBn = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %gamma : Tensor, %beta : Tensor, %mean : Tensor, %var : Tensor):
  %l : Tensor = aten::linear(%x, %w, %b)
  %y : Tensor = aten::batch_norm(%l, %gamma, %beta, %mean, %var, %false, %mom, %eps, %true)
  return (%y)
)IR";

TEST(FoldLinearBn, Folds) {
  auto c = bnParams(6, 40);
  c["w"] = filled({6, 5}, -0.5, 0.5, 14);
  c["b"] = filled({6}, -0.2, 0.2, 15);
  expectFold({"fold_linear_bn", withConstants(kLinearBn), c, R"IR(graph(%x : Tensor):
  %w_fused_bn : Float(6, 5, strides=[5, 1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %b_fused_bn : Float(6, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %l : Tensor = aten::linear(%x, %w_fused_bn, %b_fused_bn)
  return (%l)
)IR",
              xArg({3, 5})});
}

TEST(FoldLinearBn, NotForThreeDimensionalInputs) {
  std::string in = withConstants(kLinearBn);
  in.replace(in.find("%x : Tensor"), 11, "%x : Float(2, 6, 5)");
  auto c = bnParams(6, 40);
  c["w"] = filled({6, 5}, -0.5, 0.5, 14);
  c["b"] = filled({6}, -0.2, 0.2, 15);
  expectFold({"fold_linear_bn", in, c, "", {}});
}

// ---- fold_linear_mul ----

// ConvNeXt's block tail: linear over channels-last rows, permuted back, scaled per channel.
const char* kLinearPermuteMul = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %gamma : Tensor):
  %i3 : int = prim::Constant[value=3]()
  %i2 : int = prim::Constant[value=2]()
  %dims : int[] = prim::ListConstruct(%i0, %i3, %i1, %i2)
  %l : Tensor = aten::linear(%x, %w, %b)
  %p : Tensor = aten::permute(%l, %dims)
  %y : Tensor = aten::mul(%gamma, %p)
  return (%y)
)IR";

std::map<std::string, Tensor> linearMulConstants(const IntList& gamma) {
  return {{"w", filled({6, 5}, -0.5, 0.5, 21)},
          {"b", filled({6}, -0.2, 0.2, 22)},
          {"gamma", filled(gamma, 0.01, 2.0, 23)}};
}

TEST(FoldLinearMul, FoldsTheLayerScaleThroughAPermute) {
  expectFold({"fold_linear_mul", withConstants(kLinearPermuteMul), linearMulConstants({6, 1, 1}),
              R"IR(graph(%x : Tensor):
  %i1 : int = prim::Constant[value=1]()
  %i0 : int = prim::Constant[value=0]()
  %i3 : int = prim::Constant[value=3]()
  %i2 : int = prim::Constant[value=2]()
  %dims : int[] = prim::ListConstruct(%i0, %i3, %i1, %i2)
  %w_fused_mul : Float(6, 5, strides=[5, 1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %b_fused_mul : Float(6, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %l : Tensor = aten::linear(%x, %w_fused_mul, %b_fused_mul)
  %p : Tensor = aten::permute(%l, %dims)
  return (%p)
)IR",
              xArg({2, 3, 4, 5})});
}

TEST(FoldLinearMul, FoldsMulAndDivOfTheLastDim) {
  for (const char* op :
       {"aten::mul(%l, %gamma)", "aten::mul(%gamma, %l)", "aten::div(%l, %gamma)"}) {
    std::string in = withConstants(std::string(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %gamma : Tensor):
  %l : Tensor = aten::linear(%x, %w, %b)
  %y : Tensor = )IR") + op + R"IR(
  return (%y)
)IR");
    const bool div = std::string(op).find("div") != std::string::npos;
    std::string want = std::string(R"IR(graph(%x : Tensor):
  %w_fused_X : Float(6, 5, strides=[5, 1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %b_fused_X : Float(6, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %l : Tensor = aten::linear(%x, %w_fused_X, %b_fused_X)
  return (%l)
)IR");
    for (size_t at; (at = want.find("_fused_X")) != std::string::npos;)
      want.replace(at, 8, div ? "_fused_div" : "_fused_mul");
    expectFold({"fold_linear_mul", in, linearMulConstants({6}), want, xArg({3, 5})});
  }
}

TEST(FoldLinearMul, LeavesWhatItCannotFold) {
  // The per-channel operand lines up with another dim than the features.
  expectFold({"fold_linear_mul",
              withConstants(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %gamma : Tensor):
  %l : Tensor = aten::linear(%x, %w, %b)
  %y : Tensor = aten::mul(%l, %gamma)
  return (%y)
)IR"),
              linearMulConstants({6, 1}),
              "",
              {}});
  // More dims than the permuted value: the result would gain a dim.
  expectFold({"fold_linear_mul",
              withConstants(kLinearPermuteMul),
              linearMulConstants({1, 6, 1, 1, 1}),
              "",
              {}});
  // After the permute the features are at dim 1, not where [6] broadcasts (the last dim).
  expectFold(
      {"fold_linear_mul", withConstants(kLinearPermuteMul), linearMulConstants({6}), "", {}});
  // The linear's output has another use.
  expectFold({"fold_linear_mul",
              withConstants(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %gamma : Tensor):
  %l : Tensor = aten::linear(%x, %w, %b)
  %y : Tensor = aten::mul(%l, %gamma)
  %z : Tensor = aten::add(%y, %l, %i1)
  return (%z)
)IR"),
              linearMulConstants({6}),
              "",
              {}});
  // A mul in a loop's body makes a fresh tensor each trip; the linear's output computed once
  // outside must not take its place.
  expectFold({"fold_linear_mul",
              withConstants(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %gamma : Tensor, %n : int):
  %l : Tensor = aten::linear(%x, %w, %b)
  %r : Tensor = prim::Loop(%n, %true, %x)
    block0(%i : int, %acc : Tensor):
      %y : Tensor = aten::mul(%l, %gamma)
      %z : Tensor = aten::add(%acc, %y, %i1)
      -> (%true, %z)
  return (%r)
)IR"),
              linearMulConstants({6}),
              "",
              {}});
  // A factor that is infinite in float (1e300), or whose products overflow.
  for (const char* big : {"1.0000000000000001e+300", "1.0000000000000001e+38"}) {
    expectFold({"fold_linear_mul",
                withConstants(std::string(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %big : float = prim::Constant[value=)IR") +
                              big + R"IR(]()
  %l : Tensor = aten::linear(%x, %w, %b)
  %y : Tensor = aten::mul(%l, %big)
  return (%y)
)IR"),
                {{"w", filled({6, 5}, 10, 20, 21)}, {"b", filled({6}, 10, 20, 22)}},
                "",
                {}});
  }
  // A zero divisor would make NaNs of the weights' products.
  auto zero = linearMulConstants({6});
  zero["gamma"].data<float>()[2] = 0;
  expectFold({"fold_linear_mul",
              withConstants(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %gamma : Tensor):
  %l : Tensor = aten::linear(%x, %w, %b)
  %y : Tensor = aten::div(%l, %gamma)
  return (%y)
)IR"),
              zero,
              "",
              {}});
  // A divisor on the left is not the linear's scale.
  expectFold({"fold_linear_mul",
              withConstants(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %gamma : Tensor):
  %l : Tensor = aten::linear(%x, %w, %b)
  %y : Tensor = aten::div(%gamma, %l)
  return (%y)
)IR"),
              linearMulConstants({6}),
              "",
              {}});
}

// ---- remove_dropout ----

TEST(RemoveDropout, RemovesEvalDropoutsOnly) {
  expectPass("remove_dropout", R"IR(
graph(%x : Tensor, %c : bool):
  %p : float = prim::Constant[value=0.5]()
  %f : bool = prim::Constant[value=0]()
  %t : bool = prim::Constant[value=1]()
  %a : Tensor = aten::dropout(%x, %p, %f)
  %b : Tensor = aten::feature_dropout(%a, %p, %t)
  %d : Tensor = aten::alpha_dropout_(%b, %p, %f)
  %e : Tensor = aten::dropout(%d, %p, %c)
  %r : Tensor = prim::If(%c)
    block0():
      %g : Tensor = aten::feature_alpha_dropout(%e, %p, %f)
      -> (%g)
    block1():
      -> (%e)
  return (%r)
)IR",
             R"IR(
graph(%x : Tensor, %c : bool):
  %p : float = prim::Constant[value=0.5]()
  %f : bool = prim::Constant[value=0]()
  %t : bool = prim::Constant[value=1]()
  %b : Tensor = aten::feature_dropout(%x, %p, %t)
  %e : Tensor = aten::dropout(%b, %p, %c)
  %r : Tensor = prim::If(%c)
    block0():
      -> (%e)
    block1():
      -> (%e)
  return (%r)
)IR");
}

// ---- freeze (the pass, on a hand-made module object) ----

struct TinyModule {
  std::shared_ptr<ClassType> sub, cls;
  ObjectPtr self;
};

/// class Sub: w : Tensor (parameter), k : int;  class M: sub : Sub, training : bool,
/// count : int, buf : Tensor (buffer), sizes : List[int].
TinyModule makeModule() {
  TinyModule m;
  m.sub = ClassType::create("__torch__.Sub", true);
  m.sub->addAttribute("w", TensorType::get(), true);
  m.sub->addAttribute("k", IntType::get());
  m.cls = ClassType::create("__torch__.M", true);
  m.cls->addAttribute("sub", m.sub);
  m.cls->addAttribute("training", BoolType::get());
  m.cls->addAttribute("count", IntType::get());
  m.cls->addAttribute("buf", TensorType::get(), false, true);
  m.cls->addAttribute("sizes", ListType::create(IntType::get()));
  ObjectPtr sub = Object::create(m.sub);
  Tensor w = filled({3}, -1, 1, 50);
  w.setRequiresGrad(true);
  sub->setAttr("w", IValue(w));
  sub->setAttr("k", IValue(int64_t(7)));
  m.self = Object::create(m.cls);
  m.self->setAttr("sub", IValue(sub));
  m.self->setAttr("training", IValue(false));
  m.self->setAttr("count", IValue(int64_t(0)));
  m.self->setAttr("buf", IValue(filled({3}, 0, 1, 51)));
  m.self->setAttr("sizes", IValue(ListImpl::create(IntType::get(), {IValue(int64_t(2))})));
  return m;
}

std::shared_ptr<Graph> parseMethod(const TinyModule& m, const std::string& text) {
  auto g = std::make_shared<Graph>();
  ParseIROptions o;
  o.resolver = [&](const std::string& name) -> TypePtr {
    if (name == "__torch__.M") return m.cls;
    if (name == "__torch__.Sub") return m.sub;
    return nullptr;
  };
  parseIR(text, g.get(), o);
  verify(*g);
  return g;
}

TEST(Freeze, FoldsAttributesAndTrainingBranches) {
  TinyModule m = makeModule();
  auto g = parseMethod(m, R"IR(
graph(%self : __torch__.M, %x : Tensor):
  %one : int = prim::Constant[value=1]()
  %sub : __torch__.Sub = prim::GetAttr[name="sub"](%self)
  %w : Tensor = prim::GetAttr[name="w"](%sub)
  %k : int = prim::GetAttr[name="k"](%sub)
  %y : Tensor = aten::mul(%x, %w)
  %tr : bool = prim::GetAttr[name="training"](%self)
  %z : Tensor = prim::If(%tr)
    block0():
      %z1 : Tensor = aten::add(%y, %k, %one)
      -> (%z1)
    block1():
      -> (%y)
  %sizes : int[] = prim::GetAttr[name="sizes"](%self)
  %n : int = aten::len(%sizes)
  %r : Tensor = aten::add(%z, %n, %one)
  return (%r)
)IR");
  FreezeModuleScope scope(m.self);
  EXPECT_TRUE(runPasses(*g, {"freeze"}));
  std::string text = masked(normalizeNames(g->toString(false)));
  EXPECT_EQ(text, masked(normalizeNames(R"IR(graph(%self : __torch__.M,
      %x : Tensor):
  %one : int = prim::Constant[value=1]()
  %self.sub.w : Float(3, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %y : Tensor = aten::mul(%x, %self.sub.w)
  %n : int = prim::Constant[value=1]()
  %r : Tensor = aten::add(%y, %n, %one)
  return (%r)
)IR")));
  EXPECT_TRUE(scope.lastResult().keptAttributes.empty());
  // The module's own parameter still requires grad: the constant is a detached alias.
  EXPECT_TRUE(m.self->getAttr("sub").toObject()->getAttr("w").toTensor().requiresGrad());
}

TEST(Freeze, KeepsWrittenAttributes) {
  TinyModule m = makeModule();
  auto g = parseMethod(m, R"IR(
graph(%self : __torch__.M, %x : Tensor):
  %one : int = prim::Constant[value=1]()
  %c : int = prim::GetAttr[name="count"](%self)
  %c2 : int = aten::add(%c, %one)
   = prim::SetAttr[name="count"](%self, %c2)
  %buf : Tensor = prim::GetAttr[name="buf"](%self)
  %v : Tensor = aten::select(%buf, %c, %c)
  %v2 : Tensor = aten::add_(%v, %one, %one)
  %sizes : int[] = prim::GetAttr[name="sizes"](%self)
  %s2 : int[] = aten::append(%sizes, %one)
  %sub : __torch__.Sub = prim::GetAttr[name="sub"](%self)
  %w : Tensor = prim::GetAttr[name="w"](%sub)
  %y : Tensor = aten::mul(%x, %w)
  return (%y)
)IR");
  EXPECT_EQ(mutatedAttributes(*g), (std::set<std::string>{"buf", "count", "sizes"}));
  FreezeModuleScope scope(m.self);
  EXPECT_TRUE(runPasses(*g, {"freeze"}));
  std::string text = g->toString(false);
  EXPECT_NE(text.find("prim::GetAttr[name=\"count\"]"), std::string::npos) << text;
  EXPECT_NE(text.find("prim::SetAttr[name=\"count\"]"), std::string::npos) << text;
  EXPECT_NE(text.find("prim::GetAttr[name=\"buf\"]"), std::string::npos) << text;
  EXPECT_NE(text.find("prim::GetAttr[name=\"sizes\"]"), std::string::npos) << text;
  EXPECT_EQ(text.find("prim::GetAttr[name=\"sub\"]"), std::string::npos) << text;
  EXPECT_EQ(scope.lastResult().keptAttributes, (std::set<std::string>{"buf", "count", "sizes"}));
}

TEST(Freeze, DropsUnusedSelfWhenAsked) {
  TinyModule m = makeModule();
  auto g = parseMethod(m, R"IR(
graph(%self : __torch__.M, %x : Tensor):
  %b : Tensor = prim::GetAttr[name="buf"](%self)
  %y : Tensor = aten::mul(%x, %b)
  return (%y)
)IR");
  FreezeGraphOptions o;
  o.dropSelf = true;
  EXPECT_TRUE(freezeGraph(*g, m.self, o));
  ASSERT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->inputs()[0]->debugName(), "x");
}

TEST(Freeze, SelfUsedAsAValueIsAnError) {
  TinyModule m = makeModule();
  auto g = parseMethod(m, R"IR(
graph(%self : __torch__.M, %x : Tensor):
  %l : __torch__.M[] = prim::ListConstruct(%self)
  return (%x)
)IR");
  try {
    freezeGraph(*g, m.self);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the module itself ('self') is used as a value by "
                                         "prim::ListConstruct"),
              std::string::npos)
        << e.what();
  }
}

TEST(Freeze, NeedsABoundModule) {
  auto g = parseGraph("graph(%x : Tensor):\n  return (%x)\n");
  try {
    runPasses(*g, {"freeze"});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pass 'freeze' needs the module"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace torchless::passes::testing
