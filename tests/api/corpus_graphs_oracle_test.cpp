// CorpusGraphsOracle: our frontend's inlined graphs against PyTorch's, for archives written
// by real PyTorch (issue 4's acceptance test).
//
// gen_inlined_graphs.py (ctest fixture api.gen_corpus_graphs) saves torchvision and torch.nn
// models with torch.jit.save and, per root method, counts the node kinds (nested blocks
// included, prim::Constant excluded) of two graphs of torch.jit.load(path):
//   "inlined"              <method>.inlined_graph, PyTorch's own; its inliner inserts each
//                          callee's optimized_graph() (peephole and constant propagation run)
//   "inlined_as_compiled"  the method's graph with callees inlined as the emitter compiled
//                          them (graph executor optimization off, _jit_pass_inline to a
//                          fixed point), which is what our inline pass does
// Here each archive is loaded with torchless::load, a copy of each method's graph is inlined
// with passes::inlineCalls and its node kinds counted the same way, then compared with both.
// Every kind whose count differs is listed below with both counts and its reason, so the test
// fails when a difference appears, disappears or changes.
//
// The ctest test api.corpus_graphs runs this suite with TORCHLESS_CORPUS_GRAPHS set to the
// fixture's directory; without it (e.g. under api.oracle's *Oracle filter) the cases skip.
#include "oracle_util.h"

