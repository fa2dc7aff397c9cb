// The engine backend (convert/engine/): graphs in PyTorch's text format, partitioned into
// engines, run through the engine and through the interpreter, compared. Weights are graph
// inputs in the text and become constants before partitioning (what freezing does).
// Tolerance: 1e-5 relative/absolute (oneDNN's blocked accumulation order and its eltwise
// approximations vs our kernels).
#include "convert/engine/engine_ctx.h"
#include "convert/engine/layer_exec.h"
#include "convert/engine/partition.h"
#include "core/error.h"
#include "ir/ir_parser.h"
#include "ops/elementwise.h"
#include "ops/shape.h"
#include "runtime/interpreter.h"
#include "runtime/kernel.h"
#include "runtime/op_observer.h"

#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

using namespace torchless;
using namespace torchless::engine;

namespace {

Tensor randn(const IntList& sizes, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  Tensor t = Tensor::empty(sizes, ScalarType::Float);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(gen);
  return t;
}

Tensor positive(const IntList& sizes, uint32_t seed) {
  Tensor t = randn(sizes, seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::fabs(t.data<float>()[i]) + 0.5f;
  return t;
}

// Parses `text`; the graph inputs named in `constants` become tensor constants.
std::shared_ptr<Graph> graphWith(const char* text, const std::map<std::string, Tensor>& constants) {
  auto g = std::make_shared<Graph>();
  std::unordered_map<std::string, Value*> vmap;
  parseIR(text, g.get(), vmap);
  for (size_t i = g->inputs().size(); i-- > 0;) {
    Value* in = g->inputs()[i];
    auto it = constants.find(in->debugNameBase());
    if (it == constants.end()) continue;
    WithInsertPoint guard(g->block()->nodes().front());
    Value* c = g->insertConstant(IValue(it->second));
    in->replaceAllUsesWith(c);
    g->eraseInput(i);
  }
  return g;
}

std::vector<IValue> runGraph(const std::shared_ptr<Graph>& g, std::vector<IValue> inputs) {
  initKernels();
  Code code(g, "test");
  Stack stack = std::move(inputs);
  code.run(stack);
  return stack;
}

void expectClose(const IValue& a, const IValue& b, double tol = 1e-5) {
  ASSERT_TRUE(a.isTensor() && b.isTensor());
  const Tensor x = a.toTensor().contiguous(), y = b.toTensor().contiguous();
  ASSERT_EQ(x.sizes(), y.sizes());
  for (int64_t i = 0; i < x.numel(); ++i)
    ASSERT_NEAR(x.doubleAt(i), y.doubleAt(i), tol + tol * std::fabs(y.doubleAt(i)))
        << "element " << i;
}

// conv -> batch_norm -> relu_ -> conv -> add_(residual) -> relu_: one engine, one
// Convolution layer per conv with bn, residual and activations fused.
const char* kResidualBlock = R"IR(
graph(%x : Tensor, %w1 : Tensor, %g : Tensor, %b : Tensor, %m : Tensor, %v : Tensor, %w2 : Tensor, %b2 : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %s : int[] = prim::Constant[value=[1, 1]]()
  %d : int[] = prim::Constant[value=[1, 1]]()
  %f : bool = prim::Constant[value=0]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %mom : float = prim::Constant[value=0.10000000000000001]()
  %t : bool = prim::Constant[value=1]()
  %y1 : Tensor = aten::conv2d(%x, %w1, %none, %s, %s, %d, %one)
  %y2 : Tensor = aten::batch_norm(%y1, %g, %b, %m, %v, %f, %mom, %eps, %t)
  %y3 : Tensor = aten::relu_(%y2)
  %y4 : Tensor = aten::conv2d(%y3, %w2, %b2, %s, %s, %d, %one)
  %y5 : Tensor = aten::add_(%y4, %x, %one)
  %y6 : Tensor = aten::relu_(%y5)
  return (%y6)
)IR";

std::map<std::string, Tensor> residualWeights() {
  return {{"w1", randn({8, 8, 3, 3}, 1)}, {"g", positive({8}, 2)}, {"b", randn({8}, 3)},
          {"m", randn({8}, 4)},           {"v", positive({8}, 5)}, {"w2", randn({8, 8, 3, 3}, 6)},
          {"b2", randn({8}, 7)}};
}

TEST(Engine, ResidualBlockFusesIntoTwoConvolutionsAndMatchesTheInterpreter) {
  auto reference = graphWith(kResidualBlock, residualWeights());
  auto compiled = reference->copy();
  PartitionReport report = partitionGraph(*compiled);
  ASSERT_EQ(report.numEngines(), 1u) << report.str();
  EXPECT_EQ(report.numInterpreterSegments(), 0u) << report.str();
  const SegmentReport* seg = &report.segments[0];
  EXPECT_EQ(seg->layers, "Convolution 2") << *compiled;
  EXPECT_EQ(seg->fusedAway, 4u);  // batch_norm, relu_, add_, relu_
  Tensor x = randn({2, 8, 10, 10}, 9);
  auto want = runGraph(reference, {IValue(x.clone())});
  // Twice: the first call plans, the second runs the plan (arena, cached primitives).
  for (int call = 0; call < 2; ++call) {
    auto got = runGraph(compiled, {IValue(x.clone())});
    expectClose(got[0], want[0], 1e-4);
  }
  EXPECT_GT(seg->built->arenaBytes(), 0u);
  // Batch 2 runs sample by sample (Note [Batch split]): a plan per thread at most.
  EXPECT_LE(seg->built->numPlans(), static_cast<size_t>(omp_get_max_threads()));
}

// Note [Winograd convolutions] (layer_exec.cpp): 3x3 stride-1 convolutions of 64 channels or
// more run as Winograd convolutions where oneDNN has them (AVX-512), with the input reordered
// into oneDNN's blocked layout and the output back; the first conv of the block (with batch
// norm and relu fused) takes that path, the second (a fused residual) stays direct.
TEST(Engine, WideThreeByThreeConvolutionsMatchTheInterpreter) {
  const int64_t c = 64;
  auto scaled = [](Tensor t) {  // 1 / sqrt(fan-in): outputs of the inputs' scale
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] /= 24.f;
    return t;
  };
  auto reference = graphWith(kResidualBlock, {{"w1", scaled(randn({c, c, 3, 3}, 1))},
                                              {"g", positive({c}, 2)},
                                              {"b", randn({c}, 3)},
                                              {"m", randn({c}, 4)},
                                              {"v", positive({c}, 5)},
                                              {"w2", scaled(randn({c, c, 3, 3}, 6))},
                                              {"b2", randn({c}, 7)}});
  auto compiled = reference->copy();
  PartitionReport report = partitionGraph(*compiled);
  ASSERT_EQ(report.numEngines(), 1u) << report.str();
  for (const IntList& sizes : {IntList{1, c, 14, 14}, IntList{3, c, 9, 7}}) {
    Tensor x = randn(sizes, 9);
    auto want = runGraph(reference, {IValue(x.clone())});
    for (int call = 0; call < 2; ++call) {
      auto got = runGraph(compiled, {IValue(x.clone())});
      expectClose(got[0], want[0], 1e-4);
    }
  }
}

// Records the detail of each engine layer span ("Convolution (winograd) at ...").
class LayerSpans : public OpObserver {
 public:
  LayerSpans() { setOpObserver(this); }
  ~LayerSpans() override { setOpObserver(nullptr); }
  void onOpStart(const Node&) override {}
  void onOpEnd(const Node&) override {}
  void onSpan(const char*, const std::string&, const std::string& detail,
              std::chrono::steady_clock::time_point,
              std::chrono::steady_clock::time_point) override {
    std::lock_guard<std::mutex> lock(mu);
    details.push_back(detail);
  }
  size_t winograd() {
    std::lock_guard<std::mutex> lock(mu);
    return static_cast<size_t>(std::count_if(details.begin(), details.end(), [](const auto& d) {
      return d.find("(winograd)") != std::string::npos;
    }));
  }
  std::mutex mu;
  std::vector<std::string> details;
};

// Note [Winograd after reuse] (layer_exec.cpp): a plan made by a call runs the direct
// convolution; once the plan runs again, a background thread builds the Winograd one and a
// later call switches to it, with the same numbers. A plan made under BuildForReuse (what
// Module::prepare does) takes Winograd at once. Where oneDNN has no Winograd kernel (no
// AVX-512) neither plan takes it.
TEST(Engine, WinogradIsTakenOnlyWhenThePlanIsReused) {
  const int64_t c = 64;
  auto scaled = [](Tensor t) {
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] /= 24.f;
    return t;
  };
  const std::map<std::string, Tensor> w = {{"w1", scaled(randn({c, c, 3, 3}, 11))},
                                           {"g", positive({c}, 12)},
                                           {"b", randn({c}, 13)},
                                           {"m", randn({c}, 14)},
                                           {"v", positive({c}, 15)},
                                           {"w2", scaled(randn({c, c, 3, 3}, 16))},
                                           {"b2", randn({c}, 17)}};
  auto reference = graphWith(kResidualBlock, w);
  const Tensor x = randn({1, c, 12, 12}, 18);
  auto want = runGraph(reference, {IValue(x.clone())});

