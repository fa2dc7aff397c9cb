// Note [Specialization] (api/pipeline.h) against PyTorch: one loaded module is called with
// several input signatures in turn (gen_models.py, api_specialize/*/callN), each call's outputs
// compared with PyTorch's. The calls run in an order that returns to signatures already
// specialized, so that a specialization made for one signature is never used for another.
#include "api/compile.h"
#include "api/pipeline.h"
#include "oracle_util.h"

#include <nlohmann/json.hpp>

namespace torchless::testing {
namespace {

namespace fs = std::filesystem;

struct Call {
  std::vector<std::string> words;
  std::vector<fs::path> outputs;
  double rtol, atol;
};

std::vector<Call> readCalls(const fs::path& dir) {
  std::vector<Call> calls;
  for (int i = 0; fs::exists(dir / ("call" + std::to_string(i))); ++i) {
    const fs::path d = dir / ("call" + std::to_string(i));
    auto meta = nlohmann::json::parse(readFile(d / "meta.json"));
    Call c;
    for (const auto& w : meta["args"]) c.words.push_back(resolveWord(w.get<std::string>(), d));
    for (const auto& o : meta["outputs"]) c.outputs.push_back(d / o.get<std::string>());
    c.rtol = meta["rtol"].get<double>();
    c.atol = meta["atol"].get<double>();
    calls.push_back(std::move(c));
  }
  return calls;
}

void expectCall(const Module& m, const Call& c, const std::string& what) {
  std::vector<IValue> args = parseInputs(c.words, m.methodParams("forward"),
                                         [](const std::string& p) { return loadNpy(p); });
  std::vector<FlatOutput> outs = flattenOutputs(m.runMethod("forward", std::move(args)));
  ASSERT_EQ(outs.size(), c.outputs.size()) << what;
  for (size_t i = 0; i < outs.size(); ++i) {
    ASSERT_TRUE(outs[i].tensor.has_value()) << what;
    EXPECT_TRUE(allClose(*outs[i].tensor, loadNpy(c.outputs[i].string()), c.rtol, c.atol))
        << what << ", output " << i;
  }
}

// gen_models.py writes the calls beside api_models (not in it: every directory of
// api_models is one case of the Generated oracles).
const fs::path kEncoder =
    fs::path(TORCHLESS_API_MODELS).parent_path() / "api_specialize" / "transformer_encoder";

TEST(SpecializationOracle, OneModuleRunsEverySignatureWithPyTorchsNumbers) {
  std::vector<Call> calls = readCalls(kEncoder);
  ASSERT_EQ(calls.size(), 6u) << "gen_models.py writes six calls";
  Module m = load((kEncoder / "call0" / "model.pt").string());
  const std::vector<size_t> order = {0, 1, 2, 3, 4, 5, 0, 3, 1, 5, 2, 4};
  for (size_t k = 0; k < order.size(); ++k)
    expectCall(m, calls[order[k]],
               "call " + std::to_string(order[k]) + " (step " + std::to_string(k) + ")");
  // Signatures (not sizes) make specializations: calls 0 and 2 share one, 1 and 5 do not
  // (bool and float masks), 4 passes a mask where 1 passes None.
  std::shared_ptr<const ExecutionPlan> plan = m.executionPlan("forward");
  ASSERT_NE(plan->frozenGraph, nullptr) << "the encoder reads tensor properties: it is specialized";
  std::lock_guard<std::mutex> lock(plan->mu);
  EXPECT_EQ(plan->specializations.size(), 5u);
  for (const auto& sp : plan->specializations)
    if (sp->signature == plan->specializations.front()->signature) {
      EXPECT_EQ(sp->report.numInterpreterSegments(), 0u) << sp->report.str();
      EXPECT_EQ(sp->report.numEngines(), 1u) << sp->report.str();
    }
}

TEST(SpecializationOracle, TheUnspecializedPlanServesSignaturesBeyondTheBound) {
  // The generic plan (what runs past kMaxSpecializations) gives the same numbers.
  std::vector<Call> calls = readCalls(kEncoder);
  ASSERT_FALSE(calls.empty());
  Module m = load((kEncoder / "call0" / "model.pt").string());
  std::shared_ptr<const ExecutionPlan> plan = m.executionPlan("forward");
  ASSERT_NE(plan->frozenGraph, nullptr);
  {
    // Fill the table with signatures no call has (one per extra rank of a dummy entry).
    std::lock_guard<std::mutex> lock(plan->mu);
    while (plan->specializations.size() < ExecutionPlan::kMaxSpecializations) {
      auto sp = std::make_shared<ExecutionPlan::Specialization>();
      sp->signature = {-1, static_cast<int64_t>(plan->specializations.size())};
      plan->specializations.push_back(sp);
    }
  }
  for (size_t i = 0; i < calls.size(); ++i)
    expectCall(m, calls[i], "generic plan, call " + std::to_string(i));
}

TEST(SpecializationOracle, CompileSpecializesToTheExampleInputs) {
  std::vector<Call> calls = readCalls(kEncoder);
  ASSERT_FALSE(calls.empty());
  Module m = load((kEncoder / "call0" / "model.pt").string());
  CompileSpec spec;
  spec.exampleInputs = parseInputs(calls[0].words, m.methodParams("forward"),
                                   [](const std::string& p) { return loadNpy(p); });
  CompileResult r = compile(m, spec);
  EXPECT_EQ(r.report.numInterpreterSegments(), 0u) << r.report.str();
  EXPECT_EQ(r.report.numEngines(), 1u) << r.report.str();
  const fs::path out = freshDir("specialize", "compile") / "encoder.pt";
  save(r.module, out.string());
  Module back = load(out.string());
  expectCall(back, calls[0], "compiled, call 0");
  expectCall(back, calls[2], "compiled, call 2 (other sizes, same signature)");
}

}  // namespace
}  // namespace torchless::testing
