#include "frontend/printer.h"

namespace torchless::frontend {

namespace {

// Precedence levels, loosest first (Python's grammar).
enum Prec : int {
  kTest = 0,  // a if c else b
  kOr = 1,
  kAnd = 2,
  kNot = 3,
  kCompare = 4,
  kBitOr = 5,
  kBitXor = 6,
  kBitAnd = 7,
  kShift = 8,
  kArith = 9,
  kTerm = 10,
  kFactor = 11,  // unary - + ~
  kPower = 12,
  kAtom = 13,
};

int precedence(const TreeRef& t) {
  switch (t->kind()) {
    case TreeKind::TernaryIf: return kTest;
    case TreeKind::Or: return kOr;
    case TreeKind::And: return kAnd;
    case TreeKind::Not: return kNot;
    case TreeKind::CompareChain: return kCompare;
    case TreeKind::BitOr: return kBitOr;
    case TreeKind::BitXor: return kBitXor;
    case TreeKind::BitAnd: return kBitAnd;
    case TreeKind::LShift:
    case TreeKind::RShift: return kShift;
    case TreeKind::Add:
    case TreeKind::Sub: return kArith;
    case TreeKind::Mul:
    case TreeKind::Div:
    case TreeKind::FloorDiv:
    case TreeKind::Mod:
    case TreeKind::MatMul: return kTerm;
    case TreeKind::Neg:
    case TreeKind::Pos:
    case TreeKind::BitNot: return kFactor;
    case TreeKind::Pow: return kPower;
    case TreeKind::Const: return t->text().front() == '-' ? kFactor : kAtom;
    case TreeKind::Starred: return kBitOr;
    default: return isCompareKind(t->kind()) ? kCompare : kAtom;
  }
}

class Printer {
 public:
  explicit Printer(int indentWidth) : indentWidth_(indentWidth) {}

  std::string out;

  void stmts(const TreeRef& list, int indent) {
    for (const auto& s : list->trees()) stmt(s, indent);
  }

  void line(int indent) { out.append(static_cast<size_t>(indent * indentWidth_), ' '); }

  void block(const TreeRef& list, int indent) {
    out += ":\n";
    stmts(list, indent + 1);
  }

  void commaList(const TreeRef& list, int minPrec = kTest) {
    bool first = true;
    for (const auto& e : list->trees()) {
      if (!first) out += ", ";
      first = false;
      expr(e, minPrec);
    }
  }

  void decorators(const TreeRef& list, int indent) {
    for (const auto& d : list->trees()) {
      line(indent);
      out += '@';
      expr(d, kTest);
      out += '\n';
    }
  }

