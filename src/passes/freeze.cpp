// freeze: turns a method's graph into one that no longer reads its module, as PyTorch's
// freeze_module (torch/csrc/jit/passes/freeze_module.cpp) does for torch.jit.freeze. It
// inlines every call (inline), folds `self.training` (and submodules' `training`) to its
// value and runs constant propagation, so `if self.training:` branches and the buffers only
// they update (num_batches_tracked) are gone; then replaces each prim::GetAttr chain rooted
// at `self` (graph input 0) by a prim::Constant holding the attribute's value from the bound
// module object: parameters and buffers (as tensors that do not require grad), ints, floats,
// bools, strings, lists, tuples, dicts, None and TorchBind objects (packed params), named after
// their path
// (`%self.conv.weight`) and keeping the GetAttr's source location. `aten::dim` of a
// convolution with a constant weight becomes the weight's rank, as in PyTorch's frozen graphs
// (which assume a batched input: BatchNorm's `input.dim() != 4` check then folds away).
// Constant propagation and dead code elimination end the pass. It leaves alone, as PyTorch
// does, attributes the graph (or another preserved method,
// FreezeGraphOptions::mutatedAttributes) writes: the target of a prim::SetAttr and every
// tensor, list or dict attribute that reaches a written argument of an in-place or out= op, a
// list mutator or a call through its aliases (views, containers, If/Loop outputs); objects
// that are used other than by GetAttr/SetAttr (everything under them is then kept; `self`
// itself used as a value is an error); attributes named in preservedAttributes; and values
// that cannot be constants (script objects, capsules). Those keep their prim::GetAttr nodes,
// and the frozen module keeps them as attributes. Unlike PyTorch it has no alias analysis
// beyond the schemas' annotations, so it may keep more than PyTorch does, never less. It
// needs the module object: FreezeModuleScope binds it (torchless::freeze, `torchless graph
// --frozen`, `torchless graph MODEL.pt --pass freeze` do); run without one it throws.
//
//   graph(%self : __torch__.M, %x : Tensor):        graph(%self : __torch__.M, %x : Tensor):
//     %w : Tensor = prim::GetAttr[name="w"](%self)    %self.w : Float(2) = prim::Constant[...]()
//     %y : Tensor = aten::mul(%x, %w)          ==>    %y : Tensor = aten::mul(%x, %self.w)
//     return (%y)                                     return (%y)
#include "core/error.h"
#include "ir/walk.h"
#include "passes/fold_utils.h"
#include "passes/node_facts.h"
#include "passes/passes.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace torchless::passes {

const char* const kFreezeDescription =
    "Inlines all calls and replaces prim::GetAttr chains rooted at self by constants holding "
    "the bound module's attribute values (parameters, buffers, ints, floats, lists, tensors, "
    "self.training), then runs constant propagation, as PyTorch's freeze_module. Keeps "
    "attributes that some preserved method writes (SetAttr, in-place ops through aliases), "
    "objects used as values and values that cannot be constants. Needs a module bound by "
    "FreezeModuleScope (torchless freeze, torchless graph --frozen).";

