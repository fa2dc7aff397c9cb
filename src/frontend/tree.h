#pragma once
// The TorchScript AST: generic trees with typed views, as PyTorch's tree_views.h.
//
// A Tree is a kind, a SourceRange, an optional text payload and a list of subtrees. Trees
// are immutable and shared (TreeRef). The typed "views" below (Def, Assign, Apply, ...) wrap
// a TreeRef, check its kind, and name its subtrees. The IR emitter reads trees through views;
// printers, comparison and the S-expression form work on the generic trees.
//
// Grammar (each line: view = Kind(subtree, ...); List[T] and Maybe[T] are trees of kind List
// and Option; T? marks a Maybe):
//
//   Module     = Module(List[Stmt] body)
//
//   Stmt       = Def(Ident name, Decl decl, List[Stmt] body, List[Expr] decorators)
//              | ClassDef(Ident name, List[Expr] bases, List[Stmt] body, List[Expr] decorators)
//              | Import(List[Alias] names)                       -- import a.b as c
//              | ImportFrom(Ident module, List[Alias] names)     -- from .a.b import c as d, *
//              | Assign(List[Expr] lhs, Expr? rhs, Expr? type)   -- a = b = v; x : T = v; x : T
//              | AugAssign(Expr lhs, AugOp op, Expr rhs)         -- op is an empty tree of a
//                                                                   binary kind (Add, Pow, ...)
//              | If(Expr cond, List[Stmt] trueBranch, List[Stmt] falseBranch)   -- elif: nested If
//              | While(Expr cond, List[Stmt] body)
//              | For(Expr target, Expr iter, List[Stmt] body)    -- `a, b` targets: TupleLiteral
//              | Return(Expr? value) | Raise(Expr? exc, Expr? cause) | Assert(Expr test, Expr? msg)
//              | Pass() | Break() | Continue() | Delete(List[Expr] targets)
//              | With(List[WithItem] items, List[Stmt] body)
//              | ExprStmt(Expr expr)
//   Decl       = Decl(List[Param] params, Expr? returnType)
//   Param      = Param(Ident name, Expr? type, Expr? default)    -- text "kwonly" after a bare *
//   Alias      = Alias(Ident name, Ident? asName)                -- name may be dotted: "a.b"
//   WithItem   = WithItem(Expr target, Expr? var)
//
//   Expr       = Var(Ident name)
//              | Const()            -- text: the number as written ("1", "-2", "0x1f", "1e-3",
//                                      "2j"); a unary minus on a literal is folded into it
//              | StringLiteral()    -- text: the decoded value (adjacent literals joined)
//              | FString(List[Expr] parts)   -- parts: StringLiteral | FormattedValue
//              | FormattedValue(Expr value, Ident? conversion, Expr? formatSpec) -- spec: FString
//              | True() | False() | None() | Dots()          -- Dots is `...`
//              | Apply(Expr callee, List[Expr] args, List[Attribute] kwargs)  -- *a: Starred
//              | Select(Expr value, Ident selector)                          -- value.selector
//              | Subscript(Expr value, List[Expr] subscripts)  -- a[i, j:k] has two subscripts
//              | SliceExpr(Expr? start, Expr? end, Expr? step)
//              | TernaryIf(Expr cond, Expr trueExpr, Expr falseExpr)
//              | ListLiteral(List[Expr]) | TupleLiteral(List[Expr]) | SetLiteral(List[Expr])
//              | DictLiteral(List[Expr] keys, List[Expr] values)
//              | ListComp(Expr elt, List[Comprehension] generators)
//              | DictComp(Expr key, Expr value, List[Comprehension] generators)
//              | Starred(Expr value)
//              | CompareChain(List[Expr] operands, List[CmpOp] ops)   -- a < b <= c (2+ ops)
//              | Not(Expr) | Neg(Expr) | Pos(Expr) | BitNot(Expr)
//              | And | Or | Add | Sub | Mul | Div | FloorDiv | Mod | Pow | MatMul | LShift
//              | RShift | BitAnd | BitOr | BitXor | Eq | Ne | Lt | Le | Gt | Ge | Is | IsNot
//              | In | NotIn   (Expr lhs, Expr rhs)
//   Attribute  = Attribute(Ident name, Expr value)                 -- a keyword argument
//   Comprehension = Comprehension(Expr target, Expr iter, List[Expr] ifs)
//   Ident      = Ident()            -- text: the name
//
// Not part of the language (the parser rejects them with a clear message): lambda, global,
// nonlocal, try, yield, await/async, generator expressions, set comprehensions, `**` unpacking,
// `*args`/`**kwargs` parameters, while/for-else, `:=`, bytes literals.

