// One case per diagnostic the lexer and parser give: the first line (file:line:col: message)
// and, for a few, the whole rendering with the highlighted source line.
#include "frontend/parser.h"

#include <gtest/gtest.h>

namespace torchless::frontend {
namespace {

/// The full error text (first line, then the highlight) for parsing `text` as m.py.
std::string errorOf(const std::string& text) {
  try {
    parseFile("m.py", text);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

/// Only the first line.
std::string firstLine(const std::string& text) {
  std::string all = errorOf(text);
  return all.substr(0, all.find('\n'));
}

TEST(frontend_diagnostics, ExpectedToken) {
  EXPECT_EQ(errorOf("def f(x)\n  return x\n"),
            "m.py:1:9: expected ':' but found newline\n"
            "  File \"m.py\", line 1\n"
            "def f(x)\n"
            "        ~ <--- HERE");
  EXPECT_EQ(firstLine("def (x):\n  pass\n"), "m.py:1:5: expected an identifier but found '('");
  EXPECT_EQ(firstLine("x = f(a b)\n"), "m.py:1:9: expected ')' but found identifier 'b'");
  EXPECT_EQ(firstLine("x = 1 2\n"), "m.py:1:7: expected newline but found number '2'");
}

TEST(frontend_diagnostics, ExpectedExpression) {
  EXPECT_EQ(errorOf("def f(x):\n    return x + )\n"),
            "m.py:2:16: unmatched ')'\n"
            "  File \"m.py\", line 2\n"
            "    return x + )\n"
            "               ~ <--- HERE");
  EXPECT_EQ(errorOf("def f(x):\n    return (x + )\n"),
            "m.py:2:17: expected an expression but found ')'\n"
            "  File \"m.py\", line 2\n"
            "    return (x + )\n"
            "                ~ <--- HERE");
  EXPECT_EQ(firstLine("x = 1 +\n"), "m.py:1:8: expected an expression but found newline");
  EXPECT_EQ(firstLine("x = a[]\n"), "m.py:1:7: expected an index or slice but found ']'");
  EXPECT_EQ(firstLine("x = a if b\n"),
            "m.py:1:11: expected 'else' in the conditional expression but found newline");
}

TEST(frontend_diagnostics, Indentation) {
  EXPECT_EQ(errorOf("if x:\npass\n"),
            "m.py:2:1: expected an indented block after 'if' statement on line 1\n"
            "  File \"m.py\", line 2\n"
            "pass\n"
            "~~~~ <--- HERE");
  EXPECT_EQ(firstLine("def f():\n\n  # c\nx = 1\n"),
            "m.py:4:1: expected an indented block after function definition on line 1");
  EXPECT_EQ(firstLine("x = 1\n  y = 2\n"), "m.py:2:3: unexpected indent");
  EXPECT_EQ(firstLine("if a:\n    b\n  c\n"),
            "m.py:3:1: unindent does not match any outer indentation level");
  EXPECT_EQ(firstLine("if a:\n        b\n\tc\n"),
            "m.py:3:1: inconsistent use of tabs and spaces in indentation");
}

TEST(frontend_diagnostics, Literals) {
  EXPECT_EQ(errorOf("s = 'abc\n"),
            "m.py:1:5: unterminated string literal\n"
            "  File \"m.py\", line 1\n"
            "s = 'abc\n"
            "    ~~~~ <--- HERE");
  EXPECT_EQ(firstLine("s = \"\"\"abc\n"), "m.py:1:5: unterminated triple-quoted string literal");
  EXPECT_EQ(firstLine("s = b'x'\n"), "m.py:1:5: bytes literals are not supported in TorchScript");
  EXPECT_EQ(firstLine("s = '\\xZ1'\n"), "m.py:1:6: truncated \\xXX escape in string literal");
  EXPECT_EQ(firstLine("n = 0777\n"),
            "m.py:1:5: leading zeros in decimal integer literals are not permitted; use an 0o "
            "prefix for octal integers");
  EXPECT_EQ(firstLine("n = 0o8\n"), "m.py:1:7: invalid digit '8' in octal literal");
  EXPECT_EQ(firstLine("n = 1_\n"), "m.py:1:5: invalid decimal literal");
  EXPECT_EQ(firstLine("x = a ? b\n"), "m.py:1:7: invalid character '?' in source");
}

TEST(frontend_diagnostics, Brackets) {
  EXPECT_EQ(firstLine("x = [1, 2\ny = 3\n"), "m.py:1:5: '[' was never closed");
  EXPECT_EQ(firstLine("x = (1, 2]\n"),
            "m.py:1:10: closing ']' does not match opening '(' at line 1");
  EXPECT_EQ(firstLine("x = 1}\n"), "m.py:1:6: unmatched '}'");
}

TEST(frontend_diagnostics, FStrings) {
  EXPECT_EQ(errorOf("s = f'a}b'\n"),
            "m.py:1:8: f-string: single '}' is not allowed\n"
            "  File \"m.py\", line 1\n"
            "s = f'a}b'\n"
            "       ~ <--- HERE");
  EXPECT_EQ(firstLine("s = f'{x'\n"), "m.py:1:7: f-string: expecting '}'");
  EXPECT_EQ(firstLine("s = f'{ }'\n"), "m.py:1:7: f-string: empty expression not allowed");
  EXPECT_EQ(firstLine("s = f'{x!z}'\n"),
            "m.py:1:9: f-string: invalid conversion character: expected 's', 'r', or 'a'");
  EXPECT_EQ(firstLine("s = f'{x +}'\n"), "m.py:1:11: expected an expression but found end of file");
}

TEST(frontend_diagnostics, AssignmentTargets) {
  EXPECT_EQ(errorOf("f(x) = 1\n"),
            "m.py:1:1: cannot assign to function call in assignment\n"
            "  File \"m.py\", line 1\n"
            "f(x) = 1\n"
            "~~~~ <--- HERE");
  EXPECT_EQ(firstLine("1 = x\n"), "m.py:1:1: cannot assign to literal in assignment");
  EXPECT_EQ(firstLine("a, f() = x\n"), "m.py:1:4: cannot assign to function call in assignment");
  EXPECT_EQ(firstLine("*a, *b = x\n"), "m.py:1:5: multiple starred expressions in assignment");
  EXPECT_EQ(firstLine("a + 1 += 1\n"),
            "m.py:1:1: 'expression' is an illegal expression for augmented assignment '+='");
  EXPECT_EQ(firstLine("a, b += 1\n"),
            "m.py:1:1: 'tuple' is an illegal expression for augmented assignment '+='");
  EXPECT_EQ(firstLine("a, b : int = x\n"),
            "m.py:1:1: only a single target (not a tuple) can be annotated");
  EXPECT_EQ(firstLine("for f() in x:\n  pass\n"),
            "m.py:1:5: cannot assign to function call in for loop");
  EXPECT_EQ(firstLine("del 1\n"), "m.py:1:5: cannot assign to literal in del");
  EXPECT_EQ(firstLine("with a as 1:\n  pass\n"),
            "m.py:1:11: cannot assign to literal in with statement");
}

TEST(frontend_diagnostics, Misplaced) {
  EXPECT_EQ(firstLine("break\n"), "m.py:1:1: 'break' outside loop");
  EXPECT_EQ(firstLine("def f():\n  continue\n"), "m.py:2:3: 'continue' outside loop");
  EXPECT_EQ(firstLine("for i in x:\n  def g():\n    break\n"), "m.py:3:5: 'break' outside loop");
  EXPECT_EQ(firstLine("return 1\n"), "m.py:1:1: 'return' outside function");
  EXPECT_EQ(firstLine("class A:\n  return 1\n"), "m.py:2:3: 'return' outside function");
  EXPECT_EQ(firstLine("f(a=1, b)\n"), "m.py:1:8: positional argument follows keyword argument");
  EXPECT_EQ(firstLine("@dec\nx = 1\n"),
            "m.py:2:1: expected 'def' or 'class' after decorators but found identifier 'x'");
}

TEST(frontend_diagnostics, Unsupported) {
  EXPECT_EQ(errorOf("def f(x):\n  g = lambda y: y\n"),
            "m.py:2:7: lambda expressions are not supported in TorchScript\n"
            "  File \"m.py\", line 2\n"
            "  g = lambda y: y\n"
            "      ~~~~~~ <--- HERE");
  EXPECT_EQ(firstLine("global x\n"),
            "m.py:1:1: global statements are not supported in TorchScript");
  EXPECT_EQ(firstLine("def f():\n  nonlocal x\n"),
            "m.py:2:3: nonlocal statements are not supported in TorchScript");
  EXPECT_EQ(firstLine("try:\n  pass\nexcept:\n  pass\n"),
            "m.py:1:1: try statements are not supported in TorchScript");
  EXPECT_EQ(firstLine("def f():\n  yield 1\n"), "m.py:2:3: yield is not supported in TorchScript");
  EXPECT_EQ(firstLine("def f():\n  x = await g()\n"),
            "m.py:2:7: await is not supported in TorchScript");
  EXPECT_EQ(firstLine("async def f():\n  pass\n"),
            "m.py:1:1: async functions and statements are not supported in TorchScript");
  EXPECT_EQ(firstLine("x = sum(i for i in y)\n"),
            "m.py:1:11: generator expressions are not supported in TorchScript");
  EXPECT_EQ(firstLine("x = {i for i in y}\n"),
            "m.py:1:8: set comprehensions are not supported in TorchScript");
  EXPECT_EQ(firstLine("x = f(**kw)\n"),
            "m.py:1:7: **kwargs arguments are not supported in TorchScript");
  EXPECT_EQ(firstLine("x = {**a}\n"),
            "m.py:1:6: '**' unpacking in dict literals is not supported in TorchScript");
  EXPECT_EQ(firstLine("def f(*args):\n  pass\n"),
            "m.py:1:7: *args parameters are not supported in TorchScript");
  EXPECT_EQ(firstLine("def f(**kw):\n  pass\n"),
            "m.py:1:7: **kwargs parameters are not supported in TorchScript");
  EXPECT_EQ(firstLine("def f(a, /):\n  pass\n"),
            "m.py:1:10: positional-only parameters ('/') are not supported in TorchScript");
  EXPECT_EQ(firstLine("while x:\n  pass\nelse:\n  pass\n"),
            "m.py:3:1: 'else' after a while loop is not supported in TorchScript");
  EXPECT_EQ(firstLine("for x in y:\n  pass\nelse:\n  pass\n"),
            "m.py:3:1: 'else' after a for loop is not supported in TorchScript");
  EXPECT_EQ(firstLine("if (n := 1):\n  pass\n"),
            "m.py:1:7: assignment expressions (:=) are not supported in TorchScript");
  EXPECT_EQ(firstLine("class A(metaclass=M):\n  pass\n"),
            "m.py:1:9: keyword arguments in a class definition are not supported in TorchScript");
}

TEST(frontend_diagnostics, Limits) {
  EXPECT_EQ(firstLine("x = " + std::string(300, '(') + "1" + std::string(300, ')') + "\n"),
            "m.py:1:205: too many nested parentheses");
  EXPECT_EQ(firstLine("x = " + std::string(100000, '-') + "y\n"),
            "m.py:1:504: expression is too deeply nested");
  std::string chain = "x = a";
  for (int i = 0; i < 5000; ++i) chain += " + a";
  EXPECT_EQ(firstLine(chain + "\n"), "m.py:1:5: expression is too deeply nested");
  std::string nested;
  for (int i = 0; i < 120; ++i) nested += std::string(static_cast<size_t>(i), ' ') + "if x:\n";
  nested += std::string(120, ' ') + "pass\n";
  EXPECT_EQ(firstLine(nested), "m.py:102:1: too many levels of indentation");
}

TEST(frontend_diagnostics, ParseExpression) {
  try {
    parseExpression(makeSource("type", "List[int]]"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.firstLine(), "type:1:10: unmatched ']'");
  }
  try {
    parseExpression(makeSource("type", "List[int] x"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.firstLine(), "type:1:11: expected end of the expression but found identifier 'x'");
  }
}

}  // namespace
}  // namespace torchless::frontend
