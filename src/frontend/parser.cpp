// Statements, declarations and the parser's entry points. Expressions: parser_expr.cpp.
#include "frontend/parser_impl.h"

namespace torchless::frontend {

namespace detail {

namespace {

/// What an expression is, for "cannot assign to ..." messages.
const char* describeTarget(TreeKind kind) {
  switch (kind) {
    case TreeKind::Apply: return "function call";
    case TreeKind::Const:
    case TreeKind::StringLiteral:
    case TreeKind::FString:
    case TreeKind::True:
    case TreeKind::False:
    case TreeKind::None:
    case TreeKind::Dots: return "literal";
    case TreeKind::ListComp: return "list comprehension";
    case TreeKind::DictComp: return "dict comprehension";
    case TreeKind::DictLiteral: return "dict literal";
    case TreeKind::SetLiteral: return "set display";
    case TreeKind::TupleLiteral: return "tuple";
    case TreeKind::ListLiteral: return "list";
    case TreeKind::TernaryIf: return "conditional expression";
    case TreeKind::Starred: return "starred";
    default: return "expression";
  }
}

}  // namespace

Parser::Parser(SourcePtr source, std::vector<Token> tokens)
    : source_(std::move(source)), tokens_(std::move(tokens)) {
  TL_INTERNAL_ASSERT(!tokens_.empty() && tokens_.back().kind == TokenKind::Eof, "no Eof token");
}

const Token& Parser::next() {
  const Token& t = tokens_[pos_];
  if (t.kind != TokenKind::Newline && t.kind != TokenKind::Indent && t.kind != TokenKind::Dedent &&
      t.kind != TokenKind::Eof) {
    prevEnd_ = t.end;
  }
  if (pos_ + 1 < tokens_.size()) ++pos_;
  return t;
}

bool Parser::nextIf(TokenKind k) {
  if (!at(k)) return false;
  next();
  return true;
}

const Token& Parser::expect(TokenKind k) {
  if (!at(k))
    failExpected(k == TokenKind::Ident ? "an identifier" : fmt::format("'{}'", tokenKindName(k)));
  return next();
}

SourceRange Parser::rangeFrom(size_t start) const {
  return SourceRange(source_, start, std::max(start, prevEnd_));
}

std::string Parser::describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::Ident: return fmt::format("identifier '{}'", t.text);
    case TokenKind::Number: return fmt::format("number '{}'", t.text);
    case TokenKind::String: return "a string literal";
    case TokenKind::FString: return "an f-string";
    case TokenKind::Newline: return "newline";
    case TokenKind::Indent: return "indent";
    case TokenKind::Dedent: return "dedent";
    case TokenKind::Eof: return "end of file";
    default: return fmt::format("'{}'", tokenKindName(t.kind));
  }
}

void Parser::fail(const Token& t, const std::string& message) const {
  // Zero-width tokens (Newline at EOF, Dedent) still get one column to point at.
  size_t start = t.start;
  size_t end = t.end;
  if (t.kind == TokenKind::Newline || t.kind == TokenKind::Eof || t.kind == TokenKind::Dedent) {
    start =
        std::min<size_t>(t.start, prevEnd_ > 0 && t.kind != TokenKind::Dedent ? prevEnd_ : t.start);
    end = start;
  }
  throwErrorAt(SourceRange(source_, start, end), message);
}

void Parser::failExpected(const std::string& what) const {
  fail(cur(), fmt::format("expected {} but found {}", what, describe(cur())));
}

Module Parser::parseModule() {
  size_t start = cur().start;
  TreeList body;
  parseStatementsUntil(TokenKind::Eof, body);
  return Module::create(rangeFrom(start), List<Stmt>::create(rangeFrom(start), std::move(body)));
}

void Parser::parseStatementsUntil(TokenKind end, TreeList& out) {
  while (!at(end)) {
    if (nextIf(TokenKind::Newline)) continue;
    if (at(TokenKind::Indent)) fail(peek(), "unexpected indent");
    if (at(TokenKind::Eof)) failExpected("a statement");
    parseStatement(out);
  }
}