#include "frontend/source.h"

#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace torchless::frontend {

// clang-format off
#define TL_FORALL_TREE_KINDS(_)                                                            \
  /* auxiliary */                                                                          \
  _(List, "list") _(Option, "option") _(Ident, "ident") _(Module, "module")                  \
  _(Decl, "decl") _(Param, "param") _(Alias, "alias") _(WithItem, "with_item")               \
  _(Attribute, "kwarg") _(Comprehension, "comp")                                            \
  /* statements */                                                                         \
  _(Def, "def") _(ClassDef, "class") _(Import, "import") _(ImportFrom, "from")               \
  _(Assign, "assign") _(AugAssign, "aug_assign") _(If, "if") _(While, "while") _(For, "for") \
  _(Return, "return") _(Raise, "raise") _(Assert, "assert") _(Pass, "pass")                  \
  _(Break, "break") _(Continue, "continue") _(Delete, "del") _(With, "with")                 \
  _(ExprStmt, "expr")                                                                       \
  /* expressions */                                                                        \
  _(Var, "var") _(Const, "const") _(StringLiteral, "str") _(FString, "fstring")              \
  _(FormattedValue, "fvalue") _(True, "True") _(False, "False") _(None, "None")              \
  _(Dots, "...") _(Apply, "apply") _(Select, ".") _(Subscript, "subscript")                   \
  _(SliceExpr, "slice") _(TernaryIf, "if_expr") _(ListLiteral, "list_lit")                   \
  _(TupleLiteral, "tuple") _(SetLiteral, "set") _(DictLiteral, "dict")                       \
  _(ListComp, "listcomp") _(DictComp, "dictcomp") _(Starred, "star")                         \
  _(CompareChain, "compare")                                                                \
  /* unary operators */                                                                    \
  _(Not, "not") _(Neg, "neg") _(Pos, "pos") _(BitNot, "~")                                   \
  /* binary operators */                                                                   \
  _(And, "and") _(Or, "or") _(Add, "+") _(Sub, "-") _(Mul, "*") _(Div, "/")                  \
  _(FloorDiv, "//") _(Mod, "%") _(Pow, "**") _(MatMul, "@") _(LShift, "<<")                  \
  _(RShift, ">>") _(BitAnd, "&") _(BitOr, "|") _(BitXor, "^") _(Eq, "==") _(Ne, "!=")         \
  _(Lt, "<") _(Le, "<=") _(Gt, ">") _(Ge, ">=") _(Is, "is") _(IsNot, "is not") _(In, "in")    \
  _(NotIn, "not in")
// clang-format on

enum class TreeKind : uint8_t {
#define TL_DEFINE_TREE_KIND(name, str) name,
  TL_FORALL_TREE_KINDS(TL_DEFINE_TREE_KIND)
#undef TL_DEFINE_TREE_KIND
};

/// The short name of a kind as the S-expression form prints it ("assign", "+", "apply").
const char* treeKindName(TreeKind kind);
/// The enum spelling of a kind ("Assign", "Add", "Apply"), for messages about the AST.
const char* treeKindEnumName(TreeKind kind);
/// Statement kinds (Def ... ExprStmt).
bool isStmtKind(TreeKind kind);
/// Expression kinds (Var ... NotIn).
bool isExprKind(TreeKind kind);
/// Not, Neg, Pos, BitNot.
bool isUnaryOpKind(TreeKind kind);
/// And ... NotIn (including the comparisons).
bool isBinaryOpKind(TreeKind kind);
/// Eq, Ne, Lt, Le, Gt, Ge, Is, IsNot, In, NotIn.
bool isCompareKind(TreeKind kind);
/// The Python spelling of an operator kind: "+", "is not", "not", "-" (for Neg).
const char* operatorSpelling(TreeKind kind);

class Tree;
using TreeRef = std::shared_ptr<const Tree>;
using TreeList = std::vector<TreeRef>;

/// One AST node. See the grammar above for what each kind holds.
class Tree {
 public:
  Tree(TreeKind kind, SourceRange range, std::string text, TreeList trees);

