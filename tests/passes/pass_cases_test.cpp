// Golden cases: tests/passes/cases/<pass>/<case>.ir, run through our pass, must print as
// <case>.expected.ir, which gen_pass_cases.py wrote with PyTorch's pass of the same job
// (value names normalised). A case whose expected text equals its input must report
// "unchanged"; every other case must report a change, and running the pass again on the
// result must change nothing (passes reach their own fixed point in one run), except for
// unroll_loops.
#include "pass_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

namespace torchless::passes::testing {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  std::string pass;
  fs::path input;
  fs::path expected;
};

std::vector<Case> allCases() {
  std::vector<Case> cases;
  fs::path root = fs::path(TORCHLESS_SOURCE_DIR) / "tests" / "passes" / "cases";
  for (const auto& dir : fs::directory_iterator(root)) {
    if (!dir.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(dir.path())) {
      std::string name = f.path().filename().string();
      if (f.path().extension() != ".ir" || name.ends_with(".expected.ir")) continue;
      fs::path expected = f.path();
      expected.replace_filename(f.path().stem().string() + ".expected.ir");
      cases.push_back({dir.path().filename().string(), f.path(), expected});
    }
  }
  std::sort(cases.begin(), cases.end(),
            [](const Case& a, const Case& b) { return a.input < b.input; });
  return cases;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.input.string(); }

class PassCase : public ::testing::TestWithParam<Case> {};

TEST_P(PassCase, MatchesPyTorch) {
  const Case& c = GetParam();
  ASSERT_TRUE(fs::exists(c.expected)) << c.expected << " missing: run gen_pass_cases.py";
  std::string input = readFile(c.input);
  auto g = parseGraph(input);
  std::string before = normalizeNames(g->toString(false));
  bool changed = runPasses(*g, {c.pass});
  std::string got = normalizeNames(g->toString(false));
  std::string want = canonical(readFile(c.expected));
  EXPECT_EQ(got, want) << "input:\n" << input;
  bool expectChange = canonical(input) != want;
  EXPECT_EQ(changed, expectChange) << "the pass must report whether it changed the graph";
  if (!changed) {
    EXPECT_EQ(before, got) << "reported no change but changed the graph";
  }
  // Idempotent: a second run changes nothing (unroll_loops is not: an unrolled loop with a
  // dynamic trip count is again a small for-loop, in PyTorch too).
  if (c.pass != "unroll_loops") {
    EXPECT_FALSE(runPasses(*g, {c.pass})) << "second run changed:\n" << g->toString(false);
  }
}

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  std::string n = info.param.pass + "_" + info.param.input.stem().string();
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Cases, PassCase, ::testing::ValuesIn(allCases()), caseName);

TEST(PassCases, EveryPassHasAnUnchangedCase) {
  std::map<std::string, bool> hasUnchanged;
  for (const Case& c : allCases()) {
    bool same = canonical(readFile(c.input)) == canonical(readFile(c.expected));
    hasUnchanged[c.pass] |= same;
  }
  EXPECT_GE(hasUnchanged.size(), 6u);
  for (const auto& [pass, ok] : hasUnchanged) EXPECT_TRUE(ok) << pass << " has no unchanged case";
}

}  // namespace
}  // namespace torchless::passes::testing
