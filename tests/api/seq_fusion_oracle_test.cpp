// Issue 13's fused sequence layers (Note [Fused sequence layers] in
// src/convert/engine/seq_layers.h): models gen_seq_models.py saved with real PyTorch run with
// PyTorch's numbers at the case's tolerance, and their engines report the fused path on as many
// layers as the case says (the "layer" spans' detail, runtime/op_observer.h), e.g. both
// encoder layers of a 2-layer nn.TransformerEncoder as "(fused attention)"; a case with a key
// padding mask reports none (its layers run the node's kernel).
#include "ops/parallel.h"
#include "oracle_util.h"
#include "runtime/op_observer.h"

#include <nlohmann/json.hpp>

#include <map>
#include <mutex>

namespace torchless::testing {
namespace {

namespace fs = std::filesystem;

fs::path casesDir() { return fs::path(TORCHLESS_BINARY_DIR) / "api_seq_models"; }

// Counts the engine layers of a call by fused path ("fused attention", "fused lstm").
class FusedLayerCounter : public OpObserver {
 public:
  FusedLayerCounter() { setOpObserver(this); }
  ~FusedLayerCounter() override { setOpObserver(nullptr); }
  void onOpStart(const Node&) override {}
  void onOpEnd(const Node&) override {}
  void onSpan(const char* category, const std::string&, const std::string& detail,
              std::chrono::steady_clock::time_point,
              std::chrono::steady_clock::time_point) override {
    if (std::string(category) != "layer") return;
    std::lock_guard<std::mutex> lock(mu);
    for (const char* path : {"fused attention", "fused lstm"})
      if (detail.find(std::string("(") + path + ")") != std::string::npos) ++counts[path];
  }
  std::mutex mu;
  std::map<std::string, int> counts;
};

std::vector<std::string> caseNames() {
  std::vector<std::string> names;
  if (!fs::exists(casesDir())) return names;
  for (const auto& e : fs::directory_iterator(casesDir()))
    if (e.is_directory()) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class SeqFusionOracle : public ::testing::TestWithParam<std::string> {};
// The cases come from the api_seq_models fixture, absent when the tests are listed at build
// time; SeqFusionFixture.Generated fails when it is absent when the tests run.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SeqFusionOracle);

TEST(SeqFusionFixture, Generated) {
  EXPECT_FALSE(caseNames().empty()) << casesDir() << " holds no cases (gen_seq_models.py)";
}

// Two threads whatever the machine's load (the "wide" cases have the work for two: Note
// [Row-parallel transformer layers], Note [LSTM recurrence]), restored after the test.
class TwoThreads {
 public:
  TwoThreads() { ops::setNumThreads(2); }
  ~TwoThreads() { ops::setNumThreads(0); }
};

TEST_P(SeqFusionOracle, FusedLayersGivePyTorchsNumbersAndAreTaken) {
  const fs::path dir = casesDir() / GetParam();
  const TwoThreads threads;
  auto meta = nlohmann::json::parse(readFile(dir / "meta.json"));
  Module m = load((dir / "model.pt").string());
  std::vector<IValue> args;
  for (const auto& in : meta.at("inputs"))
    args.emplace_back(loadNpy((dir / in.get<std::string>()).string()));
  const double rtol = meta.at("rtol").get<double>(), atol = meta.at("atol").get<double>();
  auto check = [&](const IValue& out, const char* call) {
    std::vector<FlatOutput> outs = flattenOutputs(out);
    ASSERT_EQ(outs.size(), meta.at("outputs").size()) << call;
    for (size_t i = 0; i < outs.size(); ++i) {
      SCOPED_TRACE(fmt::format("{} call, output {}", call, i));
      ASSERT_TRUE(outs[i].tensor);
      EXPECT_TRUE(allClose(*outs[i].tensor,
                           loadNpy((dir / meta.at("outputs")[i].get<std::string>()).string()), rtol,
                           atol));
    }
  };
  // The first call specializes (Note [Specialization] in api/pipeline.h) in the interpreter,
  // the second builds the engines' plans, the third runs the planned layers.
  check(m.forward(args), "first");
  check(m.forward(args), "second");
  FusedLayerCounter counter;
  check(m.forward(args), "third");
  for (const auto& [path, n] : meta.at("fused").items())
    EXPECT_EQ(counter.counts[path], n.get<int>()) << "layers reported as (" << path << ")";
}

INSTANTIATE_TEST_SUITE_P(Generated, SeqFusionOracle, ::testing::ValuesIn(caseNames()),
                         [](const auto& info) { return info.param; });

// The fixture must have produced the cases: an empty suite would pass silently.
TEST(SeqFusionCasesOracle, FixtureWroteEveryCase) {
  EXPECT_GE(caseNames().size(), 12u) << casesDir();
}

}  // namespace
}  // namespace torchless::testing