  /// A node with subtrees.
  static TreeRef create(TreeKind kind, SourceRange range, TreeList trees = {});
  /// A node with a text payload (Ident, Const, StringLiteral, a kwonly Param).
  static TreeRef create(TreeKind kind, SourceRange range, std::string text, TreeList trees = {});

  TreeKind kind() const { return kind_; }
  const SourceRange& range() const { return range_; }
  const std::string& text() const { return text_; }
  const TreeList& trees() const { return trees_; }
  const TreeRef& tree(size_t i) const { return trees_.at(i); }
  /// 1 for a leaf, else 1 + the deepest subtree (the parser bounds it).
  uint32_t depth() const { return depth_; }

 private:
  TreeKind kind_;
  uint32_t depth_ = 1;
  SourceRange range_;
  std::string text_;
  TreeList trees_;
};

/// The compact S-expression form used by tests: `(assign [x] (+ a 1) _)`. Lists print as
/// `[...]`, an empty Option as `_`, Var and Ident as their name, Const as its text, strings
/// quoted, a text payload on other kinds as `kind:text`.
std::string toSExpr(const TreeRef& tree);

/// Structural equality: kinds, texts and subtrees; source ranges are ignored.
bool treeEqual(const TreeRef& a, const TreeRef& b);

/// Base of all views: holds the tree.
class TreeView {
 public:
  explicit TreeView(TreeRef tree) : tree_(std::move(tree)) {}
  const TreeRef& tree() const { return tree_; }
  const SourceRange& range() const { return tree_->range(); }
  TreeKind kind() const { return tree_->kind(); }
  operator TreeRef() const { return tree_; }  // NOLINT(google-explicit-constructor)

 protected:
  const TreeRef& subtree(size_t i) const { return tree_->tree(i); }
  /// Internal assert that the tree has `kind`.
  void expectKind(TreeKind kind) const;
  TreeRef tree_;
};

/// A List tree viewed as a sequence of T.
template <typename T>
class List : public TreeView {
 public:
  explicit List(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::List); }
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = T;
    explicit Iterator(TreeList::const_iterator it) : it_(it) {}
    T operator*() const { return T(*it_); }
    Iterator& operator++() {
      ++it_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      ++it_;
      return old;
    }
    bool operator==(const Iterator& o) const { return it_ == o.it_; }
    bool operator!=(const Iterator& o) const { return it_ != o.it_; }

   private:
    TreeList::const_iterator it_;
  };
  Iterator begin() const { return Iterator(tree_->trees().begin()); }
  Iterator end() const { return Iterator(tree_->trees().end()); }
  size_t size() const { return tree_->trees().size(); }
  bool empty() const { return tree_->trees().empty(); }
  T operator[](size_t i) const { return T(tree_->tree(i)); }

  static List create(const SourceRange& range, const std::vector<T>& items) {
    TreeList trees;
    trees.reserve(items.size());
    for (const T& t : items) trees.push_back(t.tree());
    return List(Tree::create(TreeKind::List, range, std::move(trees)));
  }
  static List create(const SourceRange& range, TreeList trees) {
    return List(Tree::create(TreeKind::List, range, std::move(trees)));
  }
};

/// An Option tree: zero or one T.
template <typename T>
class Maybe : public TreeView {
 public:
  explicit Maybe(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Option); }
  bool present() const { return !tree_->trees().empty(); }
  T get() const { return T(tree_->tree(0)); }

  static Maybe create(const SourceRange& range) {
    return Maybe(Tree::create(TreeKind::Option, range));
  }
  static Maybe create(const SourceRange& range, const TreeRef& value) {
    return Maybe(Tree::create(TreeKind::Option, range, TreeList{value}));
  }
};

/// A name in a declaration (function, parameter, attribute, keyword argument, import).
class Ident : public TreeView {
 public:
  explicit Ident(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Ident); }
  const std::string& name() const { return tree_->text(); }
  static Ident create(const SourceRange& range, std::string name);
};

/// Any statement.
class Stmt : public TreeView {
 public:
  explicit Stmt(TreeRef tree);
  /// Any statement view (If, Assign, ...) is a Stmt.
  Stmt(const TreeView& view) : Stmt(view.tree()) {}  // NOLINT(google-explicit-constructor)
};

