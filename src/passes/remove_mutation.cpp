// remove_mutation: functionalization of tensor writes, as PyTorch's RemoveMutation
// (torch/csrc/jit/passes/remove_mutation.cpp) and torch.onnx's in-place removal
// (torch/csrc/jit/passes/onnx/remove_inplace_ops_for_onnx.cpp) do. Each op that writes its
// first argument (a Tensor(a!) self: `add_`, `relu_`, `copy_`, `fill_`, `zero_`,
// `index_put_`, `masked_fill_` ...) becomes its functional form computing the new value of
// what it writes; when it writes through views (slice, select, narrow, view / reshape /
// flatten / (un)squeeze, transpose / t / permute, detach / alias / contiguous) of a base
// tensor, the new value is scattered back through them (slice_scatter, select_scatter,
// reshape, the inverse transpose / permute) to a new value of the base. Uses after the write
// of the base, and of every view of it made before the write, then see the new values (the
// views are recomputed from the new base). A write inside a prim::Loop or prim::If to a
// tensor defined outside makes that tensor a loop-carried value / an If output first.
// In-place metadata changes (`transpose_`, `t_`, `squeeze_`, `unsqueeze_`) rebind the value.
//
// It throws torchless::Error, naming the op and its place, where aliasing cannot be resolved:
// a write through a view it cannot invert (expand, as_strided, diagonal, unfold, an element
// of a list / tuple, the result of `to` / `type_as`) whose source is read afterwards; a write
// to a tensor that a list, tuple or dict built earlier holds when that container is read
// afterwards; an op that writes an argument other than self (`out=` variants); an in-place
// op without a functional form. Lists and dicts (append, _set_item) are left alone.
//
//   %v : Tensor = aten::slice(%x, %0, %1, %3, %1)          %v : Tensor = aten::slice(%x, ...)
//   %w : Tensor = aten::copy_(%v, %y, %false)       ==>    %e : Tensor = aten::expand_as(%t, %v)
//   %z : Tensor = aten::relu(%x)                           %x2 : Tensor = aten::slice_scatter(
//   return (%z)                                                %x, %e, %0, %1, %3, %1)
//                                                          %z : Tensor = aten::relu(%x2)
#include "ir/walk.h"
#include "passes/node_facts.h"
#include "passes/passes.h"

#include "core/error.h"

#include <fmt/format.h>

#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace torchless::passes {

const char* const kRemoveMutationDescription =
    "Makes tensor writes functional (PyTorch's RemoveMutation, torch.onnx's in-place removal): "
    "in-place ops become their functional forms, writes through slice / select / view / "
    "transpose views are scattered back to the base (slice_scatter, select_scatter, reshape), "
    "later uses of the base and of its views see the new values, and writes inside loops and "
    "ifs to outer tensors become loop-carried values / If outputs. Throws naming the op and its "
    "place where aliasing cannot be resolved. Leaves lists and dicts alone.";

