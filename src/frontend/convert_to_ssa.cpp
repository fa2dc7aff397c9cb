// Loads and stores to SSA (torch/csrc/jit/frontend/convert_to_ssa.cpp and
// inline_loop_condition.cpp in behaviour), then the cleanups PyTorch's compiler runs on every
// new graph (run_cleanup_passes.cpp): simple tuple lowering, dead code elimination, constant
// pooling and output canonicalisation. Constant propagation is not run (it needs kernels).
// See Note [Variables as loads and stores] in emitter.h.
#include "frontend/emitter.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <sstream>
#include <unordered_map>

namespace torchless::frontend {

namespace {

Symbol comprehensionScope() { return Symbol::prim("ComprehensionScope"); }

template <typename T>
struct MiniEnv {
  std::shared_ptr<MiniEnv> next;
  std::map<std::string, T> table;  // sorted: definedVariables() order
  T findInThisFrame(const std::string& n) const {
    auto it = table.find(n);
    return it == table.end() ? T() : it->second;
  }
  T findInAnyFrame(const std::string& n) const {
    for (const MiniEnv* e = this; e; e = e->next.get())
      if (auto r = e->findInThisFrame(n)) return r;
    return T();
  }
};

Node* createStore(Graph& g, const std::string& name, Value* v) {
  Node* n = g.create(prim::Store, {v}, 0);
  n->s_(attr::name, name);
  return n;
}

Node* createLoad(Graph& g, const std::string& name, const TypePtr& type) {
  Node* n = g.create(prim::Load, 1);
  n->s_(attr::name, name);
  n->output()->setType(type);
  return n;
}

struct ControlFlowLoadStores {
  using Env = MiniEnv<TypePtr>;
  std::shared_ptr<Env> env;

  static void addBlockInput(Block* b, const TypePtr& type, const std::string& name) {
    Graph& g = *b->owningGraph();
    Value* in = b->addInput()->setType(type);
    if (meaningfulName(name)) in->setDebugName(name);
    Node* first = b->nodes().empty() ? b->returnNode() : b->nodes().front();
    createStore(g, name, in)->insertBefore(first);
  }
  static void addBlockOutput(Block* b, const TypePtr& type, const std::string& name) {
    Graph& g = *b->owningGraph();
    Node* load = createLoad(g, name, type)->insertBefore(b->returnNode());
    b->registerOutput(load->output());
  }
  static void addNodeOutput(Node* n, const TypePtr& type, const std::string& name) {
    Value* out = n->addOutput()->setType(type);
    if (meaningfulName(name)) out->setDebugName(name);
    createStore(*n->owningGraph(), name, out)->insertAfter(n);
  }
  static void addNodeInput(Node* n, const TypePtr& type, const std::string& name) {
    Node* load = createLoad(*n->owningGraph(), name, type)->insertBefore(n);
    n->addInput(load->output());
  }

  void addIf(Node* n) {
    Block* tb = n->blocks()[0];
    Block* fb = n->blocks()[1];
    auto tv = addBlock(tb);
    auto fv = addBlock(fb);
    std::set<std::string> mutated;
    for (const auto& [v, t] : tv->table)
      if (fv->findInAnyFrame(v)) mutated.insert(v);
    for (const auto& [v, t] : fv->table)
      if (tv->findInAnyFrame(v)) mutated.insert(v);
    for (const auto& x : mutated) {
      TypePtr tt = tv->findInAnyFrame(x), ft = fv->findInAnyFrame(x);
      auto unified = unifyTypes(tt, ft);
      if (!unified) continue;
      addBlockOutput(tb, tt, x);
      addBlockOutput(fb, ft, x);
      addNodeOutput(n, *unified, x);
    }
  }

  void addLoop(Node* n) {
    Block* body = n->blocks()[0];
    auto lv = addBlock(body);
    for (const auto& [name, blockType] : lv->table) {
      TypePtr parentType = env ? env->findInAnyFrame(name) : nullptr;
      if (!parentType) continue;
      TypePtr unified = unifyTypes(parentType, blockType).value_or(parentType);
      addNodeInput(n, parentType, name);
      addBlockInput(body, unified, name);
      addBlockOutput(body, blockType, name);
      addNodeOutput(n, unified, name);
    }
  }