void Parser::parseStatement(TreeList& out) {
  switch (cur().kind) {
    case TokenKind::At: out.push_back(parseDecorated()); return;
    case TokenKind::Def: out.push_back(parseDef({})); return;
    case TokenKind::Class: out.push_back(parseClass({})); return;
    case TokenKind::If: out.push_back(parseIf()); return;
    case TokenKind::While: out.push_back(parseWhile()); return;
    case TokenKind::For: out.push_back(parseFor()); return;
    case TokenKind::With: out.push_back(parseWith()); return;
    case TokenKind::Try: fail(cur(), "try statements are not supported in TorchScript");
    case TokenKind::Async:
      fail(cur(), "async functions and statements are not supported in TorchScript");
    default: parseSimpleStatements(out); return;
  }
}

void Parser::parseSimpleStatements(TreeList& out) {
  while (true) {
    out.push_back(parseSmallStatement());
    if (nextIf(TokenKind::Semicolon)) {
      if (at(TokenKind::Newline)) break;
      continue;
    }
    break;
  }
  if (!at(TokenKind::Newline)) failExpected("newline");
  next();
}

TreeRef Parser::parseSmallStatement() {
  const Token& t = cur();
  SourceRange r = range(t);
  switch (t.kind) {
    case TokenKind::Pass: next(); return Tree::create(TreeKind::Pass, r);
    case TokenKind::Break:
    case TokenKind::Continue: {
      if (loopDepth_ == 0) fail(t, fmt::format("'{}' outside loop", tokenKindName(t.kind)));
      next();
      return Tree::create(t.kind == TokenKind::Break ? TreeKind::Break : TreeKind::Continue, r);
    }
    case TokenKind::Return: {
      if (funcDepth_ == 0) fail(t, "'return' outside function");
      next();
      if (at(TokenKind::Newline) || at(TokenKind::Semicolon)) {
        return Return::create(r, none(r));
      }
      Expr v = parseTestListStarExpr();
      return Return::create(rangeFrom(t), Maybe<Expr>::create(v.range(), v));
    }
    case TokenKind::Raise: {
      size_t start = t.start;
      next();
      if (at(TokenKind::Newline) || at(TokenKind::Semicolon)) {
        return Raise::create(r, none(r), none(r));
      }
      Expr exc = parseTest();
      Maybe<Expr> cause = none(r);
      if (nextIf(TokenKind::From)) {
        Expr c = parseTest();
        cause = Maybe<Expr>::create(c.range(), c);
      }
      return Raise::create(rangeFrom(start), Maybe<Expr>::create(exc.range(), exc), cause);
    }
    case TokenKind::Assert: {
      size_t start = t.start;
      next();
      Expr test = parseTest();
      Maybe<Expr> msg = none(r);
      if (nextIf(TokenKind::Comma)) {
        Expr m = parseTest();
        msg = Maybe<Expr>::create(m.range(), m);
      }
      return Assert::create(rangeFrom(start), test, msg);
    }
    case TokenKind::Del: {
      size_t start = t.start;
      next();
      TreeList targets;
      do {
        if (at(TokenKind::Newline) || at(TokenKind::Semicolon)) break;
        Expr e = parseBinary(0);
        checkTarget(e, "del");
        targets.push_back(e);
      } while (nextIf(TokenKind::Comma));
      if (targets.empty()) failExpected("an expression");
      return Delete::create(rangeFrom(start),
                            List<Expr>::create(rangeFrom(start), std::move(targets)));
    }
    case TokenKind::Import: return parseImport();
    case TokenKind::From: return parseImportFrom();
    case TokenKind::Global: fail(t, "global statements are not supported in TorchScript");
    case TokenKind::Nonlocal: fail(t, "nonlocal statements are not supported in TorchScript");
    case TokenKind::Yield: fail(t, "yield is not supported in TorchScript");
    case TokenKind::Indent: fail(peek(), "unexpected indent");
    default: return parseExpressionStatement();
  }
}