namespace {

std::string placeOf(const Node* n) {
  if (n->sourceRange() && !n->sourceRange()->filename.empty()) return n->sourceRange()->str();
  std::string scope = n->scopeName();
  if (!scope.empty()) return scope;
  size_t index = 0;
  for (const Node* m : n->owningBlock()->nodes()) {
    if (m == n) break;
    ++index;
  }
  return fmt::format("graph node #{} ({})", index, n->kind().toQualString());
}

std::string opName(const Node* n) {
  const OpInfo* op = n->maybeOperator();
  return op ? op->overloadKey : n->kind().toQualString();
}

bool isTensor(const Value* v) { return v->type() && v->type()->kind() == TypeKind::TensorType; }

// The first argument is written (Tensor(a!) self) and the op returns it.
bool writesSelf(const Node* n, const OpInfo* op) {
  if (!op || !op->mutates || op->schema.arguments().empty() || n->inputs().empty()) return false;
  const auto& a0 = op->schema.arguments()[0].aliasInfo();
  return a0 && a0->isWrite() && isTensor(n->input(0));
}

// Some argument other than the first is written (`out=`).
bool writesOther(const OpInfo* op) {
  if (!op || !op->mutates) return false;
  const auto& args = op->schema.arguments();
  for (size_t i = 1; i < args.size(); ++i)
    if (args[i].aliasInfo() && args[i].aliasInfo()->isWrite()) return true;
  return false;
}

enum class ViewKind {
  kNone,
  kSlice,
  kNarrow,
  kSelect,
  kReshape,
  kTranspose,
  kT,
  kPermute,
  kIdentity,
  kOpaque
};

// How a node relates its output to input 0, for writing through it.
ViewKind viewKind(const Node* n) {
  static const std::unordered_map<std::string_view, ViewKind> known = {
      {"slice", ViewKind::kSlice},        {"narrow", ViewKind::kNarrow},
      {"select", ViewKind::kSelect},      {"view", ViewKind::kReshape},
      {"reshape", ViewKind::kReshape},    {"view_as", ViewKind::kReshape},
      {"reshape_as", ViewKind::kReshape}, {"flatten", ViewKind::kReshape},
      {"unflatten", ViewKind::kReshape},  {"squeeze", ViewKind::kReshape},
      {"unsqueeze", ViewKind::kReshape},  {"transpose", ViewKind::kTranspose},
      {"swapaxes", ViewKind::kTranspose}, {"t", ViewKind::kT},
      {"permute", ViewKind::kPermute},    {"detach", ViewKind::kIdentity},
      {"alias", ViewKind::kIdentity},     {"contiguous", ViewKind::kIdentity},
  };
  if (n->inputs().empty() || n->outputs().size() != 1 || !isTensor(n->input(0)) ||
      !isTensor(n->output()))
    return ViewKind::kNone;
  const OpInfo* op = n->maybeOperator();
  if (!op || op->mutates || !op->returnsAlias) return ViewKind::kNone;
  if (op->schema.arguments().empty() || !op->schema.arguments()[0].aliasInfo())
    return ViewKind::kNone;
  if (n->kind().is_aten())
    if (auto it = known.find(n->kind().toUnqualString()); it != known.end()) {
      if (it->second == ViewKind::kSlice && op->overloadKey != "aten::slice.Tensor")
        return ViewKind::kOpaque;
      if (it->second == ViewKind::kSelect && op->overloadKey != "aten::select.int")
        return ViewKind::kOpaque;
      if (it->second == ViewKind::kNarrow && op->overloadKey != "aten::narrow")
        return ViewKind::kOpaque;
      return it->second;
    }
  return ViewKind::kOpaque;  // expand, as_strided, diagonal, unfold, to, type_as ...
}

// Container-building uses that keep a reference to a tensor.
bool storesInContainer(const Node* user) {
  const Symbol k = user->kind();
  return k == prim::ListConstruct || k == prim::TupleConstruct || k == prim::DictConstruct ||
         k == Symbol::aten("append") || k == Symbol::aten("insert") ||
         k == Symbol::aten("_set_item");
}

// Nodes that take a tensor out of a container (the tensor aliases the container's element).
bool takesFromContainer(const Node* n) {
  const Symbol k = n->kind();
  return k == prim::ListUnpack || k == prim::TupleUnpack || k == prim::TupleIndex ||
         k == Symbol::aten("__getitem__") || k == Symbol::aten("unbind") ||
         k == Symbol::aten("split") || k == Symbol::aten("chunk") ||
         k == Symbol::aten("split_with_sizes");
}

bool usedAfter(const Value* v, const Node* at) {
  for (const Use& u : v->uses())
    if (u.user->isAfter(at)) return true;
  return false;
}

class RemoveMutation {
 public:
  RemoveMutation(Graph& g, bool strict) : g_(g), strict_(strict) {}

  bool run() {
    std::vector<Node*> writers;
    collect(g_.block(), writers);
    bool changed = false;
    for (Node* n : writers) {
      if (strict_) {
        rewrite(n);
        changed = true;
        continue;
      }
      // Lenient: a write that cannot be made functional stays (a dead branch may drop it).
      // A failed rewrite leaves the graph valid: what it inserted is unused (dead code), and a
      // lift only carried the tensor through unchanged.
      try {
        rewrite(n);
        changed = true;
      } catch (const Error&) {
      }
    }
    return changed;
  }

