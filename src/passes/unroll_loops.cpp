// unroll_loops: unrolls `for` loops (prim::Loop whose start and continue conditions are the
// constant true) with small bodies, as PyTorch's UnrollLoops
// (torch/csrc/jit/passes/loop_unrolling.cpp): a loop with a constant trip count below
// kMaxBodyRepeats (64) is replaced by that many copies of its body; any other loop becomes
// a loop over 8 copies of the body running n // 8 times, followed by the original loop as an
// epilogue running n - (n // 8) * 8 times. When the body uses the iteration number, it is
// first turned into a loop-carried counter (starting at 0, +1 per copy) shared by both
// loops. Then eliminate_dead_code runs. It leaves alone: while loops (a condition that is
// not the constant true), loops whose body has more than kMaxBodySize (32) nodes counted as
// PyTorch counts them (constants free, each block's return one), and inner loops it cannot
// unroll (outer loops are then judged with their inner loops in them).
//
//   graph(%x : int):                                  graph(%x : int):
//     %t : bool = prim::Constant[value=1]()             %1 : int = prim::Constant[value=1]()
//     %n : int = prim::Constant[value=2]()              %a.1 : int = aten::add(%x, %1)
//     %1 : int = prim::Constant[value=1]()      ==>     %a : int = aten::add(%a.1, %1)
//     %y : int = prim::Loop(%n, %t, %x)                 return (%a)
//       block0(%i : int, %c : int):
//         %a : int = aten::add(%c, %1)
//         -> (%t, %a)
//     return (%y)
#include "ir/walk.h"
#include "passes/node_facts.h"
#include "passes/passes.h"

#include <unordered_map>
#include <vector>

