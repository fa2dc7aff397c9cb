// Expressions, in Python's precedence order, and f-strings. Statements: parser.cpp.
#include "frontend/parser_impl.h"

namespace torchless::frontend::detail {

namespace {

TreeKind compareKind(TokenKind k) {
  switch (k) {
    case TokenKind::EqEq: return TreeKind::Eq;
    case TokenKind::NotEq: return TreeKind::Ne;
    case TokenKind::Lt: return TreeKind::Lt;
    case TokenKind::Le: return TreeKind::Le;
    case TokenKind::Gt: return TreeKind::Gt;
    case TokenKind::Ge: return TreeKind::Ge;
    case TokenKind::Is: return TreeKind::Is;
    case TokenKind::IsNot: return TreeKind::IsNot;
    case TokenKind::In: return TreeKind::In;
    case TokenKind::NotIn: return TreeKind::NotIn;
    default: return TreeKind::Pass;
  }
}

/// The binary operator of token `k` at precedence `level` (see Parser::parseBinary), or Pass.
TreeKind binaryKind(int level, TokenKind k) {
  switch (level) {
    case 0: return k == TokenKind::Pipe ? TreeKind::BitOr : TreeKind::Pass;
    case 1: return k == TokenKind::Caret ? TreeKind::BitXor : TreeKind::Pass;
    case 2: return k == TokenKind::Amp ? TreeKind::BitAnd : TreeKind::Pass;
    case 3:
      return k == TokenKind::LShift   ? TreeKind::LShift
             : k == TokenKind::RShift ? TreeKind::RShift
                                      : TreeKind::Pass;
    case 4:
      return k == TokenKind::Plus    ? TreeKind::Add
             : k == TokenKind::Minus ? TreeKind::Sub
                                     : TreeKind::Pass;
    case 5:
      switch (k) {
        case TokenKind::Star: return TreeKind::Mul;
        case TokenKind::Slash: return TreeKind::Div;
        case TokenKind::FloorDiv: return TreeKind::FloorDiv;
        case TokenKind::Percent: return TreeKind::Mod;
        case TokenKind::At: return TreeKind::MatMul;
        default: return TreeKind::Pass;
      }
    default: return TreeKind::Pass;
  }
}

constexpr int kBinaryLevels = 6;

}  // namespace

Parser::RecursionGuard::RecursionGuard(Parser& p) : parser(p) {
  if (++parser.recursion_ > kMaxRecursion) {
    --parser.recursion_;
    parser.fail(parser.cur(), "expression is too deeply nested");
  }
}

Expr Parser::limitDepth(Expr e) const {
  if (e.tree()->depth() > kMaxTreeDepth) throwErrorAt(e.range(), "expression is too deeply nested");
  return e;
}

Expr Parser::parseTest() {
  RecursionGuard guard(*this);
  if (at(TokenKind::Lambda)) fail(cur(), "lambda expressions are not supported in TorchScript");
  size_t start = cur().start;
  Expr e = parseOrTest();
  if (at(TokenKind::Walrus))
    fail(cur(), "assignment expressions (:=) are not supported in TorchScript");
  if (nextIf(TokenKind::If)) {
    Expr cond = parseOrTest();
    if (!at(TokenKind::Else)) failExpected("'else' in the conditional expression");
    next();
    Expr otherwise = parseTest();
    return limitDepth(TernaryIf::create(rangeFrom(start), cond, e, otherwise));
  }
  return e;
}

Expr Parser::parseOrTest() {
  size_t start = cur().start;
  Expr e = parseAndTest();
  while (nextIf(TokenKind::Or)) {
    Expr rhs = parseAndTest();
    e = limitDepth(BinOp::create(TreeKind::Or, rangeFrom(start), e, rhs));
  }
  return e;
}

Expr Parser::parseAndTest() {
  size_t start = cur().start;
  Expr e = parseNotTest();
  while (nextIf(TokenKind::And)) {
    Expr rhs = parseNotTest();
    e = limitDepth(BinOp::create(TreeKind::And, rangeFrom(start), e, rhs));
  }
  return e;
}

Expr Parser::parseNotTest() {
  if (at(TokenKind::Not)) {
    RecursionGuard guard(*this);
    const Token& t = next();
    Expr operand = parseNotTest();
    return Expr(UnaryOp::create(TreeKind::Not, rangeFrom(t), operand).tree());
  }
  return parseComparison();
}

Expr Parser::parseComparison() {
  size_t start = cur().start;
  Expr first = parseBinary(0);
  std::vector<std::pair<TreeKind, SourceRange>> ops;
  TreeList operands{first.tree()};
  while (compareKind(cur().kind) != TreeKind::Pass) {
    const Token& op = next();
    ops.emplace_back(compareKind(op.kind), range(op));
    operands.push_back(parseBinary(0));
  }
  if (ops.empty()) return first;
  if (ops.size() == 1) {
    return Expr(BinOp::create(ops[0].first, rangeFrom(start), first, Expr(operands[1])).tree());
  }
  SourceRange r = rangeFrom(start);
  return Expr(CompareChain::create(r, List<Expr>::create(r, std::move(operands)), ops).tree());
}

Expr Parser::parseBinary(int level) {
  if (level >= kBinaryLevels) return parseFactor();
  size_t start = cur().start;
  Expr e = parseBinary(level + 1);
  while (true) {
    TreeKind k = binaryKind(level, cur().kind);
    if (k == TreeKind::Pass) break;
    next();
    Expr rhs = parseBinary(level + 1);
    e = limitDepth(BinOp::create(k, rangeFrom(start), e, rhs));
  }
  return e;
}

Expr Parser::parseFactor() {
  TreeKind k = at(TokenKind::Minus)   ? TreeKind::Neg
               : at(TokenKind::Plus)  ? TreeKind::Pos
               : at(TokenKind::Tilde) ? TreeKind::BitNot
                                      : TreeKind::Pass;
  if (k == TreeKind::Pass) return parsePower();
  RecursionGuard guard(*this);
  const Token& op = next();
  Expr operand = parseFactor();
  // A minus directly on a number literal is part of the literal, as TorchScript prints it.
  if (k == TreeKind::Neg && operand.kind() == TreeKind::Const &&
      operand.tree()->text().front() != '-') {
    return Expr(Const::create(rangeFrom(op), "-" + operand.tree()->text()).tree());
  }
  return Expr(UnaryOp::create(k, rangeFrom(op), operand).tree());
}

Expr Parser::parsePower() {
  size_t start = cur().start;
  Expr base = parseAtomExpr();
  if (nextIf(TokenKind::Pow)) {
    Expr exponent = parseFactor();  // right associative, and `2 ** -1` is allowed
    return Expr(BinOp::create(TreeKind::Pow, rangeFrom(start), base, exponent).tree());
  }
  return base;
}

Expr Parser::parseAtomExpr() {
  if (at(TokenKind::Await)) fail(cur(), "await is not supported in TorchScript");
  size_t start = cur().start;
  Expr e = parseAtom();
  while (true) {
    if (at(TokenKind::LParen)) {
      e = Expr(parseCall(e));
    } else if (at(TokenKind::LBracket)) {
      next();
      TreeList subs;
      size_t subsStart = cur().start;
      if (at(TokenKind::RBracket)) failExpected("an index or slice");
      do {
        if (at(TokenKind::RBracket)) break;
        subs.push_back(parseSubscript());
      } while (nextIf(TokenKind::Comma));
      SourceRange subsRange = rangeFrom(subsStart);
      expect(TokenKind::RBracket);
      e = Expr(
          Subscript::create(rangeFrom(start), e, List<Expr>::create(subsRange, std::move(subs)))
              .tree());
    } else if (at(TokenKind::Dot)) {
      next();
      const Token& name = expect(TokenKind::Ident);
      e = Expr(Select::create(rangeFrom(start), e, Ident::create(range(name), name.text)).tree());
    } else {
      break;
    }
    e = limitDepth(e);
  }
  return e;
}

Expr Parser::parseSubscript() {
  size_t start = cur().start;
  auto isEnd = [&] {
    return at(TokenKind::Colon) || at(TokenKind::Comma) || at(TokenKind::RBracket);
  };
  SourceRange empty(source_, cur().start, cur().start);
  Maybe<Expr> lo = none(empty);
  if (!isEnd()) {
    Expr e = parseTest();
    if (!at(TokenKind::Colon)) return e;
    lo = Maybe<Expr>::create(e.range(), e);
  }
  expect(TokenKind::Colon);
  Maybe<Expr> hi = none(SourceRange(source_, cur().start, cur().start));
  Maybe<Expr> step = hi;
  if (!isEnd()) {
    Expr e = parseTest();
    hi = Maybe<Expr>::create(e.range(), e);
  }
  if (nextIf(TokenKind::Colon)) {
    step = none(SourceRange(source_, cur().start, cur().start));
    if (!isEnd()) {
      Expr e = parseTest();
      step = Maybe<Expr>::create(e.range(), e);
    }
  }
  return Expr(SliceExpr::create(rangeFrom(start), lo, hi, step).tree());
}

TreeRef Parser::parseCall(const Expr& callee) {
  expect(TokenKind::LParen);
  size_t argsStart = cur().start;
  TreeList args;
  TreeList kwargs;
  while (!at(TokenKind::RParen)) {
    if (at(TokenKind::Ident) && peek().kind == TokenKind::Assign) {
      const Token& name = next();
      next();
      Expr v = parseTest();
      kwargs.push_back(
          Attribute::create(rangeFrom(name), Ident::create(range(name), name.text), v));
    } else if (at(TokenKind::Pow)) {
      fail(cur(), "**kwargs arguments are not supported in TorchScript");
    } else {
      if (!kwargs.empty() && !at(TokenKind::Star)) {
        fail(cur(), "positional argument follows keyword argument");
      }
      Expr a = parseTestOrStar();
      if (at(TokenKind::For)) fail(cur(), "generator expressions are not supported in TorchScript");
      args.push_back(a);
    }
    if (!nextIf(TokenKind::Comma)) break;
  }
  SourceRange argsRange = rangeFrom(argsStart);
  expect(TokenKind::RParen);
  return Apply::create(callee.range().to(rangeFrom(callee.range().start())), callee,
                       List<Expr>::create(argsRange, std::move(args)),
                       List<Attribute>::create(argsRange, std::move(kwargs)))
      .tree();
}

Expr Parser::parseTestOrStar() {
  if (at(TokenKind::Star)) {
    const Token& star = next();
    Expr e = parseBinary(0);
    return Expr(Starred::create(rangeFrom(star), e).tree());
  }
  return parseTest();
}

Expr Parser::parseTestListStarExpr() {
  size_t start = cur().start;
  Expr first = parseTestOrStar();
  if (!at(TokenKind::Comma)) return first;
  TreeList items{first.tree()};
  while (nextIf(TokenKind::Comma)) {
    // A trailing comma ends the list: `a, b, = x`, `return x,`.
    switch (cur().kind) {
      case TokenKind::Newline:
      case TokenKind::Semicolon:
      case TokenKind::Assign:
      case TokenKind::RParen:
      case TokenKind::RBracket:
      case TokenKind::RBrace:
      case TokenKind::Colon:
      case TokenKind::Eof:
      case TokenKind::In: goto done;
      default:
        if (compareKind(cur().kind) == TreeKind::Pass && cur().kind >= TokenKind::PlusEq) goto done;
        break;
    }
    items.push_back(parseTestOrStar());
  }
done:
  SourceRange r = rangeFrom(start);
  return Expr(
      SequenceLiteral::create(TreeKind::TupleLiteral, r, List<Expr>::create(r, std::move(items)))
          .tree());
}

Expr Parser::parseTargetList() {
  size_t start = cur().start;
  auto one = [&]() -> Expr {
    if (at(TokenKind::Star)) {
      const Token& star = next();
      Expr e = parseBinary(0);
      return Expr(Starred::create(rangeFrom(star), e).tree());
    }
    return parseBinary(0);
  };
  Expr first = one();
  if (!at(TokenKind::Comma)) return first;
  TreeList items{first.tree()};
  while (nextIf(TokenKind::Comma)) {
    if (at(TokenKind::In)) break;
    items.push_back(one());
  }
  SourceRange r = rangeFrom(start);
  return Expr(
      SequenceLiteral::create(TreeKind::TupleLiteral, r, List<Expr>::create(r, std::move(items)))
          .tree());
}

List<Comprehension> Parser::parseComprehensions() {
  size_t start = cur().start;
  TreeList gens;
  while (at(TokenKind::For)) {
    const Token& kw = next();
    Expr target = parseTargetList();
    checkTarget(target, "comprehension");
    expect(TokenKind::In);
    Expr iter = parseOrTest();
    TreeList ifs;
    size_t ifsStart = cur().start;
    while (nextIf(TokenKind::If)) ifs.push_back(parseOrTest());
    gens.push_back(Comprehension::create(rangeFrom(kw), target, iter,
                                         List<Expr>::create(rangeFrom(ifsStart), std::move(ifs))));
  }
  if (at(TokenKind::Async)) fail(cur(), "async comprehensions are not supported in TorchScript");
  return List<Comprehension>::create(rangeFrom(start), std::move(gens));
}

Expr Parser::parseAtom() {
  const Token& t = cur();
  SourceRange r = range(t);
  switch (t.kind) {
    case TokenKind::Ident: next(); return Expr(Var::create(r, Ident::create(r, t.text)).tree());
    case TokenKind::Number: next(); return Expr(Const::create(r, t.text).tree());
    case TokenKind::String:
    case TokenKind::FString: return parseStringAtom();
    case TokenKind::True: next(); return Expr(Tree::create(TreeKind::True, r));
    case TokenKind::False: next(); return Expr(Tree::create(TreeKind::False, r));
    case TokenKind::None: next(); return Expr(Tree::create(TreeKind::None, r));
    case TokenKind::Ellipsis: next(); return Expr(Tree::create(TreeKind::Dots, r));
    case TokenKind::Yield: fail(t, "yield is not supported in TorchScript");
    case TokenKind::Lambda: fail(t, "lambda expressions are not supported in TorchScript");
    case TokenKind::LParen: {
      next();
      if (nextIf(TokenKind::RParen)) {
        SourceRange rr = rangeFrom(t);
        return Expr(
            SequenceLiteral::create(TreeKind::TupleLiteral, rr, List<Expr>::create(rr, TreeList{}))
                .tree());
      }
      if (at(TokenKind::Yield)) fail(cur(), "yield is not supported in TorchScript");
      Expr first = parseTestOrStar();
      if (at(TokenKind::For)) fail(cur(), "generator expressions are not supported in TorchScript");
      if (at(TokenKind::RParen)) {
        next();
        return first;  // parentheses only group
      }
      TreeList items{first.tree()};
      while (nextIf(TokenKind::Comma)) {
        if (at(TokenKind::RParen)) break;
        items.push_back(parseTestOrStar());
      }
      expect(TokenKind::RParen);
      SourceRange rr = rangeFrom(t);
      return Expr(SequenceLiteral::create(TreeKind::TupleLiteral, rr,
                                          List<Expr>::create(rr, std::move(items)))
                      .tree());
    }
    case TokenKind::LBracket: {
      next();
      TreeList items;
      if (!at(TokenKind::RBracket)) {
        Expr first = parseTestOrStar();
        if (at(TokenKind::For)) {
          List<Comprehension> gens = parseComprehensions();
          expect(TokenKind::RBracket);
          return Expr(ListComp::create(rangeFrom(t), first, gens).tree());
        }
        items.push_back(first);
        while (nextIf(TokenKind::Comma)) {
          if (at(TokenKind::RBracket)) break;
          items.push_back(parseTestOrStar());
        }
      }
      expect(TokenKind::RBracket);
      SourceRange rr = rangeFrom(t);
      return Expr(SequenceLiteral::create(TreeKind::ListLiteral, rr,
                                          List<Expr>::create(rr, std::move(items)))
                      .tree());
    }
    case TokenKind::LBrace: {
      next();
      if (nextIf(TokenKind::RBrace)) {
        SourceRange rr = rangeFrom(t);
        return Expr(DictLiteral::create(rr, List<Expr>::create(rr, TreeList{}),
                                        List<Expr>::create(rr, TreeList{}))
                        .tree());
      }
      if (at(TokenKind::Pow))
        fail(cur(), "'**' unpacking in dict literals is not supported in TorchScript");
      Expr first = parseTestOrStar();
      if (nextIf(TokenKind::Colon)) {
        Expr firstValue = parseTest();
        if (at(TokenKind::For)) {
          List<Comprehension> gens = parseComprehensions();
          expect(TokenKind::RBrace);
          return Expr(DictComp::create(rangeFrom(t), first, firstValue, gens).tree());
        }
        TreeList keys{first.tree()};
        TreeList values{firstValue.tree()};
        while (nextIf(TokenKind::Comma)) {
          if (at(TokenKind::RBrace)) break;
          if (at(TokenKind::Pow))
            fail(cur(), "'**' unpacking in dict literals is not supported in TorchScript");
          keys.push_back(parseTest());
          expect(TokenKind::Colon);
          values.push_back(parseTest());
        }
        expect(TokenKind::RBrace);
        SourceRange rr = rangeFrom(t);
        return Expr(DictLiteral::create(rr, List<Expr>::create(rr, std::move(keys)),
                                        List<Expr>::create(rr, std::move(values)))
                        .tree());
      }
      if (at(TokenKind::For)) fail(cur(), "set comprehensions are not supported in TorchScript");
      TreeList items{first.tree()};
      while (nextIf(TokenKind::Comma)) {
        if (at(TokenKind::RBrace)) break;
        items.push_back(parseTestOrStar());
      }
      expect(TokenKind::RBrace);
      SourceRange rr = rangeFrom(t);
      return Expr(SequenceLiteral::create(TreeKind::SetLiteral, rr,
                                          List<Expr>::create(rr, std::move(items)))
                      .tree());
    }
    default: failExpected("an expression");
  }
}

Expr Parser::parseStringAtom() {
  size_t start = cur().start;
  bool anyF = false;
  size_t n = 0;
  while (at(TokenKind::String) || at(TokenKind::FString)) {
    anyF |= peek(0).kind == TokenKind::FString;
    next();
    ++n;
  }
  size_t first = pos_ - n;
  if (!anyF) {
    std::string value;
    for (size_t i = first; i < pos_; ++i) value += tokens_[i].text;
    return Expr(StringLiteral::create(rangeFrom(start), std::move(value)).tree());
  }
  TreeList parts;
  for (size_t i = first; i < first + n; ++i) {
    const Token& tok = tokens_[i];
    if (tok.kind == TokenKind::String) {
      parts.push_back(StringLiteral::create(range(tok), tok.text).tree());
    } else {
      size_t p = 0;
      parseFStringParts(tok, p, false, parts);
    }
  }
  // Join neighbouring literal parts and drop empty ones, so equal f-strings give equal trees.
  TreeList merged;
  for (auto& part : parts) {
    if (part->kind() == TreeKind::StringLiteral) {
      if (part->text().empty()) continue;
      if (!merged.empty() && merged.back()->kind() == TreeKind::StringLiteral) {
        merged.back() = StringLiteral::create(merged.back()->range().to(part->range()),
                                              merged.back()->text() + part->text())
                            .tree();
        continue;
      }
    }
    merged.push_back(part);
  }
  SourceRange r = rangeFrom(start);
  return Expr(FString::create(r, List<Expr>::create(r, std::move(merged))).tree());
}

void Parser::parseFStringParts(const Token& tok, size_t& i, bool inSpec, TreeList& parts) {
  const std::string& body = tok.text;
  size_t base = tok.bodyStart;
  auto at = [&](size_t k) { return k < body.size() ? body[k] : '\0'; };
  auto failAt = [&](size_t from, size_t to, const std::string& msg) {
    throwErrorAt(SourceRange(source_, base + from, base + std::min(to, body.size())), msg);
  };
  std::string literal;
  size_t litStart = i;
  size_t segStart = i;
  auto flushSegment = [&](size_t segEnd) {
    literal += decodeStringBody(source_, base + segStart, base + segEnd, tok.raw);
  };
  auto flushLiteral = [&](size_t end) {
    if (!literal.empty()) {
      parts.push_back(
          StringLiteral::create(SourceRange(source_, base + litStart, base + end), literal).tree());
    }
    literal.clear();
  };
  while (i < body.size()) {
    char c = body[i];
    if (c == '\\' && !tok.raw) {  // skip escapes so "\{" is not mistaken for a field
      i += 2;
      continue;
    }
    if (c == '}') {
      if (inSpec) break;
      if (at(i + 1) != '}') failAt(i, i + 1, "f-string: single '}' is not allowed");
      flushSegment(i + 1);
      i += 2;
      segStart = i;
      continue;
    }
    if (c != '{') {
      ++i;
      continue;
    }
    if (at(i + 1) == '{' && !inSpec) {
      flushSegment(i + 1);
      i += 2;
      segStart = i;
      continue;
    }
    flushSegment(i);
    flushLiteral(i);
    // A replacement field: {expr[!conv][:spec]}
    size_t fieldStart = i;
    size_t exprStart = i + 1;
    size_t k = exprStart;
    int depth = 0;
    char quote = 0;
    for (; k < body.size(); ++k) {
      char d = body[k];
      if (quote) {
        if (d == '\\')
          ++k;
        else if (d == quote)
          quote = 0;
        continue;
      }
      if (d == '\'' || d == '"') {
        quote = d;
      } else if (d == '(' || d == '[' || d == '{') {
        ++depth;
      } else if (d == ')' || d == ']' || (d == '}' && depth > 0)) {
        --depth;
      } else if (depth == 0 && (d == '}' || d == ':' || (d == '!' && at(k + 1) != '='))) {
        break;
      }
    }
    if (k >= body.size()) failAt(fieldStart, body.size(), "f-string: expecting '}'");
    size_t exprEnd = k;
    if (body.find_first_not_of(" \t\r\n", exprStart) >= exprEnd) {
      failAt(fieldStart, k + 1, "f-string: empty expression not allowed");
    }
    Parser sub(source_, Lexer(source_, base + exprStart, base + exprEnd).tokenize());
    Expr value = sub.parseTestListStarExpr();
    if (!sub.at(TokenKind::Eof)) sub.failExpected("'}' in the f-string");
    Maybe<Ident> conv = Maybe<Ident>::create(SourceRange(source_, base + k, base + k));
    if (body[k] == '!') {
      char cv = at(k + 1);
      if (cv != 'r' && cv != 's' && cv != 'a') {
        failAt(k, k + 2, "f-string: invalid conversion character: expected 's', 'r', or 'a'");
      }
      SourceRange cr(source_, base + k + 1, base + k + 2);
      conv = Maybe<Ident>::create(cr, Ident::create(cr, std::string(1, cv)));
      k += 2;
    }
    Maybe<Expr> spec = none(SourceRange(source_, base + k, base + k));
    if (at(k) == ':') {
      size_t specStart = k + 1;
      size_t p = specStart;
      TreeList specParts;
      parseFStringParts(tok, p, true, specParts);
      SourceRange sr(source_, base + specStart, base + std::min(p, body.size()));
      spec = Maybe<Expr>::create(
          sr, FString::create(sr, List<Expr>::create(sr, std::move(specParts))).tree());
      k = p;
    }
    if (at(k) != '}') failAt(fieldStart, k + 1, "f-string: expecting '}'");
    i = k + 1;
    parts.push_back(
        FormattedValue::create(SourceRange(source_, base + fieldStart, base + i), value, conv, spec)
            .tree());
    segStart = litStart = i;
  }
  flushSegment(std::min(i, body.size()));
  flushLiteral(std::min(i, body.size()));
}

}  // namespace torchless::frontend::detail