namespace {

thread_local const FreezeModuleScope* tCurrentScope = nullptr;

bool isObjectType(const TypePtr& t) {
  return t && (t->kind() == TypeKind::ClassType || t->kind() == TypeKind::InterfaceType);
}

/// A TorchBind object that PyTorch's freezing folds into a constant (quantized packed params,
/// xnnpack contexts, rnn cell params): script code cannot write its fields. torchless's own
/// compiled engines (torchless.Engine) stay attributes.
bool isFoldableTorchBind(const TypePtr& t) {
  if (!t || t->kind() != TypeKind::ClassType) return false;
  const std::string& name = t->cast<ClassType>()->name();
  return name.rfind("__torch__.torch.classes.", 0) == 0 &&
         name.rfind("__torch__.torch.classes.torchless.", 0) != 0;
}

std::string joinPath(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

/// True when `path` equals `p` or lies under it ("a.b" is under "a").
bool underPath(const std::string& path, const std::string& p) {
  return path == p ||
         (path.size() > p.size() && path.compare(0, p.size(), p) == 0 && path[p.size()] == '.');
}

/// Attribute paths of the values rooted at graph input 0: `self` -> "", GetAttr chains ->
/// "a.b". Walks every block in order (definitions come before uses).
class PathMap {
 public:
  explicit PathMap(Graph& g) {
    if (g.inputs().empty() || !isObjectType(g.inputs()[0]->type())) return;
    paths_[g.inputs()[0]] = "";
    walk(g.block());
  }
  const std::string* find(const Value* v) const {
    auto it = paths_.find(v);
    return it == paths_.end() ? nullptr : &it->second;
  }
  /// Nodes in definition order: GetAttr nodes rooted at self.
  const std::vector<Node*>& getAttrs() const { return getAttrs_; }

 private:
  void walk(Block* b) {
    forEachNode(b, [this](Node* n) {
      if (n->kind() != prim::GetAttr) return;
      if (const std::string* p = find(n->input(0))) {
        paths_[n->output()] = joinPath(*p, n->s(attr::name));
        getAttrs_.push_back(n);
      }
    });
  }
  std::unordered_map<const Value*, std::string> paths_;
  std::vector<Node*> getAttrs_;
};

/// True when `v` (a tensor, list, dict ... read from an attribute) or anything that may alias
/// it is written: an argument annotated `(a!)`, a list/dict mutator, a call, a SetAttr
/// storing it into another attribute. Aliases follow returns of ops whose schema says they
/// may alias an argument, prim ops (containers: constructs, unpacks, indexing, casts) and
/// If/Loop block outputs and carried values.
bool mayBeWritten(Value* root) {
  std::vector<Value*> work{root};
  std::unordered_set<Value*> seen{root};
  auto add = [&](Value* v) {
    if (isMutableType(v->type()) && seen.insert(v).second) work.push_back(v);
  };
  while (!work.empty()) {
    Value* v = work.back();
    work.pop_back();
    for (const Use& u : v->uses()) {
      Node* user = u.user;
      switch (user->kind()) {
        case prim::GetAttr: continue;  // objects are handled by paths
        case prim::SetAttr:
          if (u.offset == 1) return true;  // stored into an attribute: aliased elsewhere
          continue;
        case prim::Return: {
          Node* owner = user->owningBlock()->owningNode();
          if (!owner) continue;  // returned from the graph: read, not written
          if (owner->kind() == prim::If) {
            add(owner->output(u.offset));
          } else if (owner->kind() == prim::Loop && u.offset >= 1) {
            add(owner->output(u.offset - 1));
            add(owner->blocks()[0]->inputs().at(u.offset));
          }
          continue;
        }
        case prim::Loop:
          if (u.offset >= 2) {
            add(user->output(u.offset - 2));
            add(user->blocks()[0]->inputs().at(u.offset - 1));
          }
          continue;
        case prim::If: continue;
        case prim::CallMethod:
        case prim::CallFunction: return true;
        default: break;
      }
      const OpInfo* op = user->maybeOperator();
      if (!op) {
        if (user->mayWrite()) return true;
        for (Value* out : user->outputs()) add(out);
        continue;
      }
      const auto& args = op->schema.arguments();
      if (u.offset >= args.size()) {
        if (op->mutates) return true;
      } else if (const auto& ai = args[u.offset].aliasInfo()) {
        if (ai->isWrite()) return true;
        for (const AliasInfo& c : ai->containedTypes())
          if (c.isWrite()) return true;
      }
      if (op->returnsAlias)
        for (Value* out : user->outputs()) add(out);
    }
  }
  return false;
}

/// The attribute at `path` of `self`; nullopt when a step is missing.
std::optional<IValue> resolve(const ObjectPtr& self, const std::string& path) {
  IValue cur(self);
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string name =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur.isObject()) return std::nullopt;
    const ObjectPtr& o = cur.toObject();
    auto slot = o->type->findAttributeSlot(name);
    if (!slot || *slot >= o->slots.size()) return std::nullopt;
    cur = o->slots[*slot];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

/// A tensor value as a constant can hold it: no grad (PyTorch's frozen params are detached).
IValue detached(const IValue& v) {
  if (!v.isTensor()) return v;
  Tensor t = v.toTensor();
  if (!t.defined() || !t.requiresGrad()) return v;
  Tensor a = t.alias();
  a.setRequiresGrad(false);
  return IValue(a);
}

/// Nodes that use an object value as something else than GetAttr's object or SetAttr's
/// target: the object escapes and all its fields may change.
void collectEscapes(Graph& g, const PathMap& paths, std::set<std::string>& escaped) {
  forEachNode(g.block(), [&](Node* n) {
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      const std::string* p = paths.find(n->input(i));
      if (!p || !isObjectType(n->input(i)->type())) continue;
      if (n->kind() == prim::GetAttr || isFoldableTorchBind(n->input(i)->type())) continue;
      if (n->kind() == prim::SetAttr && i == 0) continue;
      if (p->empty())
        throw Error(fmt::format(
            "freeze: the module itself ('self') is used as a value by {}{}; torchless can "
            "only freeze methods that read and write its attributes",
            n->kind().toQualString(),
            n->sourceRange() ? " at " + n->sourceRange()->str() : std::string()));
      escaped.insert(*p);
    }
  });
}

/// `aten::dim(conv(x, W, ...))` with a constant W -> W.dim(), as PyTorch's frozen graphs
/// show (the convolution's input is taken to be batched). This is what lets the
/// `if input.dim() != 4: raise` of BatchNorm2d disappear, so fold_conv_bn can fold.
bool foldConvOutputDims(Block* block) {
  return visitNodes(block, [](Node* n) {
    if (n->kind() != Symbol::aten("dim") || n->inputs().size() != 1) return false;
    Node* conv = n->input(0)->node();
    if (!fold::isConv(conv)) return false;
    std::optional<Tensor> w = fold::constantTensor(conv->input(1));
    if (!w) return false;
    Graph& g = *n->owningGraph();
    WithInsertPoint guard(n);
    Value* c = g.insertConstant(IValue(int64_t(w->dim())), n->sourceRange(), n->scope());
    n->output()->replaceAllUsesWith(c);
    n->destroy();
    return true;
  });
}

}  // namespace