 private:
  void collect(Block* b, std::vector<Node*>& out) {
    visitNodes(b, [&](Node* n) {
      const OpInfo* op = n->maybeOperator();
      if (writesOther(op) && !writesSelf(n, op)) {
        bool tensorOut = false;
        for (size_t i = 1; i < n->inputs().size(); ++i) tensorOut |= isTensor(n->input(i));
        // Lenient: left for a later strict run (torch.norm's `out=` call sits in a branch that
        // constant folding drops when out is None).
        if (tensorOut && strict_)
          throw Error(
              fmt::format(
                  "remove_mutation: {} writes an argument other than self (an out= variant); "
                  "it has no functional form here",
                  opName(n)),
              placeOf(n));
      }
      if (writesSelf(n, op)) out.push_back(n);
      return false;
    });
  }

  [[noreturn]] void fail(const Node* m, const std::string& why) {
    throw Error(
        fmt::format("remove_mutation: cannot make the in-place {} functional: {}", opName(m), why),
        placeOf(m));
  }

  // The views from the base to v: chain[0] reads the base, chain.back() makes v.
  Value* baseOf(const Node* m, Value* v, std::vector<Node*>& chain) {
    chain.clear();
    Value* cur = v;
    for (;;) {
      Node* d = cur->node();
      ViewKind k = viewKind(d);
      if (k == ViewKind::kNone) break;
      if (k == ViewKind::kOpaque) {
        // A view we cannot write through: fine only when nothing reads its source afterwards.
        if (usedAfter(d->input(0), m))
          fail(m, fmt::format(
                      "it writes through {} (at {}), which may share memory with a tensor read "
                      "afterwards",
                      opName(d), placeOf(d)));
        break;
      }
      chain.insert(chain.begin(), d);
      cur = d->input(0);
    }
    // Views whose sources nothing reads afterwards need no scattering back (a permute of a
    // fresh layer_norm output written by add_): the chain starts at the topmost tensor read
    // after the write (or defined outside the writer's block: a loop reads it next time).
    for (size_t j = 0; j < chain.size(); ++j) {
      Value* p = chain[j]->input(0);
      if (readAfter(m, p, chain[j])) break;
      cur = chain[j]->output();
      chain.erase(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(j) + 1);
      j = static_cast<size_t>(-1);
    }
    if (takesFromContainer(cur->node())) {
      for (const Value* c : cur->node()->inputs())
        if (!isTensor(c) && usedAfter(c, m))
          fail(m,
               fmt::format(
                   "the tensor it writes is an element of a list or tuple ({} at {}) that is read "
                   "afterwards",
                   cur->node()->kind().toQualString(), placeOf(cur->node())));
      // unbind / split / chunk of a tensor: views of it.
      if (cur->node()->inputs().size() > 0 && isTensor(cur->node()->input(0)) &&
          usedAfter(cur->node()->input(0), m))
        fail(m, fmt::format("it writes a piece of {} (at {}), whose source is read afterwards",
                            opName(cur->node()), placeOf(cur->node())));
    }
    return cur;
  }

  // `p` (or a view of it not made by `next`) is read after m, or p lives outside m's block.
  static bool readAfter(const Node* m, Value* p, const Node* next) {
    if (p->node()->owningBlock() != m->owningBlock()) return true;
    std::vector<Value*> stack{p};
    std::unordered_set<const Value*> seen;
    while (!stack.empty()) {
      Value* x = stack.back();
      stack.pop_back();
      if (!seen.insert(x).second) continue;
      for (const Use& u : x->uses()) {
        if (u.user == m || (x == p && u.user == next)) continue;
        if (u.user->isAfter(m)) return true;
        if (u.offset == 0 && viewKind(u.user) != ViewKind::kNone) stack.push_back(u.user->output());
      }
    }
    return false;
  }