/// Any expression.
class Expr : public TreeView {
 public:
  explicit Expr(TreeRef tree);
  /// Any expression view (Apply, Var, ...) is an Expr.
  Expr(const TreeView& view) : Expr(view.tree()) {}  // NOLINT(google-explicit-constructor)
};

// ---- top level and declarations ---------------------------------------------------------

class Module : public TreeView {
 public:
  explicit Module(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Module); }
  List<Stmt> body() const { return List<Stmt>(subtree(0)); }
  static Module create(const SourceRange& range, const List<Stmt>& body);
};

class Param : public TreeView {
 public:
  explicit Param(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Param); }
  Ident ident() const { return Ident(subtree(0)); }
  Maybe<Expr> type() const { return Maybe<Expr>(subtree(1)); }
  Maybe<Expr> defaultValue() const { return Maybe<Expr>(subtree(2)); }
  /// Declared after a bare `*`: may only be passed by keyword.
  bool kwargOnly() const { return tree_->text() == "kwonly"; }
  static Param create(const SourceRange& range, const Ident& ident, const Maybe<Expr>& type,
                      const Maybe<Expr>& def, bool kwargOnly);
};

class Decl : public TreeView {
 public:
  explicit Decl(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Decl); }
  List<Param> params() const { return List<Param>(subtree(0)); }
  Maybe<Expr> returnType() const { return Maybe<Expr>(subtree(1)); }
  static Decl create(const SourceRange& range, const List<Param>& params,
                     const Maybe<Expr>& returnType);
};

class Def : public TreeView {
 public:
  explicit Def(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Def); }
  Ident name() const { return Ident(subtree(0)); }
  Decl decl() const { return Decl(subtree(1)); }
  List<Stmt> statements() const { return List<Stmt>(subtree(2)); }
  /// Decorator expressions in source order, e.g. `torch.jit.export`, `staticmethod`.
  List<Expr> decorators() const { return List<Expr>(subtree(3)); }
  /// True if a decorator is the name or dotted name `dotted` ("torch.jit.export").
  bool hasDecorator(const std::string& dotted) const;
  static Def create(const SourceRange& range, const Ident& name, const Decl& decl,
                    const List<Stmt>& body, const List<Expr>& decorators);
};

class ClassDef : public TreeView {
 public:
  explicit ClassDef(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::ClassDef); }
  Ident name() const { return Ident(subtree(0)); }
  /// Base classes: `Module`, `NamedTuple`, `Enum`, `Interface`, `ModuleInterface`, or none.
  List<Expr> bases() const { return List<Expr>(subtree(1)); }
  List<Stmt> body() const { return List<Stmt>(subtree(2)); }
  List<Expr> decorators() const { return List<Expr>(subtree(3)); }
  static ClassDef create(const SourceRange& range, const Ident& name, const List<Expr>& bases,
                         const List<Stmt>& body, const List<Expr>& decorators);
};

class Alias : public TreeView {
 public:
  explicit Alias(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Alias); }
  /// Dotted name ("a.b.c"), or "*" in `from m import *`.
  Ident name() const { return Ident(subtree(0)); }
  Maybe<Ident> asName() const { return Maybe<Ident>(subtree(1)); }
  static Alias create(const SourceRange& range, const Ident& name, const Maybe<Ident>& asName);
};

class Import : public TreeView {
 public:
  explicit Import(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Import); }
  List<Alias> names() const { return List<Alias>(subtree(0)); }
  static Import create(const SourceRange& range, const List<Alias>& names);
};

class ImportFrom : public TreeView {
 public:
  explicit ImportFrom(TreeRef tree) : TreeView(std::move(tree)) {
    expectKind(TreeKind::ImportFrom);
  }
  /// Dotted module name; relative imports keep their leading dots (".a").
  Ident module() const { return Ident(subtree(0)); }
  List<Alias> names() const { return List<Alias>(subtree(1)); }
  static ImportFrom create(const SourceRange& range, const Ident& module, const List<Alias>& names);
};

// ---- statements -------------------------------------------------------------------------