bool foldTrainingAttributes(Graph& graph, const ObjectPtr& self) {
  PathMap paths(graph);
  bool written = false;
  forEachNode(graph.block(), [&](Node* n) {
    if (n->kind() == prim::SetAttr && n->s(attr::name) == "training") written = true;
  });
  if (written) return false;
  bool changed = false;
  for (Node* n : paths.getAttrs()) {
    const auto* owner = n->input(0)->type()->cast<ClassType>();
    if (n->s(attr::name) != "training" || !owner || !owner->isModule()) continue;
    std::optional<IValue> v = resolve(self, *paths.find(n->output()));
    if (!v || !v->isBool()) continue;
    WithInsertPoint guard(n);
    Value* c = graph.insertConstant(*v, n->sourceRange(), n->scope());
    n->output()->replaceAllUsesWith(c);
    changed = true;
  }
  if (changed) {
    eliminateDeadCode(graph);
    constantPropagation(graph);
  }
  return changed;
}

std::set<std::string> mutatedAttributes(Graph& graph) {
  std::set<std::string> out;
  PathMap paths(graph);
  collectEscapes(graph, paths, out);
  forEachNode(graph.block(), [&](Node* n) {
    if (n->kind() != prim::SetAttr) return;
    if (const std::string* p = paths.find(n->input(0))) out.insert(joinPath(*p, n->s(attr::name)));
  });
  for (Node* n : paths.getAttrs()) {
    Value* v = n->output();
    if (isObjectType(v->type()) || !isMutableType(v->type())) continue;
    if (mayBeWritten(v)) out.insert(*paths.find(v));
  }
  return out;
}

