#pragma once
// The IR emitter's internals, shared by ir_emitter.cpp (functions, statements, scopes),
// emit_expr.cpp (expressions), sugared_value.cpp and convert_to_ssa.cpp.
//
// Note [Variables as loads and stores]
// As PyTorch 1.13 does, the emitter writes every assignment of a first-class variable as
// `prim::Store[name="x"](%v)` and every read as `%x = prim::Load[name="x"]()`, typed from the
// environment. Control flow nodes are emitted without outputs; convertToSSA (convert_to_ssa.cpp)
// then adds prim::If outputs for variables assigned in both branches (or escaping a raising
// branch through prim::Uninitialized), prim::Loop carried values for variables assigned in a
// loop body that exist before it, inlines the loop condition, and erases loads and stores.
// The emitter itself only type-checks: it unifies branch types into the enclosing frame and
// records deferred errors ("x is not defined in the false branch") for names used later.
//
// Note [Early exits]
// `raise` marks its block as exiting (variables of the other branch escape, as in PyTorch).
// `return` stores the value into the variable "$return" and marks its block as returned; an
// `if` one of whose branches always returns takes the statements that follow it into the
// other branch, so every function keeps one return at the end (PyTorch's exit transform
// gives the same shape). `continue` and `break` in a loop body work the same way within the
// body, `break` also clearing the loop's continue flag ("$continue<depth>") that the loop
// condition reads. A `return` inside a loop stores "$return", sets "$did_return" and clears
// the loop's flag (a break); the loop carries both (initialised to prim::Uninitialized and
// false before it), and the statement after the loop is `if $did_return: return $return`
// with the rest of the block in its other branch, so an inner loop's return leaves the outer
// loops too. This is the semantics of PyTorch's exit transform (exit_transforms.cpp) with
// fewer flags. convertToSSA then does what PyTorch's passes do to such loops: a `for` loop
// whose condition changes becomes a while loop with its own counter (CanonicalizeModifiedLoops),
// and the loop condition is evaluated in the branch that goes on. For returns in loops the
// node kinds then match PyTorch's graph (emitter cases return_in_loop, return_in_while); for
// `continue`, PyTorch's graph has one more prim::If (it selects between the values of the
// continuing and the ending paths) and two prim::Uninitialized, which ours does without.
// A function without a return annotation whose loops return is compiled twice: a probe
// compile finds the return type the carried value needs before the loop.

#include "frontend/compiler.h"
#include "frontend/schema_matching.h"
#include "frontend/sugared_value.h"
#include "frontend/tree.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace torchless::frontend {

/// The attribute of a prim::Store holding the type an assignment declared (`x: T = v`), which
/// SSA conversion merges branches by.
inline Symbol declaredTypeAttr() { return Symbol::attr("declared_type"); }

/// `x` is of type T where a condition holds (after `x is not None`, `isinstance(x, T)`).
struct Refinement {
  std::string name;
  TypePtr type;
};

/// Refinements that hold when a condition is true and when it is false.
struct RefinementSet {
  std::vector<Refinement> whenTrue, whenFalse;
  RefinementSet negated() const { return RefinementSet{whenFalse, whenTrue}; }
  /// `a and b`: true when both are (union of true refinements), false: those common to both.
  RefinementSet conjunction(const RefinementSet& rhs) const;
  /// `a or b`.
  RefinementSet disjunction(const RefinementSet& rhs) const;
};

/// A condition: its bool value, refinements, and its value when statically known (`x is None`
/// for a NoneType x).
struct CondValue {
  Value* value = nullptr;
  RefinementSet refinements;
  std::optional<bool> staticIf;
};

/// Note [Early exits]: the variables holding the function's return value and, in loops,
/// whether a return was hit.
inline constexpr const char* kReturnVar = "$return";
inline constexpr const char* kDidReturnVar = "$did_return";

/// Names are meaningful unless empty, starting with '$', or '_' followed by digits.
bool meaningfulName(const std::string& name);

class Emitter {
 public:
  Emitter(const CompileEnv& env, TypePtr selfType, std::shared_ptr<Graph> graph);

  Graph& graph() { return *graph_; }
  const CompileEnv& env() const { return env_; }
  const TypePtr& selfType() const { return selfType_; }

  /// Emits the body of `def` (parameters already bound by the caller) and registers the
  /// single graph output; returns the function's return type.
  TypePtr emitBody(const Def& def, const TypePtr& declaredReturn);

