#include "frontend/parser.h"
#include "frontend/printer.h"

#include <gtest/gtest.h>

namespace torchless::frontend {
namespace {

/// The statements of `text` in S-expression form, one per line.
std::string parse(const std::string& text) {
  Module m = parseFile("t.py", text);
  std::string out;
  for (const Stmt& s : m.body()) {
    if (!out.empty()) out += '\n';
    out += toSExpr(s.tree());
  }
  // Every parse in these tests must also survive printing and re-parsing.
  Module again = parseFile("printed.py", printSource(m.tree()));
  EXPECT_TRUE(treeEqual(m.tree(), again.tree())) << "round trip changed the tree; printed:\n"
                                                 << printSource(m.tree());
  return out;
}

/// One expression in S-expression form.
std::string expr(const std::string& text) {
  Expr e = parseExpression(makeSource("e.py", text));
  Expr again = parseExpression(makeSource("printed.py", printSource(e.tree())));
  EXPECT_TRUE(treeEqual(e.tree(), again.tree()))
      << "round trip changed the tree; printed: " << printSource(e.tree());
  return toSExpr(e.tree());
}

TEST(frontend_parser, Precedence) {
  EXPECT_EQ(expr("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(expr("a - b - c"), "(- (- a b) c)");
  EXPECT_EQ(expr("(a - b) * c"), "(* (- a b) c)");
  EXPECT_EQ(expr("a ** b ** c"), "(** a (** b c))");
  EXPECT_EQ(expr("-a ** 2"), "(neg (** a 2))");
  EXPECT_EQ(expr("(-a) ** 2"), "(** (neg a) 2)");
  EXPECT_EQ(expr("2 ** -1"), "(** 2 -1)");
  EXPECT_EQ(expr("-1"), "-1");
  EXPECT_EQ(expr("-2.5e-3"), "-2.5e-3");
  EXPECT_EQ(expr("- -1"), "(neg -1)");
  EXPECT_EQ(expr("+x - ~y"), "(- (pos x) (~ y))");
  EXPECT_EQ(expr("a @ b // c % d / e"), "(/ (% (// (@ a b) c) d) e)");
  EXPECT_EQ(expr("a << 1 >> 2 & b | c ^ d"), "(| (& (>> (<< a 1) 2) b) (^ c d))");
  EXPECT_EQ(expr("not a and b or c"), "(or (and (not a) b) c)");
  EXPECT_EQ(expr("a or b and not c == d"), "(or a (and b (not (== c d))))");
  EXPECT_EQ(expr("a if b else c if d else e"), "(if_expr b a (if_expr d c e))");
  EXPECT_EQ(expr("(a if b else c) + 1"), "(+ (if_expr b a c) 1)");
  EXPECT_EQ(expr("a | b < c"), "(< (| a b) c)");
}

TEST(frontend_parser, Comparisons) {
  EXPECT_EQ(expr("a < b"), "(< a b)");
  EXPECT_EQ(expr("a is None"), "(is a None)");
  EXPECT_EQ(expr("a is not None"), "(is not a None)");
  EXPECT_EQ(expr("a not in b"), "(not in a b)");
  EXPECT_EQ(expr("not a in b"), "(not (in a b))");
  EXPECT_EQ(expr("0 <= i < n"), "(compare [0 i n] [(<=) (<)])");
  EXPECT_EQ(expr("a == b != c is not d"), "(compare [a b c d] [(==) (!=) (is not)])");
  EXPECT_EQ(expr("(a < b) < c"), "(< (< a b) c)");
}

TEST(frontend_parser, Atoms) {
  EXPECT_EQ(expr("x"), "x");
  EXPECT_EQ(expr("0x1F"), "0x1F");
  EXPECT_EQ(expr("1."), "1.");
  EXPECT_EQ(expr("'a' \"b\" '''c'''"), "\"abc\"");
  EXPECT_EQ(expr("None"), "None");
  EXPECT_EQ(expr("True"), "True");
  EXPECT_EQ(expr("False"), "False");
  EXPECT_EQ(expr("..."), "...");
  EXPECT_EQ(expr("()"), "(tuple [])");
  EXPECT_EQ(expr("(a,)"), "(tuple [a])");
  EXPECT_EQ(expr("(a, b,)"), "(tuple [a b])");
  EXPECT_EQ(expr("a, b"), "(tuple [a b])");
  EXPECT_EQ(expr("(a)"), "a");
  EXPECT_EQ(expr("[]"), "(list_lit [])");
  EXPECT_EQ(expr("[1, [2], (3,), ]"), "(list_lit [1 (list_lit [2]) (tuple [3])])");
  EXPECT_EQ(expr("{}"), "(dict [] [])");
  EXPECT_EQ(expr("{'a': 1, b: c,}"), "(dict [\"a\" b] [1 c])");
  EXPECT_EQ(expr("{a, b}"), "(set [a b])");
  EXPECT_EQ(expr("[*a, b]"), "(list_lit [(star a) b])");
}

TEST(frontend_parser, Trailers) {
  EXPECT_EQ(expr("torch.add(x, y, alpha=2)"), "(apply (. torch add) [x y] [(kwarg alpha 2)])");
  EXPECT_EQ(expr("(obj).forward(x, )"), "(apply (. obj forward) [x] [])");
  EXPECT_EQ(expr("f()"), "(apply f [] [])");
  EXPECT_EQ(expr("f(*args, k=1)"), "(apply f [(star args)] [(kwarg k 1)])");
  EXPECT_EQ(expr("f(a)(b)[c].d"), "(. (subscript (apply (apply f [a] []) [b] []) [c]) d)");
  EXPECT_EQ(expr("x[0]"), "(subscript x [0])");
  EXPECT_EQ(expr("x[1:2:3]"), "(subscript x [(slice 1 2 3)])");
  EXPECT_EQ(expr("x[:]"), "(subscript x [(slice _ _ _)])");
  EXPECT_EQ(expr("x[::2]"), "(subscript x [(slice _ _ 2)])");
  EXPECT_EQ(expr("x[1:]"), "(subscript x [(slice 1 _ _)])");
  EXPECT_EQ(expr("x[:-1]"), "(subscript x [(slice _ -1 _)])");
  EXPECT_EQ(expr("x[..., None]"), "(subscript x [... None])");
  EXPECT_EQ(expr("x[:, 0]"), "(subscript x [(slice _ _ _) 0])");
  EXPECT_EQ(expr("x[(1, 2)]"), "(subscript x [(tuple [1 2])])");
  EXPECT_EQ(expr("Dict[str, List[Tensor]]"), "(subscript Dict [str (subscript List [Tensor])])");
  EXPECT_EQ(expr("(1).real"), "(. 1 real)");
}

TEST(frontend_parser, Comprehensions) {
  EXPECT_EQ(expr("[x * 2 for x in xs]"), "(listcomp (* x 2) [(comp x xs [])])");
  EXPECT_EQ(expr("[x for x in xs if x > 0 if x < 9]"),
            "(listcomp x [(comp x xs [(> x 0) (< x 9)])])");
  EXPECT_EQ(expr("[a + b for a, b in zip(x, y) for c in z]"),
            "(listcomp (+ a b) [(comp (tuple [a b]) (apply zip [x y] []) []) (comp c z [])])");
  EXPECT_EQ(expr("{k: v for k, v in d.items() if v}"),
            "(dictcomp k v [(comp (tuple [k v]) (apply (. d items) [] []) [v])])");
}

TEST(frontend_parser, FStrings) {
  EXPECT_EQ(expr("f'a{x}b'"), "(fstring [\"a\" (fvalue x _ _) \"b\"])");
  EXPECT_EQ(expr("f'{x!r:>{w}.2f}'"),
            "(fstring [(fvalue x r (fstring [\">\" (fvalue w _ _) \".2f\"]))])");
  EXPECT_EQ(expr("f'{{x}}' 'y' f\"{a + b['k']}\""),
            "(fstring [\"{x}y\" (fvalue (+ a (subscript b [\"k\"])) _ _)])");
  EXPECT_EQ(expr("f'\\n{x}'"), "(fstring [\"\\n\" (fvalue x _ _)])");
  EXPECT_EQ(expr("f''"), "(fstring [])");
  EXPECT_EQ(expr("f'{x != y}'"), "(fstring [(fvalue (!= x y) _ _)])");
  // The expression inside keeps its place in the file.
  Expr e = parseExpression(makeSource("e.py", "f'ab{xyz}'"));
  Expr v = FormattedValue(FString(e.tree()).parts()[1].tree()).value();
  EXPECT_EQ(v.range().text(), "xyz");
  EXPECT_EQ(v.range().col(), 6u);
}

TEST(frontend_parser, Assignments) {
  EXPECT_EQ(parse("x = 1\n"), "(assign [x] 1 _)");
  EXPECT_EQ(parse("a = b = c\n"), "(assign [a b] c _)");
  EXPECT_EQ(parse("k0, v, = _6[_7]\n"), "(assign [(tuple [k0 v])] (subscript _6 [_7]) _)");
  EXPECT_EQ(parse("_1, j = a, b\n"), "(assign [(tuple [_1 j])] (tuple [a b]) _)");
  EXPECT_EQ(parse("(a, b), c = x\n"), "(assign [(tuple [(tuple [a b]) c])] x _)");
  EXPECT_EQ(parse("a, *b = x\n"), "(assign [(tuple [a (star b)])] x _)");
  EXPECT_EQ(parse("u : Optional[Tensor] = x4\n"), "(assign [u] x4 (subscript Optional [Tensor]))");
  EXPECT_EQ(parse("w : Tensor\n"), "(assign [w] _ Tensor)");
  EXPECT_EQ(parse("self.count = 0\n"), "(assign [(. self count)] 0 _)");
  EXPECT_EQ(parse("d['k'] = v\n"), "(assign [(subscript d [\"k\"])] v _)");
  EXPECT_EQ(parse("x += 1\n"), "(aug_assign x (+) 1)");
  EXPECT_EQ(parse("x **= 2\n"), "(aug_assign x (**) 2)");
  EXPECT_EQ(parse("self.n //= 2\n"), "(aug_assign (. self n) (//) 2)");
  EXPECT_EQ(parse("x[0] @= m\n"), "(aug_assign (subscript x [0]) (@) m)");
  EXPECT_EQ(parse("a = 1; b = 2;\n"), "(assign [a] 1 _)\n(assign [b] 2 _)");
  EXPECT_EQ(parse("f(x)\n"), "(expr (apply f [x] []))");
}

TEST(frontend_parser, SimpleStatements) {
  EXPECT_EQ(parse("def f():\n  return\n"), "(def f (decl [] _) [(return _)] [])");
  EXPECT_EQ(parse("def f():\n  return a, b\n"), "(def f (decl [] _) [(return (tuple [a b]))] [])");
  EXPECT_EQ(parse("raise\n"), "(raise _ _)");
  EXPECT_EQ(parse("raise ValueError('x') from e\n"), "(raise (apply ValueError [\"x\"] []) e)");
  EXPECT_EQ(parse("assert x\n"), "(assert x _)");
  EXPECT_EQ(parse("assert x > 0, 'msg'\n"), "(assert (> x 0) \"msg\")");
  EXPECT_EQ(parse("pass\n"), "(pass)");
  EXPECT_EQ(parse("del a[0], b\n"), "(del [(subscript a [0]) b])");
  EXPECT_EQ(parse("while 1:\n  break\n  continue\n"), "(while 1 [(break) (continue)])");
  EXPECT_EQ(parse("import a.b.c\n"), "(import [(alias a.b.c _)])");
  EXPECT_EQ(parse("import torch as t, math\n"), "(import [(alias torch t) (alias math _)])");
  EXPECT_EQ(parse("from typing import List, Dict as D\n"),
            "(from typing [(alias List _) (alias Dict D)])");
  EXPECT_EQ(parse("from . import (a,\n  b,)\n"), "(from . [(alias a _) (alias b _)])");
  EXPECT_EQ(parse("from ..x.y import *\n"), "(from ..x.y [(alias * _)])");
  EXPECT_EQ(parse("op_version_set = 1\n"), "(assign [op_version_set] 1 _)");
}

TEST(frontend_parser, CompoundStatements) {
  EXPECT_EQ(parse("if a:\n  x = 1\nelif b:\n  x = 2\nelse:\n  pass\n"),
            "(if a [(assign [x] 1 _)] [(if b [(assign [x] 2 _)] [(pass)])])");
  EXPECT_EQ(parse("if a: pass\n"), "(if a [(pass)] [])");
  EXPECT_EQ(parse("for i in range(n):\n  s += i\n"),
            "(for i (apply range [n] []) [(aug_assign s (+) i)])");
  EXPECT_EQ(parse("for i, (a, b) in enumerate(zip(x, y)):\n  pass\n"),
            "(for (tuple [i (tuple [a b])]) (apply enumerate [(apply zip [x y] [])] []) [(pass)])");
  EXPECT_EQ(parse("for x in a, b:\n  pass\n"), "(for x (tuple [a b]) [(pass)])");
  EXPECT_EQ(parse("with torch.no_grad():\n  pass\n"),
            "(with [(with_item (apply (. torch no_grad) [] []) _)] [(pass)])");
  EXPECT_EQ(parse("with a as b, c:\n  pass\n"),
            "(with [(with_item a b) (with_item c _)] [(pass)])");
  EXPECT_EQ(parse("while x < 3:\n  x = x + 1\n"), "(while (< x 3) [(assign [x] (+ x 1) _)])");
}

TEST(frontend_parser, Defs) {
  EXPECT_EQ(parse("def forward(self: __torch__.Tiny,\n    x: Tensor) -> Tensor:\n"
                  "    return torch.mul(x, self.w)\n"),
            "(def forward (decl [(param self (. __torch__ Tiny) _) (param x Tensor _)] Tensor) "
            "[(return (apply (. torch mul) [x (. self w)] []))] [])");
  EXPECT_EQ(parse("def f(x, y: int=2, *, z: Optional[Tensor]=None) -> None:\n  pass\n"),
            "(def f (decl [(param x _ _) (param y int 2) (param:kwonly z (subscript Optional "
            "[Tensor]) None)] None) [(pass)] [])");
  EXPECT_EQ(parse("@torch.jit.export\n@staticmethod\ndef g():\n  def inner():\n    return 1\n"
                  "  return inner()\n"),
            "(def g (decl [] _) [(def inner (decl [] _) [(return 1)] []) (return (apply inner "
            "[] []))] [(. (. torch jit) export) staticmethod])");
  // As TorchScript prints keyword-only parameters: no `*`, a default before a non-default.
  EXPECT_EQ(parse("def f(y: int=None,\n    scale: float) -> None:\n  pass\n"),
            "(def f (decl [(param y int None) (param scale float _)] None) [(pass)] [])");
  Module m = parseFile("t.py", "@torch.jit.unused\ndef f():\n  pass\n");
  Def d(m.body()[0].tree());
  EXPECT_TRUE(d.hasDecorator("torch.jit.unused"));
  EXPECT_FALSE(d.hasDecorator("torch.jit.export"));
  EXPECT_EQ(d.name().name(), "f");
  EXPECT_EQ(d.range().text(), "def f():\n  pass");
}

TEST(frontend_parser, Classes) {
  std::string src =
      "class Tiny(Module):\n"
      "  __parameters__ = [\"w\", ]\n"
      "  __buffers__ = []\n"
      "  w : Tensor\n"
      "  __annotations__[\"0\"] = __torch__.torchvision.models.resnet.BasicBlock\n"
      "  shape : Final[Tuple[int, int]] = (2, 3)\n"
      "  def forward(self: __torch__.Tiny) -> Tensor:\n"
      "    return self.w\n";
  EXPECT_EQ(parse(src),
            "(class Tiny [Module] [(assign [__parameters__] (list_lit [\"w\"]) _) "
            "(assign [__buffers__] (list_lit []) _) (assign [w] _ Tensor) "
            "(assign [(subscript __annotations__ [\"0\"])] (. (. (. (. __torch__ torchvision) "
            "models) resnet) BasicBlock) _) (assign [shape] (tuple [2 3]) (subscript Final "
            "[(subscript Tuple [int int])])) (def forward (decl [(param self (. __torch__ Tiny) "
            "_)] Tensor) [(return (. self w))] [])] [])");
  EXPECT_EQ(parse("class Color(Enum):\n  RED = 1\n  GREEN = 2\n"),
            "(class Color [Enum] [(assign [RED] 1 _) (assign [GREEN] 2 _)] [])");
  EXPECT_EQ(parse("class Box:\n  pass\n"), "(class Box [] [(pass)] [])");
  EXPECT_EQ(parse("class I(ModuleInterface):\n  def forward(self, x: Tensor) -> Tensor:\n"
                  "    pass\n"),
            "(class I [ModuleInterface] [(def forward (decl [(param self _ _) (param x Tensor _)] "
            "Tensor) [(pass)] [])] [])");
}

TEST(frontend_parser, Layout) {
  // CRLF, tabs, comments, blank lines, backslash continuation and bracketed continuation.
  std::string src =
      "op_version_set = 1\r\n"
      "# comment\r\n"
      "class A(Module):\r\n"
      "\tdef f(self,\r\n"
      "\t      x):   # trailing comment\r\n"
      "\r\n"
      "\t\ty = x + \\\r\n"
      "\t\t    1\r\n"
      "\t\treturn y\r\n";
  EXPECT_EQ(parse(src),
            "(assign [op_version_set] 1 _)\n"
            "(class A [Module] [(def f (decl [(param self _ _) (param x _ _)] _) "
            "[(assign [y] (+ x 1) _) (return y)] [])] [])");
}

TEST(frontend_parser, Ranges) {
  Module m = parseFile("t.py", "def f(x):\n  y = torch.add(x, 1)\n  return y\n");
  Def d(m.body()[0].tree());
  Assign a(d.statements()[0].tree());
  EXPECT_EQ(a.range().text(), "y = torch.add(x, 1)");
  Expr rhs = a.rhs().get();
  EXPECT_EQ(rhs.range().text(), "torch.add(x, 1)");
  Apply call(rhs.tree());
  EXPECT_EQ(call.callee().range().text(), "torch.add");
  EXPECT_EQ(call.inputs()[1].range().text(), "1");
  EXPECT_EQ(call.inputs()[1].range().line(), 2u);
  EXPECT_EQ(call.inputs()[1].range().col(), 20u);
  EXPECT_EQ(d.decl().params()[0].range().text(), "x");
}

TEST(frontend_parser, ConstValues) {
  auto c = [](const std::string& s) { return Const(parseExpression(makeSource("c", s)).tree()); };
  EXPECT_EQ(c("42").asIntegral(), 42);
  EXPECT_EQ(c("-42").asIntegral(), -42);
  EXPECT_EQ(c("0x_FF").asIntegral(), 255);
  EXPECT_EQ(c("0o17").asIntegral(), 15);
  EXPECT_EQ(c("0b101").asIntegral(), 5);
  EXPECT_EQ(c("1_000_000").asIntegral(), 1000000);
  EXPECT_EQ(c("9223372036854775807").asIntegral(), INT64_MAX);
  EXPECT_EQ(c("-9223372036854775808").asIntegral(), INT64_MIN);
  EXPECT_THROW(c("9223372036854775808").asIntegral(), Error);
  EXPECT_TRUE(c("1.").isFloatingPoint());
  EXPECT_TRUE(c("1e3").isFloatingPoint());
  EXPECT_FALSE(c("0xE").isFloatingPoint());
  EXPECT_DOUBLE_EQ(c("-2.5e-3").asFloatingPoint(), -2.5e-3);
  EXPECT_DOUBLE_EQ(c(".5").asFloatingPoint(), 0.5);
  EXPECT_TRUE(c("2j").isComplex());
  EXPECT_DOUBLE_EQ(c("2j").asFloatingPoint(), 2.0);
}

TEST(frontend_parser, PrintSource) {
  Module m =
      parseFile("t.py",
                "@torch.jit.export\ndef f(x: int, *, y: int=1) -> int:\n"
                "  if x < 0 < y:\n    return -x ** 2\n  elif not x:\n    a, b, = (1, 2)\n"
                "  else:\n    s = f'{x!r:>4}' + \"\\001\"\n  return [i for i in range(x) if i]\n");
  EXPECT_EQ(printSource(m.tree()),
            "@torch.jit.export\n"
            "def f(x: int, *, y: int=1) -> int:\n"
            "  if x < 0 < y:\n"
            "    return -x ** 2\n"
            "  elif not x:\n"
            "    (a, b) = (1, 2)\n"
            "  else:\n"
            "    s = f\"{x!r:>4}\" + \"\\001\"\n"
            "  return [i for i in range(x) if i]\n");
}

}  // namespace
}  // namespace torchless::frontend