namespace {

// A prim::ListConstruct of one constant per element of the list `value` (typed `type`),
// inserted at the insertion point; null when `value` is no list or an element is no constant.
Value* constantList(Graph& graph, const IValue& value, const TypePtr& type, const Node* at) {
  if (!value.isList() || type->kind() != TypeKind::ListType) return nullptr;
  std::vector<Value*> elems;
  for (const IValue& e : value.toList()->list) {
    try {
      elems.push_back(graph.insertConstant(detached(e), at->sourceRange(), at->scope()));
    } catch (const Error&) {
      return nullptr;
    }
  }
  Node* list = graph.insertNode(graph.createList(type->containedTypes().at(0), elems));
  return list->output();
}

}  // namespace

bool freezeGraph(Graph& graph, const ObjectPtr& self, const FreezeGraphOptions& options,
                 FreezeGraphResult* result) {
  TL_CHECK(self != nullptr, "freeze: no module object");
  bool changed = inlineCalls(graph);
  changed |= lowerNestedTensors(graph);
  changed |= foldTrainingAttributes(graph, self);
  std::set<std::string> keep = mutatedAttributes(graph);
  keep.insert(options.mutatedAttributes.begin(), options.mutatedAttributes.end());
  keep.insert(options.preservedAttributes.begin(), options.preservedAttributes.end());
  PathMap paths(graph);
  for (Node* n : paths.getAttrs()) {
    Value* v = n->output();
    const std::string& path = *paths.find(v);
    if (isObjectType(v->type()) && !isFoldableTorchBind(v->type())) continue;
    bool kept = std::any_of(keep.begin(), keep.end(),
                            [&](const std::string& k) { return underPath(path, k); });
    if (kept) continue;
    std::optional<IValue> value = resolve(self, path);
    if (!value) {
      throw Error(fmt::format("freeze: the module has no attribute '{}' (read at {})", path,
                              n->sourceRange() ? n->sourceRange()->str() : "<unknown>"));
    }
    Value* c = nullptr;
    {
      WithInsertPoint guard(n);
      try {
        c = graph.insertConstant(detached(*value), n->sourceRange(), n->scope());
      } catch (const Error&) {
        // A list no node writes (an RNN's _flat_weights): a ListConstruct of constants, as
        // PyTorch's freezing makes a tensor-list constant. Anything else stays an attribute.
        c = constantList(graph, *value, v->type(), n);
        if (!c) continue;
      }
    }
    if (value->isNone()) c->setType(NoneType::get());
    c->setDebugName("self." + path);
    v->replaceAllUsesWith(c);
    changed = true;
  }
  changed |= foldConvOutputDims(graph.block());
  if (changed) {
    eliminateDeadCode(graph);
    constantPropagation(graph);
  }
  if (options.dropSelf && !graph.inputs().empty() && isObjectType(graph.inputs()[0]->type()) &&
      !graph.inputs()[0]->hasUses()) {
    graph.eraseInput(0);
    changed = true;
  }
  if (result) {
    result->keptAttributes.clear();
    if (!graph.inputs().empty() && isObjectType(graph.inputs()[0]->type())) {
      for (const Use& u : graph.inputs()[0]->uses()) {
        Node* user = u.user;
        if ((user->kind() == prim::GetAttr || user->kind() == prim::SetAttr) && u.offset == 0)
          result->keptAttributes.insert(user->s(attr::name));
      }
    }
  }
  return changed;
}

FreezeModuleScope::FreezeModuleScope(ObjectPtr self, FreezeGraphOptions options)
    : self_(std::move(self)), options_(std::move(options)), previous_(tCurrentScope) {
  tCurrentScope = this;
}

FreezeModuleScope::~FreezeModuleScope() { tCurrentScope = previous_; }

const FreezeModuleScope* FreezeModuleScope::current() { return tCurrentScope; }

bool freeze(Graph& graph) {
  const FreezeModuleScope* scope = FreezeModuleScope::current();
  if (!scope)
    throw Error(
        "pass 'freeze' needs the module whose attributes it folds: use `torchless graph "
        "MODEL.pt --frozen` or `torchless freeze`, not a graph text file");
  FreezeGraphResult r;
  bool changed = freezeGraph(graph, scope->self(), scope->options(), &r);
  scope->lastResult_ = std::move(r);
  return changed;
}

}  // namespace torchless::passes