  // ---- environment ----------------------------------------------------------------------
  struct Frame {
    Block* block;
    std::map<std::string, TypePtr> types;            // first-class variables
    std::map<std::string, SugaredValuePtr> sugared;  // modules, functions, ...
    std::map<std::string, std::string> errors;       // deferred "not defined" errors
  };
  void pushFrame(Block* b);
  Frame popFrame();
  Frame& frame() { return frames_.back(); }
  /// Binds `name`: a Store for first-class values (type-checked against an outer binding).
  void setVar(const SourceRange& loc, const std::string& name, const SugaredValuePtr& value,
              const TypePtr& annotated = nullptr);
  void setValue(const SourceRange& loc, const std::string& name, Value* v,
                const TypePtr& annotated = nullptr);
  /// The type of first-class variable `name` in the innermost frame defining it, or null.
  TypePtr findVarType(const std::string& name, size_t fromFrame = SIZE_MAX) const;
  /// Looks a name up: locals, then builtins; throws "undefined value x" when required.
  SugaredValuePtr getSugaredVar(const SourceRange& loc, const std::string& name,
                                bool required = true);
  Value* getVar(const SourceRange& loc, const std::string& name);
  void removeVar(const SourceRange& loc, const std::string& name);

  // ---- statements (ir_emitter.cpp) ------------------------------------------------------
  void emitStatements(const std::vector<Stmt>& stmts, size_t begin);
  void emitStatements(const List<Stmt>& stmts);
  // One statement kind each (emitStatements dispatches).
  bool emitIf(const If& s, std::vector<Stmt> rest);
  bool emitLoopStatement(const Stmt& stmt, const std::vector<Stmt>& rest);
  void emitReturn(const Return& r, Block* block);
  void emitRaise(const Raise& r, Block* block);
  void emitAssert(const Assert& a);
  void emitDelete(const Delete& d);
  void emitWith(const With& w);
  void emitIfElseBlocks(const SourceRange& loc, const CondValue& cond,
                        const std::vector<Stmt>& trueBranch, const std::vector<Stmt>& falseBranch);
  /// prim::Loop over `iterable` (nullptr for while) binding `target` each iteration.
  void emitLoopCommon(const SourceRange& loc, const SugaredValuePtr& iterable,
                      const std::optional<Expr>& target, const std::vector<Stmt>& body,
                      const std::optional<Expr>& cond);
  /// The loop itself, with the body emitted by `body` (comprehensions use this directly).
  void emitLoop(const SourceRange& loc, const SugaredValuePtr& iterable,
                const std::optional<Expr>& target, const std::function<void()>& body,
                const std::optional<Expr>& cond = std::nullopt, bool hasBreak = false);
  void emitFor(const For& stmt);
  void emitAssignment(const Assign& stmt);
  void emitAugAssign(const AugAssign& stmt);
  void emitExprsAssign(const Expr& lhs, const SugaredValuePtr& rhs, const SourceRange& loc,
                       const TypePtr& annotated = nullptr);
  void emitSubscriptAssign(const SourceRange& loc, const Subscript& lhs, Value* rhs);
  void insertRefinements(const SourceRange& loc, const std::vector<Refinement>& refinements);
  /// CompileEnv::declareAttributes: the `__init__` statements that declare attributes
  /// (`self.w = torch.nn.Parameter(t)`, `self.register_buffer("b", t)`) or are skipped
  /// (`super().__init__()`); returns false for any other statement.
  bool emitInitializerStatement(const Stmt& stmt);
  /// Adds attribute `name` to the class being initialised (a no-op when it exists with a
  /// compatible type).
  void declareAttribute(const SourceRange& loc, const std::string& name, const TypePtr& type,
                        bool isParameter, bool isBuffer);