  // Prepared for reuse: Winograd (where oneDNN has it) from the first run on.
  size_t preparedWinograd = 0;
  {
    auto compiled = reference->copy();
    ASSERT_EQ(partitionGraph(*compiled).numEngines(), 1u);
    {
      BuildForReuse forReuse;
      expectClose(runGraph(compiled, {IValue(x.clone())})[0], want[0], 1e-4);
    }
    LayerSpans spans;
    expectClose(runGraph(compiled, {IValue(x.clone())})[0], want[0], 1e-4);
    preparedWinograd = spans.winograd();
  }
  EXPECT_LE(preparedWinograd, 1u);  // the second conv has a fused residual: direct

  // Made by a call: direct on the first two calls, Winograd once the background build is done.
  auto compiled = reference->copy();
  ASSERT_EQ(partitionGraph(*compiled).numEngines(), 1u);
  {
    LayerSpans spans;
    for (int call = 0; call < 2; ++call)
      expectClose(runGraph(compiled, {IValue(x.clone())})[0], want[0], 1e-4);
    EXPECT_EQ(spans.winograd(), 0u);
  }
  size_t switched = 0;
  for (int call = 0; call < 400 && switched < preparedWinograd; ++call) {
    LayerSpans spans;
    expectClose(runGraph(compiled, {IValue(x.clone())})[0], want[0], 1e-4);
    switched = spans.winograd();
    if (switched < preparedWinograd) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_EQ(switched, preparedWinograd) << "the reused plan never switched to Winograd";
}

// Note [Row bands] (engine.cpp): at batch 1 on 2 threads, every convolution but the last (its
// output leaves the engine) runs as bands of output rows, one per thread: a 1x1 one reading the
// contiguous input, a 3x3 one (Winograd where oneDNN has it: 64 channels, 60 rows), a depthwise
// one of stride 2 (odd sizes), a 1x1 one with a fused residual (its own input: copied row by
// row), a 5x5 one of dilation 2; the numbers are the interpreter's on every call.
const char* kBandChain = R"IR(
graph(%x : Tensor, %w0 : Tensor, %w1 : Tensor, %b1 : Tensor, %w2 : Tensor, %w3 : Tensor, %b3 : Tensor, %w4 : Tensor, %w5 : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %c64 : int = prim::Constant[value=64]()
  %s1 : int[] = prim::Constant[value=[1, 1]]()
  %s2 : int[] = prim::Constant[value=[2, 2]]()
  %p0 : int[] = prim::Constant[value=[0, 0]]()
  %p2 : int[] = prim::Constant[value=[2, 2]]()
  %p4 : int[] = prim::Constant[value=[4, 4]]()
  %c0 : Tensor = aten::conv2d(%x, %w0, %none, %s1, %p0, %s1, %one)
  %c1 : Tensor = aten::conv2d(%c0, %w1, %b1, %s1, %s1, %s1, %one)
  %a1 : Tensor = aten::relu(%c1)
  %c2 : Tensor = aten::conv2d(%a1, %w2, %none, %s2, %s1, %s1, %c64)
  %c3 : Tensor = aten::conv2d(%c2, %w3, %b3, %s1, %p0, %s1, %one)
  %r : Tensor = aten::add(%c3, %c2, %one)
  %c4 : Tensor = aten::conv2d(%r, %w4, %none, %s1, %p4, %s2, %one)
  %c5 : Tensor = aten::conv2d(%c4, %w5, %none, %s1, %p2, %p2, %one)
  return (%c5)
)IR";

TEST(Engine, RowBandsOfBatchOneConvolutionsMatchTheInterpreter) {
  auto scaled = [](Tensor t, float by) {
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] /= by;
    return t;
  };
  auto reference = graphWith(kBandChain, {{"w0", randn({64, 3, 1, 1}, 101)},
                                          {"w1", scaled(randn({64, 64, 3, 3}, 102), 24.f)},
                                          {"b1", randn({64}, 103)},
                                          {"w2", scaled(randn({64, 1, 3, 3}, 104), 3.f)},
                                          {"w3", scaled(randn({64, 64, 1, 1}, 105), 8.f)},
                                          {"b3", randn({64}, 106)},
                                          {"w4", scaled(randn({8, 64, 5, 5}, 107), 40.f)},
                                          {"w5", scaled(randn({8, 8, 3, 3}, 108), 8.f)}});
  struct Threads {
    int saved = omp_get_max_threads();
    Threads() { omp_set_num_threads(2); }
    ~Threads() { omp_set_num_threads(saved); }
  } threads;
  const Tensor x = randn({1, 3, 60, 27}, 109);
  auto want = runGraph(reference, {IValue(x.clone())});
  auto banded = [](const LayerSpans& spans) {
    return std::count_if(spans.details.begin(), spans.details.end(), [](const std::string& d) {
      return d.find("(row bands)") != std::string::npos;
    });
  };
  {
    // Prepared for reuse: from the second call on, every convolution but the last (whose output
    // leaves the engine: no arena buffer, it runs whole); the first reads the contiguous input.
    auto compiled = reference->copy();
    ASSERT_EQ(partitionGraph(*compiled).numEngines(), 1u);
    LayerSpans spans;
    for (int call = 0; call < 4; ++call) {
      BuildForReuse reuse;
      expectClose(runGraph(compiled, {IValue(x.clone())})[0], want[0], 1e-4);
    }
    EXPECT_EQ(banded(spans), 15);
  }
  // Made by a call: whole on the first two calls, in bands once the plan runs again and its
  // Winograd convolution (where oneDNN has it) is built.
  auto compiled = reference->copy();
  ASSERT_EQ(partitionGraph(*compiled).numEngines(), 1u);
  {
    LayerSpans spans;
    for (int call = 0; call < 2; ++call)
      expectClose(runGraph(compiled, {IValue(x.clone())})[0], want[0], 1e-4);
    EXPECT_EQ(banded(spans), 0);
  }
  std::ptrdiff_t last = 0;
  for (int call = 0; call < 400 && last == 0; ++call) {
    LayerSpans spans;
    expectClose(runGraph(compiled, {IValue(x.clone())})[0], want[0], 1e-4);
    last = banded(spans);
    if (last == 0) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_EQ(last, 5) << "the reused plan never ran in bands";

  // An input of the plan's signature (sizes, not contiguous) with other strides than the one
  // the bands were made for: the first layer is computed whole, the plan stops using bands, and
  // the numbers stay the interpreter's.
  auto cl = ops::permute(ops::permute(x, {0, 2, 3, 1}).contiguous(), {0, 3, 1, 2});
  auto wide = randn({1, 3, 60, 40}, 110);
  auto sliced = ops::narrow(wide, 3, 5, 27);  // [1, 3, 60, 27], rows of 40
  auto wantSliced = runGraph(reference, {IValue(sliced.contiguous())});
  auto other = reference->copy();
  ASSERT_EQ(partitionGraph(*other).numEngines(), 1u);
  for (int call = 0; call < 3; ++call) {
    BuildForReuse reuse;
    expectClose(runGraph(other, {IValue(cl)})[0], want[0], 1e-4);
  }
  {
    LayerSpans spans;
    expectClose(runGraph(other, {IValue(sliced)})[0], wantSliced[0], 1e-4);
    expectClose(runGraph(other, {IValue(cl)})[0], want[0], 1e-4);
    EXPECT_EQ(banded(spans), 5);  // the first of the two calls, in bands but for its first layer
  }
}

// The memory plan follows what each layer's output may alias through layers that do not own
// their output (plugins, shapes) as a set: a chain of 40 `h = h + h` reads each value twice,
// and the list of roots doubled at every step (2^40 entries; int8 shufflenet_v2's channel
// shuffles took 40 s there). This case finishes, with the interpreter's numbers.
TEST(Engine, AliasRootsDoNotGrowWithRepeatedReads) {
  std::string text =
      "graph(%x : Tensor, %w : Tensor):\n"
      "  %none : NoneType = prim::Constant()\n"
      "  %one : int = prim::Constant[value=1]()\n"
      "  %s : int[] = prim::Constant[value=[1, 1]]()\n"
      "  %h0 : Tensor = aten::conv2d(%x, %w, %none, %s, %s, %s, %one)\n";
  const int steps = 40;
  for (int i = 0; i < steps; ++i)
    text += "  %h" + std::to_string(i + 1) + " : Tensor = aten::add(%h" + std::to_string(i) +
            ", %h" + std::to_string(i) + ", %one)\n";
  text += "  return (%h" + std::to_string(steps) + ")\n";
  auto reference = graphWith(text.c_str(), {{"w", randn({8, 8, 3, 3}, 31)}});
  auto compiled = reference->copy();
  ASSERT_EQ(partitionGraph(*compiled).numEngines(), 1u);
  const Tensor x = randn({1, 8, 6, 6}, 32);
  auto want = runGraph(reference, {IValue(x.clone())});
  for (int call = 0; call < 2; ++call)
    expectClose(runGraph(compiled, {IValue(x.clone())})[0], want[0], 1e-4);
}

// Note [Residual in place] (engine.cpp): a residual that nothing reads after its fused add
// lends its arena buffer to the convolution's output (y0, then b3 in a chain); one still read
// afterwards (d3, by the conv g1, after e1's add) keeps its own. Calls after the first run the
// planned arena.
const char* kResidualChain = R"IR(
graph(%x : Tensor, %w0 : Tensor, %w1 : Tensor, %w2 : Tensor, %w3 : Tensor, %w4 : Tensor, %w5 : Tensor, %w6 : Tensor, %w7 : Tensor, %w8 : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %s : int[] = prim::Constant[value=[1, 1]]()
  %y0 : Tensor = aten::conv2d(%x, %w0, %none, %s, %s, %s, %one)
  %a1 : Tensor = aten::conv2d(%y0, %w1, %none, %s, %s, %s, %one)
  %a2 : Tensor = aten::relu_(%a1)
  %b1 : Tensor = aten::conv2d(%a2, %w2, %none, %s, %s, %s, %one)
  %b2 : Tensor = aten::add_(%b1, %y0, %one)
  %b3 : Tensor = aten::relu_(%b2)
  %c1 : Tensor = aten::conv2d(%b3, %w3, %none, %s, %s, %s, %one)
  %c2 : Tensor = aten::relu_(%c1)
  %d1 : Tensor = aten::conv2d(%c2, %w4, %none, %s, %s, %s, %one)
  %d2 : Tensor = aten::add_(%d1, %b3, %one)
  %d3 : Tensor = aten::relu_(%d2)
  %e0 : Tensor = aten::conv2d(%d3, %w8, %none, %s, %s, %s, %one)
  %e0r : Tensor = aten::relu(%e0)
  %e1 : Tensor = aten::conv2d(%e0r, %w5, %none, %s, %s, %s, %one)
  %e2 : Tensor = aten::add(%e1, %d3, %one)
  %g1 : Tensor = aten::conv2d(%d3, %w6, %none, %s, %s, %s, %one)
  %g2 : Tensor = aten::relu(%g1)
  %h1 : Tensor = aten::conv2d(%g2, %w7, %none, %s, %s, %s, %one)
  %h2 : Tensor = aten::add_(%h1, %e2, %one)
  return (%h2)
)IR";

TEST(Engine, ResidualsNothingReadsLaterAreSummedInPlace) {
  std::map<std::string, Tensor> w;
  for (int i = 0; i <= 8; ++i) w["w" + std::to_string(i)] = randn({8, 8, 3, 3}, 20 + i);
  auto reference = graphWith(kResidualChain, w);
  auto compiled = reference->copy();
  PartitionReport report = partitionGraph(*compiled);
  ASSERT_EQ(report.numEngines(), 1u) << report.str();
  for (int call = 0; call < 3; ++call) {
    const Tensor x = randn({2, 8, 6, 6}, 40 + call);
    auto want = runGraph(reference, {IValue(x.clone())});
    auto got = runGraph(compiled, {IValue(x.clone())});
    expectClose(got[0], want[0], 1e-4);
  }
}

// The engine keeps convolution and pool outputs channels-last; aten::view after them (LeNet's
// x.view(-1, 16 * 5 * 5)) sees PyTorch's contiguous layout, in one engine, as the interpreter.
const char* kConvPoolView = R"IR(
graph(%x : Tensor, %w1 : Tensor, %w2 : Tensor, %fw : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %f : bool = prim::Constant[value=0]()
  %s : int[] = prim::Constant[value=[1, 1]]()
  %p : int[] = prim::Constant[value=[0, 0]]()
  %k : int[] = prim::Constant[value=[2, 2]]()
  %flat : int[] = prim::Constant[value=[-1, 72]]()
  %flat2 : int[] = prim::Constant[value=[-1, 288]]()
  %c1 : Tensor = aten::conv2d(%x, %w1, %none, %s, %p, %s, %one)
  %r1 : Tensor = aten::relu(%c1)
  %m1 : Tensor = aten::max_pool2d(%r1, %k, %k, %p, %s, %f)
  %v1 : Tensor = aten::view(%m1, %flat)
  %c2 : Tensor = aten::conv2d(%x, %w2, %none, %s, %p, %s, %one)
  %v2 : Tensor = aten::view(%c2, %flat2)
  %y1 : Tensor = aten::linear(%v1, %fw, %none)
  %y : Tensor = aten::add(%y1, %v2, %one)
  return (%y)
)IR";

TEST(Engine, ViewOfChannelsLastActivationsSeesPyTorchsLayout) {
  auto reference = graphWith(kConvPoolView, {{"w1", randn({8, 3, 3, 3}, 51)},
                                             {"w2", randn({8, 3, 3, 3}, 52)},
                                             {"fw", randn({288, 72}, 53)}});
  auto compiled = reference->copy();
  PartitionReport report = partitionGraph(*compiled);
  ASSERT_EQ(report.numEngines(), 1u) << report.str();
  for (int call = 0; call < 2; ++call) {
    const Tensor x = randn({2, 3, 8, 8}, 60 + call);
    expectClose(runGraph(compiled, {IValue(x.clone())})[0],
                runGraph(reference, {IValue(x.clone())})[0], 1e-4);
  }
}

// aten::view keeps the batch whole (Note [Batch split] in engine.cpp): one plan per batch size.
TEST(Engine, DynamicBatchMakesOnePlanPerSignature) {
  auto reference = graphWith(kConvPoolView, {{"w1", randn({8, 3, 3, 3}, 51)},
                                             {"w2", randn({8, 3, 3, 3}, 52)},
                                             {"fw", randn({288, 72}, 53)}});
  auto compiled = reference->copy();
  PartitionReport report = partitionGraph(*compiled);
  ASSERT_EQ(report.numEngines(), 1u) << report.str();
  for (int64_t n : {1, 3, 1, 5}) {
    Tensor x = randn({n, 3, 8, 8}, static_cast<uint32_t>(n));
    expectClose(runGraph(compiled, {IValue(x.clone())})[0],
                runGraph(reference, {IValue(x.clone())})[0], 1e-4);
  }
  EXPECT_EQ(report.segments[0].built->numPlans(), 3u);
}

// Note [Batch split]: a residual block keeps its samples apart, so batches of 3 and 5 run
// sample by sample on plans of batch 1 (one per thread at most, besides batch 1's own).
TEST(Engine, BatchOfIndependentSamplesRunsSampleBySample) {
  auto reference = graphWith(kResidualBlock, residualWeights());
  auto compiled = reference->copy();
  PartitionReport report = partitionGraph(*compiled);
  ASSERT_EQ(report.numEngines(), 1u) << report.str();
  for (int64_t n : {3, 1, 5, 3}) {
    Tensor x = randn({n, 8, 6, 7}, static_cast<uint32_t>(n));
    expectClose(runGraph(compiled, {IValue(x.clone())})[0],
                runGraph(reference, {IValue(x.clone())})[0], 1e-4);
  }
  EXPECT_LE(report.segments[0].built->numPlans(), 1u + static_cast<size_t>(omp_get_max_threads()));
}

// Note [Batch split], the cut: the middle convolution's weights (2.4 MB) make it and what
// follows run on the whole batch; the one value crossing is %a (the residual of the last
// convolution reads it too), which the samples' plans stack for the whole batch's plan.
const char* kBigWeightBlock = R"IR(
graph(%x : Tensor, %w1 : Tensor, %b1 : Tensor, %w2 : Tensor, %w3 : Tensor, %b3 : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %s : int[] = prim::Constant[value=[1, 1]]()
  %z : int[] = prim::Constant[value=[0, 0]]()
  %c1 : Tensor = aten::conv2d(%x, %w1, %b1, %s, %s, %s, %one)
  %a : Tensor = aten::relu(%c1)
  %c2 : Tensor = aten::conv2d(%a, %w2, %none, %s, %s, %s, %one)
  %b : Tensor = aten::relu(%c2)
  %c3 : Tensor = aten::conv2d(%b, %w3, %b3, %s, %z, %s, %one)
  %r : Tensor = aten::add(%c3, %a, %one)
  %y : Tensor = aten::relu(%r)
  return (%y)
)IR";

TEST(Engine, BatchRunsSampleBySampleUpToTheFirstLargeWeightsThenWhole) {
  auto reference = graphWith(kBigWeightBlock, {{"w1", randn({64, 16, 3, 3}, 81)},
                                               {"b1", randn({64}, 82)},
                                               {"w2", randn({1024, 64, 3, 3}, 83)},
                                               {"w3", randn({64, 1024, 1, 1}, 84)},
                                               {"b3", randn({64}, 85)}});
  auto compiled = reference->copy();
  PartitionReport report = partitionGraph(*compiled);
  ASSERT_EQ(report.numEngines(), 1u) << report.str();
  for (int64_t n : {3, 1, 5, 3}) {
    Tensor x = randn({n, 16, 5, 4}, static_cast<uint32_t>(90 + n));
    expectClose(runGraph(compiled, {IValue(x.clone())})[0],
                runGraph(reference, {IValue(x.clone())})[0], 1e-4);
  }
  // Batch 1's plan, a sample's plan per thread at most (batches 3 and 5 share them), and the
  // whole batch's plan of the layers from the cut for each of batches 3 and 5.
  const size_t plans = report.segments[0].built->numPlans();
  EXPECT_GE(plans, 4u);
  EXPECT_LE(plans, 3u + static_cast<size_t>(omp_get_max_threads()));
}

// A residual [N, W] broadcast against a convolution's [N, C, H, W] (N == H) adds across the
// samples: the first sample's plan shows it and the batch runs whole, as the interpreter.
const char* kBroadcastResidual = R"IR(
graph(%x : Tensor, %y : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %s : int[] = prim::Constant[value=[1, 1]]()
  %c : Tensor = aten::conv2d(%x, %w, %none, %s, %s, %s, %one)
  %r : Tensor = aten::add(%c, %y, %one)
  return (%r)
)IR";

TEST(Engine, BatchWhoseSamplesMixRunsWhole) {
  auto reference = graphWith(kBroadcastResidual, {{"w", randn({4, 4, 3, 3}, 70)}});
  auto compiled = reference->copy();
  PartitionReport report = partitionGraph(*compiled);
  ASSERT_EQ(report.numEngines(), 1u) << report.str();
  for (int call = 0; call < 2; ++call) {
    const Tensor x = randn({3, 4, 3, 5}, 71), y = randn({3, 5}, 72);
    expectClose(runGraph(compiled, {IValue(x.clone()), IValue(y.clone())})[0],
                runGraph(reference, {IValue(x.clone()), IValue(y.clone())})[0], 1e-4);
  }
}

TEST(Engine, ProfileRunsAtMinOptAndMaxAndRejectsAShapeOutsideItsRangeNamingTheInput) {
  auto reference = graphWith(kResidualBlock, residualWeights());
  auto g = reference->copy();
  PartitionOptions o;
  o.inputProfiles[0] = InputProfile{{1, 8, 4, 4}, {2, 8, 8, 8}, {4, 8, 16, 16}};
  PartitionReport report = partitionGraph(*g, o);
  ASSERT_EQ(report.numEngines(), 1u) << report.str();
  // min, opt, max, and a shape between them, each against the interpreter.
  for (const IntList& shape :
       {IntList{1, 8, 4, 4}, IntList{2, 8, 8, 8}, IntList{4, 8, 16, 16}, IntList{3, 8, 5, 12}}) {
    Tensor x = randn(shape, 7);
    expectClose(runGraph(g, {IValue(x.clone())})[0], runGraph(reference, {IValue(x.clone())})[0],
                1e-4);
  }
  try {
    runGraph(g, {IValue(randn({5, 8, 8, 8}, 1))});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("size [5, 8, 8, 8] is outside the profile "
                                         "[(1,8,4,4);(2,8,8,8);(4,8,16,16)]"),
              std::string::npos)
        << e.what();
  }
}