  void stmt(const TreeRef& s, int indent) {
    switch (s->kind()) {
      case TreeKind::Def: {
        decorators(s->tree(3), indent);
        line(indent);
        out += "def " + s->tree(0)->text() + "(";
        const TreeRef& decl = s->tree(1);
        bool first = true;
        bool sawKwOnly = false;
        for (const auto& p : decl->tree(0)->trees()) {
          if (!first) out += ", ";
          first = false;
          if (p->text() == "kwonly" && !sawKwOnly) {
            out += "*, ";
            sawKwOnly = true;
          }
          out += p->tree(0)->text();
          if (!p->tree(1)->trees().empty()) {
            out += ": ";
            expr(p->tree(1)->tree(0), kTest);
          }
          if (!p->tree(2)->trees().empty()) {
            out += "=";
            expr(p->tree(2)->tree(0), kTest);
          }
        }
        out += ")";
        if (!decl->tree(1)->trees().empty()) {
          out += " -> ";
          expr(decl->tree(1)->tree(0), kTest);
        }
        block(s->tree(2), indent);
        return;
      }
      case TreeKind::ClassDef: {
        decorators(s->tree(3), indent);
        line(indent);
        out += "class " + s->tree(0)->text();
        if (!s->tree(1)->trees().empty()) {
          out += "(";
          commaList(s->tree(1));
          out += ")";
        }
        block(s->tree(2), indent);
        return;
      }
      case TreeKind::If: {
        line(indent);
        out += "if ";
        TreeRef cur = s;
        while (true) {
          expr(cur->tree(0), kTest);
          block(cur->tree(1), indent);
          const TreeRef& f = cur->tree(2);
          if (f->trees().size() == 1 && f->tree(0)->kind() == TreeKind::If) {
            line(indent);
            out += "elif ";
            cur = f->tree(0);
            continue;
          }
          if (!f->trees().empty()) {
            line(indent);
            out += "else";
            block(f, indent);
          }
          return;
        }
      }
      case TreeKind::While:
        line(indent);
        out += "while ";
        expr(s->tree(0), kTest);
        block(s->tree(1), indent);
        return;
      case TreeKind::For:
        line(indent);
        out += "for ";
        expr(s->tree(0), kBitOr);
        out += " in ";
        expr(s->tree(1), kTest);
        block(s->tree(2), indent);
        return;
      case TreeKind::With: {
        line(indent);
        out += "with ";
        bool first = true;
        for (const auto& item : s->tree(0)->trees()) {
          if (!first) out += ", ";
          first = false;
          expr(item->tree(0), kTest);
          if (!item->tree(1)->trees().empty()) {
            out += " as ";
            expr(item->tree(1)->tree(0), kBitOr);
          }
        }
        block(s->tree(1), indent);
        return;
      }
      default: break;
    }
    line(indent);
    simpleStmt(s);
    out += '\n';
  }

  void simpleStmt(const TreeRef& s) {
    switch (s->kind()) {
      case TreeKind::Assign: {
        const TreeRef& type = s->tree(2);
        bool firstTarget = true;
        for (const auto& target : s->tree(0)->trees()) {
          if (!firstTarget) out += " = ";
          firstTarget = false;
          expr(target, kTest);
        }
        if (!type->trees().empty()) {
          out += " : ";
          expr(type->tree(0), kTest);
        }
        if (!s->tree(1)->trees().empty()) {
          out += " = ";
          expr(s->tree(1)->tree(0), kTest);
        }
        return;
      }
      case TreeKind::AugAssign:
        expr(s->tree(0), kTest);
        out += fmt::format(" {}= ", treeKindName(s->tree(1)->kind()));
        expr(s->tree(2), kTest);
        return;
      case TreeKind::Return:
        out += "return";
        if (!s->tree(0)->trees().empty()) {
          out += ' ';
          expr(s->tree(0)->tree(0), kTest);
        }
        return;
      case TreeKind::Raise:
        out += "raise";
        if (!s->tree(0)->trees().empty()) {
          out += ' ';
          expr(s->tree(0)->tree(0), kTest);
        }
        if (!s->tree(1)->trees().empty()) {
          out += " from ";
          expr(s->tree(1)->tree(0), kTest);
        }
        return;
      case TreeKind::Assert:
        out += "assert ";
        expr(s->tree(0), kTest);
        if (!s->tree(1)->trees().empty()) {
          out += ", ";
          expr(s->tree(1)->tree(0), kTest);
        }
        return;
      case TreeKind::Pass: out += "pass"; return;
      case TreeKind::Break: out += "break"; return;
      case TreeKind::Continue: out += "continue"; return;
      case TreeKind::Delete:
        out += "del ";
        commaList(s->tree(0), kBitOr);
        return;
      case TreeKind::ExprStmt: expr(s->tree(0), kTest); return;
      case TreeKind::Import:
        out += "import ";
        aliases(s->tree(0));
        return;
      case TreeKind::ImportFrom:
        out += "from " + s->tree(0)->text() + " import ";
        aliases(s->tree(1));
        return;
      default:
        TL_INTERNAL_ASSERT(false, "printSource: not a statement: {}", treeKindEnumName(s->kind()));
    }
  }