namespace torchless::passes {

const char* const kUnrollLoopsDescription =
    "Unrolls for-loops with small bodies (at most 32 nodes) as PyTorch's UnrollLoops: a "
    "constant trip count below 64 is unrolled completely, others by 8 with the original loop "
    "as epilogue; the iteration number becomes a carried counter when the body uses it. "
    "Leaves while-loops and loops with larger bodies.";

namespace {

constexpr int64_t kUnrollFactor = 8;
constexpr int64_t kMaxBodySize = 32;
constexpr int64_t kMaxBodyRepeats = 64;

bool isTrueConstant(const Value* v) { return constantBool(v).value_or(false); }

bool isForLoop(const Node* n) {
  return n->kind() == prim::Loop && isTrueConstant(n->input(1)) &&
         isTrueConstant(n->blocks().at(0)->outputs().at(0));
}

// Counts non-constant nodes, each block's return node included, stopping at `limit`.
int64_t limitedBlockSize(const Block* body, int64_t limit) {
  int64_t i = 0;
  for (const Node* n : body->nodes()) {
    for (const Block* b : n->blocks()) i += limitedBlockSize(b, limit - i);
    if (n->kind() != prim::Constant) ++i;
    if (i >= limit) return limit;
  }
  return i + 1;  // the return node
}

bool isSmallBlock(const Block* body) {
  return limitedBlockSize(body, kMaxBodySize + 1) <= kMaxBodySize;
}

Value* insertIntOp(Graph& g, Symbol kind, Value* a, Value* b) {
  Node* n = g.insertNode(g.create(kind, {a, b}));
  n->output()->setType(IntType::get());
  return n->output();
}

Value* insertIntOp(Graph& g, Symbol kind, Value* a, int64_t b) {
  Value* c = g.insertConstant(IValue(b));
  return insertIntOp(g, kind, a, c);
}

// Copies `body` at the insertion point with its inputs bound to `inputs`; returns the values
// of its outputs.
std::vector<Value*> insertBlockCopy(Graph& g, const Block* body,
                                    const std::vector<Value*>& inputs) {
  std::unordered_map<const Value*, Value*> map;
  for (size_t i = 0; i < inputs.size(); ++i) map[body->inputs()[i]] = inputs[i];
  auto get = [&](Value* v) {
    auto it = map.find(v);
    return it == map.end() ? v : it->second;
  };
  for (const Node* n : body->nodes()) {
    Node* copy = g.insertNode(g.createClone(n, get));
    for (size_t i = 0; i < n->outputs().size(); ++i) map[n->output(i)] = copy->output(i);
  }
  std::vector<Value*> out;
  for (Value* v : body->outputs()) out.push_back(get(v));
  return out;
}

void repeatBody(Block* body, int64_t times, Block* dest) {
  Graph& g = *body->owningGraph();
  WithInsertPoint guard(dest);
  for (Value* in : body->inputs()) dest->addInput()->copyMetadata(in);
  std::vector<Value*> io(dest->inputs().begin(), dest->inputs().end());
  TL_INTERNAL_ASSERT(!body->inputs().at(0)->hasUses(), "loop counter should be unused");
  for (int64_t i = 0; i < times; ++i) {
    io[0] = body->inputs().at(0);
    io = insertBlockCopy(g, body, io);
  }
  for (Value* v : io) dest->registerOutput(v);
  eliminateDeadCode(dest, /*recurse=*/false);
}

// Replaces the iteration number by a carried counter (so the unrolled loop and its epilogue
// can share it).
void replaceLoopCounter(Node* loop) {
  Graph& g = *loop->owningGraph();
  Block* body = loop->blocks().at(0);
  WithInsertPoint guard(loop);
  loop->insertInput(2, g.insertConstant(IValue(int64_t(0))));
  loop->insertOutput(0)->setType(IntType::get());
  body->insertInput(1)->setType(IntType::get());
  body->inputs().at(0)->replaceAllUsesWith(body->inputs().at(1));
  WithInsertPoint inBody(body);
  body->insertOutput(1, insertIntOp(g, aten::add, body->inputs().at(1), 1));
}

// Replaces a loop that runs exactly once by its body.
void inlineBody(Node* loop) {
  Graph& g = *loop->owningGraph();
  Block* body = loop->blocks().at(0);
  WithInsertPoint guard(loop);
  std::unordered_map<const Value*, Value*> map;
  for (size_t i = 2; i < loop->inputs().size(); ++i) map[body->inputs()[i - 1]] = loop->input(i);
  auto get = [&](Value* v) {
    auto it = map.find(v);
    return it == map.end() ? v : it->second;
  };
  for (const Node* n : body->nodes()) {
    Node* copy = g.insertNode(g.createClone(n, get));
    for (size_t i = 0; i < n->outputs().size(); ++i) map[n->output(i)] = copy->output(i);
  }
  for (size_t i = 0; i < loop->outputs().size(); ++i)
    loop->output(i)->replaceAllUsesWith(get(body->outputs().at(i + 1)));
  loop->destroy();  // even with side effects: they live on in the copy
}

void unroll(Node* loop) {
  Graph& g = *loop->owningGraph();
  Block* body = loop->blocks().at(0);
  if (body->inputs().at(0)->hasUses()) replaceLoopCounter(loop);

  std::optional<int64_t> constLen = constantInt(loop->input(0));
  if (constLen && *constLen < kMaxBodyRepeats) {
    Block* dest = loop->addBlock();
    repeatBody(body, std::max<int64_t>(*constLen, 0), dest);
    loop->eraseBlock(0);
    inlineBody(loop);
    return;
  }

  WithInsertPoint guard(loop);
  Node* epilogue = g.createClone(loop, [](Value* v) { return v; })->insertAfter(loop);
  for (size_t i = 0; i < loop->outputs().size(); ++i) {
    loop->output(i)->replaceAllUsesWith(epilogue->output(i));
    epilogue->replaceInput(i + 2, loop->output(i));
  }
  Block* dest = loop->addBlock();
  repeatBody(body, kUnrollFactor, dest);
  loop->eraseBlock(0);

  Value* iterCount = loop->input(0);
  Value* unrolled =
      insertIntOp(g, Symbol::aten("__round_to_zero_floordiv"), iterCount, kUnrollFactor);
  loop->replaceInput(0, unrolled);
  Value* done = insertIntOp(g, aten::mul, unrolled, kUnrollFactor);
  epilogue->replaceInput(0, insertIntOp(g, aten::sub, iterCount, done));
}

bool unrollLoops(Block* block) {
  return visitNodes(block, [](Node* n) {
    if (!isForLoop(n) || !isSmallBlock(n->blocks().at(0))) return false;
    unroll(n);  // destroys n
    return true;
  });
}

}  // namespace

bool unrollLoops(Graph& graph) {
  bool changed = unrollLoops(graph.block());
  if (changed) eliminateDeadCode(graph);
  return changed;
}

}  // namespace torchless::passes
