#pragma once
// The parser's state and grammar functions. Internal to src/frontend: statements are in
// parser.cpp, expressions and f-strings in parser_expr.cpp.

#include "frontend/lexer.h"
#include "frontend/parser.h"

#include <string>
#include <vector>

namespace torchless::frontend::detail {

class Parser {
 public:
  Parser(SourcePtr source, std::vector<Token> tokens);

  // ---- statements (parser.cpp)
  Module parseModule();
  /// Parses statements until `end` (Dedent or Eof) without consuming it.
  void parseStatementsUntil(TokenKind end, TreeList& out);
  void parseStatement(TreeList& out);
  void parseSimpleStatements(TreeList& out);
  TreeRef parseSmallStatement();
  /// ':' then an indented block or simple statements on the same line. `what` names the
  /// statement for "expected an indented block after ..." messages.
  List<Stmt> parseBlock(const char* what, const Token& keyword);
  TreeRef parseDecorated();
  TreeRef parseDef(TreeList decorators);
  TreeRef parseClass(TreeList decorators);
  TreeRef parseIf();
  TreeRef parseWhile();
  TreeRef parseFor();
  TreeRef parseWith();
  TreeRef parseImport();
  TreeRef parseImportFrom();
  TreeRef parseExpressionStatement();
  Param parseParam(bool kwargOnly);
  Ident parseDottedName();

  // ---- expressions (parser_expr.cpp)
  /// test: ternary or below; rejects lambda and `:=`.
  Expr parseTest();
  Expr parseOrTest();
  Expr parseAndTest();
  Expr parseNotTest();
  Expr parseComparison();
  /// Binary levels: 0 '|', 1 '^', 2 '&', 3 shifts, 4 '+ -', 5 '* / // % @'.
  Expr parseBinary(int level);
  Expr parseFactor();
  Expr parsePower();
  Expr parseAtomExpr();
  Expr parseAtom();
  /// test or `*expr`.
  Expr parseTestOrStar();
  /// test (',' test)* [','] with starred items allowed: a tuple when there is a comma.
  Expr parseTestListStarExpr();
  /// Assignment targets of `for` and comprehensions: expr (',' expr)* [','] with starred items.
  Expr parseTargetList();
  Expr parseStringAtom();
  Expr parseSubscript();
  TreeRef parseCall(const Expr& callee);
  List<Comprehension> parseComprehensions();
  /// Parses the f-string body text[i..] (relative to the token body) until its end, or, in a
  /// format spec, until the unmatched '}'.
  void parseFStringParts(const Token& tok, size_t& i, bool inSpec, TreeList& parts);
  /// Checks that `e` can be assigned to (`what`: "assignment", "for loop", "del", ...).
  void checkTarget(const Expr& e, const char* what);

  // ---- token helpers
  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek(size_t n = 1) const { return tokens_[std::min(pos_ + n, tokens_.size() - 1)]; }
  bool at(TokenKind k) const { return cur().kind == k; }
  const Token& next();
  bool nextIf(TokenKind k);
  const Token& expect(TokenKind k);
  SourceRange range(const Token& t) const { return SourceRange(source_, t.start, t.end); }
  /// From `start` to the end of the last consumed significant token.
  SourceRange rangeFrom(size_t start) const;
  SourceRange rangeFrom(const Token& t) const { return rangeFrom(t.start); }
  /// "newline", "identifier 'x'", "'+'" for messages.
  static std::string describe(const Token& t);
  [[noreturn]] void fail(const Token& t, const std::string& message) const;
  [[noreturn]] void failExpected(const std::string& what) const;
  Maybe<Expr> none(const SourceRange& r) const { return Maybe<Expr>::create(r); }
  /// Fails when `e` is nested deeper than kMaxTreeDepth (long operator chains).
  Expr limitDepth(Expr e) const;

  /// Counts nested parseTest/parseNotTest/parseFactor calls (unary and ternary chains).
  struct RecursionGuard {
    explicit RecursionGuard(Parser& p);
    ~RecursionGuard() { --parser.recursion_; }
    Parser& parser;
  };
  static constexpr int kMaxRecursion = 500;
  static constexpr uint32_t kMaxTreeDepth = 1000;
  int recursion_ = 0;

  SourcePtr source_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  size_t prevEnd_ = 0;
  int loopDepth_ = 0;
  int funcDepth_ = 0;
};

}  // namespace torchless::frontend::detail