class Assign : public TreeView {
 public:
  explicit Assign(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Assign); }
  /// The targets, left to right: `a = b = v` has two. Each may be a TupleLiteral (unpacking),
  /// a Starred, a Var, a Select or a Subscript.
  List<Expr> lhsList() const { return List<Expr>(subtree(0)); }
  /// The first (for annotated assignments, the only) target.
  Expr lhs() const { return lhsList()[0]; }
  /// Absent for a bare declaration `name : Type`.
  Maybe<Expr> rhs() const { return Maybe<Expr>(subtree(1)); }
  Maybe<Expr> type() const { return Maybe<Expr>(subtree(2)); }
  static Assign create(const SourceRange& range, const List<Expr>& lhs, const Maybe<Expr>& rhs,
                       const Maybe<Expr>& type);
};

class AugAssign : public TreeView {
 public:
  explicit AugAssign(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::AugAssign); }
  Expr lhs() const { return Expr(subtree(0)); }
  /// The binary operator kind: Add for `+=`, Pow for `**=`, ...
  TreeKind augOp() const { return subtree(1)->kind(); }
  Expr rhs() const { return Expr(subtree(2)); }
  static AugAssign create(const SourceRange& range, const Expr& lhs, TreeKind op, const Expr& rhs);
};

class If : public TreeView {
 public:
  explicit If(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::If); }
  Expr cond() const { return Expr(subtree(0)); }
  List<Stmt> trueBranch() const { return List<Stmt>(subtree(1)); }
  /// Empty when there is no else; an `elif` is a single nested If.
  List<Stmt> falseBranch() const { return List<Stmt>(subtree(2)); }
  static If create(const SourceRange& range, const Expr& cond, const List<Stmt>& trueBranch,
                   const List<Stmt>& falseBranch);
};

class While : public TreeView {
 public:
  explicit While(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::While); }
  Expr cond() const { return Expr(subtree(0)); }
  List<Stmt> body() const { return List<Stmt>(subtree(1)); }
  static While create(const SourceRange& range, const Expr& cond, const List<Stmt>& body);
};

class For : public TreeView {
 public:
  explicit For(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::For); }
  Expr target() const { return Expr(subtree(0)); }
  Expr iter() const { return Expr(subtree(1)); }
  List<Stmt> body() const { return List<Stmt>(subtree(2)); }
  static For create(const SourceRange& range, const Expr& target, const Expr& iter,
                    const List<Stmt>& body);
};

class Return : public TreeView {
 public:
  explicit Return(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Return); }
  Maybe<Expr> value() const { return Maybe<Expr>(subtree(0)); }
  static Return create(const SourceRange& range, const Maybe<Expr>& value);
};

class Raise : public TreeView {
 public:
  explicit Raise(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Raise); }
  Maybe<Expr> exception() const { return Maybe<Expr>(subtree(0)); }
  Maybe<Expr> cause() const { return Maybe<Expr>(subtree(1)); }
  static Raise create(const SourceRange& range, const Maybe<Expr>& exc, const Maybe<Expr>& cause);
};

class Assert : public TreeView {
 public:
  explicit Assert(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Assert); }
  Expr test() const { return Expr(subtree(0)); }
  Maybe<Expr> msg() const { return Maybe<Expr>(subtree(1)); }
  static Assert create(const SourceRange& range, const Expr& test, const Maybe<Expr>& msg);
};

class Delete : public TreeView {
 public:
  explicit Delete(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Delete); }
  List<Expr> targets() const { return List<Expr>(subtree(0)); }
  static Delete create(const SourceRange& range, const List<Expr>& targets);
};

class WithItem : public TreeView {
 public:
  explicit WithItem(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::WithItem); }
  Expr target() const { return Expr(subtree(0)); }
  Maybe<Expr> var() const { return Maybe<Expr>(subtree(1)); }
  static WithItem create(const SourceRange& range, const Expr& target, const Maybe<Expr>& var);
};

class With : public TreeView {
 public:
  explicit With(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::With); }
  List<WithItem> items() const { return List<WithItem>(subtree(0)); }
  List<Stmt> body() const { return List<Stmt>(subtree(1)); }
  static With create(const SourceRange& range, const List<WithItem>& items, const List<Stmt>& body);
};

class ExprStmt : public TreeView {
 public:
  explicit ExprStmt(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::ExprStmt); }
  Expr expr() const { return Expr(subtree(0)); }
  static ExprStmt create(const SourceRange& range, const Expr& expr);
};

// ---- expressions ------------------------------------------------------------------------

class Var : public TreeView {
 public:
  explicit Var(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Var); }
  Ident name() const { return Ident(subtree(0)); }
  static Var create(const SourceRange& range, const Ident& name);
};