// Linear layers: addmm (traced nn.Linear), linear + gelu, matmul with a constant; a view with
// the batch size read at run time (a shape value) in between.
const char* kMlp = R"IR(
graph(%x : Tensor, %w1t : Tensor, %b1 : Tensor, %w2 : Tensor, %b2 : Tensor, %w3 : Tensor):
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %m1 : int = prim::Constant[value=-1]()
  %none : str = prim::Constant[value="none"]()
  %h1 : Tensor = aten::addmm(%b1, %x, %w1t, %one, %one)
  %h2 : Tensor = aten::relu(%h1)
  %h3 : Tensor = aten::linear(%h2, %w2, %b2)
  %h4 : Tensor = aten::gelu(%h3, %none)
  %n : int = aten::size(%x, %zero)
  %sz : int[] = prim::ListConstruct(%n, %m1)
  %h5 : Tensor = aten::view(%h4, %sz)
  %h6 : Tensor = aten::matmul(%h5, %w3)
  return (%h6)
)IR";

TEST(Engine, LinearLayersWithShapeValuesMatchTheInterpreter) {
  std::map<std::string, Tensor> w = {{"w1t", randn({16, 32}, 1)},
                                     {"b1", randn({32}, 2)},
                                     {"w2", randn({24, 32}, 3)},
                                     {"b2", randn({24}, 4)},
                                     {"w3", randn({24, 5}, 5)}};
  auto reference = graphWith(kMlp, w);
  auto compiled = reference->copy();
  PartitionReport report = partitionGraph(*compiled);
  ASSERT_EQ(report.numEngines(), 1u) << report.str();
  EXPECT_EQ(report.segments[0].layers, "MatMul 3, Plugin 1, Shape 2") << report.str();
  for (int64_t n : {3, 7}) {
    Tensor x = randn({n, 16}, static_cast<uint32_t>(n));
    expectClose(runGraph(compiled, {IValue(x)})[0], runGraph(reference, {IValue(x)})[0], 1e-4);
  }
}