  void aliases(const TreeRef& list) {
    bool first = true;
    for (const auto& a : list->trees()) {
      if (!first) out += ", ";
      first = false;
      out += a->tree(0)->text();
      if (!a->tree(1)->trees().empty()) out += " as " + a->tree(1)->tree(0)->text();
    }
  }

  void comprehensions(const TreeRef& gens) {
    for (const auto& g : gens->trees()) {
      out += " for ";
      expr(g->tree(0), kBitOr);
      out += " in ";
      expr(g->tree(1), kOr);
      for (const auto& cond : g->tree(2)->trees()) {
        out += " if ";
        expr(cond, kOr);
      }
    }
  }

  void fstringBody(const TreeRef& fstr, bool inSpec) {
    for (const auto& part : fstr->tree(0)->trees()) {
      if (part->kind() == TreeKind::StringLiteral) {
        std::string q = quoteString(part->text(), '"');
        q = q.substr(1, q.size() - 2);
        for (char c : q) {
          if ((c == '{' || c == '}') && !inSpec) out += c;
          out += c;
        }
        continue;
      }
      // FormattedValue
      out += '{';
      size_t mark = out.size();
      bool saved = inFString_;
      inFString_ = true;
      expr(part->tree(0), kTest);
      inFString_ = saved;
      if (out.size() > mark && out[mark] == '{') out.insert(mark, " ");
      if (!part->tree(1)->trees().empty()) out += "!" + part->tree(1)->tree(0)->text();
      if (!part->tree(2)->trees().empty()) {
        out += ':';
        fstringBody(part->tree(2)->tree(0), true);
      }
      out += '}';
    }
  }

  void expr(const TreeRef& e, int minPrec) {
    int prec = precedence(e);
    bool paren = prec < minPrec;
    if (paren) out += '(';
    exprInner(e, prec);
    if (paren) out += ')';
  }

