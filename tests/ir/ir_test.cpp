// Unit tests of the IR core: symbols, construction, mutators, value names, destroy, copy.
#include "ir/ir.h"
#include "ir/ir_parser.h"
#include "ir/verifier.h"

#include <gtest/gtest.h>

namespace torchless {
namespace {

TEST(Symbol, BuiltinsAndInterning) {
  EXPECT_EQ(prim::Constant.toQualString(), "prim::Constant");
  EXPECT_EQ(prim::Loop.toUnqualString(), "Loop");
  EXPECT_EQ(Symbol::fromQualString("prim::If"), prim::If);
  EXPECT_EQ(Symbol::aten("add"), aten::add);
  EXPECT_EQ(attr::value.toQualString(), "attr::value");
  Symbol s = Symbol::fromQualString("my_ops::frobnicate");
  EXPECT_EQ(s, Symbol::fromDomainAndUnqualString("my_ops", "frobnicate"));
  EXPECT_EQ(s.domainString(), "my_ops");
  EXPECT_EQ(s.ns().toQualString(), "namespaces::my_ops");
  EXPECT_TRUE(aten::add.is_aten());
  EXPECT_TRUE(prim::Loop.is_prim());
  EXPECT_FALSE(s.is_prim());
  EXPECT_THROW(Symbol::fromQualString("noNamespace"), Error);
  switch (Symbol::fromQualString("prim::Loop")) {
    case prim::Loop: break;
    default: FAIL();
  }
}

std::shared_ptr<Graph> addGraph() {
  auto g = std::make_shared<Graph>();
  Value* x = g->addInput("x")->setType(TensorType::get());
  Value* y = g->addInput("y")->setType(TensorType::get());
  Value* one = g->insertConstant(IValue(int64_t(1)));
  Node* add = g->insertNode(g->create(aten::add, {x, y, one}));
  add->output()->setType(TensorType::get())->setDebugName("z");
  g->registerOutput(add->output());
  return g;
}

TEST(Graph, BuildAndPrint) {
  auto g = addGraph();
  EXPECT_EQ(g->toString(),
            "graph(%x : Tensor,\n"
            "      %y : Tensor):\n"
            "  %2 : int = prim::Constant[value=1]()\n"
            "  %z : Tensor = aten::add(%x, %y, %2)\n"
            "  return (%z)\n");
  verify(*g);
}

TEST(Value, UniqueNamesFollowPyTorch) {
  Graph g;
  Value* a = g.addInput("x");
  Value* b = g.addInput("x");  // takes "x"; the old owner becomes x.1
  EXPECT_EQ(b->debugName(), "x");
  EXPECT_EQ(a->debugName(), "x.1");
  // Facts from torch 1.13 (torch._C.Graph().addInput().setDebugName): the suffix counter
  // stores the value after the one handed out, and the next rename adds one more.
  Value* c = g.addInput("x");
  EXPECT_EQ(c->debugName(), "x");
  EXPECT_EQ(b->debugName(), "x.3");
  Value* d = g.addInput("x.2");  // free: nobody is renamed
  EXPECT_EQ(d->debugName(), "x.2");
  EXPECT_EQ(b->debugName(), "x.3");
  Value* d2 = g.addInput("x.3");  // taken by b, which moves on to x.5
  EXPECT_EQ(d2->debugName(), "x.3");
  EXPECT_EQ(b->debugName(), "x.5");
  EXPECT_EQ(a->debugName(), "x.1");
  EXPECT_EQ(b->debugNameBase(), "x");
  Value* e = g.addInput();
  EXPECT_FALSE(e->hasDebugName());
  EXPECT_EQ(e->debugName(), std::to_string(e->unique()));
  EXPECT_THROW(e->setDebugName("12"), Error);
  a->setDebugName("");
  EXPECT_FALSE(a->hasDebugName());
  Value* f = g.addInput("x.1");  // free again after clearing
  EXPECT_EQ(f->debugName(), "x.1");
}

TEST(Node, InputMutatorsKeepUsesInStep) {
  Graph g;
  Value* a = g.addInput("a")->setType(IntType::get());
  Value* b = g.addInput("b")->setType(IntType::get());
  Value* c = g.addInput("c")->setType(IntType::get());
  Node* n = g.insertNode(g.create(Symbol::prim("f"), {a, b}, 0));
  n->insertInput(1, c);  // f(a, c, b)
  ASSERT_EQ(n->inputs(), (std::vector<Value*>{a, c, b}));
  EXPECT_EQ(b->uses()[0].offset, 2u);
  n->replaceInput(0, b);  // f(b, c, b)
  EXPECT_FALSE(a->hasUses());
  EXPECT_EQ(b->uses().size(), 2u);
  n->removeInput(1);  // f(b, b)
  EXPECT_FALSE(c->hasUses());
  for (const Use& u : b->uses()) EXPECT_EQ(n->inputs()[u.offset], b);
  n->replaceInputWith(b, a);  // f(a, a)
  EXPECT_EQ(a->uses().size(), 2u);
  EXPECT_FALSE(b->hasUses());
  verify(g);
  n->removeAllInputs();
  EXPECT_FALSE(a->hasUses());
}

TEST(Node, ReplaceAllUsesWith) {
  auto g = addGraph();
  Value* x = g->inputs()[0];
  Value* z = g->outputs()[0];
  Node* neg = g->create(Symbol::aten("neg"), {x});
  neg->output()->setType(TensorType::get());
  neg->insertAfter(z->node());
  z->replaceAllUsesWith(neg->output());
  EXPECT_EQ(g->outputs()[0], neg->output());
  EXPECT_FALSE(z->hasUses());
  verify(*g);
  z->node()->destroy();
  verify(*g);
  EXPECT_NE(g->toString().find("aten::neg(%x)"), std::string::npos);
}

TEST(Node, DestroyWithUsesAborts) {
  auto g = addGraph();
  Node* constant = g->inputs()[0]->uses()[0].user->input(2)->node();
  EXPECT_DEATH(constant->destroy(), "still has uses");
}

TEST(Node, MoveAndOrder) {
  Graph g;
  Node* a = g.insertNode(g.create(Symbol::prim("a"), 0));
  Node* b = g.insertNode(g.create(Symbol::prim("b"), 0));
  Node* c = g.insertNode(g.create(Symbol::prim("c"), 0));
  EXPECT_TRUE(a->isBefore(b));
  EXPECT_TRUE(c->isAfter(a));
  c->moveBefore(a);  // c a b
  EXPECT_TRUE(c->isBefore(a));
  EXPECT_EQ(g.nodes().front(), c);
  EXPECT_EQ(g.nodes().back(), b);
  a->moveAfter(b);  // c b a
  std::vector<Node*> order(g.nodes().begin(), g.nodes().end());
  EXPECT_EQ(order, (std::vector<Node*>{c, b, a}));
  std::vector<Node*> rev;
  for (Node* n : g.nodes().reverse()) rev.push_back(n);
  EXPECT_EQ(rev, (std::vector<Node*>{a, b, c}));
  // Many insertions at one point force re-indexing; order must survive.
  for (int i = 0; i < 200; ++i) g.create(Symbol::prim("x"), 0)->insertAfter(c);
  const Node* prev = nullptr;
  for (Node* n : g.nodes()) {
    if (prev) {
      EXPECT_TRUE(prev->isBefore(n));
    }
    prev = n;
  }
  verify(g);
}

TEST(Graph, InsertPointGuardAndBlocks) {
  Graph g;
  Value* cond = g.addInput("c")->setType(BoolType::get());
  Node* ifNode = g.insertNode(g.create(prim::If, {cond}, 1));
  ifNode->output()->setType(IntType::get());
  Block* thenB = ifNode->addBlock();
  Block* elseB = ifNode->addBlock();
  {
    WithInsertPoint guard(thenB);
    thenB->registerOutput(g.insertConstant(IValue(int64_t(1))));
  }
  {
    WithInsertPoint guard(elseB);
    elseB->registerOutput(g.insertConstant(IValue(int64_t(2))));
  }
  g.registerOutput(ifNode->output());
  EXPECT_EQ(g.insertPoint(), g.returnNode());
  verify(g);
  EXPECT_EQ(g.toString(),
            "graph(%c : bool):\n"
            "  %1 : int = prim::If(%c)\n"
            "    block0():\n"
            "      %2 : int = prim::Constant[value=1]()\n"
            "      -> (%2)\n"
            "    block1():\n"
            "      %3 : int = prim::Constant[value=2]()\n"
            "      -> (%3)\n"
            "  return (%1)\n");
  // A node inside a block is after a node before the If, and before one after it.
  Node* first = g.create(Symbol::prim("first"), 0);
  g.block()->prependNode(first);
  EXPECT_TRUE(first->isBefore(thenB->nodes().front()));
  EXPECT_TRUE(thenB->nodes().front()->isAfter(first));
  ifNode->eraseBlock(1);
  EXPECT_THROW(verify(g), Error);
}

TEST(Graph, InsertConstantKinds) {
  Graph g;
  auto list = ListImpl::create(IntType::get(), {IValue(int64_t(1)), IValue(int64_t(2))});
  auto tup =
      TupleImpl::create({IValue(int64_t(1)), IValue("abc"), IValue(), IValue(2.5), IValue(true)});
  std::vector<Value*> vs = {
      g.insertConstant(IValue(int64_t(1))),
      g.insertConstant(IValue(1.0)),
      g.insertConstant(IValue(0.1)),
      g.insertConstant(IValue(true)),
      g.insertConstant(IValue("a\"b\n")),
      g.insertConstant(IValue()),
      g.insertConstant(IValue(Device(DeviceType::CPU))),
      g.insertConstant(IValue(list)),
      g.insertConstant(IValue(tup)),
      g.insertConstant(IValue(Tensor::fromVector(std::vector<float>{1.5f}, {1}))),
      g.insertConstant(IValue(std::complex<double>(2, -3))),
      g.insertConstant(IValue(ListImpl::create(IntType::get()))),
  };
  for (Value* v : vs) g.registerOutput(v);
  EXPECT_EQ(
      g.toString(),
      "graph():\n"
      "  %0 : int = prim::Constant[value=1]()\n"
      "  %1 : float = prim::Constant[value=1.]()\n"
      "  %2 : float = prim::Constant[value=0.10000000000000001]()\n"
      "  %3 : bool = prim::Constant[value=1]()\n"
      "  %4 : str = prim::Constant[value=\"a\\\"b\\n\"]()\n"
      "  %5 : NoneType = prim::Constant()\n"
      "  %6 : Device = prim::Constant[value=\"cpu\"]()\n"
      "  %7 : int[] = prim::Constant[value=[1, 2]]()\n"
      "  %8 : (int, str, NoneType, float, bool) = prim::Constant[value=(1, \"abc\", None, 2.5, "
      "True)]()\n"
      "  %9 : Float(1, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value={1.5}]()\n"
      "  %10 : complex = prim::Constant[value=2.-3.j]()\n"
      "  %11 : int[] = prim::Constant[value=annotate(List[int], [])]()\n"
      "  return (%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11)\n");
  EXPECT_EQ(toIValue(vs[0])->toInt(), 1);
  EXPECT_TRUE(toIValue(vs[3])->toBool());
  EXPECT_EQ(toIValue(vs[4])->toStringRef(), "a\"b\n");
  EXPECT_TRUE(toIValue(vs[5])->isNone());
  EXPECT_TRUE(toIValue(vs[6])->isDevice());
  EXPECT_EQ(toIValue(vs[7])->toIntVector(), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(vs[5]->node()->mustBeNone());
  Tensor rg = Tensor::fromVector(std::vector<float>{1.f}, {1});
  rg.setRequiresGrad(true);
  EXPECT_THROW(g.insertConstant(IValue(rg)), Error);
  verify(g);
}

TEST(Graph, CopyPrintsTheSame) {
  const char* text = R"IR(graph(%x.1 : Tensor,
      %n.1 : int):
  %17 : int = prim::Constant[value=1]()
  %6 : bool = prim::Constant[value=1]() # t.py:6:4
  %y : Tensor = prim::Loop(%n.1, %6, %x.1) # t.py:6:4
    block0(%i.1 : int, %y.27 : Tensor):
      %y.3 : Tensor = aten::add(%y.27, %17, %17) # t.py:8:16
      -> (%6, %y.3)
  return (%y)
)IR";
  Graph g;
  std::unordered_map<std::string, Value*> vmap;
  parseIR(text, &g, vmap);
  EXPECT_EQ(vmap.at("17")->node()->i(attr::value), 1);
  EXPECT_EQ(vmap.at("y.27")->debugName(), "y.27");
  // Numbered values are renumbered (PyTorch's parse_ir does the same); names stay.
  std::string expected = text;
  for (auto [from, to] : {std::pair<std::string, std::string>{"%17", "%2"}, {"%6", "%3"}}) {
    for (size_t p = expected.find(from); p != std::string::npos; p = expected.find(from, p))
      expected.replace(p, from.size(), to);
  }
  EXPECT_EQ(g.toString(), expected);
  auto c = g.copy();
  EXPECT_EQ(c->toString(), g.toString());
  verify(*c);
  // The copy is independent.
  c->eraseOutput(0);
  EXPECT_EQ(g.outputs().size(), 1u);
}

TEST(Graph, CloneIntoSameGraphRenamesOldOwner) {
  Graph g;
  Value* x = g.addInput("x")->setType(TensorType::get());
  Node* n = g.insertNode(g.create(Symbol::aten("relu"), {x}));
  n->output()->setType(TensorType::get())->setDebugName("y");
  Node* c = g.insertNode(g.createClone(n, [](Value* v) { return v; }));
  EXPECT_EQ(c->output()->debugName(), "y");
  EXPECT_EQ(n->output()->debugName(), "y.1");
  verify(g);
}

TEST(Node, ReplaceWithNewSymbolAndAttributes) {
  auto g = addGraph();
  Node* add = g->outputs()[0]->node();
  add->i_(Symbol::attr("alpha"), 3)->s_(attr::name, "n")->fs_(Symbol::attr("w"), {1.0, 0.5});
  add->ty_(Symbol::attr("t"), ListType::ofInts());
  EXPECT_EQ(add->kindOf(attr::name), AttributeKind::s);
  EXPECT_THROW(add->f(attr::name), Error);
  Node* sub = add->replaceWithNewSymbol(aten::sub);
  EXPECT_EQ(sub->output()->debugName(), "z");
  EXPECT_NE(g->toString().find(
                "%z : Tensor = aten::sub[alpha=3, name=\"n\", w=[1., 0.5], t=int[]](%x, %y, %2)"),
            std::string::npos)
      << g->toString();
  verify(*g);
}

TEST(Node, HasSideEffects) {
  Graph g;
  EXPECT_TRUE(g.create(prim::Print, 0)->hasSideEffects());
  EXPECT_TRUE(g.create(Symbol::aten("add_"))->hasSideEffects());
  EXPECT_FALSE(g.create(aten::__is__)->hasSideEffects());
  EXPECT_FALSE(g.create(aten::add)->hasSideEffects());
}

}  // namespace
}  // namespace torchless

namespace {
// `annotate(Optional[int], None)` is a value-less constant typed int?: it is None.
TEST(IRConstants, OptionalTypedNoneIsNone) {
  auto g = std::make_shared<torchless::Graph>();
  torchless::Node* n = g->insertNode(g->create(torchless::prim::Constant));
  n->output()->setType(torchless::OptionalType::create(torchless::IntType::get()));
  EXPECT_TRUE(n->mustBeNone());
  auto v = torchless::toIValue(n->output());
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(v->isNone());
}
}  // namespace