// Control flow stays in the interpreter; the bodies are partitioned in turn.
const char* kControlFlow = R"IR(
graph(%x : Tensor, %c : bool, %w : Tensor):
  %one : int = prim::Constant[value=1]()
  %nob : NoneType = prim::Constant()
  %a : Tensor = aten::linear(%x, %w, %nob)
  %b : Tensor = aten::relu(%a)
  %c2 : Tensor = aten::sigmoid(%b)
  %r : Tensor = prim::If(%c)
    block0():
      %t1 : Tensor = aten::linear(%c2, %w, %nob)
      %t2 : Tensor = aten::tanh(%t1)
      %t3 : Tensor = aten::mul(%t2, %t2)
      -> (%t3)
    block1():
      -> (%c2)
  %out : Tensor = aten::add(%r, %x, %one)
  return (%out)
)IR";

TEST(Engine, ControlFlowFallsBackToTheInterpreterWithItsBodiesCompiled) {
  auto reference = graphWith(kControlFlow, {{"w", randn({6, 6}, 1)}});
  auto compiled = reference->copy();
  PartitionReport report = partitionGraph(*compiled);
  EXPECT_EQ(report.numEngines(), 2u) << report.str();  // the then-block and the top run
  bool sawIf = false;
  for (const auto& s : report.segments)
    if (!s.engine) sawIf |= s.reason.find("prim::If (control flow)") != std::string::npos;
  EXPECT_TRUE(sawIf) << report.str();
  for (bool c : {true, false}) {
    Tensor x = randn({4, 6}, 3);
    expectClose(runGraph(compiled, {IValue(x), IValue(c)})[0],
                runGraph(reference, {IValue(x), IValue(c)})[0], 1e-4);
  }
}