  // Uses by `affected` users of `from`, and of the views of `from` made by unaffected nodes,
  // now see `to` and views of `to` recomputed before `insertBefore`.
  void redirect(Value* from, Value* to, const std::function<bool(const Node*)>& affected,
                Node* insertBefore, const Node* writer) {
    struct Alias {
      Value* value;
      Node* view;  // the node making it from its parent (null: the base itself)
    };
    std::vector<Alias> aliases{{from, nullptr}};
    for (size_t i = 0; i < aliases.size(); ++i) {
      for (const Use& u : aliases[i].value->uses()) {
        Node* user = u.user;
        if (affected(user) || u.offset != 0) continue;
        const OpInfo* op = user->maybeOperator();
        if (viewKind(user) != ViewKind::kNone || (user == writer && writesSelf(user, op)))
          aliases.push_back({user->output(), user});
      }
    }
    // A list / tuple / dict built before holds the old tensor.
    for (const Alias& a : aliases)
      for (const Use& u : a.value->uses())
        if (!affected(u.user) && storesInContainer(u.user)) {
          const Symbol k = u.user->kind();
          const bool built =
              k == prim::ListConstruct || k == prim::TupleConstruct || k == prim::DictConstruct;
          const Value* container = built ? u.user->output() : u.user->input(0);
          for (const Use& cu : container->uses())
            if (affected(cu.user))
              fail(writer,
                   fmt::format(
                       "the tensor it writes is held by a {} built at {} and read afterwards",
                       u.user->kind().toQualString(), placeOf(u.user)));
        }
    std::unordered_map<const Value*, Value*> replayed{{from, to}};
    std::function<Value*(Value*)> replay = [&](Value* a) -> Value* {
      if (auto it = replayed.find(a); it != replayed.end()) return it->second;
      Node* view = a->node();
      Value* parent = replay(view->input(0));
      Value* out;
      if (view == writer) {
        out = parent;  // the in-place op's result is its self
      } else {
        WithInsertPoint guard(insertBefore);
        out = replayView(view, parent);
      }
      replayed[a] = out;
      return out;
    };
    for (const Alias& a : aliases) {
      std::vector<Use> uses;
      for (const Use& u : a.value->uses())
        if (affected(u.user)) uses.push_back(u);
      if (uses.empty()) continue;
      Value* r = replay(a.value);
      for (const Use& u : uses) u.user->replaceInput(u.offset, r);
    }
  }

  // `view` applied again to `parent` (a new value of its input) at the insertion point. The new
  // base may be laid out differently (a transpose scattered back): view / view_as become
  // reshape / reshape_as, which give the same values.
  Value* replayView(Node* view, Value* parent) {
    Node* c = g_.createClone(view, [&](Value* v) { return v == view->input(0) ? parent : v; });
    if (view->kind() == Symbol::aten("view") || view->kind() == Symbol::aten("view_as")) {
      Node* r =
          g_.create(Symbol::aten(view->kind() == Symbol::aten("view") ? "reshape" : "reshape_as"),
                    std::vector<Value*>(c->inputs().begin(), c->inputs().end()));
      r->output()->copyMetadata(c->output());
      r->setSourceRange(view->sourceRange());
      r->setScope(view->scope());
      c->destroy();
      c = r;
    }
    g_.insertNode(c);
    return c->output();
  }

  // Makes `base` (defined outside m's block) visible in m's block as a value that the block
  // may change: loop-carried through each prim::Loop, an output of each prim::If, between
  // base's block and m. Returns the value that stands for base in m's block.
  Value* lift(Node* m, Value* base) {
    std::vector<Node*> owners;  // outermost first
    const Block* home = base->node()->owningBlock();
    for (Block* b = m->owningBlock(); b != home; b = b->owningNode()->owningBlock()) {
      TL_INTERNAL_ASSERT(b->owningNode(), "value is not visible in the block that writes it");
      owners.insert(owners.begin(), b->owningNode());
    }
    Value* cur = base;
    for (Node* n : owners) {
      Block* path = nullptr;
      for (Block* b : n->blocks())
        if (containsNode(b, m)) path = b;
      TL_INTERNAL_ASSERT(path, "writer not found in its owner's blocks");
      Value* after = n->addOutput();
      after->setType(cur->type());
      Node* next = n->next();
      if (n->kind() == prim::Loop) {
        n->addInput(cur);
        Block* body = n->blocks()[0];
        Value* carried = body->addInput();
        carried->setType(cur->type());
        body->registerOutput(carried);
        redirect(
            cur, after, [n](const Node* u) { return u->isAfter(n); }, next, m);
        redirect(
            cur, carried, [body](const Node* u) { return containsNode(body, u); },
            body->nodes().empty() ? body->returnNode() : body->nodes().front(), m);
        cur = carried;
      } else if (n->kind() == prim::If) {
        for (Block* b : n->blocks()) b->registerOutput(cur);
        redirect(
            cur, after, [n](const Node* u) { return u->isAfter(n); }, next, m);
      } else {
        fail(m, fmt::format("it writes a tensor defined outside the {} that contains it",
                            n->kind().toQualString()));
      }
    }
    return cur;
  }