TreeRef Parser::parseExpressionStatement() {
  size_t start = cur().start;
  Expr first = parseTestListStarExpr();
  SourceRange none0(source_, first.range().end(), first.range().end());
  if (at(TokenKind::Colon)) {  // annotated assignment / declaration
    const Token& colon = next();
    if (first.kind() == TreeKind::TupleLiteral || first.kind() == TreeKind::ListLiteral) {
      throwErrorAt(first.range(), "only a single target (not a tuple) can be annotated");
    }
    checkTarget(first, "annotated assignment");
    Expr type = parseTest();
    Maybe<Expr> rhs = none(range(colon));
    if (nextIf(TokenKind::Assign)) {
      if (at(TokenKind::Yield)) fail(cur(), "yield is not supported in TorchScript");
      Expr v = parseTestListStarExpr();
      rhs = Maybe<Expr>::create(v.range(), v);
    }
    SourceRange r = rangeFrom(start);
    return Assign::create(r, List<Expr>::create(first.range(), TreeList{first.tree()}), rhs,
                          Maybe<Expr>::create(type.range(), type));
  }
  TreeKind aug = TreeKind::Pass;
  switch (cur().kind) {
    case TokenKind::PlusEq: aug = TreeKind::Add; break;
    case TokenKind::MinusEq: aug = TreeKind::Sub; break;
    case TokenKind::StarEq: aug = TreeKind::Mul; break;
    case TokenKind::SlashEq: aug = TreeKind::Div; break;
    case TokenKind::FloorDivEq: aug = TreeKind::FloorDiv; break;
    case TokenKind::PercentEq: aug = TreeKind::Mod; break;
    case TokenKind::PowEq: aug = TreeKind::Pow; break;
    case TokenKind::AtEq: aug = TreeKind::MatMul; break;
    case TokenKind::LShiftEq: aug = TreeKind::LShift; break;
    case TokenKind::RShiftEq: aug = TreeKind::RShift; break;
    case TokenKind::AmpEq: aug = TreeKind::BitAnd; break;
    case TokenKind::PipeEq: aug = TreeKind::BitOr; break;
    case TokenKind::CaretEq: aug = TreeKind::BitXor; break;
    default: break;
  }
  if (aug != TreeKind::Pass) {
    const Token& op = next();
    if (first.kind() != TreeKind::Var && first.kind() != TreeKind::Select &&
        first.kind() != TreeKind::Subscript) {
      throwErrorAt(first.range(),
                   fmt::format("'{}' is an illegal expression for augmented assignment '{}'",
                               describeTarget(first.kind()), tokenKindName(op.kind)));
    }
    if (at(TokenKind::Yield)) fail(cur(), "yield is not supported in TorchScript");
    Expr rhs = parseTestListStarExpr();
    return AugAssign::create(rangeFrom(start), first, aug, rhs);
  }
  if (at(TokenKind::Assign)) {
    TreeList exprs{first.tree()};
    while (nextIf(TokenKind::Assign)) {
      if (at(TokenKind::Yield)) fail(cur(), "yield is not supported in TorchScript");
      exprs.push_back(parseTestListStarExpr());
    }
    if (at(TokenKind::Walrus))
      fail(cur(), "assignment expressions (:=) are not supported in TorchScript");
    TreeRef rhs = exprs.back();
    exprs.pop_back();
    for (const auto& e : exprs) checkTarget(Expr(e), "assignment");
    SourceRange lhsRange = exprs.front()->range().to(exprs.back()->range());
    return Assign::create(rangeFrom(start), List<Expr>::create(lhsRange, std::move(exprs)),
                          Maybe<Expr>::create(rhs->range(), rhs), none(none0));
  }
  return ExprStmt::create(first.range(), first);
}