TEST(Engine, MinBlockSizeAndTorchExecutedOpsKeepNodesInTheInterpreter) {
  auto g = graphWith(kControlFlow, {{"w", randn({6, 6}, 1)}});
  PartitionOptions o;
  o.minBlockSize = 4;
  PartitionReport r = partitionGraph(*g, o);
  EXPECT_EQ(r.numEngines(), 0u) << r.str();
  EXPECT_NE(r.str().find("fewer than min_block_size 4"), std::string::npos) << r.str();

  auto g2 = graphWith(kControlFlow, {{"w", randn({6, 6}, 1)}});
  PartitionOptions o2;
  o2.torchExecutedOps = {"aten::relu"};
  PartitionReport r2 = partitionGraph(*g2, o2);
  EXPECT_NE(r2.str().find("listed in torch_executed_ops"), std::string::npos) << r2.str();
  Tensor x = randn({4, 6}, 3);
  auto ref = graphWith(kControlFlow, {{"w", randn({6, 6}, 1)}});
  expectClose(runGraph(g2, {IValue(x), IValue(true)})[0],
              runGraph(ref, {IValue(x), IValue(true)})[0], 1e-4);
}

TEST(Engine, RequireFullCompilationListsEveryNodeLeftOutWithItsPlace) {
  auto g = graphWith(kControlFlow, {{"w", randn({6, 6}, 1)}});
  PartitionOptions o;
  o.requireFullCompilation = true;
  try {
    partitionGraph(*g, o);
    FAIL() << "expected an UnsupportedError";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("prim::If (control flow)"), std::string::npos) << e.what();
  }
}