  static bool containsNode(const Block* b, const Node* n) {
    for (const Node* cur = n; cur;
         cur = cur->owningBlock() ? cur->owningBlock()->owningNode() : nullptr)
      if (cur->owningBlock() == b) return true;
    return false;
  }

  Node* insertOp(const std::string& name, const std::vector<Value*>& inputs, Node* like) {
    Node* c = g_.create(Symbol::fromQualString(name.substr(0, name.find('.'))), inputs);
    c->output()->setType(TensorType::get());
    c->setSourceRange(like->sourceRange());
    c->setScope(like->scope());
    g_.insertNode(c);
    return c;
  }

  Value* none() { return g_.insertNode(g_.createNone())->output(); }

  // The new value of what m writes (m's self), before m; nullptr for metadata-only ops.
  Value* functional(Node* m) {
    const OpInfo* op = m->maybeOperator();
    const std::string& name = op->schema.name();
    const std::string& overload = op->schema.overloadName();
    Value* self = m->input(0);
    std::vector<Value*> args(m->inputs().begin(), m->inputs().end());
    if (name == "aten::copy_" && (overload.empty() || overload == "Tensor")) {
      Value* typed = insertOp("aten::type_as", {m->input(1), self}, m)->output();
      return insertOp("aten::expand_as", {typed, self}, m)->output();
    }
    if ((name == "aten::copy_" && (overload == "int" || overload == "float")) ||
        (name == "aten::fill_" && overload == "Scalar")) {
      Value* n = none();
      return insertOp("aten::full_like", {self, m->input(1), n, n, n, n, n}, m)->output();
    }
    if (name == "aten::fill_" && overload == "Tensor") {
      Value* typed = insertOp("aten::type_as", {m->input(1), self}, m)->output();
      return insertOp("aten::expand_as", {typed, self}, m)->output();
    }
    if (name == "aten::zero_") {
      Value* n = none();
      return insertOp("aten::zeros_like", {self, n, n, n, n, n}, m)->output();
    }
    if (name == "aten::_index_put_impl_") {
      return insertOp("aten::index_put", {args[0], args[1], args[2], args[3]}, m)->output();
    }
    if (name == "aten::detach_" || name == "aten::requires_grad_") return self;
    std::string fname = name.substr(0, name.size() - 1);
    if (name.back() != '_' || fname.back() == '_') fail(m, "it has no functional form");
    std::string key = overload.empty() ? fname : fname + "." + overload;
    if (!OperatorRegistry::global().findOverload(key))
      fail(m, fmt::format("{} does not exist", key));
    return insertOp(key, args, m)->output();
  }

  static bool rebindsMetadata(const Node* m) {
    static const std::unordered_set<std::string_view> kinds = {
        "transpose_", "t_", "squeeze_", "unsqueeze_", "swapaxes_", "as_strided_"};
    return m->kind().is_aten() && kinds.count(m->kind().toUnqualString());
  }

