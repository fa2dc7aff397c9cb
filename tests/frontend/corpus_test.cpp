// Parses real TorchScript: the code/ records of the wild archives and of archives generated
// with PyTorch (tests/frontend/gen_corpus.py), then checks parse -> print -> parse round trips.
//
// The corpus is written into the build tree by the ctest fixtures in extra.cmake; the ctest
// test `frontend_corpus` runs this file with TORCHLESS_FRONTEND_CORPUS pointing at it. Run
// directly (no variable set), the corpus cases skip.
#include "frontend/parser.h"
#include "frontend/printer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace torchless::frontend {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Every .py file under `dir`, sorted.
std::vector<fs::path> pyFiles(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".py") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Parses `text`, prints it, parses the print, and compares. Returns an error description or
/// an empty string.
std::string checkFile(const std::string& name, const std::string& text) {
  Module m = [&] {
    try {
      return parseFile(name, text);
    } catch (const Error& e) {
      throw std::runtime_error(std::string("parse failed: ") + e.what());
    }
  }();
  std::string printed = printSource(m.tree());
  Module again = [&] {
    try {
      return parseFile(name + " (printed)", printed);
    } catch (const Error& e) {
      throw std::runtime_error(std::string("re-parse of printed source failed: ") + e.what() +
                               "\nprinted:\n" + printed);
    }
  }();
  if (!treeEqual(m.tree(), again.tree())) {
    return "round trip changed the tree\nbefore: " + toSExpr(m.tree()) +
           "\nafter:  " + toSExpr(again.tree());
  }
  return {};
}

/// Checks every file under corpus/<sub>; returns the number of files checked.
size_t checkCorpus(const std::string& sub) {
  const char* root = std::getenv("TORCHLESS_FRONTEND_CORPUS");
  if (!root || !*root) return 0;
  fs::path dir = fs::path(root) / sub;
  auto files = pyFiles(dir);
  size_t failures = 0;
  for (const auto& f : files) {
    std::string name = fs::relative(f, dir).string();
    std::string problem;
    try {
      problem = checkFile(name, readFile(f));
    } catch (const std::exception& e) {
      problem = e.what();
    }
    if (!problem.empty()) {
      ADD_FAILURE() << name << ": " << problem;
      if (++failures > 20) break;
    }
  }
  return files.size();
}

bool corpusConfigured() {
  const char* root = std::getenv("TORCHLESS_FRONTEND_CORPUS");
  return root && *root;
}

TEST(frontend_corpus, WildArchives) {
  if (!corpusConfigured()) GTEST_SKIP() << "run through the ctest test frontend_corpus";
  size_t n = checkCorpus("wild");
  // 14 archives with 472 code records at the time of writing.
  EXPECT_GE(n, 400u) << "wild corpus missing or incomplete";
  // Every archive contributed.
  const char* root = std::getenv("TORCHLESS_FRONTEND_CORPUS");
  size_t archives = 0;
  for (const auto& e : fs::directory_iterator(fs::path(root) / "wild")) {
    if (!e.is_directory()) continue;
    ++archives;
    EXPECT_FALSE(pyFiles(e.path()).empty()) << e.path();
  }
  EXPECT_GE(archives, 14u);
}

TEST(frontend_corpus, GeneratedArchives) {
  if (!corpusConfigured()) GTEST_SKIP() << "run through the ctest test frontend_corpus";
  size_t n = checkCorpus("generated");
  EXPECT_GE(n, 30u) << "generated corpus missing or incomplete";
  const char* root = std::getenv("TORCHLESS_FRONTEND_CORPUS");
  for (const char* model : {"resnet18_traced", "resnet18_scripted", "mobilenet_v2_scripted",
                            "fcn_resnet50_scripted", "transformer_encoder_scripted",
                            "lstm_lm_scripted", "constructs_module", "constructs_functions"}) {
    EXPECT_FALSE(pyFiles(fs::path(root) / "generated" / model).empty()) << model;
  }
}

// The TorchScript source that gen_corpus.py compiles (committed, so no fixture needed).
TEST(frontend_corpus, ConstructsSource) {
  fs::path p = fs::path(TORCHLESS_SOURCE_DIR) / "tests" / "frontend" / "corpus_constructs.py";
  std::string problem = checkFile("corpus_constructs.py", readFile(p));
  EXPECT_EQ(problem, "");
}

}  // namespace
}  // namespace torchless::frontend

namespace torchless::frontend {
namespace {

// Bad input gives torchless::Error, never a crash or an internal assert: truncations and
// single-byte mutations of the constructs source. Whatever still parses must round-trip.
TEST(frontend_corpus, MutatedSourceNeverCrashes) {
  std::string text =
      readFile(fs::path(TORCHLESS_SOURCE_DIR) / "tests" / "frontend" / "corpus_constructs.py");
  ASSERT_FALSE(text.empty());
  size_t parsed = 0, rejected = 0;
  auto attempt = [&](const std::string& s) {
    std::string problem;
    try {
      problem = checkFile("mutated.py", s);
      ++parsed;
    } catch (const std::exception&) {
      ++rejected;
    }
    EXPECT_EQ(problem, "") << s;
  };
  for (size_t cut = 0; cut < text.size(); cut += 11) attempt(text.substr(0, cut));
  const char replacements[] = {'(',  ')', '[',    ':',  '\n', '\r', ' ', '\t', '"', '\'', '{', '}',
                               '\\', '#', '\x80', '\0', '=',  ',',  '.', '0',  '*', '@',  '-', 'f'};
  for (size_t i = 0; i < text.size(); i += 17) {
    for (char c : replacements) {
      std::string s = text;
      s[i] = c;
      attempt(s);
    }
  }
  EXPECT_GT(parsed, 0u);
  EXPECT_GT(rejected, 0u);
}

}  // namespace
}  // namespace torchless::frontend
