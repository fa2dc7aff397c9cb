#include "frontend/tree.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>

namespace torchless::frontend {

namespace {

bool kindBetween(TreeKind k, TreeKind first, TreeKind last) {
  return static_cast<int>(k) >= static_cast<int>(first) &&
         static_cast<int>(k) <= static_cast<int>(last);
}

void appendQuoted(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
          out += fmt::format("\\{:03o}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void sexpr(std::string& out, const TreeRef& t) {
  switch (t->kind()) {
    case TreeKind::Ident:
    case TreeKind::Const: out += t->text(); return;
    case TreeKind::Var: out += t->tree(0)->text(); return;
    case TreeKind::StringLiteral: appendQuoted(out, t->text()); return;
    case TreeKind::Option:
      if (t->trees().empty()) {
        out += '_';
      } else {
        sexpr(out, t->tree(0));
      }
      return;
    case TreeKind::List: {
      out += '[';
      bool first = true;
      for (const auto& s : t->trees()) {
        if (!first) out += ' ';
        first = false;
        sexpr(out, s);
      }
      out += ']';
      return;
    }
    case TreeKind::True:
    case TreeKind::False:
    case TreeKind::None:
    case TreeKind::Dots: out += treeKindName(t->kind()); return;
    default: break;
  }
  out += '(';
  out += treeKindName(t->kind());
  if (!t->text().empty()) {
    out += ':';
    out += t->text();
  }
  for (const auto& s : t->trees()) {
    out += ' ';
    sexpr(out, s);
  }
  out += ')';
}

/// The number spelling without '_' separators, sign and imaginary suffix.
struct ParsedNumber {
  bool negative = false;
  std::string digits;
};

ParsedNumber cleanNumber(const std::string& text) {
  ParsedNumber p;
  size_t i = 0;
  if (!text.empty() && text[0] == '-') {
    p.negative = true;
    i = 1;
  }
  for (; i < text.size(); ++i) {
    if (text[i] != '_' && text[i] != 'j' && text[i] != 'J') p.digits += text[i];
  }
  return p;
}

}  // namespace

const char* treeKindName(TreeKind kind) {
  switch (kind) {
#define TL_TREE_NAME(name, str) \
  case TreeKind::name: return str;
    TL_FORALL_TREE_KINDS(TL_TREE_NAME)
#undef TL_TREE_NAME
  }
  return "?";
}

const char* treeKindEnumName(TreeKind kind) {
  switch (kind) {
#define TL_TREE_ENUM_NAME(name, str) \
  case TreeKind::name: return #name;
    TL_FORALL_TREE_KINDS(TL_TREE_ENUM_NAME)
#undef TL_TREE_ENUM_NAME
  }
  return "?";
}

bool isStmtKind(TreeKind k) { return kindBetween(k, TreeKind::Def, TreeKind::ExprStmt); }
bool isExprKind(TreeKind k) { return kindBetween(k, TreeKind::Var, TreeKind::NotIn); }
bool isUnaryOpKind(TreeKind k) { return kindBetween(k, TreeKind::Not, TreeKind::BitNot); }
bool isBinaryOpKind(TreeKind k) { return kindBetween(k, TreeKind::And, TreeKind::NotIn); }
bool isCompareKind(TreeKind k) { return kindBetween(k, TreeKind::Eq, TreeKind::NotIn); }

const char* operatorSpelling(TreeKind kind) {
  switch (kind) {
    case TreeKind::Neg: return "-";
    case TreeKind::Pos: return "+";
    default: return treeKindName(kind);
  }
}

Tree::Tree(TreeKind kind, SourceRange range, std::string text, TreeList trees)
    : kind_(kind), range_(std::move(range)), text_(std::move(text)), trees_(std::move(trees)) {
  for (const auto& t : trees_) {
    TL_INTERNAL_ASSERT(t != nullptr, "null subtree in a {} tree", treeKindEnumName(kind_));
    depth_ = std::max(depth_, t->depth_ + 1);
  }
}

TreeRef Tree::create(TreeKind kind, SourceRange range, TreeList trees) {
  return std::make_shared<const Tree>(kind, std::move(range), std::string(), std::move(trees));
}

TreeRef Tree::create(TreeKind kind, SourceRange range, std::string text, TreeList trees) {
  return std::make_shared<const Tree>(kind, std::move(range), std::move(text), std::move(trees));
}

std::string toSExpr(const TreeRef& tree) {
  std::string out;
  sexpr(out, tree);
  return out;
}

bool treeEqual(const TreeRef& a, const TreeRef& b) {
  if (a->kind() != b->kind() || a->text() != b->text() || a->trees().size() != b->trees().size()) {
    return false;
  }
  for (size_t i = 0; i < a->trees().size(); ++i) {
    if (!treeEqual(a->tree(i), b->tree(i))) return false;
  }
  return true;
}

void TreeView::expectKind(TreeKind kind) const {
  TL_INTERNAL_ASSERT(tree_ && tree_->kind() == kind, "expected a {} tree, got {}",
                     treeKindEnumName(kind), tree_ ? treeKindEnumName(tree_->kind()) : "null");
}

Ident Ident::create(const SourceRange& range, std::string name) {
  return Ident(Tree::create(TreeKind::Ident, range, std::move(name)));
}

Stmt::Stmt(TreeRef tree) : TreeView(std::move(tree)) {
  TL_INTERNAL_ASSERT(isStmtKind(kind()), "expected a statement, got {}", treeKindEnumName(kind()));
}

Expr::Expr(TreeRef tree) : TreeView(std::move(tree)) {
  TL_INTERNAL_ASSERT(isExprKind(kind()), "expected an expression, got {}",
                     treeKindEnumName(kind()));
}

Module Module::create(const SourceRange& range, const List<Stmt>& body) {
  return Module(Tree::create(TreeKind::Module, range, TreeList{body.tree()}));
}

Param Param::create(const SourceRange& range, const Ident& ident, const Maybe<Expr>& type,
                    const Maybe<Expr>& def, bool kwargOnly) {
  return Param(Tree::create(TreeKind::Param, range, kwargOnly ? "kwonly" : "",
                            TreeList{ident.tree(), type.tree(), def.tree()}));
}

Decl Decl::create(const SourceRange& range, const List<Param>& params,
                  const Maybe<Expr>& returnType) {
  return Decl(Tree::create(TreeKind::Decl, range, TreeList{params.tree(), returnType.tree()}));
}

namespace {
/// "a.b.c" for Var/Select chains; empty for anything else.
std::string dottedName(const TreeRef& t) {
  if (t->kind() == TreeKind::Var) return t->tree(0)->text();
  if (t->kind() == TreeKind::Select) {
    std::string base = dottedName(t->tree(0));
    return base.empty() ? base : base + "." + t->tree(1)->text();
  }
  return {};
}
}  // namespace

bool Def::hasDecorator(const std::string& dotted) const {
  for (const Expr& d : decorators()) {
    if (dottedName(d.tree()) == dotted) return true;
  }
  return false;
}

Def Def::create(const SourceRange& range, const Ident& name, const Decl& decl,
                const List<Stmt>& body, const List<Expr>& decorators) {
  return Def(Tree::create(TreeKind::Def, range,
                          TreeList{name.tree(), decl.tree(), body.tree(), decorators.tree()}));
}

ClassDef ClassDef::create(const SourceRange& range, const Ident& name, const List<Expr>& bases,
                          const List<Stmt>& body, const List<Expr>& decorators) {
  return ClassDef(
      Tree::create(TreeKind::ClassDef, range,
                   TreeList{name.tree(), bases.tree(), body.tree(), decorators.tree()}));
}

Alias Alias::create(const SourceRange& range, const Ident& name, const Maybe<Ident>& asName) {
  return Alias(Tree::create(TreeKind::Alias, range, TreeList{name.tree(), asName.tree()}));
}

Import Import::create(const SourceRange& range, const List<Alias>& names) {
  return Import(Tree::create(TreeKind::Import, range, TreeList{names.tree()}));
}

ImportFrom ImportFrom::create(const SourceRange& range, const Ident& module,
                              const List<Alias>& names) {
  return ImportFrom(
      Tree::create(TreeKind::ImportFrom, range, TreeList{module.tree(), names.tree()}));
}

Assign Assign::create(const SourceRange& range, const List<Expr>& lhs, const Maybe<Expr>& rhs,
                      const Maybe<Expr>& type) {
  return Assign(
      Tree::create(TreeKind::Assign, range, TreeList{lhs.tree(), rhs.tree(), type.tree()}));
}

AugAssign AugAssign::create(const SourceRange& range, const Expr& lhs, TreeKind op,
                            const Expr& rhs) {
  TL_INTERNAL_ASSERT(isBinaryOpKind(op) && !isCompareKind(op), "bad augmented operator");
  return AugAssign(Tree::create(TreeKind::AugAssign, range,
                                TreeList{lhs.tree(), Tree::create(op, range), rhs.tree()}));
}

If If::create(const SourceRange& range, const Expr& cond, const List<Stmt>& trueBranch,
              const List<Stmt>& falseBranch) {
  return If(Tree::create(TreeKind::If, range,
                         TreeList{cond.tree(), trueBranch.tree(), falseBranch.tree()}));
}

While While::create(const SourceRange& range, const Expr& cond, const List<Stmt>& body) {
  return While(Tree::create(TreeKind::While, range, TreeList{cond.tree(), body.tree()}));
}

For For::create(const SourceRange& range, const Expr& target, const Expr& iter,
                const List<Stmt>& body) {
  return For(Tree::create(TreeKind::For, range, TreeList{target.tree(), iter.tree(), body.tree()}));
}

Return Return::create(const SourceRange& range, const Maybe<Expr>& value) {
  return Return(Tree::create(TreeKind::Return, range, TreeList{value.tree()}));
}

Raise Raise::create(const SourceRange& range, const Maybe<Expr>& exc, const Maybe<Expr>& cause) {
  return Raise(Tree::create(TreeKind::Raise, range, TreeList{exc.tree(), cause.tree()}));
}

Assert Assert::create(const SourceRange& range, const Expr& test, const Maybe<Expr>& msg) {
  return Assert(Tree::create(TreeKind::Assert, range, TreeList{test.tree(), msg.tree()}));
}

Delete Delete::create(const SourceRange& range, const List<Expr>& targets) {
  return Delete(Tree::create(TreeKind::Delete, range, TreeList{targets.tree()}));
}

WithItem WithItem::create(const SourceRange& range, const Expr& target, const Maybe<Expr>& var) {
  return WithItem(Tree::create(TreeKind::WithItem, range, TreeList{target.tree(), var.tree()}));
}

With With::create(const SourceRange& range, const List<WithItem>& items, const List<Stmt>& body) {
  return With(Tree::create(TreeKind::With, range, TreeList{items.tree(), body.tree()}));
}

ExprStmt ExprStmt::create(const SourceRange& range, const Expr& expr) {
  return ExprStmt(Tree::create(TreeKind::ExprStmt, range, TreeList{expr.tree()}));
}

Var Var::create(const SourceRange& range, const Ident& name) {
  return Var(Tree::create(TreeKind::Var, range, TreeList{name.tree()}));
}

bool Const::isComplex() const {
  const std::string& s = text();
  return !s.empty() && (s.back() == 'j' || s.back() == 'J');
}

bool Const::isFloatingPoint() const {
  const std::string& s = text();
  size_t i = !s.empty() && s[0] == '-' ? 1 : 0;
  if (s.size() > i + 1 && s[i] == '0' &&
      (s[i + 1] == 'x' || s[i + 1] == 'X' || s[i + 1] == 'o' || s[i + 1] == 'O' ||
       s[i + 1] == 'b' || s[i + 1] == 'B')) {
    return false;
  }
  return s.find_first_of(".eEjJ") != std::string::npos;
}

int64_t Const::asIntegral() const {
  TL_INTERNAL_ASSERT(isIntegral(), "asIntegral on float literal {}", text());
  ParsedNumber p = cleanNumber(text());
  int base = 10;
  std::string digits = p.digits;
  if (digits.size() > 1 && digits[0] == '0') {
    char b = digits[1];
    if (b == 'x' || b == 'X') base = 16;
    if (b == 'o' || b == 'O') base = 8;
    if (b == 'b' || b == 'B') base = 2;
    if (base != 10) digits = digits.substr(2);
  }
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(digits.c_str(), &end, base);
  uint64_t limit =
      static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (p.negative ? 1 : 0);
  if (errno == ERANGE || v > limit) {
    throwErrorAt(range(),
                 fmt::format("integer literal {} is out of range for int (64 bits)", text()));
  }
  if (p.negative)
    return v == limit ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(v);
  return static_cast<int64_t>(v);
}

double Const::asFloatingPoint() const {
  ParsedNumber p = cleanNumber(text());
  double v = std::strtod(p.digits.c_str(), nullptr);
  return p.negative ? -v : v;
}

Const Const::create(const SourceRange& range, std::string text) {
  return Const(Tree::create(TreeKind::Const, range, std::move(text)));
}

StringLiteral StringLiteral::create(const SourceRange& range, std::string value) {
  return StringLiteral(Tree::create(TreeKind::StringLiteral, range, std::move(value)));
}

FString FString::create(const SourceRange& range, const List<Expr>& parts) {
  return FString(Tree::create(TreeKind::FString, range, TreeList{parts.tree()}));
}

FormattedValue FormattedValue::create(const SourceRange& range, const Expr& value,
                                      const Maybe<Ident>& conversion, const Maybe<Expr>& spec) {
  return FormattedValue(Tree::create(TreeKind::FormattedValue, range,
                                     TreeList{value.tree(), conversion.tree(), spec.tree()}));
}

Attribute Attribute::create(const SourceRange& range, const Ident& name, const Expr& value) {
  return Attribute(Tree::create(TreeKind::Attribute, range, TreeList{name.tree(), value.tree()}));
}

Apply Apply::create(const SourceRange& range, const Expr& callee, const List<Expr>& inputs,
                    const List<Attribute>& attributes) {
  return Apply(Tree::create(TreeKind::Apply, range,
                            TreeList{callee.tree(), inputs.tree(), attributes.tree()}));
}

Select Select::create(const SourceRange& range, const Expr& value, const Ident& selector) {
  return Select(Tree::create(TreeKind::Select, range, TreeList{value.tree(), selector.tree()}));
}

Subscript Subscript::create(const SourceRange& range, const Expr& value,
                            const List<Expr>& subscripts) {
  return Subscript(
      Tree::create(TreeKind::Subscript, range, TreeList{value.tree(), subscripts.tree()}));
}

SliceExpr SliceExpr::create(const SourceRange& range, const Maybe<Expr>& start,
                            const Maybe<Expr>& end, const Maybe<Expr>& step) {
  return SliceExpr(
      Tree::create(TreeKind::SliceExpr, range, TreeList{start.tree(), end.tree(), step.tree()}));
}

TernaryIf TernaryIf::create(const SourceRange& range, const Expr& cond, const Expr& trueExpr,
                            const Expr& falseExpr) {
  return TernaryIf(Tree::create(TreeKind::TernaryIf, range,
                                TreeList{cond.tree(), trueExpr.tree(), falseExpr.tree()}));
}

SequenceLiteral::SequenceLiteral(TreeRef tree) : TreeView(std::move(tree)) {
  TL_INTERNAL_ASSERT(kind() == TreeKind::ListLiteral || kind() == TreeKind::TupleLiteral ||
                         kind() == TreeKind::SetLiteral,
                     "expected a list, tuple or set literal, got {}", treeKindEnumName(kind()));
}

SequenceLiteral SequenceLiteral::create(TreeKind kind, const SourceRange& range,
                                        const List<Expr>& inputs) {
  return SequenceLiteral(Tree::create(kind, range, TreeList{inputs.tree()}));
}

DictLiteral DictLiteral::create(const SourceRange& range, const List<Expr>& keys,
                                const List<Expr>& values) {
  return DictLiteral(
      Tree::create(TreeKind::DictLiteral, range, TreeList{keys.tree(), values.tree()}));
}

Comprehension Comprehension::create(const SourceRange& range, const Expr& target, const Expr& iter,
                                    const List<Expr>& ifs) {
  return Comprehension(Tree::create(TreeKind::Comprehension, range,
                                    TreeList{target.tree(), iter.tree(), ifs.tree()}));
}

ListComp ListComp::create(const SourceRange& range, const Expr& elt,
                          const List<Comprehension>& generators) {
  return ListComp(Tree::create(TreeKind::ListComp, range, TreeList{elt.tree(), generators.tree()}));
}

DictComp DictComp::create(const SourceRange& range, const Expr& key, const Expr& value,
                          const List<Comprehension>& generators) {
  return DictComp(Tree::create(TreeKind::DictComp, range,
                               TreeList{key.tree(), value.tree(), generators.tree()}));
}

Starred Starred::create(const SourceRange& range, const Expr& expr) {
  return Starred(Tree::create(TreeKind::Starred, range, TreeList{expr.tree()}));
}

UnaryOp::UnaryOp(TreeRef tree) : TreeView(std::move(tree)) {
  TL_INTERNAL_ASSERT(isUnaryOpKind(kind()), "expected a unary operator, got {}",
                     treeKindEnumName(kind()));
}

UnaryOp UnaryOp::create(TreeKind kind, const SourceRange& range, const Expr& operand) {
  return UnaryOp(Tree::create(kind, range, TreeList{operand.tree()}));
}

BinOp::BinOp(TreeRef tree) : TreeView(std::move(tree)) {
  TL_INTERNAL_ASSERT(isBinaryOpKind(kind()), "expected a binary operator, got {}",
                     treeKindEnumName(kind()));
}

BinOp BinOp::create(TreeKind kind, const SourceRange& range, const Expr& lhs, const Expr& rhs) {
  return BinOp(Tree::create(kind, range, TreeList{lhs.tree(), rhs.tree()}));
}

std::vector<TreeKind> CompareChain::ops() const {
  std::vector<TreeKind> out;
  for (const auto& t : subtree(1)->trees()) out.push_back(t->kind());
  return out;
}

CompareChain CompareChain::create(const SourceRange& range, const List<Expr>& operands,
                                  const std::vector<std::pair<TreeKind, SourceRange>>& ops) {
  TreeList opTrees;
  for (const auto& [k, r] : ops) opTrees.push_back(Tree::create(k, r));
  return CompareChain(Tree::create(
      TreeKind::CompareChain, range,
      TreeList{operands.tree(), Tree::create(TreeKind::List, range, std::move(opTrees))}));
}

}  // namespace torchless::frontend