  std::shared_ptr<Env> addBlock(Block* b) {
    auto frame = std::make_shared<Env>();
    frame->next = env;
    env = frame;
    for (Node* n : b->nodes()) {
      if (n->kind() == prim::If) {
        addIf(n);
      } else if (n->kind() == prim::Loop) {
        addLoop(n);
      } else if (n->kind() == comprehensionScope()) {
        addBlock(n->blocks()[0]);
      } else if (n->kind() == prim::Store) {
        env->table[n->s(attr::name)] =
            n->hasAttribute(declaredTypeAttr()) ? n->ty(declaredTypeAttr()) : n->input()->type();
      }
    }
    env = frame->next;
    return frame;
  }
};

void inlineLoopCondition(Node* n, const std::set<Node*>& flagIfs, std::set<Node*>& headerFlagIfs) {
  Block* body = n->blocks()[0];
  Block* preHeader = n->blocks()[1];
  Block* header = n->addBlock();
  header->cloneFrom(preHeader, [](Value* v) { return v; });
  for (auto a = preHeader->nodes().begin(), b = header->nodes().begin();
       a != preHeader->nodes().end() && b != header->nodes().end(); ++a, ++b)
    if (flagIfs.count(*a)) headerFlagIfs.insert(*b);
  for (auto it = header->nodes().begin(); it != header->nodes().end();) {
    Node* m = *it++;
    m->moveBefore(n);
  }
  n->insertInput(1, header->outputs()[0]);
  n->eraseBlock(2);
  for (auto it = preHeader->nodes().begin(); it != preHeader->nodes().end();) {
    Node* m = *it++;
    m->moveBefore(body->returnNode());
  }
  body->insertOutput(0, preHeader->outputs()[0]);
  n->eraseBlock(1);
}

void inlineLoopConditions(Block* b, const std::set<Node*>& flagIfs,
                          std::set<Node*>& headerFlagIfs) {
  for (Node* n : b->nodes()) {
    for (Block* sub : n->blocks()) inlineLoopConditions(sub, flagIfs, headerFlagIfs);
    if (n->kind() == prim::Loop) inlineLoopCondition(n, flagIfs, headerFlagIfs);
  }
}

/// Replaces prim::If `n` by the nodes of its taken block when its condition is a constant.
void foldConstantIf(Node* n) {
  auto c = toIValue(n->input(0));
  if (!c || !c->isBool()) return;
  Block* taken = n->blocks()[c->toBool() ? 0 : 1];
  for (auto it = taken->nodes().begin(); it != taken->nodes().end();) {
    Node* m = *it++;
    m->moveBefore(n);
  }
  for (size_t i = 0; i < n->outputs().size(); ++i)
    n->output(i)->replaceAllUsesWith(taken->outputs()[i]);
  n->destroy();
}

/// `%a.., %f = prim::If(%c) {-> (.., True)} {-> (.., False)}` directly followed by
/// `%b.. = prim::If(%f) {T} {F}`: the second if's T goes to the end of the first's block that
/// outputs True, F to the other, and its outputs become outputs of the first.
bool mergeIntoPrecedingIf(Node* n2) {
  Node* n1 = n2->prev();
  Value* flag = n2->input(0);
  if (n1 == nullptr || n1->kind() != prim::If || flag->node() != n1) return false;
  size_t k = 0;
  while (n1->output(k) != flag) ++k;
  std::vector<bool> which;
  for (Block* b : n1->blocks()) {
    auto c = toIValue(b->outputs()[k]);
    if (!c || !c->isBool()) return false;
    which.push_back(c->toBool());
  }
  for (size_t bi = 0; bi < 2; ++bi) {
    Block* dst = n1->blocks()[bi];
    Block* src = n2->blocks()[which[bi] ? 0 : 1];
    std::unordered_map<Value*, Value*> env;
    for (size_t i = 0; i < n1->outputs().size(); ++i) env[n1->output(i)] = dst->outputs()[i];
    auto map = [&](Value* v) {
      auto it = env.find(v);
      return it == env.end() ? v : it->second;
    };
    for (Node* m : src->nodes()) {
      Node* copy = n1->owningGraph()->createClone(m, map);
      copy->insertBefore(dst->returnNode());
      for (size_t i = 0; i < m->outputs().size(); ++i) env[m->output(i)] = copy->output(i);
    }
    for (Value* out : src->outputs()) dst->registerOutput(map(out));
  }
  for (Value* out : n2->outputs()) {
    Value* merged = n1->addOutput()->copyMetadata(out);
    out->replaceAllUsesWith(merged);
  }
  n2->destroy();
  return true;
}

struct EraseLoadStores {
  using Env = MiniEnv<Value*>;
  std::shared_ptr<Env> env;
  void run(Block* b) {
    auto frame = std::make_shared<Env>();
    frame->next = env;
    env = frame;
    for (auto it = b->nodes().begin(); it != b->nodes().end();) {
      Node* n = *it++;
      if (n->kind() == prim::Store) {
        env->table[n->s(attr::name)] = n->input();
        n->destroy();
      } else if (n->kind() == prim::Load) {
        Value* v = env->findInAnyFrame(n->s(attr::name));
        TL_INTERNAL_ASSERT(v, "no value for variable {}", n->s(attr::name));
        n->output()->replaceAllUsesWith(v);
        n->destroy();
      } else if (n->kind() == comprehensionScope()) {
        Block* body = n->blocks()[0];
        run(body);
        for (auto bi = body->nodes().begin(); bi != body->nodes().end();) {
          Node* m = *bi++;
          m->moveBefore(n);
        }
        n->destroy();
      } else {
        for (Block* sub : n->blocks()) run(sub);
      }
    }
    env = frame->next;
  }
};

// ---- CanonicalizeModifiedLoops (torch/csrc/jit/frontend/canonicalize_modified_loop.cpp) ------

/// A `for` loop whose condition changes in its body (a break or a return inside) becomes a
/// while loop with its own counter, as PyTorch writes it:
///   %y = prim::Loop(%n, %true, %x)  block0(%i, %x.1): ... -> (%c, %x.2)
/// ==>
///   %go = aten::gt(%n, 0)
///   %y, %k = prim::Loop(%max, %go, %x, 0)  block0(%_, %x.1, %i): ...
///       %i.1 = aten::add(%i, 1); %lt = aten::lt(%i.1, %n); %c.1 = aten::__and__(%lt, %c)
///       -> (%c.1, %x.2, %i.1)
void canonicalizeModifiedLoops(Block* b) {
  for (Node* n : b->nodes()) {
    for (Block* sub : n->blocks()) canonicalizeModifiedLoops(sub);
    if (n->kind() != prim::Loop) continue;
    Block* body = n->blocks()[0];
    Value* maxTrip = n->input(0);
    auto trip = toIValue(maxTrip);
    auto condIn = toIValue(n->input(1));
    auto condNext = toIValue(body->outputs()[0]);
    bool alwaysTrue = condIn && condIn->toBool() && condNext && condNext->toBool();
    bool tripSpecified = !trip || trip->toInt() != std::numeric_limits<int64_t>::max() ||
                         body->inputs()[0]->hasUses();
    if (alwaysTrue || !tripSpecified) continue;
    Graph& g = *n->owningGraph();
    auto create = [&](const char* op, Value* a, Value* c, const TypePtr& t) {
      Node* m = g.create(Symbol::aten(op), {a, c}, 1);
      m->output()->setType(t);
      m->setSourceRange(n->sourceRange());
      return g.insertNode(m)->output();
    };
    Value* zero;
    Value* one;
    {
      WithInsertPoint guard(n);
      zero = g.insertConstant(IValue(int64_t(0)));
      one = g.insertConstant(IValue(int64_t(1)));
      Value* cond = create("gt", maxTrip, zero, BoolType::get());
      n->replaceInput(0, g.insertConstant(IValue(std::numeric_limits<int64_t>::max())));
      if (!condIn || !condIn->toBool())
        cond = create("__and__", cond, n->input(1), BoolType::get());
      n->replaceInput(1, cond);
    }
    n->addOutput()->setType(IntType::get());
    n->addInput(zero);
    Value* iter = body->addInput()->setType(IntType::get());
    body->inputs()[0]->replaceAllUsesWith(iter);
    body->inputs()[0]->setDebugName("");
    WithInsertPoint guard(body);
    Value* next = create("add", iter, one, IntType::get());
    body->registerOutput(next);
    Value* lt = create("lt", next, maxTrip, BoolType::get());
    Value* cont = create("__and__", lt, body->outputs()[0], BoolType::get());
    body->eraseOutput(0);
    body->insertOutput(0, cont);
  }
}

// ---- cleanups ------------------------------------------------------------------------------

void lowerSimpleTuples(Block* b) {
  for (auto it = b->nodes().begin(); it != b->nodes().end();) {
    Node* n = *it++;
    for (Block* sub : n->blocks()) lowerSimpleTuples(sub);
    if (n->inputs().empty()) continue;
    Node* tc = n->input(0)->node();
    if (tc->kind() != prim::TupleConstruct) continue;
    if (n->kind() == prim::TupleUnpack) {
      for (size_t i = 0; i < n->outputs().size(); ++i)
        n->output(i)->replaceAllUsesWith(tc->input(i));
      n->destroy();
    } else if (n->kind() == prim::TupleIndex) {
      auto idx = toIValue(n->input(1));
      if (!idx || !idx->isInt()) continue;
      int64_t k = idx->toInt();
      if (k < 0) k += static_cast<int64_t>(tc->inputs().size());
      n->output()->replaceAllUsesWith(tc->input(static_cast<size_t>(k)));
      n->destroy();
    }
  }
}

bool blockHasSideEffects(const Block* b) {
  for (const Node* n : b->nodes()) {
    if (n->kind() == prim::If || n->kind() == prim::Loop) {
      for (const Block* sub : n->blocks())
        if (blockHasSideEffects(sub)) return true;
    } else if (n->hasSideEffects()) {
      return true;
    }
  }
  return false;
}

/// Unused prim::If outputs and loop-carried values whose output and block input are unused,
/// as PyTorch's dead code elimination removes them.
void removeDeadControlFlowOutputs(Node* n) {
  if (n->kind() == prim::If) {
    for (size_t i = n->outputs().size(); i-- > 0;) {
      if (n->output(i)->hasUses()) continue;
      n->eraseOutput(i);
      for (Block* b : n->blocks()) b->eraseOutput(i);
    }
  } else if (n->kind() == prim::Loop) {
    Block* body = n->blocks()[0];
    for (size_t i = n->outputs().size(); i-- > 0;) {
      if (n->output(i)->hasUses() || body->inputs()[1 + i]->hasUses()) continue;
      n->eraseOutput(i);
      n->removeInput(2 + i);
      body->eraseOutput(1 + i);
      body->eraseInput(1 + i);
    }
  }
}

void eliminateDeadCode(Block* b) {
  std::vector<Node*> nodes;
  for (Node* n : b->nodes()) nodes.push_back(n);
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node* n = *it;
    if (n->kind() == prim::If || n->kind() == prim::Loop) {
      removeDeadControlFlowOutputs(n);
      for (Block* sub : n->blocks()) eliminateDeadCode(sub);
      removeDeadControlFlowOutputs(n);
      bool effects = false;
      for (Block* sub : n->blocks()) effects |= blockHasSideEffects(sub);
      if (!effects && n->outputs().empty()) n->destroy();
      continue;
    }
    for (Block* sub : n->blocks()) eliminateDeadCode(sub);
    bool used = false;
    for (Value* o : n->outputs()) used |= o->hasUses();
    if (used || !n->blocks().empty() || n->hasSideEffects()) continue;
    n->destroy();
  }
}

/// The folds PyTorch's immutable constant propagation makes on code we emit: aten::device of
/// a constant string.
void foldConstants(Block* b) {
  for (auto it = b->nodes().begin(); it != b->nodes().end();) {
    Node* n = *it++;
    for (Block* sub : n->blocks()) foldConstants(sub);
    if (n->kind() == Symbol::aten("device") && n->inputs().size() == 1) {
      auto s = toIValue(n->input(0));
      if (!s || !s->isString()) continue;
      WithInsertPoint guard(n);
      Value* c = n->owningGraph()->insertConstant(IValue(Device::parse(s->toStringRef())),
                                                  n->sourceRange());
      n->output()->replaceAllUsesWith(c);
      n->destroy();
    }
  }
}

std::string constantKey(const Node* n) {
  std::ostringstream s;
  n->printAttributes(s);
  s << " : " << n->output()->type()->reprStr();
  // Tensors print as `<Tensor>` past a few elements: only the same tensor pools (two
  // CONSTANTS.cN weights of one shape must stay two constants).
  if (auto v = toIValue(n->output()); v && v->isTensor() && v->toTensor().defined())
    s << " @" << static_cast<const void*>(v->toTensor().impl().get());
  // Function constants print by name only: F.interpolate's overloads (`___torch_mangle_N`)
  // share the name `interpolate`, and pool only when they are the same function.
  if (const auto* ft = n->output()->type()->cast<FunctionType>())
    s << " @" << static_cast<const void*>(ft->function());
  return s.str();
}

void poolConstants(Block* b, std::unordered_map<std::string, Node*>& seen, Graph& g) {
  for (auto it = b->nodes().begin(); it != b->nodes().end();) {
    Node* n = *it++;
    if (!n->blocks().empty()) {
      for (Block* sub : n->blocks()) poolConstants(sub, seen, g);
      continue;
    }
    if (n->kind() != prim::Constant) continue;
    std::string key = constantKey(n);
    auto found = seen.find(key);
    if (found != seen.end()) {
      n->output()->replaceAllUsesWith(found->second->output());
      n->destroy();
      continue;
    }
    seen.emplace(key, n);
    Node* first = g.nodes().front();
    if (n != first) n->moveBefore(first);
  }
}

size_t blockDepth(const Node* n) {
  size_t d = 0;
  for (const Block* b = n->owningBlock(); b->owningNode(); b = b->owningNode()->owningBlock()) ++d;
  return d;
}

size_t blockIndex(const Block* b) {
  const auto& blocks = b->owningNode()->blocks();
  return static_cast<size_t>(std::find(blocks.begin(), blocks.end(), b) - blocks.begin());
}

bool nodeBefore(const Node* a, const Node* b) {
  if (a == b) return false;
  if (a == a->owningBlock()->returnNode()) return false;
  if (b == b->owningBlock()->returnNode()) return true;
  return a->isBefore(b);
}

bool isBefore(const Node* n1, const Node* n2) {
  if (n1 == n2) return false;
  size_t d1 = blockDepth(n1), d2 = blockDepth(n2);
  while (d1 > d2) {
    n1 = n1->owningBlock()->owningNode();
    --d1;
  }
  while (d2 > d1) {
    n2 = n2->owningBlock()->owningNode();
    --d2;
  }
  while (true) {
    if (n1->owningBlock() == n2->owningBlock()) return nodeBefore(n1, n2);
    const Node* p1 = n1->owningBlock()->owningNode();
    const Node* p2 = n2->owningBlock()->owningNode();
    if (p1 == p2) return blockIndex(n1->owningBlock()) < blockIndex(n2->owningBlock());
    n1 = p1;
    n2 = p2;
  }
}

bool useBefore(const Use& a, const Use& b) {
  if (a.user == b.user) return a.offset < b.offset;
  return isBefore(a.user, b.user);
}

std::vector<size_t> sortIndexes(const std::vector<Value*>& values) {
  std::vector<size_t> idx(values.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::vector<std::optional<Use>> first;
  for (Value* v : values) {
    if (v->uses().empty()) {
      first.emplace_back();
      continue;
    }
    Use best = v->uses()[0];
    for (size_t i = 1; i < v->uses().size(); ++i)
      if (!useBefore(best, v->uses()[i])) best = v->uses()[i];
    first.emplace_back(best);
  }
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    if (!first[a] && !first[b]) return a < b;
    if (!first[a]) return false;
    if (!first[b]) return true;
    return useBefore(*first[a], *first[b]);
  });
  return idx;
}