void Parser::checkTarget(const Expr& e, const char* what) {
  switch (e.kind()) {
    case TreeKind::Var:
    case TreeKind::Select:
    case TreeKind::Subscript: return;
    case TreeKind::Starred: checkTarget(Starred(e.tree()).expr(), what); return;
    case TreeKind::TupleLiteral:
    case TreeKind::ListLiteral: {
      int starred = 0;
      for (const Expr& item : SequenceLiteral(e.tree()).inputs()) {
        if (item.kind() == TreeKind::Starred && ++starred > 1) {
          throwErrorAt(item.range(), fmt::format("multiple starred expressions in {}", what));
        }
        checkTarget(item, what);
      }
      return;
    }
    default: break;
  }
  throwErrorAt(e.range(), fmt::format("cannot assign to {} in {}", describeTarget(e.kind()), what));
}

List<Stmt> Parser::parseBlock(const char* what, const Token& keyword) {
  expect(TokenKind::Colon);
  size_t start = cur().start;
  TreeList body;
  if (nextIf(TokenKind::Newline)) {
    if (!at(TokenKind::Indent)) {
      fail(cur(), fmt::format("expected an indented block after {} on line {}", what,
                              source_->lineNumber(keyword.start)));
    }
    start = next().end;
    parseStatementsUntil(TokenKind::Dedent, body);
    next();  // Dedent
  } else {
    parseSimpleStatements(body);
  }
  return List<Stmt>::create(rangeFrom(start), std::move(body));
}

TreeRef Parser::parseDecorated() {
  TreeList decorators;
  while (at(TokenKind::At)) {
    next();
    decorators.push_back(parseTest());
    if (!at(TokenKind::Newline)) failExpected("newline after the decorator");
    next();
  }
  if (at(TokenKind::Def)) return parseDef(std::move(decorators));
  if (at(TokenKind::Class)) return parseClass(std::move(decorators));
  if (at(TokenKind::Async))
    fail(cur(), "async functions and statements are not supported in TorchScript");
  failExpected("'def' or 'class' after decorators");
}

Param Parser::parseParam(bool kwargOnly) {
  const Token& name = expect(TokenKind::Ident);
  Ident ident = Ident::create(range(name), name.text);
  SourceRange empty(source_, name.end, name.end);
  Maybe<Expr> type = none(empty);
  Maybe<Expr> def = none(empty);
  if (nextIf(TokenKind::Colon)) {
    Expr t = parseTest();
    type = Maybe<Expr>::create(t.range(), t);
  }
  if (nextIf(TokenKind::Assign)) {
    Expr d = parseTest();
    def = Maybe<Expr>::create(d.range(), d);
  }
  return Param::create(rangeFrom(name), ident, type, def, kwargOnly);
}

TreeRef Parser::parseDef(TreeList decorators) {
  const Token& defTok = expect(TokenKind::Def);
  const Token& name = expect(TokenKind::Ident);
  const Token& lparen = expect(TokenKind::LParen);
  TreeList params;
  bool kwargOnly = false;
  while (!at(TokenKind::RParen)) {
    if (at(TokenKind::Star)) {
      const Token& star = next();
      if (at(TokenKind::Ident)) {
        fail(star, "*args parameters are not supported in TorchScript");
      }
      if (kwargOnly) fail(star, "'*' may appear only once in a parameter list");
      kwargOnly = true;
    } else if (at(TokenKind::Pow)) {
      fail(cur(), "**kwargs parameters are not supported in TorchScript");
    } else if (at(TokenKind::Slash)) {
      fail(cur(), "positional-only parameters ('/') are not supported in TorchScript");
    } else {
      // No "non-default argument follows default argument" check: TorchScript prints
      // keyword-only parameters without the `*`, e.g. `y: Optional[Tensor]=None, scale: float`.
      params.push_back(parseParam(kwargOnly));
    }
    if (!nextIf(TokenKind::Comma)) break;
  }
  expect(TokenKind::RParen);
  SourceRange paramsRange = rangeFrom(lparen);
  Maybe<Expr> ret = none(SourceRange(source_, prevEnd_, prevEnd_));
  if (nextIf(TokenKind::Arrow)) {
    Expr t = parseTest();
    ret = Maybe<Expr>::create(t.range(), t);
  }
  Decl decl =
      Decl::create(rangeFrom(lparen), List<Param>::create(paramsRange, std::move(params)), ret);
  int savedLoops = loopDepth_;
  loopDepth_ = 0;
  ++funcDepth_;
  List<Stmt> body = parseBlock("function definition", defTok);
  --funcDepth_;
  loopDepth_ = savedLoops;
  SourceRange decoRange = decorators.empty()
                              ? SourceRange(source_, defTok.start, defTok.start)
                              : decorators.front()->range().to(decorators.back()->range());
  return Def::create(rangeFrom(defTok), Ident::create(range(name), name.text), decl, body,
                     List<Expr>::create(decoRange, std::move(decorators)));
}

