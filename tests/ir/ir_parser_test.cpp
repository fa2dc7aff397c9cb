// The IR text parser and the verifier: accepted forms, errors with line:col, and the rules
// the verifier enforces.
#include "ir/ir_parser.h"
#include "ir/ir.h"
#include "ir/ir_printer.h"
#include "ir/verifier.h"

#include <gtest/gtest.h>

namespace torchless {
namespace {

std::string roundTrip(const std::string& text) {
  Graph g;
  parseIR(text, &g);
  verify(g);
  return g.toString();
}

Error parseError(const std::string& text) {
  Graph g;
  try {
    parseIR(text, &g);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return Error("");
}

TEST(IRParser, LiteralsRoundTrip) {
  const std::string text =
      "graph(%x : Tensor):\n"
      "  %a : float = prim::Constant[value=-0.]()\n"
      "  %b : float = prim::Constant[value=inf]()\n"
      "  %c : float = prim::Constant[value=-inf]()\n"
      "  %d : float = prim::Constant[value=nan]()\n"
      "  %e : complex = prim::Constant[value=2.+3.j]()\n"
      "  %f : str = prim::Constant[value=\"\\0)+\\/.)\\t\\001 \\\"q\\'\"]()\n"
      "  %g : float[] = prim::Constant[value=[1., 2.5]]()\n"
      "  %h : Dict(str, int) = prim::Constant[value={\"a\": 1, \"b\": 2}]()\n"
      "  %i : Dict(str, int) = prim::Constant[value=annotate(Dict[str, int],{})]()\n"
      "  %j : Device = prim::Constant[value=\"cpu\"]()\n"
      "  %k : (int, (float, str), bool[]) = prim::Constant[value=(1, (2., \"x\"), [True, "
      "False])]()\n"
      "  %l : int?[] = prim::Constant[value=annotate(List[Optional[int]], [1, None])]()\n"
      "  %m : float = prim::Constant[value=1234567890123]()\n"
      "  %n : bool = prim::isinstance[types=[int, str[]]](%x)\n"
      "  %o : Tensor = aten::foo[ints=[1, 2], floats=[0.5], strs=[\"a\"], t=Float(2, 3), "
      "g=<Graph>, ts=[<Tensors>]](%x)\n"
      "  %p : Long(2, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value= 1  2 [ "
      "CPULongType{2} ]]()\n"
      "  %q : Float(3, 4, strides=[4, 1], requires_grad=0, device=cpu) = "
      "prim::Constant[value=<Tensor>]()\n"
      "  %r : Double(requires_grad=0, device=cpu) = prim::Constant[value={0.25}]()\n"
      "  %s : (int) = prim::Constant[value=(1,)]()\n"
      "   = prim::Print(%a, %b, %c, %d, %e, %f, %g, %h, %i, %j, %k, %l, %m, %n, %o, %p, %q, %r, "
      "%s)\n"
      "  return (%x)\n";
  EXPECT_EQ(roundTrip(text), text);
}

TEST(IRParser, StringEscapesDecode) {
  Graph g;
  std::unordered_map<std::string, Value*> vmap;
  parseIR("graph():\n  %s : str = prim::Constant[value=\"\\0)+\\/.)\\n\"]()\n  return (%s)\n", &g,
          vmap);
  EXPECT_EQ(toIValue(vmap.at("s"))->toStringRef(), "\xc3\xa9\n");
  EXPECT_EQ(quoteIRString("\xc3\xa9\n"), "\"\\0)+\\/.)\\n\"");
}

TEST(IRParser, AcceptsParseIrStyleInput) {
  // What people write for torch._C.parse_ir: no types (Tensor), ops without outputs and
  // without '=', comments on their own lines, odd spacing, blocks, missing trailing newline.
  Graph g;
  parseIR(R"IR(
graph(%a, %b : int):
  # a comment line
  %c : Tensor = aten::mul(%a,%a)
  prim::Print(%c)
  %cond : bool = aten::Bool(%b)
  %d = prim::If(%cond)
    block0():
      -> (%c)
    block1():
      %e : Tensor = aten::neg(%c)
      -> (%e)
  return (%d))IR",
          &g);
  verify(g);
  EXPECT_EQ(g.toString(),
            "graph(%a : Tensor,\n"
            "      %b : int):\n"
            "  %c : Tensor = aten::mul(%a, %a)\n"
            "   = prim::Print(%c)\n"
            "  %cond : bool = aten::Bool(%b)\n"
            "  %d : Tensor = prim::If(%cond)\n"
            "    block0():\n"
            "      -> (%c)\n"
            "    block1():\n"
            "      %e : Tensor = aten::neg(%c)\n"
            "      -> (%e)\n"
            "  return (%d)\n");
}

TEST(IRParser, SourceLocationsAndSubgraphs) {
  const std::string text =
      "graph(%x.1 : Tensor):\n"
      "  %fut.1 : Future[Tensor] = prim::fork_0(%x.1) # C:\\dir\\m.py:215:10\n"
      "  %6 : Tensor = aten::wait(%fut.1) # m.py:216:11\n"
      "  return (%6)\n"
      "with prim::fork_0 = graph(%x.1 : Tensor):\n"
      "  %2 : Tensor = aten::neg(%x.1) # m.py:215:10\n"
      "  return (%2)\n";
  Graph g;
  parseIR(text, &g);
  Node* fork = g.nodes().front();
  EXPECT_EQ(fork->kind(), prim::fork);
  ASSERT_TRUE(fork->sourceRange());
  EXPECT_EQ(fork->sourceRange()->filename, "C:\\dir\\m.py");
  EXPECT_EQ(fork->sourceRange()->line, 215u);
  EXPECT_EQ(fork->sourceRange()->col, 10u);
  ASSERT_TRUE(fork->g(attr::Subgraph));
  EXPECT_EQ(fork->g(attr::Subgraph)->inputs().size(), 1u);
  EXPECT_EQ(g.toString(),
            "graph(%x.1 : Tensor):\n"
            "  %fut.1 : Future[Tensor] = prim::fork_0(%x.1) # C:\\dir\\m.py:215:10\n"
            "  %2 : Tensor = aten::wait(%fut.1) # m.py:216:11\n"
            "  return (%2)\n"
            "with prim::fork_0 = graph(%x.1 : Tensor):\n"
            "  %1 : Tensor = aten::neg(%x.1) # m.py:215:10\n"
            "  return (%1)\n");
  EXPECT_EQ(g.toString(/*printSourceLocations=*/false).find('#'), std::string::npos);
}

TEST(IRParser, ErrorsNameLineAndColumn) {
  Error e = parseError("graph(%x : Tensor):\n  %y : Tensor = aten::relu(%z)\n  return (%y)\n");
  EXPECT_EQ(e.place(), "2:28");
  EXPECT_NE(e.message().find("%z"), std::string::npos);
  EXPECT_NE(e.details().find("^"), std::string::npos);

  e = parseError("graph(%x : Tensor):\n  %y : Tensor = relu(%x)\n  return (%y)\n");
  EXPECT_EQ(e.place(), "2:21");
  e = parseError("graph(%x : NotAType):\n  return (%x)\n");
  EXPECT_EQ(e.place(), "1:12");
  e = parseError(
      "graph(%x : Tensor):\n  %y : int = prim::Constant[value=\"abc]()\n  return (%y)\n");
  EXPECT_EQ(e.place(), "2:35");
  e = parseError("graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x)\n");
  EXPECT_NE(e.message().find("return"), std::string::npos);
  e = parseError("graph(%x : Tensor):\n  return (%x)\n  junk\n");
  EXPECT_EQ(e.place(), "3:3");
  e = parseError("graph():\n  %y : Tensor = prim::Constant[value=<Tensor>]()\n  return (%y)\n");
  EXPECT_EQ(e.place(), "2:38");

  Graph g;
  try {
    parseIR("graph(%x):\n  return (%q)\n", &g, ParseIROptions{"f.ir", nullptr});
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.place(), "f.ir:2:11");
  }
}

TEST(IRParser, TensorConstantsRebuildValues) {
  Graph g;
  std::unordered_map<std::string, Value*> vmap;
  parseIR(
      "graph():\n"
      "  %a : Float(2, 2, strides=[2, 1], requires_grad=0, device=cpu) = "
      "prim::Constant[value= 1  2  3  4 [ CPUFloatType{2,2} ]]()\n"
      "  %b : Float(2, strides=[1], requires_grad=0, device=cpu) = "
      "prim::Constant[value=0.0001 *  1.2000  3.4000 [ CPUFloatType{2} ]]()\n"
      "  %c : Long(2, 1, 2, strides=[2, 2, 1], requires_grad=0, device=cpu) = "
      "prim::Constant[value=(1,.,.) =    1  2  (2,.,.) =    3  4 [ CPULongType{2,1,2} ]]()\n"
      "  return (%a, %b, %c)\n",
      &g, vmap);
  Tensor a = toIValue(vmap.at("a"))->toTensor();
  EXPECT_EQ(a.sizes(), (IntList{2, 2}));
  EXPECT_EQ(a.doubleAt(3), 4.0);
  Tensor b = toIValue(vmap.at("b"))->toTensor();
  EXPECT_NEAR(b.doubleAt(1), 3.4e-4, 1e-9);
  Tensor c = toIValue(vmap.at("c"))->toTensor();
  EXPECT_EQ(c.dtype(), ScalarType::Long);
  EXPECT_EQ(c.intAt(2), 3);
}

TEST(Verifier, CatchesBrokenGraphs) {
  auto expectFails = [](const std::string& text, const std::string& what) {
    Graph g;
    parseIR(text, &g);
    try {
      verify(g);
      ADD_FAILURE() << "verify passed:\n" << g;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  // A value defined inside a block used after it.
  expectFails(
      "graph(%c : bool):\n"
      "   = prim::If(%c)\n"
      "    block0():\n"
      "      %x : int = prim::Constant[value=1]()\n"
      "      -> ()\n"
      "    block1():\n"
      "      -> ()\n"
      "  return (%x)\n",
      "%x is used by prim::Return");
  expectFails(
      "graph(%c : bool):\n"
      "  %1 : int = prim::Constant[value=1]()\n"
      "  %r : int = prim::If(%c)\n"
      "    block0():\n"
      "      -> (%1)\n"
      "    block1():\n"
      "      -> ()\n"
      "  return (%r)\n",
      "block returns 0");
  expectFails(
      "graph(%c : bool):\n"
      "  %1 : int = prim::Constant[value=1]()\n"
      "  %r : int = prim::If(%c)\n"
      "    block0():\n"
      "      -> (%1)\n"
      "    block1():\n"
      "      -> (%c)\n"
      "  return (%r)\n",
      "type int but a block returns bool");
  expectFails(
      "graph(%n : int, %c : bool, %x : Tensor):\n"
      "  %y : Tensor = prim::Loop(%n, %c, %x)\n"
      "    block0(%i : int):\n"
      "      -> (%c, %x)\n"
      "  return (%y)\n",
      "block takes 1 inputs");
  expectFails(
      "graph(%n : int, %c : bool, %x : Tensor):\n"
      "  %y : Tensor = prim::Loop(%n, %c, %x)\n"
      "    block0(%i : int, %x.2 : Tensor):\n"
      "      -> (%c)\n"
      "  return (%y)\n",
      "block returns 1");

  // Use-list damage through the raw API: a use that is not matched by an input.
  Graph g;
  Value* x = g.addInput("x")->setType(TensorType::get());
  Node* n = g.insertNode(g.create(Symbol::aten("relu"), {x}));
  n->output()->setType(TensorType::get());
  g.registerOutput(n->output());
  verify(g);
  Node* orphan = g.create(Symbol::aten("neg"), {x});  // never inserted: a dangling use
  EXPECT_THROW(verify(g), Error);
  orphan->destroy();
  verify(g);
}

}  // namespace
}  // namespace torchless

namespace {
// Traced graphs print each node's module scope: `, scope: __module.layer1/__module.layer1.0`.
TEST(IRParserScopes, ReadsTracedScopes) {
  auto g = std::make_shared<torchless::Graph>();
  torchless::parseIR(R"IR(
graph(%x : Tensor):
  %y : Tensor = aten::relu(%x), scope: __module.layer1/__module.layer1.0 # m.py:3:4
  %z : Tensor = aten::relu(%y), scope: __module.fc
  return (%z)
)IR",
                     g.get());
  const torchless::Node* relu = g->outputs()[0]->node()->input(0)->node();
  EXPECT_EQ(relu->scopeName(), "__module.layer1/__module.layer1.0");
  ASSERT_TRUE(relu->sourceRange());
  EXPECT_EQ(relu->sourceRange()->str(), "m.py:3:4");
  EXPECT_EQ(g->outputs()[0]->node()->scopeName(), "__module.fc");
}
}  // namespace
