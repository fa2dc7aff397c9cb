// Note [Preparing at load] (api/pipeline.h): Module::prepare builds what the first call would,
// so that call builds nothing (counted through the "build" spans every building step reports,
// runtime/op_observer.h, not timed) and still gives PyTorch's numbers; a method whose run could
// be seen (module state, prints) is not run by it.
#include "api/compile.h"
#include "api/pipeline.h"
#include "ops/elementwise.h"
#include "ops/shape.h"
#include "oracle_util.h"
#include "runtime/op_observer.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>

namespace torchless::testing {
namespace {

namespace fs = std::filesystem;

// Counts the build spans (freeze, partition, specialize, engine plan, layer preparation)
// reported while it is installed.
class BuildCounter : public OpObserver {
 public:
  BuildCounter() { setOpObserver(this); }
  ~BuildCounter() override { setOpObserver(nullptr); }
  void onOpStart(const Node&) override {}
  void onOpEnd(const Node&) override {}
  void onSpan(const char* category, const std::string&, const std::string&,
              std::chrono::steady_clock::time_point,
              std::chrono::steady_clock::time_point) override {
    if (std::string(category) == "build") ++builds;
    if (std::string(category) == "layer") ++layers;
  }
  std::atomic<int> builds{0};
  std::atomic<int> layers{0};  // engine layers run
};

struct Case {
  Module m;
  std::vector<IValue> args;
  std::vector<fs::path> outputs;
  double rtol, atol;
};

Case readCase(const fs::path& dir) {
  auto meta = nlohmann::json::parse(readFile(dir / "meta.json"));
  Case c;
  c.m = load((dir / "model.pt").string());
  std::vector<std::string> words;
  for (const auto& w : meta["args"]) words.push_back(resolveWord(w.get<std::string>(), dir));
  c.args = parseInputs(words, c.m.methodParams("forward"),
                       [](const std::string& p) { return loadNpy(p); });
  for (const auto& o : meta["outputs"]) c.outputs.push_back(dir / o.get<std::string>());
  c.rtol = meta.contains("rtol") ? meta["rtol"].get<double>() : 1e-4;
  c.atol = meta.contains("atol") ? meta["atol"].get<double>() : 1e-4;
  return c;
}

void expectPyTorchsNumbers(const Case& c, const IValue& out, const std::string& what) {
  std::vector<FlatOutput> outs = flattenOutputs(out);
  ASSERT_EQ(outs.size(), c.outputs.size()) << what;
  for (size_t i = 0; i < outs.size(); ++i) {
    ASSERT_TRUE(outs[i].tensor.has_value()) << what;
    EXPECT_TRUE(allClose(*outs[i].tensor, loadNpy(c.outputs[i].string()), c.rtol, c.atol))
        << what << ", output " << i;
  }
}

const fs::path kModels = fs::path(TORCHLESS_API_MODELS);
const fs::path kEncoderCalls = kModels.parent_path() / "api_specialize" / "transformer_encoder";

// A convnet that is one engine, and the transformer encoder that is specialized first
// (Note [Specialization]: prepare runs it twice).
TEST(PrepareOracle, TheFirstCallAfterPrepareBuildsNothing) {
  for (const fs::path& dir : {kModels / "resnet18_traced", kEncoderCalls / "call0"}) {
    Case c = readCase(dir);
    ASSERT_TRUE(c.m.prepare("forward", c.args)) << dir;
    std::shared_ptr<const ExecutionPlan> plan = c.m.executionPlan("forward");
    ASSERT_NE(plan->code, nullptr) << dir;
    EXPECT_GE(plan->report.numEngines() + (plan->frozenGraph ? 1u : 0u), 1u) << plan->report.str();
    BuildCounter counter;
    IValue out = c.m.runMethod("forward", c.args);
    EXPECT_EQ(counter.builds.load(), 0) << dir << ": the first call after prepare built something";
    expectPyTorchsNumbers(c, out, dir.string() + ", first call");
    expectPyTorchsNumbers(c, c.m.runMethod("forward", c.args), dir.string() + ", second call");
  }
}

// Note [Settling run]: preparation runs the built plan once more. The run that builds a plan
// reports its layers as "build" spans; only a run of a built plan reports "layer" spans, so
// without the settling run preparation reports none (TORCHLESS_SETTLING_RUN=0 fails here).
TEST(PrepareOracle, PreparationEndsWithASettlingRun) {
  Case c = readCase(kModels / "resnet18_traced");
  int prepared = 0, perCall = 0;
  {
    BuildCounter counter;
    ASSERT_TRUE(c.m.prepare("forward", c.args));
    prepared = counter.layers.load();
  }
  {
    BuildCounter counter;
    IValue out = c.m.runMethod("forward", c.args);
    perCall = counter.layers.load();
    EXPECT_EQ(counter.builds.load(), 0);
    expectPyTorchsNumbers(c, out, "first call after the settling run");
  }
  EXPECT_GT(perCall, 0);
  EXPECT_GT(prepared, 0) << "preparation ran no built plan";
}

// An archive `torchless compile` wrote runs as loaded (it reads its Engine attributes) and is
// prepared all the same: its engines plan the inputs at load, the first call builds nothing.
TEST(PrepareOracle, ACompiledArchiveIsPrepared) {
  Case c = readCase(kModels / "resnet18_traced");
  CompileSpec spec;
  spec.exampleInputs = c.args;
  CompileResult compiled = compile(c.m, spec);
  const fs::path saved = freshDir("api", "prepare_compiled") / "compiled.pt";
  save(compiled.module, saved.string());
  Case d = c;
  d.m = load(saved.string());
  EXPECT_NE(d.m.executionPlan("forward")->notFrozen.find("compiled archive"), std::string::npos)
      << d.m.executionPlan("forward")->notFrozen;
  ASSERT_TRUE(d.m.prepare("forward", d.args));
  BuildCounter counter;
  IValue out = d.m.runMethod("forward", d.args);
  EXPECT_EQ(counter.builds.load(), 0) << "the first call after prepare built something";
  expectPyTorchsNumbers(d, out, "compiled archive, first call");
}

// The counter can fail: without prepare, the first call builds (and prepare's own run gave
// the numbers the call gives, on copies of the inputs, which it leaves untouched).
TEST(PrepareOracle, WithoutPrepareTheFirstCallBuilds) {
  Case c = readCase(kModels / "resnet18_traced");
  Tensor before = c.args[0].toTensor().clone();
  {
    BuildCounter counter;
    expectPyTorchsNumbers(c, c.m.runMethod("forward", c.args), "first call, not prepared");
    EXPECT_GT(counter.builds.load(), 0);
  }
  EXPECT_TRUE(allClose(c.args[0].toTensor(), before, 0, 0));
  // Another input size is another engine plan: built on its call even after prepare. (Not a
  // batch size: a batch of a convnet runs sample by sample on the batch-1 plans, Note [Batch
  // split] in convert/engine/engine.cpp; twice the height instead.)
  Case d = readCase(kModels / "resnet18_traced");
  ASSERT_TRUE(d.m.prepare("forward", d.args));
  std::vector<IValue> two = {IValue(ops::cat({d.args[0].toTensor(), d.args[0].toTensor()}, 2))};
  BuildCounter counter;
  (void)d.m.runMethod("forward", two);
  EXPECT_GT(counter.builds.load(), 0);
}

// Writes `source` to DIR/m.py and scripts its class M with `torchless script`.
Module scriptM(const std::string& name, const std::string& source) {
  fs::path d = freshDir("api", name);
  std::ofstream(d / "m.py") << source;
  auto s = runCli({"script", (d / "m.py").string(), "--class", "M", "-o", (d / "m.pt").string()});
  EXPECT_EQ(s.status, 0) << s.err;
  return load((d / "m.pt").string());
}

// A method that changes module state runs as loaded (Note [Execution pipeline]): prepare must
// not run it, or the first real call would see the state one step on.
TEST(Prepare, AMethodThatKeepsStateIsNotRun) {
  Module m = scriptM("prepare_state",
                     "import torch\n"
                     "class M(torch.nn.Module):\n"
                     "    def __init__(self):\n"
                     "        super().__init__()\n"
                     "        self.calls = 0\n"
                     "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                     "        self.calls += 1\n"
                     "        return x * float(self.calls)\n");
  m.eval();
  std::vector<IValue> args = {IValue(Tensor::fromVector(std::vector<float>{1.f, 1.f}, {2}))};
  EXPECT_FALSE(m.prepare("forward", args));
  Tensor y = m.runMethod("forward", args).toTensor();
  EXPECT_EQ(y.data<float>()[0], 1.f) << "the first call saw calls == " << y.data<float>()[0];
  y = m.runMethod("forward", args).toTensor();
  EXPECT_EQ(y.data<float>()[0], 2.f);
}

// A method that keeps module state is frozen and partitioned all the same, and runs on the
// module's own object (Note [Module state in a frozen plan]): its calls and the module's
// other methods (set_scale, reset) see one state, as in PyTorch (gen_models.py's
// StatefulConvs).
// A size read from tensor values (`x[:, :int(lengths.max())]`, then `y.size(1)`) changes
// from call to call with the same input sizes: engines must not keep the first call's.
TEST(PrepareOracle, SizesReadFromValuesAreNotKeptAcrossCalls) {
  Module m = load((kModels / "data_sized_slice_scripted" / "model.pt").string());
  for (const std::vector<int64_t>& lengths : {std::vector<int64_t>{6, 2}, {3, 1}, {5, 5}, {3, 1}}) {
    IValue out = m.runMethod("forward",
                             {IValue(ops::ones({2, 6})), IValue(Tensor::fromVector(lengths, {2}))});
    const Tensor y = out.toTensor();
    ASSERT_EQ(y.sizes(), (IntList{2}));
    for (int64_t i = 0; i < 2; ++i)
      EXPECT_FLOAT_EQ(y.data<float>()[i], 1.0f) << "lengths " << lengths[0] << ", " << lengths[1];
  }
}

// An Optional that a test of tensor values sets or leaves None is tested for None after:
// specialization must not fold that test to the first call's answer (Note [Specialization]).
TEST(PrepareOracle, NoneSetByValuesIsNotKeptAcrossCalls) {
  Module m = load((kModels / "optional_by_data_scripted" / "model.pt").string());
  for (float sign : {1.f, -1.f, 1.f, -1.f}) {
    const Tensor x = ops::mul(ops::ones({2, 3}), Scalar(static_cast<double>(sign)));
    const Tensor y = m.runMethod("forward", {IValue(x)}).toTensor();
    // PyTorch: x * 2 + 1 when x.sum() > 0, else x - 1.
    EXPECT_FLOAT_EQ(y.data<float>()[0], sign > 0 ? 3.f : -2.f) << "sign " << sign;
  }
}

// A scripted nn.TransformerEncoder with a key padding mask takes PyTorch's nested path when
// the mask is left-aligned (zeros in the padded rows, dim 1 cut to the longest sequence) and
// the dense path when not, call by call on one module (Note [Values that may be nested] in
// convert/engine/partition.cpp); gen_models.py wrote PyTorch's outputs for four masks.
TEST(PrepareOracle, ScriptedEncoderFollowsEachCallsMask) {
  const fs::path dir = kModels / "encoder_padded_scripted";
  Module m = load((dir / "model.pt").string());
  const Tensor x = loadNpy((dir / "in0.npy").string());
  for (int round = 0; round < 2; ++round)
    for (int k = 0; k < 4; ++k) {
      const Tensor pad = loadNpy((dir / "calls" / fmt::format("pad{}.npy", k)).string());
      const Tensor want = loadNpy((dir / "calls" / fmt::format("out{}.npy", k)).string());
      const Tensor got = m.runMethod("forward", {IValue(x), IValue(pad)}).toTensor();
      EXPECT_TRUE(allClose(got, want, 1e-4, 1e-4)) << "round " << round << ", mask " << k;
    }
}

TEST(PrepareOracle, AMethodThatKeepsStateRunsFrozenOnTheModulesOwnState) {
  Module m = load((kModels / "stateful_convs_scripted" / "model.pt").string());
  m.eval();
  auto plan = m.executionPlan("forward");
  EXPECT_EQ(plan->notFrozen, "");
  EXPECT_EQ(plan->self.get(), m.object().get()) << "the plan must run on the module's object";
  EXPECT_GE(plan->report.numEngines(), 1u);
  std::vector<IValue> args = {IValue(ops::ones({1, 3, 8, 8}, ScalarType::Float))};
  auto call = [&]() {
    auto t = m.runMethod("forward", args).toTuple();
    return std::make_pair(t->elements.at(0).toTensor().data<float>()[0], t->elements.at(1).toInt());
  };
  auto [y1, n1] = call();
  auto [y2, n2] = call();
  EXPECT_EQ(n1, 1);
  EXPECT_EQ(n2, 2);
  EXPECT_NEAR(y2, y1 + 1.f, 1e-4f * std::abs(y1));
  const float f = y1 - 1.f;  // the convolutions' sum
  (void)m.runMethod("set_scale", {IValue(2.0)});
  auto [y3, n3] = call();
  EXPECT_EQ(n3, 3);
  EXPECT_NEAR(y3, 2.f * f + 3.f, 1e-4f * std::abs(y3));
  (void)m.runMethod("reset", {});
  auto [y4, n4] = call();
  EXPECT_EQ(n4, 1);
  EXPECT_NEAR(y4, 2.f * f + 1.f, 1e-4f * std::abs(y4));
  EXPECT_EQ(m.object()->getAttr("calls").toInt(), 1);
  EXPECT_FALSE(m.prepare("forward", args)) << "a preparation run would move the state on";
  EXPECT_EQ(m.object()->getAttr("calls").toInt(), 1);
}

// `torchless compile` of such a module keeps the state in the compiled archive.
TEST(PrepareOracle, CompiledStatefulModuleKeepsItsState) {
  Module m = load((kModels / "stateful_convs_scripted" / "model.pt").string());
  m.eval();
  fs::path d = freshDir("api", "compile_state_out");
  CompileResult compiled = compile(m, CompileSpec{});
  save(compiled.module, (d / "c.pt").string());
  Module c = load((d / "c.pt").string());
  std::vector<IValue> args = {IValue(ops::ones({1, 3, 8, 8}, ScalarType::Float))};
  auto t1 = c.runMethod("forward", args).toTuple();
  auto t2 = c.runMethod("forward", args).toTuple();
  auto r1 = m.runMethod("forward", args).toTuple();
  EXPECT_EQ(t1->elements.at(1).toInt(), 1);
  EXPECT_EQ(t2->elements.at(1).toInt(), 2);
  EXPECT_NEAR(t1->elements.at(0).toTensor().data<float>()[0],
              r1->elements.at(0).toTensor().data<float>()[0], 1e-3);
}

// A method that prints is not run either (its output would show twice), nor one that draws
// random numbers; one that writes into its input is run on a copy.
TEST(Prepare, ObservableRunsAreNotMadeAndInputsAreCopied) {
  Module printing = scriptM("prepare_print",
                            "import torch\n"
                            "class M(torch.nn.Module):\n"
                            "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                            "        print('called')\n"
                            "        return x + 1.0\n");
  printing.eval();
  std::vector<IValue> args = {IValue(Tensor::fromVector(std::vector<float>{1.f, 1.f}, {2}))};
  EXPECT_FALSE(printing.prepare("forward", args));

  Module random = scriptM("prepare_random",
                          "import torch\n"
                          "class M(torch.nn.Module):\n"
                          "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                          "        return x + torch.rand_like(x)\n");
  random.eval();
  EXPECT_FALSE(random.prepare("forward", args));

  Module inPlace = scriptM("prepare_in_place",
                           "import torch\n"
                           "class M(torch.nn.Module):\n"
                           "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                           "        x.add_(1.0)\n"
                           "        return x * 2.0\n");
  inPlace.eval();
  Tensor x = Tensor::fromVector(std::vector<float>{1.f, 1.f}, {2});
  EXPECT_TRUE(inPlace.prepare("forward", {IValue(x)}));
  EXPECT_EQ(x.data<float>()[0], 1.f) << "prepare wrote into the caller's input";
  Tensor y = inPlace.runMethod("forward", {IValue(x)}).toTensor();
  EXPECT_EQ(x.data<float>()[0], 2.f);  // as PyTorch: the call itself writes into x
  EXPECT_EQ(y.data<float>()[0], 4.f);
}

}  // namespace
}  // namespace torchless::testing