TEST(Engine, EveryConverterKeysAnOpTableSchemaAndNativeOnesExist) {
  const EngineConverterRegistry& r = engineConverters();
  for (const char* s :
       {"aten::_convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] "
        "padding, "
        "int[] dilation, bool transposed, int[] output_padding, int groups, bool benchmark, bool "
        "deterministic, bool cudnn_enabled, bool allow_tf32) -> Tensor",
        "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
        "aten::relu_(Tensor(a!) self) -> Tensor(a!)"})
    EXPECT_NE(r.find(std::string_view(s)), nullptr) << s;
  // Data-dependent output sizes and side effects stay in the interpreter.
  EXPECT_EQ(r.find(std::string_view("aten::nonzero(Tensor self) -> Tensor")), nullptr);
  EXPECT_GT(r.numSchemas(), 500u);
  // A second registration of a schema stops start-up.
  EngineConverterRegistry again("engine");
  registerEngineNativeConverters(again);
  EXPECT_THROW(registerEngineNativeConverters(again), Error);
}

}  // namespace

namespace {

// An unbatched input [C, H, W]: aten::conv2d takes it (PyTorch batchifies), aten::_convolution
// (what traced models hold) refuses it with PyTorch's message, in the engine and the interpreter
// alike (issue 17: a 3-D input to a traced ResNet).
TEST(Engine, UnbatchedInputIsTakenByConv2dAndRefusedByConvolutionAsInPyTorch) {
  const char* conv2d = R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %s : int[] = prim::Constant[value=[1, 1]]()
  %y : Tensor = aten::conv2d(%x, %w, %none, %s, %s, %s, %one)
  %r : Tensor = aten::relu(%y)
  return (%r)
)IR";
  const char* convolution = R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %t : bool = prim::Constant[value=1]()
  %s : int[] = prim::Constant[value=[1, 1]]()
  %z : int[] = prim::Constant[value=[0, 0]]()
  %y : Tensor = aten::_convolution(%x, %w, %none, %s, %s, %s, %f, %z, %one, %f, %f, %t, %t)
  %r : Tensor = aten::relu(%y)
  return (%r)
)IR";
  const std::map<std::string, Tensor> w = {{"w", randn({4, 3, 3, 3}, 1)}};
  Tensor x = randn({3, 8, 8}, 2);
  auto reference = graphWith(conv2d, w);
  auto compiled = reference->copy();
  ASSERT_EQ(partitionGraph(*compiled).numEngines(), 1u);
  auto want = runGraph(reference, {IValue(x.clone())});
  EXPECT_EQ(want[0].toTensor().sizes(), (IntList{4, 8, 8}));
  expectClose(runGraph(compiled, {IValue(x.clone())})[0], want[0], 1e-4);

  auto strict = graphWith(convolution, w);
  auto strictCompiled = strict->copy();
  ASSERT_EQ(partitionGraph(*strictCompiled).numEngines(), 1u);
  const std::string message =
      "Expected 4-dimensional input for 4-dimensional weight [4, 3, 3, 3], but got 3-dimensional "
      "input of "
      "size [3, 8, 8] instead";
  for (const auto& g : {strict, strictCompiled}) {
    try {
      runGraph(g, {IValue(x.clone())});
      ADD_FAILURE() << "aten::_convolution took an unbatched input";
    } catch (const Error& e) {
      EXPECT_NE(e.firstLine().find(message), std::string::npos) << e.what();
    }
  }
}

}  // namespace