/// Reorders outputs [offset, offset + perm.size()) of a node.
void permuteNodeOutputs(Node* n, const std::vector<size_t>& perm) {
  std::vector<Value*> old = n->outputs();
  for (size_t i : perm) n->addOutput()->copyMetadata(old[i]);
  for (size_t i = 0; i < old.size(); ++i) {
    size_t newPos = static_cast<size_t>(std::find(perm.begin(), perm.end(), i) - perm.begin());
    Value* nv = n->output(old.size() + newPos);
    std::string name = old[i]->hasDebugName() ? old[i]->debugName() : "";
    old[i]->replaceAllUsesWith(nv);
    old[i]->setDebugName("");
    if (!name.empty()) nv->setDebugName(name);
  }
  for (size_t i = old.size(); i-- > 0;) n->eraseOutput(i);
}

void permuteBlockOutputs(Block* b, size_t offset, const std::vector<size_t>& perm) {
  std::vector<Value*> old = b->outputs();
  for (size_t i = 0; i < perm.size(); ++i) b->replaceOutput(offset + i, old[offset + perm[i]]);
}

void permuteBlockInputs(Block* b, size_t offset, const std::vector<size_t>& perm) {
  std::vector<Value*> old = b->inputs();
  size_t n = perm.size();
  std::vector<Value*> fresh;
  for (size_t i = 0; i < n; ++i)
    fresh.push_back(b->addInput()->setType(old[offset + perm[i]]->type()));
  for (size_t i = 0; i < n; ++i) {
    Value* o = old[offset + perm[i]];
    std::string name = o->hasDebugName() ? o->debugName() : "";
    o->replaceAllUsesWith(fresh[i]);
    o->setDebugName("");
    if (!name.empty()) fresh[i]->setDebugName(name);
  }
  for (size_t i = offset + n; i-- > offset;) b->eraseInput(i);
}