  // ---- expressions (emit_expr.cpp) ------------------------------------------------------
  Value* emitExpr(const Expr& e, const TypePtr& typeHint = nullptr);
  SugaredValuePtr emitSugaredExpr(const Expr& e, size_t nBinders,
                                  const TypePtr& typeHint = nullptr);
  SugaredValuePtr emitApply(const Apply& a, size_t nBinders, const TypePtr& typeHint = nullptr);
  Value* emitToList(const Apply& a, Value* self, const TypePtr& typeHint);
  SugaredValuePtr emitSpecialForm(const Apply& a);
  SugaredValuePtr emitPlainExpr(const Expr& e, const TypePtr& typeHint);
  SugaredValuePtr emitContainerLiteral(const Expr& e, const TypePtr& typeHint);
  CondValue emitCondExpr(const Expr& e);
  Value* emitToBool(const SourceRange& loc, Value* v);
  std::vector<NamedValue> emitArgs(const List<Expr>& inputs);
  std::vector<NamedValue> emitKwargs(const List<Attribute>& kwargs);
  Value* emitSubscript(const Subscript& sub, const TypePtr& typeHint);
  /// Tensor indexing `x[i, a:b, None, ...]`: the view (select/slice/unsqueeze) and any tensor
  /// indices, in PyTorch's order.
  std::pair<Value*, std::vector<Value*>> emitTensorIndexing(const SourceRange& loc, Value* self,
                                                            const List<Expr>& subscripts);
  Value* emitBinaryOp(const SourceRange& loc, TreeKind kind, Value* lhs, Value* rhs);
  Value* emitListComprehension(const ListComp& lc, const TypePtr& typeHint);
  Value* emitDictComprehension(const DictComp& dc, const TypePtr& typeHint);
  /// A value of `type` wrapped for `annotate(T, v)`.
  Value* emitAnnotate(const SourceRange& loc, const TypePtr& type, const Expr& value);

  /// The type an annotation expression denotes (`List[int]`, `Optional[Tensor]`,
  /// `__torch__.Foo`, `torch.Tensor`).
  TypePtr parseType(const Expr& e);
  /// A constant default value expression (frontend/literal.h evalLiteral).
  IValue evalDefault(const Expr& e, const TypePtr& type);

  /// Inserts a node at the insertion point with `loc`.
  Node* insert(Node* n, const SourceRange& loc) { return insertNodeAt(*graph_, n, loc); }
  Value* constant(const IValue& v, const SourceRange& loc) {
    return insertConstantAt(*graph_, v, loc);
  }
  Value* builtin(const SourceRange& loc, const std::string& qualName,
                 const std::vector<Value*>& args, const std::vector<NamedValue>& kwargs = {});

  /// Blocks whose end is unreachable: raised (`exitBlocks_`) or returned (`returnBlocks_`).
  std::set<const Block*> exitBlocks_, returnBlocks_;
  /// Depth of loops being emitted (return inside loops is rejected).
  int loopDepth_ = 0;
  /// Loop context for break/continue: whether the current loop body uses break.
  std::vector<bool> loopHasBreak_;
  TypePtr declaredReturn_;
  TypePtr mergedReturn_;
  /// The return type a probe compile found for a function without a return annotation
  /// whose loops return (types the value loops carry).
  TypePtr inferredReturn_;
  /// The variable of the loop-continue flag of the loop at `depth` (0: outermost).
  static std::string continueFlag(int depth);
  /// The loop-condition ifs on continue flags, for convertToSSA.
  std::set<Node*> flagIfs_;
  /// The name of a method's first parameter (`self`), "" for free functions.
  std::string selfName_;

 private:
  CompileEnv env_;
  TypePtr selfType_;
  std::shared_ptr<Graph> graph_;
  std::vector<Frame> frames_;
};

/// Rewrites loads and stores into SSA form (Note [Variables as loads and stores]) and runs
/// the cleanups PyTorch's compiler runs after it: simple tuple lowering, constant pooling and
/// output canonicalisation.
/// `flagIfs` are the `if <continue flag>: <while condition> else: False` nodes of loops with
/// break or return (Note [Early exits]): the copy evaluated before the loop, where the flag is
/// the constant True, is folded, and the one at the end of the body is merged into the
/// directly preceding prim::If that computed the flag from constants (PyTorch's exit
/// transform evaluates the condition in the branch that goes on).
void convertToSSA(Graph& graph, const std::set<Node*>& flagIfs = {});

/// True when every path through `stmts` ends in a return.
bool alwaysReturns(const std::vector<Stmt>& stmts);
/// True when `stmts` contain `kind` (Break/Continue/Return) outside nested loops and defs.
bool containsExit(const std::vector<Stmt>& stmts, TreeKind kind);
std::vector<Stmt> toVector(const List<Stmt>& stmts);

}  // namespace torchless::frontend
