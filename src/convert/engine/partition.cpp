// Partitioning: runs of convertible nodes become engines (see partition.h).
#include "convert/engine/partition.h"

#include "convert/conversion_ctx.h"
#include "convert/engine/engine_ctx.h"
#include "convert/engine/engine_record.h"
#include "core/error.h"
#include "ir/dead_code_elimination.h"
#include "ir/operator_matching.h"
#include "passes/passes.h"
#include "runtime/kernel.h"

#include <fmt/format.h>

#include <functional>
#include <mutex>
#include <unordered_set>

namespace torchless::engine {

Symbol executeEngineSymbol() {
  static const Symbol s = Symbol::fromQualString("torchless::execute_engine");
  return s;
}

Symbol engineAttribute() {
  static const Symbol s = Symbol::fromQualString("attr::engine");
  return s;
}

std::shared_ptr<Engine> engineOf(const Node& node) {
  if (node.kind() != executeEngineSymbol() || !node.hasAttribute(engineAttribute())) return nullptr;
  const IValue& v = node.ival(engineAttribute());
  if (!v.isCapsule()) return nullptr;
  return std::static_pointer_cast<Engine>(v.toCapsule());
}

namespace {

// The engine of a `torchless.Engine` object (a compiled archive's), rebuilt from its record
// once per object. The cache keeps the objects it has seen alive (engines are few: one per
// compiled segment of a loaded archive).
std::shared_ptr<Engine> engineFor(const ObjectPtr& obj) {
  static std::mutex mu;
  static std::unordered_map<const Object*, std::pair<ObjectPtr, std::shared_ptr<Engine>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(obj.get());
  if (it != cache.end()) return it->second.second;
  EngineRecord r;
  try {
    r.version = obj->slots.at(0).toInt();
    r.network = obj->slots.at(1).toStringRef();
    r.graph = obj->slots.at(2).toStringRef();
    for (const IValue& w : obj->slots.at(3).toList()->list) r.weights.push_back(w.toTensor());
    const std::string profiles = obj->slots.at(4).toStringRef();
    for (size_t pos = 0; pos < profiles.size();) {
      size_t end = profiles.find('|', pos);
      r.profiles.push_back(
          profiles.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
      if (end == std::string::npos) break;
      pos = end + 1;
    }
  } catch (const std::exception& e) {
    throw Error(fmt::format("the engine object does not hold an engine record ({})", e.what()));
  }
  std::string warning;
  std::shared_ptr<Engine> e = deserializeEngine(r, &warning);
  if (!warning.empty()) fmt::print(stderr, "warning: {}\n", warning);
  cache.emplace(obj.get(), std::make_pair(obj, e));
  return e;
}

}  // namespace

void registerEngineKernel() {
  static std::once_flag once;
  std::call_once(once, [] {
    initKernels();
    // The compiled-archive form: execute_engine(Tensor[] inputs, Engine engine) -> Tensor[].
    KernelRegistry::global().registerKernelCreator(
        "torchless::execute_engine(Tensor[] inputs, __torch__.torch.classes.torchless.Engine "
        "engine) -> Tensor[]",
        [](const Node& n) -> Operation {
          std::shared_ptr<Engine> fixed;
          if (n.input(1)->node()->kind() == prim::Constant)
            if (auto v = toIValue(n.input(1)); v && v->isObject()) fixed = engineFor(v->toObject());
          return [fixed](Stack& stack) {
            IValue obj = pop(stack);
            IValue list = pop(stack);
            std::shared_ptr<Engine> e = fixed ? fixed : engineFor(obj.toObject());
            std::vector<IValue> outs = e->run(list.toList()->list);
            push(stack, IValue(ListImpl::create(TensorType::get(), std::move(outs))));
          };
        });
    KernelRegistry::global().registerNodeKernel(
        executeEngineSymbol(), [](const Node& n) -> Operation {
          std::shared_ptr<Engine> e = engineOf(n);
          TL_INTERNAL_ASSERT(e != nullptr, "torchless::execute_engine node without an engine");
          const size_t nin = n.inputs().size();
          return [e, nin](Stack& stack) {
            // Reused per thread: the call allocates nothing here once warm.
            thread_local std::vector<IValue> in;
            in.assign(std::make_move_iterator(stack.end() - static_cast<std::ptrdiff_t>(nin)),
                      std::make_move_iterator(stack.end()));
            drop(stack, nin);
            for (IValue& o : e->run(in)) stack.push_back(std::move(o));
            in.clear();
          };
        });
  });
}

size_t PartitionReport::numEngines() const {
  size_t n = 0;
  for (const auto& s : segments) n += s.engine;
  return n;
}

size_t PartitionReport::numInterpreterSegments() const { return segments.size() - numEngines(); }

std::string PartitionReport::str() const {
  std::string s =
      fmt::format("segments: {} engine, {} interpreter", numEngines(), numInterpreterSegments());
  if (packingNodes)
    s += fmt::format(" (and {} node{} packing the method's outputs or unpacking its inputs)",
                     packingNodes, packingNodes == 1 ? "" : "s");
  s += "\n";
  for (size_t i = 0; i < segments.size(); ++i) {
    const SegmentReport& g = segments[i];
    if (g.engine)
      s += fmt::format(
          "  [{}] engine: {} nodes -> {} ({} layers fused away), {} inputs, {} outputs, at {}\n", i,
          g.numNodes, g.layers, g.fusedAway, g.numInputs, g.numOutputs, g.place);
    else
      s += fmt::format("  [{}] interpreter: {} node{} at {}: {}\n", i, g.numNodes,
                       g.numNodes == 1 ? "" : "s", g.place, g.reason);
  }
  if (!unsupported.empty()) {
    s += fmt::format("unsupported by the engine ({}):\n", unsupported.size());
    for (const auto& u : unsupported) s += "  " + u.str() + "\n";
  }
  return s;
}

namespace {

std::string placeOf(const Node& n) { return convert::nodePlace(n); }

bool allowedBoundaryType(const TypePtr& t, bool tensorsOnly) {
  if (tensorsOnly) return t->kind() == TypeKind::TensorType;
  switch (t->kind()) {
    case TypeKind::TensorType:
    case TypeKind::IntType:
    case TypeKind::FloatType:
    case TypeKind::BoolType: return true;
    default: return false;
  }
}

// A constant, or a list/tuple built only from constants (what constant propagation leaves
// when the graph has in-place ops): copied into every engine that reads it, never an input.
// A list that some node may write (append, setitem, a loop carrying it) is not: the engine's
// copy would keep the elements it was built with (an empty `scale_factors` list that
// F.interpolate's code appends to reached upsample_nearest2d empty).
bool isConstantLike(const Node* n) {
  if (n->kind() == prim::Constant) return true;
  if (n->kind() != prim::ListConstruct && n->kind() != prim::TupleConstruct) return false;
  for (const Value* v : n->inputs())
    if (v->node()->kind() != prim::Constant) return false;
  if (n->kind() == prim::ListConstruct)
    for (const Use& u : n->output()->uses()) {
      if (!u.user->blocks().empty()) return false;
      const OpInfo* op = matchOperator(u.user, OperatorRegistry::global());
      if (op && op->mutates) return false;
    }
  return true;
}

// The values `n` reads from outside itself: its inputs, then what the nodes of its blocks
// read from outside `n` (a shape check's message constants).
std::vector<Value*> freeInputs(const Node* n) {
  std::vector<Value*> out(n->inputs().begin(), n->inputs().end());
  std::function<void(const Block*)> walk = [&](const Block* b) {
    for (const Node* m : b->nodes()) {
      for (Value* v : m->inputs()) {
        const Node* d = v->node();
        bool inside = false;
        for (const Block* db = d->owningBlock(); db;
             db = db->owningNode() ? db->owningNode()->owningBlock() : nullptr)
          if (db->owningNode() == n) inside = true;
        if (!inside && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
      }
      for (const Block* sb : m->blocks()) walk(sb);
    }
    for (Value* v : b->outputs())
      if (std::find(out.begin(), out.end(), v) == out.end() && v->node()->owningBlock() != b)
        out.push_back(v);
  };
  for (const Block* b : n->blocks()) walk(b);
  return out;
}

bool isContainer(const TypePtr& t) {
  return t->kind() == TypeKind::ListType || t->kind() == TypeKind::DictType;
}

class Partitioner {
 public:
  Partitioner(Graph& graph, const PartitionOptions& o)
      : graph_(graph), o_(o), mayBeNested_(passes::valuesThatMayBeNested(graph)) {}

  PartitionReport run() {
    partitionBlock(graph_.block());
    return std::move(report_);
  }

  // Why the engine does not take `n` ("" when it does).
  std::string whyNot(const Node& n, const OpInfo* op) const {
    if (isShapeCheck(n) && !fromShapes(n.input(0), 0))
      return "a check on tensor values runs in the interpreter";
    if (!n.blocks().empty() && !isShapeCheck(n))
      return fmt::format("{} (control flow) runs in the interpreter", n.kind().toQualString());
    if (forcedOut_.count(&n)) return "its non-tensor result is read outside the engine";
    if (writesOutside_.count(&n))
      return "writes in place (or views) a value from outside the engine: stays with the "
             "interpreter, which holds that value";
    if (executedInTorch(n, op)) return "listed in torch_executed_ops";
    for (const Value* in : n.inputs())
      if (mayBeNested_.count(in))  // Note [Values that may be nested] in passes/lower_nested.cpp
        return "reads a value that may be a nested tensor at run time";
    if (!isConvertible(n, op)) return "no engine converter";
    if (op && readsValuesIntoNumbers(*op))
      for (const Value* in : n.inputs())
        if (in->type()->kind() == TypeKind::TensorType && !tensorFromShapes(in, 0))
          return "reads tensor values into a number, which an engine would keep per input "
                 "signature";
    return "";
  }

  std::vector<convert::UnsupportedOp> unsupported(const Block* b) const {
    std::vector<convert::UnsupportedOp> out;
    collect(b, out);
    return out;
  }

 private:
  void collect(const Block* b, std::vector<convert::UnsupportedOp>& out) const {
    for (const Node* n : b->nodes()) {
      if (!isShapeCheck(*n))
        for (const Block* sub : n->blocks()) collect(sub, out);
      if (n->kind() == prim::Constant || (b == graph_.block() && isPacking(n))) continue;
      const OpInfo* op = matchOperator(n, OperatorRegistry::global());
      std::string why = whyNot(*n, op);
      if (why.empty()) continue;
      out.push_back(
          {op ? op->key : n->kind().toQualString() + (n->blocks().empty() ? "" : " (control flow)"),
           placeOf(*n)});
    }
  }

  // True when tensor `v` is computed from sizes and constants only (a traced graph's
  // NumToTensor(size(x, 0)) and its arithmetic: `int(x.size(0) // 2)`).
  static bool tensorFromShapes(const Value* v, int depth) {
    if (depth > 64) return false;
    const Node* d = v->node();
    if (d->kind() == prim::Constant) return true;
    if (d->kind() == prim::Param || !d->blocks().empty()) return false;
    if (d->kind() == prim::NumToTensor) return fromShapes(d->input(0), depth + 1);
    const OpInfo* op = matchOperator(d, OperatorRegistry::global());
    if (!op || op->mutates || op->nondeterministic || readsValuesIntoNumbers(*op)) return false;
    for (const Value* in : d->inputs())
      if (in->type()->kind() == TypeKind::TensorType ? !tensorFromShapes(in, depth + 1)
                                                     : !fromShapes(in, depth + 1))
        return false;
    return true;
  }

  // True when `v` follows from tensor sizes, constants and non-tensor inputs only (never from
  // tensor values): a shape check on it can be decided once per input signature.
  static bool fromShapes(const Value* v, int depth) {
    if (depth > 64) return false;
    const Node* d = v->node();
    if (d->kind() == prim::Constant || d->kind() == prim::Param)
      return v->type()->kind() != TypeKind::TensorType;
    static const std::unordered_set<std::string> metadata = {
        "aten::size", "aten::dim", "aten::numel", "prim::dtype", "aten::len", "prim::shape"};
    const std::string k = d->kind().toQualString();
    if (metadata.count(k) && d->inputs().size() >= 1 &&
        d->input(0)->type()->kind() == TypeKind::TensorType) {
      for (size_t i = 1; i < d->inputs().size(); ++i)
        if (!fromShapes(d->input(i), depth + 1)) return false;
      return true;
    }
    if (!d->blocks().empty() || d->kind() == Symbol::fromQualString("aten::Int") ||
        d->kind() == Symbol::fromQualString("aten::item") ||
        d->kind() == Symbol::fromQualString("aten::Bool") ||
        d->kind() == Symbol::fromQualString("aten::Float") ||
        d->kind() == Symbol::fromQualString("aten::is_nonzero"))
      return false;
    for (const Value* in : d->inputs()) {
      if (in->type()->kind() == TypeKind::TensorType) return false;
      if (!fromShapes(in, depth + 1)) return false;
    }
    return true;
  }

  bool executedInTorch(const Node& n, const OpInfo* op) const {
    for (const auto& s : o_.torchExecutedOps) {
      if (op && (s == op->key || s == op->overloadKey || s == op->schema.name())) return true;
      if (s == n.kind().toQualString()) return true;
    }
    return false;
  }

  bool supported(const Node& n) const {
    const OpInfo* op = matchOperator(&n, OperatorRegistry::global());
    return whyNot(n, op).empty();
  }

  // True when a node outside `run` reads `v` (a use inside the blocks of a run's node, such
  // as a shape check's message, is inside).
  static bool usedOutside(const Value* v, const std::unordered_set<const Node*>& run) {
    for (const Use& u : v->uses()) {
      const Node* n = u.user;
      while (n && !run.count(n)) n = n->owningBlock()->owningNode();
      if (!n) return true;
    }
    return false;
  }

  // Runs of a block (nested blocks already partitioned). Nodes whose container result escapes
  // are forced out and the runs recomputed.
  std::vector<std::vector<Node*>> runsOf(Block* b) {
    while (true) {
      std::vector<std::vector<Node*>> runs;
      std::vector<Node*> cur;
      std::unordered_set<const Node*> inCur;
      auto close = [&] {
        if (!cur.empty()) runs.push_back(cur);
        cur.clear();
        inCur.clear();
      };
      auto inputsOk = [&](const Node* n) {
        for (const Value* v : freeInputs(n)) {
          if (inCur.count(v->node()) || isConstantLike(v->node())) continue;
          if (!allowedBoundaryType(v->type(), o_.tensorBoundaries)) return false;
        }
        return true;
      };
      for (Node* n : b->nodes()) {
        if (isConstantLike(n)) continue;
        if (!supported(*n)) {
          close();
          continue;
        }
        if (!inputsOk(n)) {
          close();
          if (!inputsOk(n)) continue;  // reads a list/object from the interpreter: stays there
        }
        cur.push_back(n);
        inCur.insert(n);
      }
      close();
      bool again = false;
      for (const auto& r : runs) {
        std::unordered_set<const Node*> set(r.begin(), r.end());
        again |= forceOutOutsideWrites(r, set);
        for (const Node* n : r)
          for (const Value* o : n->outputs())
            if ((isContainer(o->type()) ||
                 (o_.tensorBoundaries && o->type()->kind() != TypeKind::TensorType)) &&
                usedOutside(o, set)) {
              forcedOut_.insert(n);
              again = true;
            }
      }
      if (!again) return runs;
    }
  }

  // Note [In-place writes at an engine's edge]
  // An engine computes its outputs from its inputs; a write into one of its inputs (or into a
  // view of one) would be a side effect the graph cannot see: the engine node may be removed
  // as dead when it has no other output (`s = zeros(n); s[1:] = v` became `[1, 1, 1, 1]`
  // instead of `[1, -9, -9, -9]` in a compiled beam search), and an engine may run on copies
  // of its inputs. So a node that writes a tensor whose alias root (followed back through the
  // run's views and in-place ops) comes from outside the run leaves the run, together with the
  // view and in-place nodes between it and that root; they run in the interpreter, on the
  // value itself. Writes into tensors the run made stay in the engine.
  bool forceOutOutsideWrites(const std::vector<Node*>& run,
                             const std::unordered_set<const Node*>& set) {
    bool changed = false;
    for (Node* n : run) {
      const OpInfo* op = matchOperator(n, OperatorRegistry::global());
      if (!op || !op->mutates) continue;
      const auto& args = op->schema.arguments();
      auto written = [&](size_t i) {
        return i < args.size() && args[i].aliasInfo() && args[i].aliasInfo()->isWrite();
      };
      bool schemaSays = false;
      for (size_t i = 0; i < args.size(); ++i) schemaSays |= written(i);
      for (size_t i = 0; i < n->inputs().size(); ++i) {
        // The written arguments (every tensor one when the schema does not say which).
        if (schemaSays ? !written(i) : n->input(i)->type()->kind() != TypeKind::TensorType)
          continue;
        std::vector<Node*> chain{n};
        if (!rootOutside(n->input(i), set, chain, 0)) continue;
        for (Node* c : chain) changed |= writesOutside_.insert(c).second;
      }
    }
    return changed;
  }

  // True when `v` may alias a tensor defined outside `set`: it is, or it is the result of a
  // view or in-place node of `set` (OpInfo::returnsAlias) on such a tensor. The aliasing nodes
  // passed are added to `chain`.
  static bool rootOutside(Value* v, const std::unordered_set<const Node*>& set,
                          std::vector<Node*>& chain, int depth) {
    Node* d = v->node();
    if (!set.count(d)) return !isConstantLike(d) && v->type()->kind() == TypeKind::TensorType;
    if (depth > 256) return true;
    const OpInfo* op = matchOperator(d, OperatorRegistry::global());
    if (!op || !op->returnsAlias) return false;
    bool outside = false;
    for (size_t i = 0; i < d->inputs().size(); ++i) {
      Value* in = d->inputs()[i];
      if (in->type()->kind() == TypeKind::TensorType && op->schema.argumentMayAliasReturn(i) &&
          rootOutside(in, set, chain, depth + 1))
        outside = true;
    }
    if (outside) chain.push_back(d);
    return outside;
  }

  void partitionBlock(Block* b) {
    for (Node* n : b->nodes()) {
      if (isShapeCheck(*n)) continue;  // taken whole, or left whole to the interpreter
      for (Block* sub : n->blocks()) partitionBlock(sub);
    }
    std::vector<std::vector<Node*>> runs = runsOf(b);
    std::unordered_set<const Node*> inRuns;
    for (const auto& r : runs) inRuns.insert(r.begin(), r.end());
    // Segments in block order: interpreter stretches between the runs, and the runs.
    constexpr size_t kNoRun = static_cast<size_t>(-1);
    std::vector<std::pair<SegmentReport, size_t>> order;  // (interpreter report, or run index)
    std::vector<Node*> interp;
    size_t next = 0;
    auto flushInterp = [&] {
      if (interp.empty()) return;
      SegmentReport s;
      s.numNodes = interp.size();
      s.place = placeOf(*interp.front());
      const OpInfo* op = matchOperator(interp.front(), OperatorRegistry::global());
      std::string why = whyNot(*interp.front(), op);
      if (why.empty()) why = "reads a value the engine cannot take as an input";
      s.reason = fmt::format("{} ({})", why, op ? op->key : interp.front()->kind().toQualString());
      order.push_back({std::move(s), kNoRun});
      interp.clear();
    };
    for (Node* n : b->nodes()) {
      if (isConstantLike(n)) continue;
      if (inRuns.count(n)) {
        flushInterp();
        if (next < runs.size() && runs[next].front() == n)
          order.push_back({SegmentReport(), next++});
        continue;
      }
      if (b == graph_.block() && isPacking(n)) {
        ++report_.packingNodes;
        continue;
      }
      interp.push_back(n);
    }
    flushInterp();
    // The whole method in one run: one engine whatever its size (Torch-TensorRT converts a
    // fully supported graph without partitioning it).
    const bool whole = b == graph_.block() && order.size() == 1 && order.front().second != kNoRun;
    for (auto& [s, r] : order)
      report_.segments.push_back(r == kNoRun ? std::move(s) : convertRun(runs[r], whole));
  }

  // A node that only packs the method's outputs (a tuple, list or dict returned) or unpacks
  // a tuple input: the calling convention, not work for a segment.
  bool isPacking(const Node* n) const {
    const Symbol k = n->kind();
    if (k == prim::TupleConstruct || k == prim::ListConstruct || k == prim::DictConstruct) {
      for (const Value* o : n->outputs())
        for (const Use& u : o->uses())
          if (u.user != graph_.block()->returnNode() &&
              !(u.user->kind() != prim::TupleUnpack && isPacking(u.user)))
            return false;
      return true;
    }
    if (k == prim::TupleUnpack) return n->input(0)->node()->kind() == prim::Param;
    // The guards of a compiled specialization on an Optional input (`if x is not None:
    // raise`, passes::specialize): the calling convention too.
    if ((k == Symbol::aten("__is__") || k == Symbol::aten("__isnot__")) &&
        n->inputs().size() == 2 && n->input(0)->node()->kind() == prim::Param &&
        n->input(1)->type()->kind() == TypeKind::NoneType)
      return true;
    if (isShapeCheck(*n) && n->input(0)->node()->owningBlock() == graph_.block()) {
      const Node* c = n->input(0)->node();
      return (c->kind() == Symbol::aten("__is__") || c->kind() == Symbol::aten("__isnot__")) &&
             isPacking(c);
    }
    return false;
  }

  SegmentReport convertRun(const std::vector<Node*>& run, bool wholeMethod) {
    SegmentReport s;
    s.numNodes = run.size();
    s.place = placeOf(*run.front());
    if (run.size() < o_.minBlockSize && !wholeMethod) {
      s.reason = fmt::format("{} node{}, fewer than min_block_size {}", run.size(),
                             run.size() == 1 ? "" : "s", o_.minBlockSize);
      return s;
    }
    // A run that computes no tensor (sizes, int arithmetic) costs more as an engine call
    // than in the interpreter.
    bool tensorWork = false;
    for (const Node* n : run)
      for (const Value* o : n->outputs()) tensorWork |= o->type()->kind() == TypeKind::TensorType;
    if (!tensorWork) {
      s.reason = "computes no tensor (shape arithmetic only)";
      return s;
    }
    std::unordered_set<const Node*> set(run.begin(), run.end());
    auto sub = std::make_shared<Graph>();
    std::unordered_map<const Value*, Value*> map;
    std::vector<Value*> inputs, outputs;
    std::unordered_map<size_t, size_t> profileOf;  // engine input -> graph input
    for (Node* n : run) {
      for (Value* v : freeInputs(n)) {
        if (map.count(v)) continue;
        if (isConstantLike(v->node())) {
          for (Value* cv : v->node()->inputs()) {  // the list's constant elements
            if (map.count(cv)) continue;
            Node* c = sub->insertNode(
                sub->createClone(cv->node(), [](Value*) -> Value* { return nullptr; }));
            map[cv] = c->output();
          }
          Node* c =
              sub->insertNode(sub->createClone(v->node(), [&](Value* x) { return map.at(x); }));
          map[v] = c->output();
          continue;
        }
        Value* in = sub->addInput()->copyMetadata(v);
        map[v] = in;
        const auto& gin = graph_.inputs();
        for (size_t gi = 0; gi < gin.size(); ++gi)
          if (gin[gi] == v && o_.inputProfiles.count(gi)) profileOf[inputs.size()] = gi;
        inputs.push_back(v);
      }
      Node* c = sub->insertNode(sub->createClone(n, [&](Value* x) { return map.at(x); }));
      for (size_t i = 0; i < n->outputs().size(); ++i) map[n->output(i)] = c->output(i);
    }
    for (Node* n : run)
      for (Value* o : n->outputs())
        if (usedOutside(o, set)) {
          sub->registerOutput(map.at(o));
          outputs.push_back(o);
        }
    s.numInputs = inputs.size();
    s.numOutputs = outputs.size();
    std::shared_ptr<Engine> engine;
    try {
      NetworkDefinition net = convertToNetwork(sub);
      EngineOptions eo;
      eo.bf16 = o_.bf16;
      eo.profiles.resize(inputs.size());
      for (const auto& [ei, gi] : profileOf) eo.profiles[ei] = o_.inputProfiles.at(gi);
      const size_t before = net.layers().size();
      engine = std::make_shared<Engine>(std::move(net), std::move(eo));
      s.fusedAway = before - engine->network().layers().size();
    } catch (const Error& e) {
      std::string msg = e.what();
      s.reason = "conversion failed: " + msg.substr(0, msg.find('\n'));
      return s;
    }
    s.engine = true;
    s.layers = engine->network().summary();
    s.built = engine;
    Node* e = graph_.create(executeEngineSymbol(), inputs, outputs.size());
    e->ival_(engineAttribute(), IValue::capsule(engine));
    if (run.front()->sourceRange()) e->setSourceRange(run.front()->sourceRange());
    e->setScope(run.front()->scope());
    e->insertAfter(run.back());
    for (size_t i = 0; i < outputs.size(); ++i) {
      e->output(i)->copyMetadata(outputs[i]);
      std::vector<Use> uses = outputs[i]->uses();
      for (const Use& u : uses)
        if (!set.count(u.user)) u.user->replaceInput(u.offset, e->output(i));
    }
    for (auto it = run.rbegin(); it != run.rend(); ++it) (*it)->destroy();
    return s;
  }

  Graph& graph_;
  const PartitionOptions& o_;
  PartitionReport report_;
  std::unordered_set<const Value*> mayBeNested_;
  std::unordered_set<const Node*> forcedOut_;
  std::unordered_set<const Node*> writesOutside_;  // Note [In-place writes at an engine's edge]
};

}  // namespace

std::vector<convert::UnsupportedOp> findEngineUnsupported(const Graph& graph,
                                                          const PartitionOptions& options) {
  Partitioner p(const_cast<Graph&>(graph), options);
  return p.unsupported(graph.block());
}

PartitionReport partitionGraph(Graph& graph, const PartitionOptions& options) {
  registerEngineKernel();
  std::vector<convert::UnsupportedOp> unsupported;
  {
    Partitioner pre(graph, options);
    unsupported = pre.unsupported(graph.block());
    if (options.requireFullCompilation && !unsupported.empty()) {
      std::string details;
      for (const auto& u : unsupported) details += "  " + u.str() + "\n";
      details.pop_back();
      throw UnsupportedError(
          fmt::format("require_full_compilation: {} node{} cannot run in the engine; first: {}",
                      unsupported.size(), unsupported.size() == 1 ? "" : "s",
                      unsupported.front().str()),
          "", details);
    }
  }
  Partitioner p(graph, options);
  PartitionReport report = p.run();
  // What only fed the nodes the engines took is dead now: the int[] arguments of every
  // convolution (prim::ListConstruct), which the interpreter otherwise built on each call
  // around the engine (209 lists per call of mobilenet_v2, ~0.1 ms of its 5).
  eliminateDeadCode(graph);
  report.unsupported = std::move(unsupported);
  if (options.requireFullCompilation && report.numInterpreterSegments() > 0) {
    std::string details;
    for (const auto& s : report.segments)
      if (!s.engine)
        details += fmt::format("  {} nodes at {}: {}\n", s.numNodes, s.place, s.reason);
    if (!details.empty()) details.pop_back();
    throw UnsupportedError("require_full_compilation: part of the graph stays in the interpreter",
                           "", details);
  }
  return report;
}

}  // namespace torchless::engine