void canonicalizeOutputs(Block* b) {
  std::vector<Node*> nodes;
  for (Node* n : b->nodes()) nodes.push_back(n);
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node* n = *it;
    if (n->kind() == prim::If && n->outputs().size() > 1) {
      auto perm = sortIndexes(n->outputs());
      if (!std::is_sorted(perm.begin(), perm.end())) {
        for (Block* sub : n->blocks()) permuteBlockOutputs(sub, 0, perm);
        permuteNodeOutputs(n, perm);
      }
    } else if (n->kind() == prim::Loop && n->outputs().size() > 1) {
      auto perm = sortIndexes(n->outputs());
      if (!std::is_sorted(perm.begin(), perm.end())) {
        Block* body = n->blocks()[0];
        std::vector<Value*> inputs = n->inputs();
        for (size_t i = 0; i < perm.size(); ++i) n->replaceInput(2 + i, inputs[2 + perm[i]]);
        permuteBlockOutputs(body, 1, perm);
        permuteBlockInputs(body, 1, perm);
        permuteNodeOutputs(n, perm);
      }
    }
    for (Block* sub : n->blocks()) canonicalizeOutputs(sub);
  }
}

}  // namespace

namespace {

// Note [Normalized op aliases]
// PyTorch's compiler rewrites operator aliases to one name right after SSA conversion
// (NormalizeOps, torch/csrc/jit/passes/normalize_ops.cpp): `torch.swapaxes(x, 0, 1)` compiles to
// aten::transpose, `torch.absolute` to aten::abs, `torch.special.expit` to aten::sigmoid,
// `torch.rsub(a, b)` of two tensors to aten::sub(b, a), `b is True` of two bools to aten::eq.
// A traced archive's code keeps the aliases the trace recorded (torchvision's maxvit_t has
// `torch.swapaxes`); loaded, its graph has the canonical ops, as in PyTorch, so every pass,
// converter and exporter sees one name per operation. The map is PyTorch 1.13's.
const std::unordered_map<std::string, std::string>& opAliases() {
  static const std::unordered_map<std::string, std::string> m = {
      {"absolute", "abs"},
      {"absolute_", "abs_"},
      {"clip", "clamp"},
      {"clip_", "clamp_"},
      {"det", "linalg_det"},
      {"matrix_power", "linalg_matrix_power"},
      {"matrix_exp", "linalg_matrix_exp"},
      {"ger", "outer"},
      {"arccos", "acos"},
      {"arccos_", "acos_"},
      {"arcsin", "asin"},
      {"arcsin_", "asin_"},
      {"arctan", "atan"},
      {"arctan_", "atan_"},
      {"arctan2", "atan2"},
      {"arctan2_", "atan2_"},
      {"arccosh", "acosh"},
      {"arccosh_", "acosh_"},
      {"arcsinh", "asinh"},
      {"arcsinh_", "asinh_"},
      {"arctanh", "atanh"},
      {"arctanh_", "atanh_"},
      {"fix", "trunc"},
      {"fix_", "trunc_"},
      {"negative", "neg"},
      {"negative_", "neg_"},
      {"subtract", "sub"},
      {"subtract_", "sub_"},
      {"greater_equal", "ge"},
      {"greater_equal_", "ge_"},
      {"greater", "gt"},
      {"greater_", "gt_"},
      {"less_equal", "le"},
      {"less_equal_", "le_"},
      {"less", "lt"},
      {"less_", "lt_"},
      {"not_equal", "ne"},
      {"not_equal_", "ne_"},
      {"divide", "div"},
      {"divide_", "div_"},
      {"multiply", "mul"},
      {"multiply_", "mul_"},
      {"linalg_matmul", "matmul"},
      {"inverse", "linalg_inv"},
      {"true_divide", "div"},
      {"true_divide_", "div_"},
      {"concat", "cat"},
      {"row_stack", "vstack"},
      {"swapdims", "transpose"},
      {"swapdims_", "transpose_"},
      {"swapaxes", "transpose"},
      {"swapaxes_", "transpose_"},
      {"moveaxis", "movedim"},
      {"special_erf", "erf"},
      {"special_erfc", "erfc"},
      {"special_erfinv", "erfinv"},
      {"special_expit", "sigmoid"},
      {"special_exp2", "exp2"},
      {"special_expm1", "expm1"},
      {"special_logit", "logit"},
      {"special_logsumexp", "logsumexp"},
      {"special_round", "round"},
      {"special_log1p", "log1p"},
      {"special_sinc", "sinc"},
      {"special_digamma", "digamma"},
      {"special_psi", "digamma"},
      {"special_i0", "i0"},
      {"special_xlogy", "xlogy"},
      {"special_log_softmax", "log_softmax"},
      {"orgqr", "linalg_householder_product"},
      {"adjoint", "mH"},
      {"special_multigammaln", "mvlgamma"},
      {"special_polygamma", "polygamma"},
      {"special_softmax", "softmax"},
      {"special_gammainc", "igamma"},
      {"special_gammaincc", "igammac"},
      {"special_gammaln", "lgamma"}};
  return m;
}

// NormalizeOps (Note [Normalized op aliases]).
void normalizeOps(Block* b) {
  const auto& aliases = opAliases();
  auto isTensor = [](const Value* v) { return v->type()->isSubtypeOf(*TensorType::get()); };
  auto isBool = [](const Value* v) { return v->type()->kind() == TypeKind::BoolType; };
  for (auto it = b->nodes().begin(); it != b->nodes().end();) {
    Node* n = *it;
    ++it;
    for (Block* sub : n->blocks()) normalizeOps(sub);
    if (!n->kind().is_aten()) continue;
    const std::string name(n->kind().toUnqualString());
    if (name == "rsub" && n->inputs().size() == 3 && isTensor(n->input(0)) &&
        isTensor(n->input(1))) {  // rsub.Tensor(self, other, alpha) = sub(other, self, alpha)
      Value* self = n->input(0);
      Value* other = n->input(1);
      Node* sub = n->replaceWithNewSymbol(Symbol::aten("sub"));
      sub->replaceInput(0, other);
      sub->replaceInput(1, self);
      continue;
    }
    if (auto a = aliases.find(name); a != aliases.end()) {
      n->replaceWithNewSymbol(Symbol::aten(a->second));
      continue;
    }
    if ((name == "__is__" || name == "__isnot__") && n->inputs().size() == 2 &&
        isBool(n->input(0)) && isBool(n->input(1)))
      n->replaceWithNewSymbol(Symbol::aten(name == "__is__" ? "eq" : "ne"));
  }
}

}  // namespace

void convertToSSA(Graph& graph, const std::set<Node*>& flagIfs) {
  ControlFlowLoadStores().addBlock(graph.block());
  std::set<Node*> headerFlagIfs;
  inlineLoopConditions(graph.block(), flagIfs, headerFlagIfs);
  EraseLoadStores().run(graph.block());
  for (Node* n : headerFlagIfs) foldConstantIf(n);
  for (Node* n : flagIfs) mergeIntoPrecedingIf(n);
  canonicalizeModifiedLoops(graph.block());
  normalizeOps(graph.block());
  lowerSimpleTuples(graph.block());
  foldConstants(graph.block());
  eliminateDeadCode(graph.block());
  std::unordered_map<std::string, Node*> seen;
  poolConstants(graph.block(), seen, graph);
  canonicalizeOutputs(graph.block());
}

}  // namespace torchless::frontend