  void exprInner(const TreeRef& e, int prec) {
    TreeKind k = e->kind();
    switch (k) {
      case TreeKind::Var: out += e->tree(0)->text(); return;
      case TreeKind::Const: out += e->text(); return;
      case TreeKind::StringLiteral: out += quoteString(e->text(), inFString_ ? '\'' : '"'); return;
      case TreeKind::FString:
        out += inFString_ ? "f'" : "f\"";
        fstringBody(e, false);
        out += inFString_ ? "'" : "\"";
        return;
      case TreeKind::True: out += "True"; return;
      case TreeKind::False: out += "False"; return;
      case TreeKind::None: out += "None"; return;
      case TreeKind::Dots: out += "..."; return;
      case TreeKind::Apply: {
        valueExpr(e->tree(0));
        out += '(';
        commaList(e->tree(1));
        bool first = e->tree(1)->trees().empty();
        for (const auto& kw : e->tree(2)->trees()) {
          if (!first) out += ", ";
          first = false;
          out += kw->tree(0)->text() + "=";
          expr(kw->tree(1), kTest);
        }
        out += ')';
        return;
      }
      case TreeKind::Select:
        valueExpr(e->tree(0));
        out += "." + e->tree(1)->text();
        return;
      case TreeKind::Subscript:
        valueExpr(e->tree(0));
        out += '[';
        commaList(e->tree(1));
        out += ']';
        return;
      case TreeKind::SliceExpr:
        if (!e->tree(0)->trees().empty()) expr(e->tree(0)->tree(0), kTest);
        out += ':';
        if (!e->tree(1)->trees().empty()) expr(e->tree(1)->tree(0), kTest);
        if (!e->tree(2)->trees().empty()) {
          out += ':';
          expr(e->tree(2)->tree(0), kTest);
        }
        return;
      case TreeKind::TernaryIf:
        expr(e->tree(1), kOr);
        out += " if ";
        expr(e->tree(0), kOr);
        out += " else ";
        expr(e->tree(2), kTest);
        return;
      case TreeKind::TupleLiteral:
        out += '(';
        commaList(e->tree(0));
        if (e->tree(0)->trees().size() == 1) out += ',';
        out += ')';
        return;
      case TreeKind::ListLiteral:
        out += '[';
        commaList(e->tree(0));
        out += ']';
        return;
      case TreeKind::SetLiteral:
        out += '{';
        commaList(e->tree(0));
        out += '}';
        return;
      case TreeKind::DictLiteral: {
        out += '{';
        const TreeList& keys = e->tree(0)->trees();
        const TreeList& values = e->tree(1)->trees();
        for (size_t i = 0; i < keys.size(); ++i) {
          if (i) out += ", ";
          expr(keys[i], kTest);
          out += ": ";
          expr(values[i], kTest);
        }
        out += '}';
        return;
      }
      case TreeKind::ListComp:
        out += '[';
        expr(e->tree(0), kTest);
        comprehensions(e->tree(1));
        out += ']';
        return;
      case TreeKind::DictComp:
        out += '{';
        expr(e->tree(0), kTest);
        out += ": ";
        expr(e->tree(1), kTest);
        comprehensions(e->tree(2));
        out += '}';
        return;
      case TreeKind::Starred:
        out += '*';
        expr(e->tree(0), kBitOr);
        return;
      case TreeKind::CompareChain: {
        const TreeList& operands = e->tree(0)->trees();
        const TreeList& ops = e->tree(1)->trees();
        expr(operands[0], kBitOr);
        for (size_t i = 0; i < ops.size(); ++i) {
          out += fmt::format(" {} ", treeKindName(ops[i]->kind()));
          expr(operands[i + 1], kBitOr);
        }
        return;
      }
      case TreeKind::Not:
        out += "not ";
        expr(e->tree(0), kNot);
        return;
      case TreeKind::Neg:
      case TreeKind::Pos:
      case TreeKind::BitNot:
        out += operatorSpelling(k);
        expr(e->tree(0), kFactor);
        return;
      default: break;
    }
    TL_INTERNAL_ASSERT(isBinaryOpKind(k), "printSource: not an expression: {}",
                       treeKindEnumName(k));
    if (isCompareKind(k)) {  // non-associative: both sides one level tighter
      expr(e->tree(0), kBitOr);
      out += fmt::format(" {} ", treeKindName(k));
      expr(e->tree(1), kBitOr);
    } else if (k == TreeKind::Pow) {  // right associative; the base is an atom
      expr(e->tree(0), kAtom);
      out += " ** ";
      expr(e->tree(1), kFactor);
    } else {
      expr(e->tree(0), prec);
      out += fmt::format(" {} ", treeKindName(k));
      expr(e->tree(1), prec + 1);
    }
  }

  /// The value of a call, attribute or subscript: an atom; an int literal needs parentheses
  /// before '.' (`(1).real`).
  void valueExpr(const TreeRef& v) {
    if (v->kind() == TreeKind::Const) {
      out += '(';
      exprInner(v, kAtom);
      out += ')';
      return;
    }
    expr(v, kAtom);
  }

 private:
  int indentWidth_;
  bool inFString_ = false;
};

}  // namespace

std::string quoteString(const std::string& value, char quote) {
  std::string out(1, quote);
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c == quote) {
          out += '\\';
          out += c;
        } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
          out += fmt::format("\\{:03o}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += quote;
  return out;
}

std::string printSource(const TreeRef& tree, int indentWidth) {
  Printer p(indentWidth);
  if (tree->kind() == TreeKind::Module) {
    p.stmts(tree->tree(0), 0);
  } else if (isStmtKind(tree->kind())) {
    p.stmt(tree, 0);
  } else {
    p.expr(tree, kTest);
  }
  return std::move(p.out);
}

}  // namespace torchless::frontend
