#include "frontend/lexer.h"
#include "frontend/printer.h"

#include <gtest/gtest.h>

namespace torchless::frontend {
namespace {

/// The tokens of `text`, space-separated: names bare, numbers as #spelling, strings quoted,
/// NL / IN / DE for layout tokens, operators and keywords as spelled; Eof omitted.
std::string lex(const std::string& text) {
  auto tokens = tokenize(makeSource("t.py", text));
  std::string out;
  for (const Token& t : tokens) {
    std::string s;
    switch (t.kind) {
      case TokenKind::Eof: continue;
      case TokenKind::Ident: s = t.text; break;
      case TokenKind::Number: s = "#" + t.text; break;
      case TokenKind::String: s = quoteString(t.text); break;
      case TokenKind::FString: s = "f<" + t.text + ">"; break;
      case TokenKind::Newline: s = "NL"; break;
      case TokenKind::Indent: s = "IN"; break;
      case TokenKind::Dedent: s = "DE"; break;
      default: s = tokenKindName(t.kind);
    }
    if (!out.empty()) out += ' ';
    out += s;
  }
  return out;
}

std::string lexError(const std::string& text) {
  try {
    tokenize(makeSource("t.py", text));
  } catch (const Error& e) {
    return e.firstLine();
  }
  return "no error";
}

TEST(frontend_lexer, Basics) {
  EXPECT_EQ(lex("x = a + 1\n"), "x = a + #1 NL");
  EXPECT_EQ(lex("x = a"), "x = a NL");  // NEWLINE added at EOF
  EXPECT_EQ(lex(""), "");
  EXPECT_EQ(lex("\n\n  # only a comment\n"), "");
}

TEST(frontend_lexer, Indentation) {
  EXPECT_EQ(lex("if a:\n  b\n  c\nd\n"), "if a : NL IN b NL c NL DE d NL");
  EXPECT_EQ(lex("if a:\n  if b:\n    c\n"), "if a : NL IN if b : NL IN c NL DE DE");
  // Blank lines and comments at any indentation do not count.
  EXPECT_EQ(lex("if a:\n\n      # c\n  b\n"), "if a : NL IN b NL DE");
  // Tabs go to multiples of 8; CRLF ends lines.
  EXPECT_EQ(lex("if a:\r\n\tb\r\n\tc\r\n"), "if a : NL IN b NL c NL DE");
}

TEST(frontend_lexer, LineJoining) {
  EXPECT_EQ(lex("f(a,\n    b)\n"), "f ( a , b ) NL");
  EXPECT_EQ(lex("x = [1,\n# c\n  2]\n"), "x = [ #1 , #2 ] NL");
  EXPECT_EQ(lex("x = 1 + \\\n  2\ny\n"), "x = #1 + #2 NL y NL");
  EXPECT_EQ(lex("x = 1 + \\\r\n  2\n"), "x = #1 + #2 NL");
}

TEST(frontend_lexer, Operators) {
  EXPECT_EQ(lex("a->b ** c // d @ e"), "a -> b ** c // d @ e NL");
  EXPECT_EQ(lex("a += 1; b **= 2; c //= 3; d >>= 1; e <<= 1; f @= g"),
            "a += #1 ; b **= #2 ; c //= #3 ; d >>= #1 ; e <<= #1 ; f @= g NL");
  EXPECT_EQ(lex("a <= b >= c == d != e < f > g"), "a <= b >= c == d != e < f > g NL");
  EXPECT_EQ(lex("a & b | c ^ ~d << 1 >> 2 % 3"), "a & b | c ^ ~ d << #1 >> #2 % #3 NL");
  EXPECT_EQ(lex("x[..., None]"), "x [ ... , None ] NL");
  EXPECT_EQ(lex("a is not b"), "a is not b NL");
  EXPECT_EQ(lex("a not in b"), "a not in b NL");
  auto tokens = tokenize(makeSource("t.py", "a is not b not in c"));
  EXPECT_EQ(tokens[1].kind, TokenKind::IsNot);
  EXPECT_EQ(tokens[3].kind, TokenKind::NotIn);
  EXPECT_EQ(tokens[1].start, 2u);
  EXPECT_EQ(tokens[1].end, 8u);
}

TEST(frontend_lexer, Keywords) {
  auto tokens = tokenize(makeSource("t.py", "def class return None True False lambda x"));
  EXPECT_EQ(tokens[0].kind, TokenKind::Def);
  EXPECT_EQ(tokens[1].kind, TokenKind::Class);
  EXPECT_EQ(tokens[2].kind, TokenKind::Return);
  EXPECT_EQ(tokens[3].kind, TokenKind::None);
  EXPECT_EQ(tokens[4].kind, TokenKind::True);
  EXPECT_EQ(tokens[5].kind, TokenKind::False);
  EXPECT_EQ(tokens[6].kind, TokenKind::Lambda);
  EXPECT_EQ(tokens[7].kind, TokenKind::Ident);
}

TEST(frontend_lexer, Numbers) {
  EXPECT_EQ(lex("0 7 123 1_000 0x1F 0XfF 0o17 0b1010 0b_1"),
            "#0 #7 #123 #1_000 #0x1F #0XfF #0o17 #0b1010 #0b_1 NL");
  EXPECT_EQ(lex("1. .5 1.5 1e5 1E-3 2.5e+10 1_0.0_1 00 3j 1.5J"),
            "#1. #.5 #1.5 #1e5 #1E-3 #2.5e+10 #1_0.0_1 #00 #3j #1.5J NL");
  EXPECT_EQ(lex("9223372036854775807"), "#9223372036854775807 NL");
  EXPECT_EQ(lex("x.y[1:2]"), "x . y [ #1 : #2 ] NL");
}

TEST(frontend_lexer, Strings) {
  EXPECT_EQ(lex(R"(a = 'x' "y")"), R"(a = "x" "y" NL)");
  EXPECT_EQ(lex(R"('it\'s' "q\"q")"), R"("it's" "q\"q" NL)");
  EXPECT_EQ(lex(R"("\t\n\\\x41\101\0\001\177")"), R"("\t\n\\AA\000\001\177" NL)");
  EXPECT_EQ(lex(R"("\u00e9" "\U0001F600")"), "\"\xc3\xa9\" \"\xf0\x9f\x98\x80\" NL");
  EXPECT_EQ(lex(R"("\377")"), "\"\xc3\xbf\" NL");  // Python str semantics: U+00FF
  EXPECT_EQ(lex(R"(r"\d+\n" R'\'')"), R"("\\d+\\n" "\\'" NL)");
  EXPECT_EQ(lex(R"("\d")"), R"("\\d" NL)");  // unknown escapes keep the backslash
  EXPECT_EQ(lex("u'x' U\"y\""), R"("x" "y" NL)");
  EXPECT_EQ(lex("'''a\n'b'\n\"\"\"'''"), R"("a\n'b'\n\"\"\"" NL)");
  EXPECT_EQ(lex("\"\"\"a\r\nb\"\"\""), R"("a\nb" NL)");
  EXPECT_EQ(lex("'a\\\nb'"), R"("ab" NL)");  // backslash-newline inside a string
  EXPECT_EQ(lex("f'x{y}' F\"{a!r:>10}\" rf'\\d{x}' fR'q'"),
            R"(f<x{y}> f<{a!r:>10}> f<\d{x}> f<q> NL)");
  auto tokens = tokenize(makeSource("t.py", "rf'{x}'"));
  EXPECT_TRUE(tokens[0].raw);
  EXPECT_EQ(tokens[0].bodyStart, 3u);
}

TEST(frontend_lexer, Ranges) {
  auto src = makeSource("t.py", "if x:\n  return 'ab'\n");
  Lexer lexer(src);
  auto tokens = lexer.tokenize();
  // if x : NL IN return 'ab' NL DE EOF
  ASSERT_EQ(tokens.size(), 10u);
  EXPECT_EQ(lexer.range(tokens[5]).text(), "return");
  EXPECT_EQ(lexer.range(tokens[6]).text(), "'ab'");
  EXPECT_EQ(lexer.range(tokens[6]).col(), 10u);
}

TEST(frontend_lexer, Errors) {
  EXPECT_EQ(lexError("x = 'abc\n"), "t.py:1:5: unterminated string literal");
  EXPECT_EQ(lexError("x = '''abc\n"), "t.py:1:5: unterminated triple-quoted string literal");
  EXPECT_EQ(lexError("x = $"), "t.py:1:5: invalid character '$' in source");
  EXPECT_EQ(lexError("x = \xe2\x82\xac"),
            "t.py:1:5: invalid character '\xe2\x82\xac' (U+20AC) in source");
  EXPECT_EQ(lexError("x = 012"),
            "t.py:1:5: leading zeros in decimal integer literals are not permitted; use an 0o "
            "prefix for octal integers");
  EXPECT_EQ(lexError("x = 0x"), "t.py:1:5: invalid hexadecimal literal");
  EXPECT_EQ(lexError("x = 0b102"), "t.py:1:9: invalid digit '2' in binary literal");
  EXPECT_EQ(lexError("x = 1__0"), "t.py:1:5: invalid decimal literal");
  EXPECT_EQ(lexError("x = 1_"), "t.py:1:5: invalid decimal literal");
  EXPECT_EQ(lexError("x = 1e"), "t.py:1:5: invalid decimal literal");
  EXPECT_EQ(lexError("x = 12abc"), "t.py:1:5: invalid decimal literal");
  EXPECT_EQ(lexError("x = (1, 2"), "t.py:1:5: '(' was never closed");
  EXPECT_EQ(lexError("x = 1)"), "t.py:1:6: unmatched ')'");
  EXPECT_EQ(lexError("x = (1]\n"), "t.py:1:7: closing ']' does not match opening '(' at line 1");
  EXPECT_EQ(lexError("x = 1 \\ 2"),
            "t.py:1:7: unexpected character after line continuation character");
  EXPECT_EQ(lexError("if a:\n    b\n  c\n"),
            "t.py:3:1: unindent does not match any outer indentation level");
  EXPECT_EQ(lexError("if a:\n        b\n\tc\n"),
            "t.py:3:1: inconsistent use of tabs and spaces in indentation");
  EXPECT_EQ(lexError("x = b'abc'"), "t.py:1:5: bytes literals are not supported in TorchScript");
  EXPECT_EQ(lexError(R"(x = "\x4")"), "t.py:1:6: truncated \\xXX escape in string literal");
  EXPECT_EQ(lexError(R"(x = "\N{DASH}")"),
            "t.py:1:6: \\N{...} escapes are not supported in TorchScript string literals");
}

TEST(frontend_lexer, ErrorDetailsHighlight) {
  try {
    tokenize(makeSource("m.py", "def f():\n  return 'abc\n"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.details(),
              "  File \"m.py\", line 2\n"
              "  return 'abc\n"
              "         ~~~~ <--- HERE");
  }
}

}  // namespace
}  // namespace torchless::frontend