/// A number literal. The text is the spelling (with a folded leading '-').
class Const : public TreeView {
 public:
  explicit Const(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Const); }
  const std::string& text() const { return tree_->text(); }
  /// A float literal: has '.', an exponent, or is imaginary.
  bool isFloatingPoint() const;
  /// An imaginary literal (`2j`).
  bool isComplex() const;
  bool isIntegral() const { return !isFloatingPoint(); }
  /// The value of an integral literal; throws torchless::Error at the range when it does not
  /// fit in int64 (like TorchScript).
  int64_t asIntegral() const;
  /// The value of a float literal (for an imaginary literal, its imaginary part).
  double asFloatingPoint() const;
  static Const create(const SourceRange& range, std::string text);
};

class StringLiteral : public TreeView {
 public:
  explicit StringLiteral(TreeRef tree) : TreeView(std::move(tree)) {
    expectKind(TreeKind::StringLiteral);
  }
  /// The decoded value (UTF-8).
  const std::string& text() const { return tree_->text(); }
  static StringLiteral create(const SourceRange& range, std::string value);
};

/// An f-string: literal parts and formatted values, in order.
class FString : public TreeView {
 public:
  explicit FString(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::FString); }
  /// Each part is a StringLiteral or a FormattedValue.
  List<Expr> parts() const { return List<Expr>(subtree(0)); }
  static FString create(const SourceRange& range, const List<Expr>& parts);
};

/// `{value!conversion:spec}` inside an f-string.
class FormattedValue : public TreeView {
 public:
  explicit FormattedValue(TreeRef tree) : TreeView(std::move(tree)) {
    expectKind(TreeKind::FormattedValue);
  }
  Expr value() const { return Expr(subtree(0)); }
  /// "r", "s" or "a".
  Maybe<Ident> conversion() const { return Maybe<Ident>(subtree(1)); }
  /// An FString.
  Maybe<Expr> formatSpec() const { return Maybe<Expr>(subtree(2)); }
  static FormattedValue create(const SourceRange& range, const Expr& value,
                               const Maybe<Ident>& conversion, const Maybe<Expr>& spec);
};

/// A keyword argument `name=value`.
class Attribute : public TreeView {
 public:
  explicit Attribute(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Attribute); }
  Ident name() const { return Ident(subtree(0)); }
  Expr value() const { return Expr(subtree(1)); }
  static Attribute create(const SourceRange& range, const Ident& name, const Expr& value);
};

class Apply : public TreeView {
 public:
  explicit Apply(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Apply); }
  Expr callee() const { return Expr(subtree(0)); }
  /// Positional arguments; `*xs` is a Starred.
  List<Expr> inputs() const { return List<Expr>(subtree(1)); }
  List<Attribute> attributes() const { return List<Attribute>(subtree(2)); }
  static Apply create(const SourceRange& range, const Expr& callee, const List<Expr>& inputs,
                      const List<Attribute>& attributes);
};

class Select : public TreeView {
 public:
  explicit Select(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Select); }
  Expr value() const { return Expr(subtree(0)); }
  Ident selector() const { return Ident(subtree(1)); }
  static Select create(const SourceRange& range, const Expr& value, const Ident& selector);
};

class Subscript : public TreeView {
 public:
  explicit Subscript(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Subscript); }
  Expr value() const { return Expr(subtree(0)); }
  /// One per comma-separated index: Expr, SliceExpr, Dots, None.
  List<Expr> subscriptExprs() const { return List<Expr>(subtree(1)); }
  static Subscript create(const SourceRange& range, const Expr& value,
                          const List<Expr>& subscripts);
};

class SliceExpr : public TreeView {
 public:
  explicit SliceExpr(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::SliceExpr); }
  Maybe<Expr> start() const { return Maybe<Expr>(subtree(0)); }
  Maybe<Expr> end() const { return Maybe<Expr>(subtree(1)); }
  Maybe<Expr> step() const { return Maybe<Expr>(subtree(2)); }
  static SliceExpr create(const SourceRange& range, const Maybe<Expr>& start,
                          const Maybe<Expr>& end, const Maybe<Expr>& step);
};

