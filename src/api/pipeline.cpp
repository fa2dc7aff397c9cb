// The execution pipeline (Note [Execution pipeline] in api/pipeline.h).
#include "api/pipeline.h"

#include "api/freeze.h"
#include "convert/engine/layer_exec.h"
#include "core/error.h"
#include "ir/operator_registry.h"
#include "passes/passes.h"
#include "runtime/kernel.h"
#include "runtime/op_observer.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>

namespace torchless {

namespace {

// ---- Note [Specialization]: recording property reads ----

const Symbol kRecordFact = Symbol::fromQualString("torchless::record_fact");

// Values seen per fact slot during one profiling run (one per thread).
struct FactRecorder {
  enum : uint8_t { kUnseen, kSeen, kVaries };
  std::vector<uint8_t> state;
  std::vector<IValue> values;
};
thread_local FactRecorder* tRecorder = nullptr;

void registerRecordFactKernel() {
  static std::once_flag once;
  std::call_once(once, [] {
    // torchless::record_fact(value, int slot) -> (): only in the instrumented copies below.
    KernelRegistry::global().registerNodeKernel(kRecordFact, [](const Node& n) -> Operation {
      const auto slot = static_cast<size_t>(toIValue(n.input(1))->toInt());
      return [slot](Stack& stack) {
        drop(stack, 1);
        IValue v = pop(stack);
        FactRecorder* r = tRecorder;
        if (!r || slot >= r->state.size()) return;
        if (r->state[slot] == FactRecorder::kUnseen) {
          r->state[slot] = FactRecorder::kSeen;
          r->values[slot] = std::move(v);
        } else if (r->state[slot] == FactRecorder::kSeen && !r->values[slot].equals(v)) {
          r->state[slot] = FactRecorder::kVaries;
        }
      };
    });
  });
}

void collectFacts(Block* b, std::vector<Node*>& out) {
  for (Node* n : b->nodes()) {
    for (Block* sub : n->blocks()) collectFacts(sub, out);
    if (passes::isTensorPropertyRead(*n)) out.push_back(n);
  }
}

bool readsTensorProperties(const Graph& g) {
  std::vector<Node*> facts;
  collectFacts(const_cast<Graph&>(g).block(), facts);
  if (!facts.empty()) return true;
  for (const Value* in : g.inputs())
    if (in->type()->kind() == TypeKind::OptionalType) return true;
  return false;
}

IValue runGraphCode(Code& code, size_t numOutputs, const ObjectPtr& self,
                    std::vector<IValue> inputs) {
  inputs.insert(inputs.begin(), IValue(self));
  Stack stack = std::move(inputs);
  code.run(stack);
  if (numOutputs == 1) return pop(stack);
  std::vector<IValue> outs(stack.end() - static_cast<std::ptrdiff_t>(numOutputs), stack.end());
  return IValue(TupleImpl::create(std::move(outs)));
}

// Runs an instrumented copy of `frozen` on `inputs` (self excluded), then turns the copy into
// the specialization for their signature. Returns it and the call's output.
std::pair<std::shared_ptr<ExecutionPlan::Specialization>, IValue> specializeFor(
    const std::shared_ptr<Graph>& frozen, const std::string& qualname, const ObjectPtr& self,
    const engine::PartitionOptions& options, const std::vector<IValue>& inputs, bool guard) {
  registerRecordFactKernel();
  BuildSpan span("specialize", qualname);
  auto sp = std::make_shared<ExecutionPlan::Specialization>();
  appendSignature(inputs, sp->signature);
  std::shared_ptr<Graph> g = frozen->copy();
  std::vector<Node*> facts;
  collectFacts(g->block(), facts);
  // A read of a value whose properties the signature does not settle is left to run.
  {
    const std::unordered_set<const Node*> unsettled = passes::propertyReadsNotSettled(*g);
    facts.erase(std::remove_if(facts.begin(), facts.end(),
                               [&](const Node* f) { return unsettled.count(f) > 0; }),
                facts.end());
  }
  std::vector<Node*> records;
  for (size_t i = 0; i < facts.size(); ++i) {
    Node* f = facts[i];
    WithInsertPoint guard(f);
    Value* slot = g->insertConstant(IValue(static_cast<int64_t>(i)));
    Node* rec = g->create(kRecordFact, {f->output(), slot}, 0);
    rec->insertAfter(f);
    records.push_back(rec);
  }
  FactRecorder recorder;
  recorder.state.assign(facts.size(), FactRecorder::kUnseen);
  recorder.values.resize(facts.size());
  IValue output;
  {
    Code code(g, qualname);
    struct Scope {
      FactRecorder* prev;
      explicit Scope(FactRecorder* r) : prev(tRecorder) { tRecorder = r; }
      ~Scope() { tRecorder = prev; }
    } scope(&recorder);
    output = runGraphCode(code, g->outputs().size(), self, inputs);
  }
  for (Node* r : records) r->destroy();
  std::vector<std::pair<Node*, IValue>> known;
  for (size_t i = 0; i < facts.size(); ++i)
    if (recorder.state[i] == FactRecorder::kSeen) known.emplace_back(facts[i], recorder.values[i]);
  std::vector<std::optional<bool>> inputIsNone(g->inputs().size());
  for (size_t i = 0; i < inputs.size() && i + 1 < inputIsNone.size(); ++i)
    inputIsNone[i + 1] = inputs[i].isNone();
  std::vector<passes::SignatureGuard> guards;
  for (size_t i = 0; i < inputs.size() && i + 1 < g->inputs().size(); ++i) {
    passes::SignatureGuard sg;
    sg.input = i + 1;
    if (inputs[i].isNone() && g->inputs()[i + 1]->type()->kind() == TypeKind::OptionalType) {
      sg.isNone = true;
    } else if (inputs[i].isTensor()) {
      sg.scalarType = inputs[i].toTensor().scalarType();
      sg.rank = inputs[i].toTensor().dim();
    } else {
      continue;
    }
    guards.push_back(sg);
  }
  passes::specialize(*g, known, inputIsNone, guard ? &guards : nullptr);
  sp->graph = g;
  BuildSpan partitionSpan("partition", qualname);
  sp->report = engine::partitionGraph(*g, options);
  passes::fuseConvActivation(*g);  // what stays in the interpreter
  sp->code = std::make_unique<Code>(g, qualname);
  return {std::move(sp), std::move(output)};
}

void appendSignatureOf(const IValue& v, std::vector<int64_t>& out, int depth) {
  if (v.isNone()) {
    out.push_back(1);
  } else if (v.isTensor()) {
    const Tensor& t = v.toTensor();
    out.push_back(2);
    out.push_back(static_cast<int64_t>(t.scalarType()) * 1024 + t.dim());
  } else if ((v.isTuple() || v.isList()) && depth < 4) {
    const std::vector<IValue>& elems = v.isTuple() ? v.toTuple()->elements : v.toList()->list;
    out.push_back(v.isTuple() ? 3 : 4);
    if (elems.size() > 16) {
      out.push_back(-1);
      return;
    }
    out.push_back(static_cast<int64_t>(elems.size()));
    for (const IValue& e : elems) appendSignatureOf(e, out, depth + 1);
  } else {
    out.push_back(5 + static_cast<int64_t>(v.tag()));
  }
}

// True for a `torchless.Engine` object (the engines of a `torchless compile` archive):
// reading one is pure, its engine never changes.
bool isEngineObject(const Value* v) {
  static const std::string kEngineClass = "__torch__.torch.classes.torchless.Engine";
  const auto* c = dynamic_cast<const ClassType*>(v->type().get());
  return c != nullptr && c->name() == kEngineClass;
}

// True when the graph calls the engines of a compiled archive (torchless::execute_engine on
// an Engine attribute of self), which `torchless compile` wrote already frozen and partitioned.
bool callsCompiledEngines(const Block* b) {
  for (const Node* n : b->nodes()) {
    if (n->kind() == prim::GetAttr && isEngineObject(n->output())) return true;
    for (const Block* sub : n->blocks())
      if (callsCompiledEngines(sub)) return true;
  }
  return false;
}

// True when the only attributes the graph touches are reads of Engine objects, and it calls
// no method or function (which could touch others): running it leaves the module as it was.
bool onlyReadsEngines(const Block* b) {
  for (const Node* n : b->nodes()) {
    const Symbol k = n->kind();
    if (k == prim::SetAttr || k == prim::CallMethod || k == prim::CallFunction) return false;
    if (k == prim::GetAttr && !isEngineObject(n->output())) return false;
    for (const Block* sub : n->blocks())
      if (!onlyReadsEngines(sub)) return false;
  }
  return true;
}

// True when some node of the graph reads or writes an attribute of the module (the method
// keeps state): an attribute of `self` or of an object reached from it. The attributes of an
// object the method creates (prim::CreateObject, a TorchScript class instance) are its own
// values, as torch.jit.freeze leaves them.
// True when object `obj` is self, an object the method creates, or an attribute chain from
// one of them, through casts of Optionals and the outputs of ifs whose every branch gives such
// an object (torchvision's MultiScaleRoIAlign: `map_levels` is built on the first call,
// else the attribute, `unchecked_cast` from Optional).
bool ownedObject(const Value* obj, const Value* self, int depth = 0);

// Element `index` of tuple `tuple` is owned (ownedObject): through TupleConstruct, casts and
// the outputs of ifs (ImageList returned in a tuple by GeneralizedRCNNTransform).
bool ownedElement(const Value* tuple, size_t index, const Value* self, int depth) {
  if (depth > 64) return false;
  const Node* n = tuple->node();
  if (n->kind() == prim::TupleConstruct)
    return index < n->inputs().size() && ownedObject(n->input(index), self, depth + 1);
  if (n->kind() == prim::unchecked_cast) return ownedElement(n->input(0), index, self, depth + 1);
  if (n->kind() == prim::If) {
    size_t i = 0;
    while (n->output(i) != tuple) ++i;
    for (const Block* b : n->blocks()) {
      const Value* v = b->outputs().at(i);
      if (v->node()->kind() != prim::Uninitialized && !ownedElement(v, index, self, depth + 1))
        return false;
    }
    return true;
  }
  return false;
}

bool ownedObject(const Value* obj, const Value* self, int depth) {
  if (obj == self) return true;
  if (depth > 64) return false;
  const Node* n = obj->node();
  if (n->kind() == prim::CreateObject) return true;
  if (n->kind() == prim::GetAttr || n->kind() == prim::unchecked_cast)
    return ownedObject(n->input(0), self, depth + 1);
  if (n->kind() == prim::TupleUnpack) {
    size_t i = 0;
    while (n->output(i) != obj) ++i;
    return ownedElement(n->input(0), i, self, depth + 1);
  }
  if (n->kind() == prim::TupleIndex) {
    auto index = toIValue(n->input(1));
    return index && index->isInt() &&
           ownedElement(n->input(0), static_cast<size_t>(index->toInt()), self, depth + 1);
  }
  if (n->kind() == prim::If) {
    size_t i = 0;
    while (n->output(i) != obj) ++i;
    for (const Block* b : n->blocks()) {
      const Value* v = b->outputs().at(i);
      // A branch that raises gives an uninitialized value nobody reads.
      if (v->node()->kind() != prim::Uninitialized && !ownedObject(v, self, depth + 1))
        return false;
    }
    return true;
  }
  return false;
}

// True when `obj` is an object the method creates, or an attribute chain from one (state of
// the call, not of the module).
bool createdObject(const Value* obj) {
  while (obj->node()->kind() == prim::GetAttr) obj = obj->node()->input(0);
  return obj->node()->kind() == prim::CreateObject;
}

bool touchesAttributes(const Block* b, const Value* self) {
  for (const Node* n : b->nodes()) {
    if (n->kind() == prim::GetAttr || n->kind() == prim::SetAttr) {
      if (!createdObject(n->input(0))) return true;
    }
    for (const Block* sub : n->blocks())
      if (touchesAttributes(sub, self)) return true;
  }
  return false;
}

// True when every attribute the graph reads or writes is reached from `self` (or from an
// object the method creates): the chains of a frozen method that keeps module state, which
// address the same attributes by name in the module the graph was frozen from.
bool attributesHangOffSelf(const Block* b, const Value* self) {
  for (const Node* n : b->nodes()) {
    if ((n->kind() == prim::GetAttr || n->kind() == prim::SetAttr) &&
        !ownedObject(n->input(0), self))
      return false;
    for (const Block* sub : n->blocks())
      if (!attributesHangOffSelf(sub, self)) return false;
  }
  return true;
}

bool writesAttributes(const Block* b) {
  for (const Node* n : b->nodes()) {
    if (n->kind() == prim::SetAttr) return true;
    for (const Block* sub : n->blocks())
      if (writesAttributes(sub)) return true;
  }
  return false;
}

// The attribute paths ("state", "sub.h") that the module's other methods write (their calls
// inlined): freezing `name` must not fold them, or a call of `reset_states()` / `set_x()`
// would not reach the next call of `name` (Note [Module state in a frozen plan]). Pickling's
// __setstate__ / __getstate__ only run at load and save.
std::vector<std::string> attributesWrittenElsewhere(const Module& module, const std::string& name) {
  std::set<std::string> paths;
  for (const std::string& m : module.methodNames()) {
    if (m == name || m == "__setstate__" || m == "__getstate__") continue;
    const GraphFunction* fn = module.findMethod(m);
    if (!fn) continue;
    std::shared_ptr<Graph> g = fn->graph()->copy();
    try {
      passes::inlineCalls(*g);
      for (const std::string& p : passes::mutatedAttributes(*g)) paths.insert(p);
    } catch (const Error&) {
      // A method that cannot be analysed is left out, as before: `name` folds what it reads.
    }
  }
  return {paths.begin(), paths.end()};
}

}  // namespace

std::shared_ptr<ExecutionPlan> buildExecutionPlan(const Module& module, const std::string& name,
                                                  const PipelineOptions& options) {
  const GraphFunction* fn = module.findMethod(name);
  if (!fn) throw module.noSuchMethod(name);
  auto plan = std::make_shared<ExecutionPlan>();
  if (callsCompiledEngines(fn->graph()->block())) {
    // Freezing would deep-copy the engines' weights and find nothing left to fold.
    plan->notFrozen = "a compiled archive: its engines run as written";
    plan->graph = fn->graph();
    plan->self = module.object();
    plan->qualname = fn->qualname();
    return plan;
  }
  Module frozen;
  try {
    BuildSpan span("freeze", fn->qualname());
    FreezeOptions fo;
    if (name != "forward") fo.preservedAttrs = {name};
    if (!options.stateInFrozenCopy)
      for (std::string& p : attributesWrittenElsewhere(module, name))
        fo.preservedAttrs.push_back(std::move(p));
    frozen = optimizeForInference(module, fo);
  } catch (const Error& e) {
    std::string msg = e.what();
    plan->notFrozen = msg.substr(0, msg.find('\n'));
  }
  const GraphFunction* ffn = frozen.defined() ? frozen.findMethod(name) : nullptr;
  bool keepsState = false;
  if (ffn && touchesAttributes(ffn->graph()->block(), ffn->graph()->inputs().at(0))) {
    keepsState = attributesHangOffSelf(ffn->graph()->block(), ffn->graph()->inputs().at(0));
    if (!keepsState) {
      plan->notFrozen = "the method reads or writes attributes of objects it does not own";
      ffn = nullptr;
    }
  }
  if (!ffn) {
    if (plan->notFrozen.empty()) plan->notFrozen = "freezing kept no such method";
    plan->graph = fn->graph();
    plan->self = module.object();
    plan->qualname = fn->qualname();
    plan->code = nullptr;  // runs through the module's own function (codeFor)
    return plan;
  }
  plan->graph = ffn->graph()->copy();
  plan->self = frozen.object();
  if (keepsState && !options.stateInFrozenCopy) {
    // Note [Module state in a frozen plan]
    plan->graph->inputs().at(0)->setType(module.object()->type);
    plan->self = module.object();
  }
  engine::PartitionOptions po = options.partition;
  // Profiles are given per method input (self excluded); the graph's input 0 is self.
  std::unordered_map<size_t, engine::InputProfile> byGraphInput;
  for (const auto& [i, p] : po.inputProfiles) byGraphInput[i + 1] = p;
  po.inputProfiles = std::move(byGraphInput);
  plan->qualname = fn->qualname();
  plan->partitionOptions = po;
  passes::simplifyContainers(*plan->graph);  // dicts and lists built in straight lines
  if (readsTensorProperties(*plan->graph)) {
    if (!options.exampleInputs.empty()) {
      // One signature, fixed now (torchless compile): the plan's graph is its specialization.
      auto [sp, out] =
          specializeFor(plan->graph, plan->qualname, plan->self, po, options.exampleInputs, true);
      (void)out;
      plan->graph = sp->graph;
      plan->report = std::move(sp->report);
      plan->code = std::move(sp->code);
      return plan;
    }
    plan->frozenGraph = plan->graph->copy();
  }
  BuildSpan span("partition", fn->qualname());
  plan->report = engine::partitionGraph(*plan->graph, po);
  passes::fuseConvActivation(*plan->graph);  // what stays in the interpreter
  plan->code = std::make_unique<Code>(plan->graph, fn->qualname());
  return plan;
}

IValue runExecutionPlan(const ExecutionPlan& plan, std::vector<IValue> inputs) {
  TL_INTERNAL_ASSERT(plan.code != nullptr, "runExecutionPlan on a method that runs as loaded");
  if (plan.frozenGraph) {
    thread_local std::vector<int64_t> signature;
    signature.clear();
    appendSignature(inputs, signature);
    std::shared_ptr<const ExecutionPlan::Specialization> sp;
    {
      std::lock_guard<std::mutex> lock(plan.mu);
      for (const auto& s : plan.specializations)
        if (s->signature == signature) {
          sp = s;
          break;
        }
      if (!sp && plan.specializations.size() < ExecutionPlan::kMaxSpecializations) {
        auto [made, out] = specializeFor(plan.frozenGraph, plan.qualname, plan.self,
                                         plan.partitionOptions, inputs, false);
        plan.specializations.push_back(std::move(made));
        return out;
      }
    }
    if (sp)
      return runGraphCode(*sp->code, sp->graph->outputs().size(), plan.self, std::move(inputs));
  }
  return runGraphCode(*plan.code, plan.graph->outputs().size(), plan.self, std::move(inputs));
}

namespace {

// True when running the block could be seen outside its result (Note [Preparing at load]).
// Raising is not (the error is dropped, the real call raises it), nor is aten::warn: it prints
// once per call site of a compiled graph (builtin_ops.cpp), and the preparation runs the same
// compiled graphs as the calls, so a warning moves from the first call to the load.
bool observableWithin(const Block* b) {
  static const Symbol kWarn = Symbol::fromQualString("aten::warn");
  static const Symbol kPythonOp = Symbol::fromQualString("prim::PythonOp");
  static const Symbol kIgnoredPythonOp = Symbol::fromQualString("prim::IgnoredPythonOp");
  for (const Node* n : b->nodes()) {
    const Symbol k = n->kind();
    if (k == prim::Print || k == kPythonOp || k == kIgnoredPythonOp) return true;
    if (n->isNondeterministic()) return true;
    if (k != prim::RaiseException && k != kWarn) {
      const OpInfo* op = n->maybeOperator();
      if (op && op->hasSideEffects) return true;
    }
    for (const Block* sub : n->blocks())
      if (observableWithin(sub)) return true;
  }
  return false;
}

// A copy of `v` that the method may write into without touching `v`: tensors cloned (when
// contiguous, so that the copy has the same signature), tuples and lists copied element by
// element. nullopt for what cannot be copied that way.
std::optional<IValue> copyForPreparation(const IValue& v, int depth = 0) {
  if (v.isTensor()) {
    const Tensor& t = v.toTensor();
    if (!t.isContiguous()) return std::nullopt;
    return IValue(t.clone());
  }
  if ((v.isTuple() || v.isList()) && depth < 8) {
    const std::vector<IValue>& elems = v.isTuple() ? v.toTuple()->elements : v.toList()->list;
    std::vector<IValue> copies;
    copies.reserve(elems.size());
    for (const IValue& e : elems) {
      std::optional<IValue> c = copyForPreparation(e, depth + 1);
      if (!c) return std::nullopt;
      copies.push_back(std::move(*c));
    }
    if (v.isTuple()) return IValue(TupleImpl::create(std::move(copies), v.toTuple()->type));
    return IValue(ListImpl::create(v.toList()->elementType, std::move(copies)));
  }
  if (v.isNone() || v.isScalar() || v.isString() || v.isDevice()) return v;
  return std::nullopt;
}

}  // namespace

// Note [Settling run]
// The first run of a freshly built plan cost more than the later ones, though it builds
// nothing: in CPU time 1.3-2.2x the steady call for resnet50 at batch 1 / 1 thread under load
// and 2.3-3.9x on the quiet machine, 1.6-4.3x for mobilenet_v2 at batch 1 / 2 threads, up to
// 4.6x for lstm_lm (bench/RESULTS.md, 2026-12-03). perf spreads the excess over one-time work:
// symbols the call binds lazily in the dynamic loader, glibc consolidating the chunks the
// build freed on the first large allocation, the first executions of each oneDNN primitive
// (its argument tables, the first passes of its code and weights through the caches and the
// TLB). It fades within a run or two. So preparation ends with two more runs of the built
// plan, their results dropped like the others': the caller's first call is the plan's third
// run. With one, the quiet first calls were 1.0-1.95x (resnet50) and 1.15-1.77x (lstm_lm);
// with two, 1.0-1.03x and 1.05-1.36x. It costs two calls at load (resnet50: ~80 ms of a ~1 s
// build) plus the first run's excess, which moves into the load. TORCHLESS_SETTLING_RUN=N
// makes N settling runs (0: none, to compare; at most 8).
namespace {
int settlingRuns() {
  static const int runs = [] {
    const char* v = std::getenv("TORCHLESS_SETTLING_RUN");
    return v == nullptr ? 2 : std::clamp(std::atoi(v), 0, 8);
  }();
  return runs;
}
}  // namespace

bool preparePlan(const ExecutionPlan& plan, const std::vector<IValue>& inputs) {
  // A method that runs as loaded may keep module state; a compiled archive's only reads its
  // engines, and is run as loaded here too (its engines plan these inputs).
  std::unique_ptr<Code> asLoaded;
  if (!plan.code) {
    if (!onlyReadsEngines(plan.graph->block())) return false;
    asLoaded = std::make_unique<Code>(plan.graph, plan.qualname);
  }
  // A run would move the module's state on (Note [Module state in a frozen plan]).
  if (writesAttributes(plan.graph->block())) return false;
  if (observableWithin(plan.graph->block())) return false;
  if (plan.frozenGraph && observableWithin(plan.frozenGraph->block())) return false;
  // Two runs when the first one only specializes (Note [Specialization]): the second builds
  // the specialization's engine plans. Then one settling run (Note [Settling run]).
  const int runs = (plan.frozenGraph ? 2 : 1) + settlingRuns();
  BuildSpan span("prepare", plan.qualname);
  const engine::BuildForReuse forReuse;  // Note [Winograd after reuse]
  for (int i = 0; i < runs; ++i) {
    std::vector<IValue> copies;
    copies.reserve(inputs.size());
    for (const IValue& v : inputs) {
      std::optional<IValue> c = copyForPreparation(v);
      if (!c) return false;
      copies.push_back(std::move(*c));
    }
    try {
      if (asLoaded)
        (void)runGraphCode(*asLoaded, plan.graph->outputs().size(), plan.self, std::move(copies));
      else
        (void)runExecutionPlan(plan, std::move(copies));
    } catch (const Error&) {
      return false;  // the real call reports it
    }
  }
  return true;
}

void appendSignature(const std::vector<IValue>& inputs, std::vector<int64_t>& out) {
  for (const IValue& v : inputs) appendSignatureOf(v, out, 0);
}

}  // namespace torchless