  // The value `val` standing for view->output() written back into view->input(0).
  Value* inverse(Node* m, Node* view, Value* val) {
    Value* parent = view->input(0);
    auto c = [&](const IValue& v) { return g_.insertConstant(v); };
    switch (viewKind(view)) {
      case ViewKind::kSlice:
        return insertOp(
                   "aten::slice_scatter",
                   {parent, val, view->input(1), view->input(2), view->input(3), view->input(4)}, m)
            ->output();
      case ViewKind::kNarrow: {
        Node* end = g_.create(Symbol::aten("add"), {view->input(2), view->input(3)});
        end->output()->setType(IntType::get());
        g_.insertNode(end);
        return insertOp("aten::slice_scatter",
                        {parent, val, view->input(1), view->input(2), end->output(),
                         c(IValue(int64_t(1)))},
                        m)
            ->output();
      }
      case ViewKind::kSelect:
        return insertOp("aten::select_scatter", {parent, val, view->input(1), view->input(2)}, m)
            ->output();
      case ViewKind::kReshape: {
        Node* size = g_.create(Symbol::aten("size"), {parent});
        size->output()->setType(ListType::ofInts());
        g_.insertNode(size);
        return insertOp("aten::reshape", {val, size->output()}, m)->output();
      }
      case ViewKind::kTranspose:
        return insertOp("aten::transpose.int", {val, view->input(1), view->input(2)}, m)->output();
      case ViewKind::kT: return insertOp("aten::t", {val}, m)->output();
      case ViewKind::kPermute: {
        std::vector<int64_t> perm;
        if (std::optional<IValue> dims = toIValue(view->input(1)); dims && dims->isList()) {
          for (const auto& e : dims->toList()->list) perm.push_back(e.toInt());
        } else if (view->input(1)->node()->kind() == prim::ListConstruct) {
          for (const Value* e : view->input(1)->node()->inputs()) {
            std::optional<int64_t> d = constantInt(e);
            if (!d)
              fail(m,
                   fmt::format("it writes through a permute with dims computed at run time (at {})",
                               placeOf(view)));
            perm.push_back(*d);
          }
        } else {
          fail(m, fmt::format("it writes through a permute with dims computed at run time (at {})",
                              placeOf(view)));
        }
        const auto rank = static_cast<int64_t>(perm.size());
        std::vector<IValue> inv(perm.size());
        for (int64_t i = 0; i < rank; ++i)
          inv[static_cast<size_t>((perm[i] % rank + rank) % rank)] = IValue(i);
        Value* d = c(IValue(ListImpl::create(IntType::get(), std::move(inv))));
        return insertOp("aten::permute", {val, d}, m)->output();
      }
      case ViewKind::kIdentity: return val;
      default: fail(m, fmt::format("it writes through {} (at {})", opName(view), placeOf(view)));
    }
  }

  void rewrite(Node* m) {
    Value* self = m->input(0);
    if (rebindsMetadata(m)) {
      // x.transpose_(0, 1): x itself is rebound to the transposed view; the data is untouched.
      WithInsertPoint guard(m);
      const std::string name = std::string(m->kind().toQualString());
      const OpInfo* op = m->maybeOperator();
      std::string key = name.substr(0, name.size() - 1);
      if (!op->schema.overloadName().empty()) key += "." + op->schema.overloadName();
      if (key == "aten::transpose") key = "aten::transpose.int";
      if (!OperatorRegistry::global().findOverload(key))
        fail(m, fmt::format("{} does not exist", key));
      Value* out =
          insertOp(key, std::vector<Value*>(m->inputs().begin(), m->inputs().end()), m)->output();
      if (m->owningBlock() != self->node()->owningBlock() && self->node()->kind() != prim::Param)
        fail(m, "it changes the shape of a tensor defined outside the loop or if that contains it");
      m->output()->replaceAllUsesWith(out);
      self->replaceAllUsesAfterNodeWith(m, out);
      m->destroy();
      return;
    }
    std::vector<Node*> chain;
    Value* base = baseOf(m, self, chain);
    const Block* home = base->node()->owningBlock();
    if (home != m->owningBlock()) {
      lift(m, base);
      base = baseOf(m, m->input(0), chain);
      self = m->input(0);
    }
    Value* updated;
    {
      WithInsertPoint guard(m);
      Value* val = functional(m);
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) val = inverse(m, *it, val);
      updated = val;
    }
    Node* next = m->next();
    redirect(
        base, updated, [m](const Node* u) { return u->isAfter(m); }, next, m);
    // m's own result is self (a view of the new base).
    if (m->output()->hasUses()) {
      std::vector<Node*> views = chain;
      Value* r = updated;
      WithInsertPoint guard(next);
      for (Node* v : views) r = replayView(v, r);
      m->output()->replaceAllUsesWith(r);
    }
    m->destroy();
  }

  Graph& g_;
  bool strict_;
};

}  // namespace

bool removeMutation(Graph& graph, bool strict) {
  RemoveMutation pass(graph, strict);
  bool changed = pass.run();
  if (changed) eliminateDeadCode(graph);
  return changed;
}

bool removeMutation(Graph& graph) { return removeMutation(graph, /*strict=*/true); }

}  // namespace torchless::passes
