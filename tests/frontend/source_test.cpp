#include "frontend/source.h"

#include <gtest/gtest.h>

namespace torchless::frontend {
namespace {

TEST(frontend_source, LinesAndColumns) {
  auto src = makeSource("m.py", "ab\ncd\r\nef\rgh");
  EXPECT_EQ(src->numLines(), 4u);
  EXPECT_EQ(src->lineText(0), "ab");
  EXPECT_EQ(src->lineText(1), "cd");
  EXPECT_EQ(src->lineText(2), "ef");
  EXPECT_EQ(src->lineText(3), "gh");
  SourceRange r(src, 4, 5);  // 'd'
  EXPECT_EQ(r.line(), 2u);
  EXPECT_EQ(r.col(), 2u);
  EXPECT_EQ(r.text(), "d");
  EXPECT_EQ(r.place(), "m.py:2:2");
  SourceRange g(src, 10, 11);  // 'g' after a lone \r
  EXPECT_EQ(g.line(), 4u);
  EXPECT_EQ(g.col(), 1u);
}

TEST(frontend_source, ColumnsCountCodePoints) {
  auto src = makeSource("u.py", "s = \"\xc3\xa9t\xc3\xa9\" + x\n");
  size_t x = src->text().find('x');
  EXPECT_EQ(SourceRange(src, x, x + 1).col(), 13u);
}

TEST(frontend_source, StartingLine) {
  auto src = makeSource("gen.py", "a\nb\n", 120);
  EXPECT_EQ(SourceRange(src, 2, 3).line(), 121u);
}

TEST(frontend_source, HighlightOneLine) {
  auto src = makeSource("m.py", "def f(x):\n  y = 1\n  return foo(x)\n");
  size_t p = src->text().find("foo");
  SourceRange r(src, p, p + 3);
  EXPECT_EQ(r.highlight(),
            "  File \"m.py\", line 3\n"
            "  return foo(x)\n"
            "         ~~~ <--- HERE");
  EXPECT_EQ(r.highlight(1),
            "  File \"m.py\", line 3\n"
            "  y = 1\n"
            "  return foo(x)\n"
            "         ~~~ <--- HERE");
}

TEST(frontend_source, HighlightSeveralLines) {
  auto src = makeSource("m.py", "x = f(a,\n      b)\n");
  SourceRange r(src, 4, src->text().find(')') + 1);
  EXPECT_EQ(r.highlight(),
            "  File \"m.py\", line 1\n"
            "x = f(a,\n"
            "    ~~~~\n"
            "      b)\n"
            "      ~~ <--- HERE");
}

TEST(frontend_source, ErrorAt) {
  auto src = makeSource("code/__torch__/m.py", "def f(x):\n    return foo(x)\n");
  size_t p = src->text().find("foo");
  Error e = errorAt(SourceRange(src, p, p + 3), "unknown name 'foo'");
  EXPECT_EQ(e.place(), "code/__torch__/m.py:2:12");
  EXPECT_EQ(e.firstLine(), "code/__torch__/m.py:2:12: unknown name 'foo'");
  EXPECT_EQ(std::string(e.what()),
            "code/__torch__/m.py:2:12: unknown name 'foo'\n"
            "  File \"code/__torch__/m.py\", line 2\n"
            "    return foo(x)\n"
            "           ~~~ <--- HERE");
}

}  // namespace
}  // namespace torchless::frontend