TreeRef Parser::parseClass(TreeList decorators) {
  const Token& classTok = expect(TokenKind::Class);
  const Token& name = expect(TokenKind::Ident);
  TreeList bases;
  size_t basesStart = cur().start;
  if (nextIf(TokenKind::LParen)) {
    while (!at(TokenKind::RParen)) {
      if (at(TokenKind::Ident) && peek().kind == TokenKind::Assign) {
        fail(cur(), "keyword arguments in a class definition are not supported in TorchScript");
      }
      bases.push_back(parseTest());
      if (!nextIf(TokenKind::Comma)) break;
    }
    expect(TokenKind::RParen);
  }
  SourceRange basesRange = rangeFrom(basesStart);
  int savedLoops = loopDepth_;
  int savedFuncs = funcDepth_;
  loopDepth_ = funcDepth_ = 0;
  List<Stmt> body = parseBlock("class definition", classTok);
  loopDepth_ = savedLoops;
  funcDepth_ = savedFuncs;
  SourceRange decoRange = decorators.empty()
                              ? SourceRange(source_, classTok.start, classTok.start)
                              : decorators.front()->range().to(decorators.back()->range());
  return ClassDef::create(rangeFrom(classTok), Ident::create(range(name), name.text),
                          List<Expr>::create(basesRange, std::move(bases)), body,
                          List<Expr>::create(decoRange, std::move(decorators)));
}

TreeRef Parser::parseIf() {
  const Token& kw = next();  // 'if' or 'elif'
  const char* what = kw.kind == TokenKind::If ? "'if' statement" : "'elif' statement";
  Expr cond = parseTest();
  List<Stmt> trueBranch = parseBlock(what, kw);
  TreeList falseBranch;
  size_t elseStart = cur().start;
  if (at(TokenKind::Elif)) {
    falseBranch.push_back(parseIf());
  } else if (at(TokenKind::Else)) {
    const Token& elseTok = next();
    List<Stmt> b = parseBlock("'else' statement", elseTok);
    return If::create(rangeFrom(kw), cond, trueBranch, b);
  }
  return If::create(rangeFrom(kw), cond, trueBranch,
                    List<Stmt>::create(rangeFrom(elseStart), std::move(falseBranch)));
}

TreeRef Parser::parseWhile() {
  const Token& kw = next();
  Expr cond = parseTest();
  ++loopDepth_;
  List<Stmt> body = parseBlock("'while' statement", kw);
  --loopDepth_;
  if (at(TokenKind::Else)) fail(cur(), "'else' after a while loop is not supported in TorchScript");
  return While::create(rangeFrom(kw), cond, body);
}

TreeRef Parser::parseFor() {
  const Token& kw = next();
  Expr target = parseTargetList();
  checkTarget(target, "for loop");
  expect(TokenKind::In);
  Expr iter = parseTestListStarExpr();
  ++loopDepth_;
  List<Stmt> body = parseBlock("'for' statement", kw);
  --loopDepth_;
  if (at(TokenKind::Else)) fail(cur(), "'else' after a for loop is not supported in TorchScript");
  return For::create(rangeFrom(kw), target, iter, body);
}