// A run that writes into a tensor from outside it (a view of a graph input, here): the write
// and its view stay in the interpreter (Note [In-place writes at an engine's edge]). Before,
// the engine [linear, relu, slice, slice, copy_, add_] had no output and was removed as dead: `s`
// came back unwritten.
const char* kWriteIntoInput = R"IR(
graph(%x : Tensor, %s : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %end : int = prim::Constant[value=9223372036854775807]()
  %f : bool = prim::Constant[value=0]()
  %y : Tensor = aten::linear(%x, %w, %none)
  %y2 : Tensor = aten::relu(%y)
  %y3 : Tensor = aten::slice(%y2, %zero, %one, %end, %one)
  %v : Tensor = aten::slice(%s, %zero, %one, %end, %one)
  %c : Tensor = aten::copy_(%v, %y3, %f)
  %t : Tensor = aten::add_(%s, %y2, %one)
  return (%s)
)IR";

TEST(Engine, WritesIntoTensorsFromOutsideStayWithTheInterpreter) {
  const Tensor w = randn({6, 6}, 1), x = randn({4, 6}, 2), s0 = randn({4, 6}, 3);
  auto reference = graphWith(kWriteIntoInput, {{"w", w}});
  auto compiled = graphWith(kWriteIntoInput, {{"w", w}});
  PartitionReport report = partitionGraph(*compiled);
  EXPECT_EQ(report.numEngines(), 1u) << report.str();
  EXPECT_NE(report.str().find("writes in place (or views) a value from outside the engine"),
            std::string::npos)
      << report.str();
  Tensor sRef = s0.clone(), sGot = s0.clone();
  runGraph(reference, {IValue(x), IValue(sRef)});
  runGraph(compiled, {IValue(x), IValue(sGot)});
  expectClose(IValue(sGot), IValue(sRef));
  EXPECT_GT(std::fabs(sRef.doubleAt(6) - s0.doubleAt(6)), 0.0);  // the graph did write s
}