class TernaryIf : public TreeView {
 public:
  explicit TernaryIf(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::TernaryIf); }
  Expr cond() const { return Expr(subtree(0)); }
  Expr trueExpr() const { return Expr(subtree(1)); }
  Expr falseExpr() const { return Expr(subtree(2)); }
  static TernaryIf create(const SourceRange& range, const Expr& cond, const Expr& trueExpr,
                          const Expr& falseExpr);
};

/// ListLiteral, TupleLiteral and SetLiteral: a list of elements.
class SequenceLiteral : public TreeView {
 public:
  explicit SequenceLiteral(TreeRef tree);
  List<Expr> inputs() const { return List<Expr>(subtree(0)); }
  /// kind is ListLiteral, TupleLiteral or SetLiteral.
  static SequenceLiteral create(TreeKind kind, const SourceRange& range, const List<Expr>& inputs);
};
using ListLiteral = SequenceLiteral;
using TupleLiteral = SequenceLiteral;

class DictLiteral : public TreeView {
 public:
  explicit DictLiteral(TreeRef tree) : TreeView(std::move(tree)) {
    expectKind(TreeKind::DictLiteral);
  }
  List<Expr> keyInputs() const { return List<Expr>(subtree(0)); }
  List<Expr> valueInputs() const { return List<Expr>(subtree(1)); }
  static DictLiteral create(const SourceRange& range, const List<Expr>& keys,
                            const List<Expr>& values);
};

/// `for target in iter if cond1 if cond2` inside a comprehension.
class Comprehension : public TreeView {
 public:
  explicit Comprehension(TreeRef tree) : TreeView(std::move(tree)) {
    expectKind(TreeKind::Comprehension);
  }
  Expr target() const { return Expr(subtree(0)); }
  Expr iter() const { return Expr(subtree(1)); }
  List<Expr> ifs() const { return List<Expr>(subtree(2)); }
  static Comprehension create(const SourceRange& range, const Expr& target, const Expr& iter,
                              const List<Expr>& ifs);
};

class ListComp : public TreeView {
 public:
  explicit ListComp(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::ListComp); }
  Expr elt() const { return Expr(subtree(0)); }
  /// At least one; nested `for`s in source order.
  List<Comprehension> generators() const { return List<Comprehension>(subtree(1)); }
  static ListComp create(const SourceRange& range, const Expr& elt,
                         const List<Comprehension>& generators);
};

class DictComp : public TreeView {
 public:
  explicit DictComp(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::DictComp); }
  Expr key() const { return Expr(subtree(0)); }
  Expr value() const { return Expr(subtree(1)); }
  List<Comprehension> generators() const { return List<Comprehension>(subtree(2)); }
  static DictComp create(const SourceRange& range, const Expr& key, const Expr& value,
                         const List<Comprehension>& generators);
};

class Starred : public TreeView {
 public:
  explicit Starred(TreeRef tree) : TreeView(std::move(tree)) { expectKind(TreeKind::Starred); }
  Expr expr() const { return Expr(subtree(0)); }
  static Starred create(const SourceRange& range, const Expr& expr);
};

/// Not, Neg, Pos, BitNot.
class UnaryOp : public TreeView {
 public:
  explicit UnaryOp(TreeRef tree);
  Expr operand() const { return Expr(subtree(0)); }
  static UnaryOp create(TreeKind kind, const SourceRange& range, const Expr& operand);
};

/// And, Or, arithmetic, bitwise and single comparisons.
class BinOp : public TreeView {
 public:
  explicit BinOp(TreeRef tree);
  Expr lhs() const { return Expr(subtree(0)); }
  Expr rhs() const { return Expr(subtree(1)); }
  static BinOp create(TreeKind kind, const SourceRange& range, const Expr& lhs, const Expr& rhs);
};

/// `a < b <= c`: evaluates each operand once, compares neighbours, and-ing the results.
class CompareChain : public TreeView {
 public:
  explicit CompareChain(TreeRef tree) : TreeView(std::move(tree)) {
    expectKind(TreeKind::CompareChain);
  }
  /// n + 1 operands for n operators.
  List<Expr> operands() const { return List<Expr>(subtree(0)); }
  /// The comparison kinds (Lt, In, IsNot, ...).
  std::vector<TreeKind> ops() const;
  static CompareChain create(const SourceRange& range, const List<Expr>& operands,
                             const std::vector<std::pair<TreeKind, SourceRange>>& ops);
};

}  // namespace torchless::frontend