TreeRef Parser::parseWith() {
  const Token& kw = next();
  TreeList items;
  size_t itemsStart = cur().start;
  do {
    size_t start = cur().start;
    Expr target = parseTest();
    Maybe<Expr> var = none(SourceRange(source_, prevEnd_, prevEnd_));
    if (nextIf(TokenKind::As)) {
      Expr v = parseBinary(0);
      checkTarget(v, "with statement");
      var = Maybe<Expr>::create(v.range(), v);
    }
    items.push_back(WithItem::create(rangeFrom(start), target, var));
  } while (nextIf(TokenKind::Comma));
  SourceRange itemsRange = rangeFrom(itemsStart);
  List<Stmt> body = parseBlock("'with' statement", kw);
  return With::create(rangeFrom(kw), List<WithItem>::create(itemsRange, std::move(items)), body);
}

Ident Parser::parseDottedName() {
  const Token& first = expect(TokenKind::Ident);
  std::string name = first.text;
  while (at(TokenKind::Dot) && peek().kind == TokenKind::Ident) {
    next();
    name += '.';
    name += next().text;
  }
  return Ident::create(rangeFrom(first), std::move(name));
}

TreeRef Parser::parseImport() {
  const Token& kw = next();
  TreeList names;
  do {
    size_t start = cur().start;
    Ident name = parseDottedName();
    Maybe<Ident> as = Maybe<Ident>::create(name.range());
    if (nextIf(TokenKind::As)) {
      const Token& a = expect(TokenKind::Ident);
      as = Maybe<Ident>::create(range(a), Ident::create(range(a), a.text));
    }
    names.push_back(Alias::create(rangeFrom(start), name, as));
  } while (nextIf(TokenKind::Comma));
  return Import::create(rangeFrom(kw), List<Alias>::create(rangeFrom(kw), std::move(names)));
}

TreeRef Parser::parseImportFrom() {
  const Token& kw = next();
  size_t modStart = cur().start;
  std::string module;
  while (at(TokenKind::Dot) || at(TokenKind::Ellipsis)) next();
  // Count the leading dots of a relative import ('...' lexes as one token).
  for (size_t p = modStart; p < prevEnd_; ++p) {
    if (source_->text()[p] == '.') module += '.';
  }
  if (at(TokenKind::Ident)) module += parseDottedName().name();
  if (module.empty()) failExpected("a module name");
  Ident mod = Ident::create(rangeFrom(modStart), module);
  expect(TokenKind::Import);
  TreeList names;
  size_t namesStart = cur().start;
  if (at(TokenKind::Star)) {
    const Token& star = next();
    names.push_back(Alias::create(range(star), Ident::create(range(star), "*"),
                                  Maybe<Ident>::create(range(star))));
  } else {
    bool paren = nextIf(TokenKind::LParen);
    do {
      if (paren && at(TokenKind::RParen)) break;
      const Token& n = expect(TokenKind::Ident);
      Maybe<Ident> as = Maybe<Ident>::create(range(n));
      if (nextIf(TokenKind::As)) {
        const Token& a = expect(TokenKind::Ident);
        as = Maybe<Ident>::create(range(a), Ident::create(range(a), a.text));
      }
      names.push_back(Alias::create(rangeFrom(n), Ident::create(range(n), n.text), as));
    } while (nextIf(TokenKind::Comma));
    if (paren) expect(TokenKind::RParen);
  }
  return ImportFrom::create(rangeFrom(kw), mod,
                            List<Alias>::create(rangeFrom(namesStart), std::move(names)));
}

}  // namespace detail

Module parseFile(const SourcePtr& source) {
  detail::Parser p(source, Lexer(source).tokenize());
  return p.parseModule();
}

Module parseFile(std::string filename, std::string text) {
  return parseFile(makeSource(std::move(filename), std::move(text)));
}

Expr parseExpression(const SourcePtr& source) {
  detail::Parser p(source, Lexer(source, 0, source->size()).tokenize());
  Expr e = p.parseTestListStarExpr();
  if (!p.at(TokenKind::Eof)) p.failExpected("end of the expression");
  return e;
}

}  // namespace torchless::frontend
