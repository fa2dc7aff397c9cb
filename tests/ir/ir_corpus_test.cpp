// The oracle test: graphs printed by real PyTorch (tests/ir/corpus/*.ir, written by
// gen_graph_corpus.py) are parsed, verified, printed again and compared with PyTorch's text.
// Only the numbers of unnamed values may differ (they are renumbered in order of first
// appearance, per graph); names, types, attributes and `# file:line:col` comments must match.
#include "ir/ir.h"
#include "ir/ir_parser.h"
#include "ir/verifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace torchless {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Renames `%<digits>` to `%#k` in order of first appearance; the map restarts at each
/// `with ... = graph(` section (subgraphs number their values independently).
std::string normalizeValueNumbers(const std::string& text) {
  std::string out;
  std::unordered_map<std::string, size_t> ids;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 5, "with ") == 0 && (i == 0 || text[i - 1] == '\n')) ids.clear();
    if (text[i] == '%') {
      size_t j = i + 1;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) ||
                                 text[j] == '_' || text[j] == '.'))
        ++j;
      std::string name = text.substr(i + 1, j - i - 1);
      if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit)) {
        auto it = ids.emplace(name, ids.size()).first;
        out += "%#" + std::to_string(it->second);
      } else {
        out += "%" + name;
      }
      i = j;
      continue;
    }
    out += text[i++];
  }
  return out;
}

std::vector<fs::path> corpusFiles() {
  std::vector<fs::path> files;
  fs::path dir = fs::path(TORCHLESS_SOURCE_DIR) / "tests" / "ir" / "corpus";
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".ir") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(IRCorpus, HasAtLeastTwentyGraphs) { EXPECT_GE(corpusFiles().size(), 20u); }

class IRCorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(IRCorpusTest, ParsePrintMatchesPyTorch) {
  fs::path p = fs::path(TORCHLESS_SOURCE_DIR) / "tests" / "ir" / "corpus" / (GetParam() + ".ir");
  std::string expected = readFile(p);
  auto g = std::make_shared<Graph>();
  try {
    parseIR(expected, g.get(), ParseIROptions{p.filename().string(), nullptr});
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  EXPECT_NO_THROW(verify(*g)) << *g;
  std::string printed = g->toString();
  EXPECT_EQ(normalizeValueNumbers(printed), normalizeValueNumbers(expected));
  // Printing is stable: a copy prints the same, and parsing our own output gives it back.
  EXPECT_EQ(normalizeValueNumbers(g->copy()->toString()), normalizeValueNumbers(printed));
  auto g2 = std::make_shared<Graph>();
  parseIR(printed, g2.get());
  EXPECT_EQ(normalizeValueNumbers(g2->toString()), normalizeValueNumbers(printed));
}

std::vector<std::string> corpusNames() {
  std::vector<std::string> names;
  for (const auto& p : corpusFiles()) names.push_back(p.stem().string());
  return names;
}

INSTANTIATE_TEST_SUITE_P(PyTorch, IRCorpusTest, ::testing::ValuesIn(corpusNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace torchless
