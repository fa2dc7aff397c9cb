// The block walker (ir/walk.h) and dead code elimination's options (ir/dead_code_elimination.h).
#include "ir/walk.h"
#include "ir/dead_code_elimination.h"
#include "ir/ir.h"
#include "ir/ir_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace torchless {
namespace {

const Symbol kRelu = Symbol::aten("relu");
const Symbol kNeg = Symbol::aten("neg");
const Symbol kMul = Symbol::aten("mul");

const char* kIfGraph = R"IR(
graph(%c : bool, %x : Tensor):
  %1 : int = prim::Constant[value=1]()
  %y : Tensor = prim::If(%c)
    block0():
      %a : Tensor = aten::relu(%x)
      -> (%a)
    block1():
      %b : Tensor = aten::neg(%x)
      -> (%b)
  %z : Tensor = aten::add(%y, %x, %1)
  return (%z)
)IR";

std::vector<std::string> kinds(const std::vector<const Node*>& nodes) {
  std::vector<std::string> out;
  for (const Node* n : nodes) out.push_back(n->kind().toQualString());
  return out;
}

TEST(Walk, VisitNodesVisitsBlocksBeforeTheirNode) {
  Graph g;
  parseIR(kIfGraph, &g);
  std::vector<const Node*> seen;
  bool changed = visitNodes(g, [&](Node* n) {
    seen.push_back(n);
    return n->kind() == kRelu;
  });
  EXPECT_TRUE(changed);
  EXPECT_EQ(kinds(seen), (std::vector<std::string>{"prim::Constant", "aten::relu", "aten::neg",
                                                   "prim::If", "aten::add"}));
  seen.clear();
  forEachNode(g.block(), [&](Node* n) { seen.push_back(n); });
  EXPECT_EQ(kinds(seen), (std::vector<std::string>{"prim::Constant", "prim::If", "aten::relu",
                                                   "aten::neg", "aten::add"}));
  EXPECT_TRUE(anyNode(g.block(), [](const Node* n) { return n->kind() == kNeg; }));
  EXPECT_FALSE(anyNode(g.block(), [](const Node* n) { return n->kind() == kMul; }));
}

TEST(Walk, AVisitMayDestroyItsNode) {
  Graph g;
  parseIR(kIfGraph, &g);
  // Replace every relu / neg by its input.
  bool changed = visitNodes(g, [](Node* n) {
    if (n->kind() != kRelu && n->kind() != kNeg) return false;
    n->output()->replaceAllUsesWith(n->input(0));
    n->destroy();
    return true;
  });
  EXPECT_TRUE(changed);
  EXPECT_FALSE(
      anyNode(g.block(), [](const Node* n) { return n->kind() == kRelu || n->kind() == kNeg; }));
}

TEST(DeadCodeElimination, KeepOptionKeepsUnusedNodes) {
  const char* text = R"IR(
graph(%self : __torch__.M, %x : Tensor):
  %w : Tensor = prim::GetAttr[name="weight"](%self)
  %u : Tensor = aten::relu(%x)
  return (%x)
)IR";
  Graph kept;
  parseIR(text, &kept);
  DeadCodeOptions options;
  options.keep = [](const Node* n) { return n->kind() == prim::GetAttr; };
  EXPECT_TRUE(eliminateDeadCode(kept, options));
  EXPECT_TRUE(anyNode(kept.block(), [](const Node* n) { return n->kind() == prim::GetAttr; }));
  EXPECT_FALSE(anyNode(kept.block(), [](const Node* n) { return n->kind() == kRelu; }));

  Graph plain;
  parseIR(text, &plain);
  EXPECT_TRUE(eliminateDeadCode(plain));
  EXPECT_EQ(plain.block()->nodes().begin(), plain.block()->nodes().end());
}

}  // namespace
}  // namespace torchless