#include "api/module.h"
#include "ir/ir.h"
#include "passes/passes.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace torchless {
namespace {

namespace fs = std::filesystem;
using testing::readFile;
using KindCounts = std::map<std::string, int64_t>;

/// A node kind whose count in our inlined graph differs from PyTorch's, and why.
struct ExpectedDifference {
  const char* model;
  const char* method;
  const char* kind;
  int64_t ours;
  int64_t pytorch;
  const char* reason;
};

// PyTorch's inliner (torch/csrc/jit/passes/inliner.cpp, inlineCallTo) inserts each callee's
// optimized_graph(): the callee after Inline, PeepholeOptimize, ConstantPropagation on
// immutable types and ConstantPooling (preoptimizeGraph, torch/csrc/jit/api/function_impl.cpp).
// That folds `if inplace:` / `if self.training:` / `_check_input_dim` / `is None` branches on
// constants, dropping their nodes (and the prim::GetAttr inside them). Our inline pass inlines
// callees as compiled (src/passes/inline.cpp); the same counts with callees inlined as
// compiled (kAsCompiledDifferences) show these are the only cause.
constexpr const char* kPreoptimized =
    "PyTorch inlines each callee's optimized_graph() (peephole + constant propagation fold "
    "constant branches); we inline callees as compiled";
// `-inf` in the serialized code (torch/nn/functional.py, masked_fill(..., -inf)): PyTorch's
// emitter constant-folds unary minus of a number constant at compile time (emitUnaryOp in
// torch/csrc/jit/frontend/ir_emitter.cpp); our frontend emits aten::neg(prim::Constant[inf]).
constexpr const char* kNegFolded =
    "PyTorch's emitter folds unary minus of a constant (-inf) at compile time; we emit "
    "aten::neg";

/// Against torch.jit.load(path).<method>.inlined_graph.
const std::vector<ExpectedDifference> kInlinedGraphDifferences = {
    {"resnet18_scripted", "forward", "aten::__is__", 1, 0, kPreoptimized},
    {"resnet18_scripted", "forward", "aten::dim", 40, 0, kPreoptimized},
    {"resnet18_scripted", "forward", "aten::format", 40, 20, kPreoptimized},
    {"resnet18_scripted", "forward", "aten::len", 22, 21, kPreoptimized},
    {"resnet18_scripted", "forward", "aten::ne", 20, 0, kPreoptimized},
    {"resnet18_scripted", "forward", "aten::relu", 17, 0, kPreoptimized},
    {"resnet18_scripted", "forward", "prim::GetAttr", 257, 238, kPreoptimized},
    {"resnet18_scripted", "forward", "prim::If", 119, 61, kPreoptimized},
    {"resnet18_scripted", "forward", "prim::ListConstruct", 66, 65, kPreoptimized},
    {"resnet18_scripted", "forward", "prim::RaiseException", 41, 21, kPreoptimized},
    {"resnet18_scripted", "forward", "prim::unchecked_cast", 1, 0, kPreoptimized},
    {"resnet18_scripted", "_forward_impl", "aten::__is__", 1, 0, kPreoptimized},
    {"resnet18_scripted", "_forward_impl", "aten::dim", 40, 2, kPreoptimized},
    {"resnet18_scripted", "_forward_impl", "aten::format", 40, 21, kPreoptimized},
    {"resnet18_scripted", "_forward_impl", "aten::len", 22, 21, kPreoptimized},
    {"resnet18_scripted", "_forward_impl", "aten::ne", 20, 1, kPreoptimized},
    {"resnet18_scripted", "_forward_impl", "aten::relu", 17, 0, kPreoptimized},
    {"resnet18_scripted", "_forward_impl", "prim::GetAttr", 257, 241, kPreoptimized},
    {"resnet18_scripted", "_forward_impl", "prim::If", 119, 62, kPreoptimized},
    {"resnet18_scripted", "_forward_impl", "prim::ListConstruct", 66, 65, kPreoptimized},
    {"resnet18_scripted", "_forward_impl", "prim::RaiseException", 41, 22, kPreoptimized},
    {"resnet18_scripted", "_forward_impl", "prim::unchecked_cast", 1, 0, kPreoptimized},
    {"mobilenet_v2_scripted", "forward", "aten::dim", 204, 0, kPreoptimized},
    {"mobilenet_v2_scripted", "forward", "aten::dropout_", 1, 0, kPreoptimized},
    {"mobilenet_v2_scripted", "forward", "aten::format", 205, 102, kPreoptimized},
    {"mobilenet_v2_scripted", "forward", "aten::gt", 2, 1, kPreoptimized},
    {"mobilenet_v2_scripted", "forward", "aten::hardtanh", 68, 0, kPreoptimized},
    {"mobilenet_v2_scripted", "forward", "aten::len", 104, 103, kPreoptimized},
    {"mobilenet_v2_scripted", "forward", "aten::lt", 1, 0, kPreoptimized},
    {"mobilenet_v2_scripted", "forward", "aten::ne", 102, 0, kPreoptimized},
    {"mobilenet_v2_scripted", "forward", "prim::GetAttr", 1333, 1265, kPreoptimized},
    {"mobilenet_v2_scripted", "forward", "prim::If", 599, 324, kPreoptimized},
    {"mobilenet_v2_scripted", "forward", "prim::RaiseException", 206, 103, kPreoptimized},
    {"mobilenet_v2_scripted", "_forward_impl", "aten::dim", 204, 0, kPreoptimized},
    {"mobilenet_v2_scripted", "_forward_impl", "aten::dropout_", 1, 0, kPreoptimized},
    {"mobilenet_v2_scripted", "_forward_impl", "aten::format", 205, 102, kPreoptimized},
    {"mobilenet_v2_scripted", "_forward_impl", "aten::gt", 2, 1, kPreoptimized},
    {"mobilenet_v2_scripted", "_forward_impl", "aten::hardtanh", 68, 0, kPreoptimized},
    {"mobilenet_v2_scripted", "_forward_impl", "aten::lt", 1, 0, kPreoptimized},
    {"mobilenet_v2_scripted", "_forward_impl", "aten::ne", 102, 0, kPreoptimized},
    {"mobilenet_v2_scripted", "_forward_impl", "prim::GetAttr", 1333, 1265, kPreoptimized},
    {"mobilenet_v2_scripted", "_forward_impl", "prim::If", 599, 324, kPreoptimized},
    {"mobilenet_v2_scripted", "_forward_impl", "prim::RaiseException", 206, 103, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "aten::__is__", 5, 4, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "aten::dim", 130, 24, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "aten::dropout_", 1, 0, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "aten::format", 112, 58, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "aten::gt", 3, 2, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "aten::lt", 1, 0, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "aten::ne", 56, 3, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "aten::relu", 50, 1, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "aten::relu_", 50, 49, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "prim::GetAttr", 692, 643, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "prim::If", 403, 242, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "prim::ListConstruct", 173, 172, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "prim::RaiseException", 135, 81, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "prim::Uninitialized", 10, 9, kPreoptimized},
    {"fcn_resnet50_scripted", "forward", "prim::unchecked_cast", 18, 15, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::__is__", 73, 21, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::__isnot__", 115, 99, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::__not__", 63, 55, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::add", 108, 74, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::chunk", 20, 10, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::dim", 106, 102, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::div", 8, 4, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::dropout_", 10, 0, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::eq", 148, 104, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::format", 138, 96, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::gt", 24, 18, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::linear", 44, 26, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::lt", 10, 4, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::mul", 56, 36, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::neg", 8, 0, kNegFolded},
    {"transformer_encoder_scripted", "forward", "aten::relu_", 2, 0, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::size", 196, 116, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::slice", 16, 8, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::softmax", 8, 4, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::split", 8, 4, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::squeeze", 12, 4, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::sum", 4, 0, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::view", 28, 24, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "aten::warn", 8, 4, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "prim::GetAttr", 315, 307, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "prim::If", 561, 405, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "prim::ListConstruct", 169, 141, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "prim::ListUnpack", 40, 28, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "prim::RaiseException", 161, 105, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "prim::TupleConstruct", 58, 40, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "prim::TupleUnpack", 8, 6, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "prim::Uninitialized", 32, 16, kPreoptimized},
    {"transformer_encoder_scripted", "forward", "prim::unchecked_cast", 176, 104, kPreoptimized},
    {"lstm_lm_scripted", "forward", "aten::Int", 2, 0, kPreoptimized},
    {"lstm_lm_scripted", "forward", "aten::__is__", 3, 1, kPreoptimized},
    {"lstm_lm_scripted", "forward", "aten::__isnot__", 5, 0, kPreoptimized},
    {"lstm_lm_scripted", "forward", "aten::add", 1, 0, kPreoptimized},
    {"lstm_lm_scripted", "forward", "aten::contiguous", 1, 0, kPreoptimized},
    {"lstm_lm_scripted", "forward", "aten::ge", 1, 0, kPreoptimized},
    {"lstm_lm_scripted", "forward", "aten::gt", 1, 0, kPreoptimized},
    {"lstm_lm_scripted", "forward", "aten::index_select", 4, 0, kPreoptimized},
    {"lstm_lm_scripted", "forward", "aten::lt", 2, 0, kPreoptimized},
    {"lstm_lm_scripted", "forward", "aten::neg", 1, 0, kPreoptimized},
    {"lstm_lm_scripted", "forward", "aten::select", 2, 0, kPreoptimized},
    {"lstm_lm_scripted", "forward", "aten::size", 12, 9, kPreoptimized},
    {"lstm_lm_scripted", "forward", "prim::If", 23, 12, kPreoptimized},
    {"lstm_lm_scripted", "forward", "prim::RaiseException", 8, 6, kPreoptimized},
    {"lstm_lm_scripted", "forward", "prim::TupleConstruct", 11, 9, kPreoptimized},
    {"lstm_lm_scripted", "forward", "prim::TupleIndex", 16, 12, kPreoptimized},
    {"lstm_lm_scripted", "forward", "prim::unchecked_cast", 6, 1, kPreoptimized},
};

/// Against PyTorch's graph with callees inlined as compiled ("inlined_as_compiled").
const std::vector<ExpectedDifference> kAsCompiledDifferences = {
    {"transformer_encoder_scripted", "forward", "aten::neg", 8, 0, kNegFolded},
};

/// The models gen_inlined_graphs.py writes, in its order.
const std::vector<std::string> kModels = {
    "resnet18_traced",
    "resnet18_scripted",
    "mobilenet_v2_scripted",
    "fcn_resnet50_scripted",
    "transformer_encoder_scripted",
    "lstm_lm_scripted",
};

const char* corpusDir() { return std::getenv("TORCHLESS_CORPUS_GRAPHS"); }

// Only the ctest test api.corpus_graphs runs these suites (after its fixture); elsewhere a
// missing corpus is a failure, not a skip.
#define REQUIRE_CORPUS() \
  ASSERT_NE(corpusDir(), nullptr) << "TORCHLESS_CORPUS_GRAPHS is not set; run the ctest test api.corpus_graphs"

void countKinds(const Block* block, KindCounts& counts) {
  for (const Node* n : block->nodes()) {
    if (n->kind() != prim::Constant) ++counts[n->kind().toQualString()];
    for (const Block* b : n->blocks()) countKinds(b, counts);
  }
}

TEST(CorpusGraphsListOracle, EveryModelIsListed) {
  REQUIRE_CORPUS();
  auto index = nlohmann::json::parse(readFile(fs::path(corpusDir()) / "index.json"));
  EXPECT_EQ(index.get<std::vector<std::string>>(), kModels);
  for (const auto* table : {&kInlinedGraphDifferences, &kAsCompiledDifferences})
    for (const auto& d : *table)
      EXPECT_NE(std::find(kModels.begin(), kModels.end(), d.model), kModels.end()) << d.model;
}

class CorpusGraphsOracle : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusGraphsOracle, InlinedNodeKindsMatchPyTorch) {
  REQUIRE_CORPUS();
  const std::string name = GetParam();
  const fs::path dir = corpusDir();
  auto theirs = nlohmann::json::parse(readFile(dir / (name + ".json")));
  Module m = load((dir / (name + ".pt")).string());

  std::vector<std::string> theirMethods;
  for (const auto& [method, counts] : theirs.at("inlined").items()) theirMethods.push_back(method);
  std::vector<std::string> ourMethods = m.methodNames();
  EXPECT_EQ(std::set<std::string>(ourMethods.begin(), ourMethods.end()),
            std::set<std::string>(theirMethods.begin(), theirMethods.end()));

  std::map<std::string, KindCounts> ours;
  for (const std::string& method : theirMethods) {
    const GraphFunction* fn = m.findMethod(method);
    if (!fn) continue;  // reported by the method set comparison above
    std::shared_ptr<Graph> g = fn->graph()->copy();
    passes::inlineCalls(*g);
    countKinds(g->block(), ours[method]);
  }

  // (method, kind) -> (ours, pytorch) for every kind whose counts differ.
  using Diff = std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>>;
  auto show = [&](const Diff& d, const Diff& other) {
    std::string s;
    for (const auto& [key, counts] : d) {
      auto it = other.find(key);
      if (it != other.end() && it->second == counts) continue;
      s += fmt::format("\n    {{\"{}\", \"{}\", \"{}\", {}, {}, ...}},", name, key.first,
                       key.second, counts.first, counts.second);
    }
    return s.empty() ? std::string(" none") : s;
  };
  auto compare = [&](const char* which, const std::vector<ExpectedDifference>& table) {
    SCOPED_TRACE(which);
    Diff actual, expected;
    for (const auto& d : table)
      if (d.model == name) expected[{d.method, d.kind}] = {d.ours, d.pytorch};
    for (const auto& [method, oc] : ours) {
      KindCounts pytorch = theirs.at(which).at(method).get<KindCounts>();
      std::set<std::string> kinds;
      for (const auto& [k, c] : oc) kinds.insert(k);
      for (const auto& [k, c] : pytorch) kinds.insert(k);
      for (const std::string& k : kinds) {
        int64_t a = oc.count(k) ? oc.at(k) : 0, b = pytorch.count(k) ? pytorch.at(k) : 0;
        if (a != b) actual[{method, k}] = {a, b};
      }
    }
    EXPECT_TRUE(actual == expected)
        << actual.size() << " kinds differ, " << expected.size() << " listed"
        << "\n  differences not listed (model, method, kind, ours, pytorch):"
        << show(actual, expected) << "\n  listed differences not found:" << show(expected, actual);
  };
  compare("inlined", kInlinedGraphDifferences);
  compare("inlined_as_compiled", kAsCompiledDifferences);
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusGraphsOracle, ::testing::ValuesIn(kModels),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace torchless