// A list built empty and appended to by the interpreter is no constant to copy into an
// engine: its reader stays with the interpreter (F.interpolate's scale_factors: the engine
// saw [] and failed).
const char* kListAppendedInALoop = R"IR(
graph(%x : Tensor, %n : int):
  %t : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %f : float = prim::Constant[value=2.]()
  %l : float[] = prim::ListConstruct()
   = prim::Loop(%n, %t)
    block0(%i : int):
      %a : float[] = aten::append(%l, %f)
      -> (%t)
  %y : Tensor = aten::upsample_nearest2d(%x, %none, %l)
  %z : Tensor = aten::relu(%y)
  %w : Tensor = aten::sigmoid(%z)
  return (%w)
)IR";

TEST(Engine, ListsTheInterpreterAppendsToAreNotConstantsOfTheEngine) {
  auto reference = graphWith(kListAppendedInALoop, {});
  auto compiled = graphWith(kListAppendedInALoop, {});
  partitionGraph(*compiled);
  const Tensor x = randn({1, 2, 3, 5}, 4);
  const auto want = runGraph(reference, {IValue(x), IValue(int64_t{2})});
  const auto got = runGraph(compiled, {IValue(x), IValue(int64_t{2})});
  ASSERT_EQ(got[0].toTensor().sizes(), (IntList{1, 2, 6, 10}));
  expectClose(got[0], want[0]);
}
