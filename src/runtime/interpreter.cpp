#include "runtime/interpreter.h"

#include "runtime/observed_run.h"

#include "core/error.h"
#include "core/out_of_memory.h"
#include "core/stack_guard.h"
#include "ir/operator_matching.h"
#include "runtime/canonicalize_ops.h"
#include "runtime/op_observer.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace torchless {

struct ExecutionState {
  std::unique_ptr<Code> code;
};

namespace {

enum class OpCode : uint8_t {
  OP,        // ops[a](stack)
  LOAD,      // push regs[a]
  LOADC,     // push constants[a]
  STORE,     // regs[a] = pop
  STOREN,    // regs[a .. a+b) = pop b values (last popped into a)
  JF,        // if !pop().toBool(): pc = a
  JMP,       // pc = a
  LOOPTEST,  // if !(regs[b] < regs[a] && regs[c]): pc = d     (a trip, b counter, c cond)
  INC,       // regs[a] = regs[a].toInt() + 1
  CALL,      // run callees[a] (its inputs are on the stack)
  CALLI,     // method ifaceMethods[a] on the object b-deep in the stack
  GETATTR,   // push pop().toObject()->slots[a]
  SETATTR,   // v = pop; pop().toObject()->slots[a] = v
  RET,
  // Only in code compiled to observe (runObserved, Note [Execution observer]):
  OPX,     // OP with inputs (b of them) and outputs told to the observer
  CALLX,   // CALL of callees[a]'s observed code, between enterCall and exitCall
  CALLIX,  // CALLI likewise
  HOOK,    // tell the observer Hook(a) of the instruction's node (block b)
  DROP,    // regs[a] = None (the value's last use is behind)
};

enum class Hook : int32_t { EnterIf, ExitIf, EnterLoop, EndIteration, ExitLoop, GetAttr, SetAttr };

const char* opName(OpCode op) {
  switch (op) {
    case OpCode::OP: return "OP";
    case OpCode::LOAD: return "LOAD";
    case OpCode::LOADC: return "LOADC";
    case OpCode::STORE: return "STORE";
    case OpCode::STOREN: return "STOREN";
    case OpCode::JF: return "JF";
    case OpCode::JMP: return "JMP";
    case OpCode::LOOPTEST: return "LOOPTEST";
    case OpCode::INC: return "INC";
    case OpCode::CALL: return "CALL";
    case OpCode::CALLI: return "CALLI";
    case OpCode::GETATTR: return "GETATTR";
    case OpCode::SETATTR: return "SETATTR";
    case OpCode::RET: return "RET";
    case OpCode::OPX: return "OPX";
    case OpCode::CALLX: return "CALLX";
    case OpCode::CALLIX: return "CALLIX";
    case OpCode::HOOK: return "HOOK";
    case OpCode::DROP: return "DROP";
  }
  return "?";
}

struct Instruction {
  OpCode op;
  int32_t a = 0, b = 0, c = 0, d = 0;
  int32_t node = -1;  // index into Impl::nodes, for error places
};

bool isStructural(Symbol k) {
  switch (k) {
    case prim::Constant:
    case prim::If:
    case prim::Loop:
    case prim::GetAttr:
    case prim::SetAttr:
    case prim::CallFunction:
    case prim::CallMethod:
    case prim::Return:
    case prim::Param: return true;
    default: return false;
  }
}

std::string placeOf(const Node* n) {
  if (n && n->sourceRange()) return n->sourceRange()->str();
  return {};
}

const GraphFunction* asGraphFunction(Function* f) { return dynamic_cast<const GraphFunction*>(f); }

std::atomic<OpObserver*> gOpObserver{nullptr};

// The OP instruction with the observer on (Note [Op observer]), out of the hot loop.
[[gnu::noinline]] void runObserved(OpObserver& obs, const Node* n, const Operation& op,
                                   Stack& stack) {
  if (n == nullptr) return op(stack);
  obs.onOpStart(*n);
  op(stack);
  obs.onOpEnd(*n);
}

}  // namespace

void setOpObserver(OpObserver* observer) { gOpObserver.store(observer); }

OpObserver* opObserver() { return gOpObserver.load(std::memory_order_relaxed); }

BuildSpan::~BuildSpan() {
  if (obs_ && std::uncaught_exceptions() == 0)
    obs_->onSpan("build", name_, detail_, start_, std::chrono::steady_clock::now());
}

struct Code::Impl {
  std::vector<Instruction> code;
  std::vector<Operation> ops;
  std::vector<const OpInfo*> opInfos;  // per ops entry, for the execution observer
  std::vector<IValue> constants;
  std::vector<const GraphFunction*> callees;
  std::vector<std::string> ifaceMethods;
  std::vector<const Node*> nodes;
  size_t numRegisters = 0;
  size_t numInputs = 0;
};

namespace {

/// Which values of block `b` (its inputs and its nodes' outputs) die after which of its nodes:
/// after their last use in `b` (a use inside a nested block counts as a use by the node that
/// holds the block), or right after their definition when unused (`atStart` for unused block
/// inputs). Values the block returns stay.
///
/// Note [Values die at their last use]
/// Every compiled graph releases these registers (DROP), as a Python program releases its
/// locals (Note [Execution observer]) and as PyTorch's interpreter moves a value out of its
/// register at its last use. Kept to the function's return, a model run as loaded held every
/// activation of a method at once: resnet50's `torchless run` had 33 MB of activations in use
/// at its peak instead of 14, and 170 MB of peak RSS instead of 156. An argument whose last use
/// is a call is dropped after it is loaded and before the callee runs, so that the callee's
/// own drops free it (a submodule's input dies inside the submodule, not after it returns).
struct DropPlan {
  std::unordered_map<const Node*, std::vector<const Value*>> after;
  std::vector<const Value*> atStart;
};

DropPlan planDrops(const Block* b) {
  DropPlan plan;
  std::unordered_map<const Node*, size_t> pos;
  std::vector<const Node*> byPos;
  for (const Node* n : b->nodes()) {
    pos[n] = byPos.size();
    byPos.push_back(n);
  }
  const size_t kReturn = byPos.size();
  auto lastUse = [&](const Value* v) -> std::optional<size_t> {
    std::optional<size_t> last;
    for (const Use& u : v->uses()) {
      const Node* user = u.user;
      while (user && user->owningBlock() != b) {
        const Block* ob = user->owningBlock();
        user = ob ? ob->owningNode() : nullptr;
      }
      if (!user) return kReturn;  // used from somewhere else: keep
      const size_t p = user == b->returnNode() ? kReturn : pos.at(user);
      last = last ? std::max(*last, p) : p;
    }
    return last;
  };
  auto note = [&](const Value* v, const Node* def) {
    const auto last = lastUse(v);
    if (!last) {
      if (def)
        plan.after[def].push_back(v);
      else
        plan.atStart.push_back(v);
    } else if (*last != kReturn) {
      plan.after[byPos[*last]].push_back(v);
    }
  };
  for (const Value* v : b->inputs()) note(v, nullptr);
  for (const Node* n : b->nodes())
    for (const Value* v : n->outputs()) note(v, n);
  return plan;
}

class Compiler {
 public:
  /// `checkCallees`: also check every function the graph calls (see checkKernels).
  Compiler(Code::Impl& impl, const Graph& graph, const std::string& name, bool observe,
           bool checkCallees)
      : impl_(impl), graph_(graph), name_(name), observe_(observe), checkCallees_(checkCallees) {}

  void compile() {
    checkKernels();
    const Block* top = graph_.block();
    allocRegs(top->inputs());
    impl_.numInputs = top->inputs().size();
    if (!top->inputs().empty())
      emit(OpCode::STOREN, regOf(top->inputs()[0]), static_cast<int32_t>(top->inputs().size()));
    emitBlock(top);
    for (const Value* v : top->outputs()) emitLoad(v);
    emit(OpCode::RET);
    impl_.numRegisters = nextReg_;
  }

 private:
  // Every node needs a kernel or compiler support; list all that lack one, at once: in this
  // graph and, when checkCallees_, in every function and method it calls (transitively), so
  // that a model whose missing operators sit in several submodules gets one error naming them
  // all (Note [Interpreter]).
  void checkKernels() {
    std::vector<std::string> missing;
    std::vector<const GraphFunction*> callees;
    collectMissing(graph_.block(), nullptr, missing, callees, &opOf_);
    const size_t own = missing.size();
    if (checkCallees_) {
      std::unordered_set<const GraphFunction*> seen(callees.begin(), callees.end());
      std::unordered_set<std::string> listed(missing.begin(), missing.end());
      for (size_t i = 0; i < callees.size(); ++i) {  // grows as callees' callees are found
        const GraphFunction* fn = callees[i];
        std::vector<std::string> found;
        std::vector<const GraphFunction*> next;
        const std::string qualname = fn->qualname();
        collectMissing(fn->graph()->block(), &qualname, found, next, nullptr);
        for (auto& m : found)
          if (listed.insert(m).second) missing.push_back(std::move(m));
        for (const GraphFunction* c : next)
          if (seen.insert(c).second) callees.push_back(c);
      }
    }
    if (missing.empty()) return;
    std::string details;
    for (const auto& m : missing) details += "  " + m + "\n";
    if (!details.empty()) details.pop_back();
    throw UnsupportedError(fmt::format("{} unsupported operator{} in {}{}", missing.size(),
                                       missing.size() == 1 ? "" : "s", name_,
                                       missing.size() > own ? " and the functions it calls" : ""),
                           "", details);
  }

  /// Appends a line per node of `b` (and its sub-blocks) that has no kernel to `missing`
  /// ("unsupported operator <schema> used at <place>", plus " in <fn>" for a callee's node),
  /// and the functions its calls reach to `callees`; records each node's operator in `opOf`.
  static void collectMissing(const Block* b, const std::string* fn,
                             std::vector<std::string>& missing,
                             std::vector<const GraphFunction*>& callees,
                             std::unordered_map<const Node*, const OpInfo*>* opOf) {
    const auto& registry = KernelRegistry::global();
    for (const Node* n : b->nodes()) {
      for (const Block* sub : n->blocks()) collectMissing(sub, fn, missing, callees, opOf);
      if (const GraphFunction* callee = calleeOf(n)) callees.push_back(callee);
      if (isStructural(n->kind())) continue;
      const OpInfo* op = matchOperator(n, OperatorRegistry::global());
      if (opOf) (*opOf)[n] = op;
      if (registry.hasKernel(*n, op)) continue;
      std::string what =
          op ? op->key : fmt::format("{} (no schema matches its inputs)", n->kind().toQualString());
      std::string where = placeOf(n);
      missing.push_back(fmt::format("unsupported operator {}{}{}", what,
                                    where.empty() ? "" : " used at " + where,
                                    fn ? " in " + *fn : ""));
    }
  }

  /// The function a prim::CallFunction / prim::CallMethod node calls when it is known before
  /// running (not an interface method); null otherwise.
  static const GraphFunction* calleeOf(const Node* n) {
    if (n->kind() == prim::CallFunction) {
      const auto* ft = n->inputs().empty() ? nullptr : n->input(0)->type()->cast<FunctionType>();
      return ft ? asGraphFunction(ft->function()) : nullptr;
    }
    if (n->kind() == prim::CallMethod && !n->inputs().empty())
      if (const auto* cls = n->input(0)->type()->cast<ClassType>())
        return asGraphFunction(cls->findMethod(n->s(attr::name)));
    return nullptr;
  }

  int32_t emit(OpCode op, int32_t a = 0, int32_t b = 0, int32_t c = 0, int32_t d = 0) {
    Instruction in{op, a, b, c, d, currentNode_};
    impl_.code.push_back(in);
    return static_cast<int32_t>(impl_.code.size() - 1);
  }
  int32_t here() const { return static_cast<int32_t>(impl_.code.size()); }

  int32_t newReg() { return static_cast<int32_t>(nextReg_++); }
  void allocRegs(const std::vector<Value*>& values) {
    for (const Value* v : values) regs_[v] = newReg();
  }
  int32_t regOf(const Value* v) {
    auto it = regs_.find(v);
    TL_INTERNAL_ASSERT(it != regs_.end(), "value %{} used before it is defined", v->debugName());
    return it->second;
  }

  void emitLoad(const Value* v) {
    if (v->node()->kind() == prim::Constant) {
      auto it = constIndex_.find(v);
      if (it == constIndex_.end()) {
        auto c = toIValue(v);
        // A graph parsed from text can hold constants whose value was not printed (a tensor
        // printed as `<Tensor>`): that is the input's problem, not an internal error.
        if (!c)
          throw Error(fmt::format("constant %{} of type {} has no value (tensor constants printed "
                                  "as <Tensor> cannot be run)",
                                  v->debugName(), v->type()->str()),
                      placeOf(v->node()));
        impl_.constants.push_back(*c);
        it = constIndex_.emplace(v, static_cast<int32_t>(impl_.constants.size() - 1)).first;
      }
      emit(OpCode::LOADC, it->second);
      return;
    }
    emit(OpCode::LOAD, regOf(v));
  }

  void emitStoreOutputs(const std::vector<Value*>& outs) {
    if (outs.empty()) return;
    emit(OpCode::STOREN, regOf(outs[0]), static_cast<int32_t>(outs.size()));
  }

  /// `loopBody`: a loop's body, whose inputs (counter and carried values) are kept until the
  /// loop ends.
  void emitBlock(const Block* b, bool loopBody = false) {
    const DropPlan plan = planDrops(b);
    auto drop = [&](const std::vector<const Value*>& values) {
      for (const Value* v : values) {
        if (loopBody && v->node() == b->paramNode()) continue;
        auto it = regs_.find(v);
        if (it != regs_.end()) emit(OpCode::DROP, it->second);  // constants have no register
      }
    };
    drop(plan.atStart);
    for (const Node* n : b->nodes()) {
      auto it = plan.after.find(n);
      dyingAtCall_ = it != plan.after.end() ? &it->second : nullptr;
      dyingNode_ = n;
      dyingSkip_ = loopBody ? b->paramNode() : nullptr;
      emitNode(n);
      dyingAtCall_ = nullptr;
      if (it != plan.after.end()) drop(it->second);
    }
  }

  void emitHook(Hook hook, size_t block = 0) {
    if (observe_) emit(OpCode::HOOK, static_cast<int32_t>(hook), static_cast<int32_t>(block));
  }

  void emitNode(const Node* n) {
    if (n->kind() == prim::Constant) return;
    impl_.nodes.push_back(n);
    const int32_t saved = currentNode_;
    currentNode_ = static_cast<int32_t>(impl_.nodes.size() - 1);
    allocRegs(n->outputs());
    switch (n->kind()) {
      case prim::If: emitIf(n); break;
      case prim::Loop: emitLoop(n); break;
      case prim::GetAttr: {
        emitLoad(n->input(0));
        emit(OpCode::GETATTR, slotOf(n, n->input(0), n->s(attr::name)));
        emitHook(Hook::GetAttr);
        emitStoreOutputs(n->outputs());
        break;
      }
      case prim::SetAttr: {
        emitLoad(n->input(0));
        emitLoad(n->input(1));
        emitHook(Hook::SetAttr);
        emit(OpCode::SETATTR, slotOf(n, n->input(0), n->s(attr::name)));
        break;
      }
      case prim::CallFunction: emitCallFunction(n); break;
      case prim::CallMethod: emitCallMethod(n); break;
      default: {
        const OpInfo* op = opOf_.at(n);
        Operation operation = KernelRegistry::global().operationFor(*n, op);
        TL_INTERNAL_ASSERT(operation != nullptr, "no kernel for {}", n->kind().toQualString());
        for (const Value* v : n->inputs()) emitLoad(v);
        impl_.ops.push_back(std::move(operation));
        impl_.opInfos.push_back(op);
        emit(observe_ ? OpCode::OPX : OpCode::OP, static_cast<int32_t>(impl_.ops.size() - 1),
             static_cast<int32_t>(n->inputs().size()));
        emitStoreOutputs(n->outputs());
      }
    }
    currentNode_ = saved;
  }

  int32_t slotOf(const Node* n, const Value* obj, const std::string& field) {
    const auto* cls = obj->type()->cast<ClassType>();
    if (!cls)
      throw Error(fmt::format("cannot access attribute '{}' of a value of type {}", field,
                              obj->type()->str()),
                  placeOf(n));
    auto slot = cls->findAttributeSlot(field);
    if (!slot)
      throw Error(fmt::format("'{}' object has no attribute '{}'", cls->name(), field), placeOf(n));
    return static_cast<int32_t>(*slot);
  }

  // prim::If: JF to else; then; JMP end; else; end.
  void emitIf(const Node* n) {
    emitLoad(n->input(0));
    int32_t jf = emit(OpCode::JF);
    const Block* thenB = n->blocks().at(0);
    const Block* elseB = n->blocks().at(1);
    emitHook(Hook::EnterIf, 0);
    emitBlock(thenB);
    for (const Value* v : thenB->outputs()) emitLoad(v);
    emitStoreOutputs(n->outputs());
    emitHook(Hook::ExitIf, 0);
    int32_t jmp = emit(OpCode::JMP);
    impl_.code[static_cast<size_t>(jf)].a = here();
    emitHook(Hook::EnterIf, 1);
    emitBlock(elseB);
    for (const Value* v : elseB->outputs()) emitLoad(v);
    emitStoreOutputs(n->outputs());
    emitHook(Hook::ExitIf, 1);
    impl_.code[static_cast<size_t>(jmp)].a = here();
  }

  // prim::Loop(trip, cond, carried...) with body block(i, carried...) -> (cond, carried...).
  void emitLoop(const Node* n) {
    const Block* body = n->blocks().at(0);
    const int32_t trip = newReg();
    const int32_t cond = newReg();
    allocRegs(body->inputs());
    const int32_t counter = regOf(body->inputs()[0]);
    const size_t carried = body->inputs().size() - 1;
    emitLoad(n->input(0));
    emit(OpCode::STORE, trip);
    emitLoad(n->input(1));
    emit(OpCode::STORE, cond);
    impl_.constants.emplace_back(int64_t{0});
    emit(OpCode::LOADC, static_cast<int32_t>(impl_.constants.size() - 1));
    emit(OpCode::STORE, counter);
    for (size_t i = 0; i < carried; ++i) emitLoad(n->input(2 + i));
    if (carried) emit(OpCode::STOREN, regOf(body->inputs()[1]), static_cast<int32_t>(carried));
    emitHook(Hook::EnterLoop);
    const int32_t head = here();
    const int32_t test = emit(OpCode::LOOPTEST, trip, counter, cond);
    emitBlock(body, /*loopBody=*/true);
    for (const Value* v : body->outputs()) emitLoad(v);
    if (carried) emit(OpCode::STOREN, regOf(body->inputs()[1]), static_cast<int32_t>(carried));
    emit(OpCode::STORE, cond);
    emit(OpCode::INC, counter);
    emitHook(Hook::EndIteration);
    emit(OpCode::JMP, head);
    impl_.code[static_cast<size_t>(test)].d = here();
    for (size_t i = 0; i < carried; ++i) emit(OpCode::LOAD, regOf(body->inputs()[1 + i]));
    emitStoreOutputs(n->outputs());
    emitHook(Hook::ExitLoop);
    if (observe_) {
      // The carried values live on in the loop's outputs only (the body's inputs it returns
      // as they are stay, as values a block returns do).
      for (size_t i = 0; i < carried; ++i) {
        const Value* v = body->inputs()[1 + i];
        const bool returned = std::any_of(v->uses().begin(), v->uses().end(), [&](const Use& u) {
          return u.user == body->returnNode();
        });
        if (!returned) emit(OpCode::DROP, regOf(v));
      }
    }
  }

  void emitCall(const Node* n, const GraphFunction* fn, size_t firstInput) {
    for (size_t i = firstInput; i < n->inputs().size(); ++i) emitLoad(n->input(i));
    // Note [Values die at their last use]: arguments whose last use is this call are on the
    // stack now; the caller lets go of them before the callee runs, so that the callee's own
    // drops free them.
    if (dyingAtCall_ && dyingNode_ == n)
      for (const Value* v : *dyingAtCall_) {
        if (v->node() == dyingSkip_) continue;
        auto it = regs_.find(v);
        if (it != regs_.end()) emit(OpCode::DROP, it->second);
      }
    impl_.callees.push_back(fn);
    emit(observe_ ? OpCode::CALLX : OpCode::CALL, static_cast<int32_t>(impl_.callees.size() - 1));
    emitStoreOutputs(n->outputs());
  }

  void emitCallFunction(const Node* n) {
    const auto* ft = n->input(0)->type()->cast<FunctionType>();
    const GraphFunction* fn = ft ? asGraphFunction(ft->function()) : nullptr;
    if (!fn) throw Error("prim::CallFunction of a value that is not a known function", placeOf(n));
    emitCall(n, fn, 1);
  }

  void emitCallMethod(const Node* n) {
    const std::string& method = n->s(attr::name);
    const TypePtr& selfType = n->input(0)->type();
    if (const auto* cls = selfType->cast<ClassType>()) {
      const GraphFunction* fn = asGraphFunction(cls->findMethod(method));
      if (!fn) throw Error(fmt::format("'{}' has no method '{}'", cls->name(), method), placeOf(n));
      emitCall(n, fn, 0);
      return;
    }
    if (selfType->kind() == TypeKind::InterfaceType) {
      for (const Value* v : n->inputs()) emitLoad(v);
      impl_.ifaceMethods.push_back(method);
      emit(observe_ ? OpCode::CALLIX : OpCode::CALLI,
           static_cast<int32_t>(impl_.ifaceMethods.size() - 1),
           static_cast<int32_t>(n->inputs().size()));
      emitStoreOutputs(n->outputs());
      return;
    }
    throw Error(
        fmt::format("cannot call method '{}' on a value of type {}", method, selfType->str()),
        placeOf(n));
  }

  Code::Impl& impl_;
  const Graph& graph_;
  const std::string& name_;
  std::unordered_map<const Value*, int32_t> regs_;
  std::unordered_map<const Value*, int32_t> constIndex_;
  std::unordered_map<const Node*, const OpInfo*> opOf_;
  size_t nextReg_ = 0;
  // The values that die at the node being emitted (Note [Values die at their last use]).
  const std::vector<const Value*>* dyingAtCall_ = nullptr;
  const Node* dyingNode_ = nullptr;
  const Node* dyingSkip_ = nullptr;  // a loop body's parameters, kept until the loop ends
  int32_t currentNode_ = -1;
  bool observe_ = false;
  bool checkCallees_ = true;
};

/// A function's graph compiled for observation (Note [Execution observer]): as it is, without
/// the execution-graph rewrite, with hooks and register drops.
struct ObservedCode {
  std::shared_ptr<Graph> graph;
  std::string name;
  Code::Impl impl;
};

/// One observed run: the observer and the observed code of each function it reached.
struct Observation {
  ExecutionObserver& observer;
  std::unordered_map<const GraphFunction*, std::unique_ptr<ObservedCode>> codes;

  /// `entry`: the run's first function, whose compile checks every function it calls.
  const ObservedCode& codeFor(const GraphFunction& fn, bool entry) {
    std::unique_ptr<ObservedCode>& c = codes[&fn];
    if (!c) {
      c = std::make_unique<ObservedCode>();
      c->graph = fn.graph();
      c->name = fn.qualname();
      Compiler(c->impl, *c->graph, c->name, /*observe=*/true, /*checkCallees=*/entry).compile();
    }
    return *c;
  }
};

void runCode(const Code::Impl& impl, const std::string& name, Stack& stack, Observation* obs);

/// codeFor(fn), compiled with Code's checkCallees (only the first compile of fn decides).
const Code& codeFor(const GraphFunction& fn, bool checkCallees);

/// A call in observed code: enterCall, the callee's observed code, exitCall.
void callObserved(Observation& o, const Node* caller, const GraphFunction& fn, Stack& stack) {
  const Graph& g = *fn.graph();
  const size_t nin = g.inputs().size();
  TL_CHECK(stack.size() >= nin, "{} takes {} arguments, got {}", fn.qualname(), nin, stack.size());
  o.observer.enterCall(caller, g, stack.data() + (stack.size() - nin), nin);
  const ObservedCode& callee = o.codeFor(fn, caller == nullptr);
  runCode(callee.impl, callee.name, stack, &o);
  const size_t nout = g.outputs().size();
  o.observer.exitCall(caller, g, stack.data() + (stack.size() - nout), nout);
}

}  // namespace

Code::Code(std::shared_ptr<Graph> graph, std::string name, bool checkCallees)
    : graph_(canonicalizeOps(graph)), name_(std::move(name)), impl_(std::make_unique<Impl>()) {
  Compiler(*impl_, *graph_, name_, /*observe=*/false, checkCallees).compile();
}

Code::~Code() = default;

void Code::run(Stack& stack) const { runCode(*impl_, name_, stack, nullptr); }

namespace {

/// The run loop of Code::run and of observed code (`obs` non-null: code compiled to observe).
void runCode(const Code::Impl& impl, const std::string& name, Stack& stack, Observation* obs) {
  TL_CHECK(stack.size() >= impl.numInputs, "{} expects {} inputs, got {}", name, impl.numInputs,
           stack.size());
  std::vector<IValue> regs(impl.numRegisters);
  size_t pc = 0;
  const Instruction* code = impl.code.data();
  try {
    for (;;) {
      const Instruction& in = code[pc];
      switch (in.op) {
        case OpCode::OP:
          if (OpObserver* obs = gOpObserver.load(std::memory_order_relaxed); obs == nullptr)
              [[likely]]
            impl.ops[static_cast<size_t>(in.a)](stack);
          else
            runObserved(*obs, in.node >= 0 ? impl.nodes[static_cast<size_t>(in.node)] : nullptr,
                        impl.ops[static_cast<size_t>(in.a)], stack);
          ++pc;
          break;
        case OpCode::LOAD:
          stack.push_back(regs[static_cast<size_t>(in.a)]);
          ++pc;
          break;
        case OpCode::LOADC:
          stack.push_back(impl.constants[static_cast<size_t>(in.a)]);
          ++pc;
          break;
        case OpCode::STORE:
          regs[static_cast<size_t>(in.a)] = pop(stack);
          ++pc;
          break;
        case OpCode::STOREN:
          for (int32_t i = in.b; i-- > 0;) regs[static_cast<size_t>(in.a + i)] = pop(stack);
          ++pc;
          break;
        case OpCode::JF: pc = pop(stack).toBool() ? pc + 1 : static_cast<size_t>(in.a); break;
        case OpCode::JMP: pc = static_cast<size_t>(in.a); break;
        case OpCode::LOOPTEST: {
          const bool go =
              regs[static_cast<size_t>(in.b)].toInt() < regs[static_cast<size_t>(in.a)].toInt() &&
              regs[static_cast<size_t>(in.c)].toBool();
          pc = go ? pc + 1 : static_cast<size_t>(in.d);
          break;
        }
        case OpCode::INC: {
          IValue& r = regs[static_cast<size_t>(in.a)];
          r = IValue(r.toInt() + 1);
          ++pc;
          break;
        }
        case OpCode::CALL:
          // Note [Stack guard]: a model that recurses without end stops here, as Python's
          // RecursionError, not with a signal.
          if (stackNearlyExhausted())
            throw ModelError(
                fmt::format("RecursionError: maximum recursion depth exceeded while "
                            "calling '{}'",
                            impl.callees[static_cast<size_t>(in.a)]->qualname()));
          // (its caller's compile checked its kernels and those of everything it calls)
          codeFor(*impl.callees[static_cast<size_t>(in.a)], /*checkCallees=*/false).run(stack);
          ++pc;
          break;
        case OpCode::CALLI: {
          const auto& method = impl.ifaceMethods[static_cast<size_t>(in.a)];
          const IValue& self = stack[stack.size() - static_cast<size_t>(in.b)];
          const auto& obj = self.toObject();
          const GraphFunction* fn = asGraphFunction(obj->type->findMethod(method));
          if (!fn) throw Error(fmt::format("'{}' has no method '{}'", obj->type->name(), method));
          codeFor(*fn).run(stack);
          ++pc;
          break;
        }
        case OpCode::GETATTR: {
          IValue obj = pop(stack);
          stack.push_back(obj.toObject()->slots[static_cast<size_t>(in.a)]);
          ++pc;
          break;
        }
        case OpCode::SETATTR: {
          IValue v = pop(stack);
          IValue obj = pop(stack);
          obj.toObject()->slots[static_cast<size_t>(in.a)] = std::move(v);
          ++pc;
          break;
        }
        case OpCode::RET: return;
        case OpCode::OPX: {
          const Node& n = *impl.nodes[static_cast<size_t>(in.node)];
          const size_t nin = static_cast<size_t>(in.b);
          const size_t base = stack.size() - nin;
          std::vector<IValue> inputs(stack.begin() + static_cast<std::ptrdiff_t>(base),
                                     stack.end());
          impl.ops[static_cast<size_t>(in.a)](stack);
          const size_t nout = n.outputs().size();
          TL_INTERNAL_ASSERT(stack.size() == base + nout, "{} pushed {} values for {} outputs",
                             n.kind().toQualString(), stack.size() - base, nout);
          obs->observer.afterOp(n, impl.opInfos[static_cast<size_t>(in.a)], inputs,
                                stack.data() + base, nout);
          ++pc;
          break;
        }
        case OpCode::CALLX:
          callObserved(*obs, impl.nodes[static_cast<size_t>(in.node)],
                       *impl.callees[static_cast<size_t>(in.a)], stack);
          ++pc;
          break;
        case OpCode::CALLIX: {
          const auto& method = impl.ifaceMethods[static_cast<size_t>(in.a)];
          const auto& obj = stack[stack.size() - static_cast<size_t>(in.b)].toObject();
          const GraphFunction* fn = asGraphFunction(obj->type->findMethod(method));
          if (!fn) throw Error(fmt::format("'{}' has no method '{}'", obj->type->name(), method));
          callObserved(*obs, impl.nodes[static_cast<size_t>(in.node)], *fn, stack);
          ++pc;
          break;
        }
        case OpCode::HOOK: {
          const Node& n = *impl.nodes[static_cast<size_t>(in.node)];
          const auto block = static_cast<size_t>(in.b);
          switch (static_cast<Hook>(in.a)) {
            case Hook::EnterIf: obs->observer.enterIf(n, block); break;
            case Hook::ExitIf: obs->observer.exitIf(n, block); break;
            case Hook::EnterLoop: obs->observer.enterLoop(n); break;
            case Hook::EndIteration: obs->observer.endIteration(n); break;
            case Hook::ExitLoop: obs->observer.exitLoop(n); break;
            case Hook::GetAttr: obs->observer.afterGetAttr(n, stack.back()); break;
            case Hook::SetAttr:
              obs->observer.beforeSetAttr(n, stack[stack.size() - 2], stack.back());
              break;
          }
          ++pc;
          break;
        }
        case OpCode::DROP:
          regs[static_cast<size_t>(in.a)] = IValue();
          ++pc;
          break;
      }
    }
  } catch (Error& e) {
    const int32_t nodeIndex = code[pc].node;
    const Node* n = nodeIndex >= 0 ? impl.nodes[static_cast<size_t>(nodeIndex)] : nullptr;
    const OpCode op = code[pc].op;
    if (op == OpCode::CALL || op == OpCode::CALLI || op == OpCode::CALLX || op == OpCode::CALLIX) {
      std::string where = placeOf(n);
      e.addContext(fmt::format("called from {}{}", name, where.empty() ? "" : " at " + where));
    } else {
      e.withPlace(placeOf(n));
      if (n && !n->kind().is_prim())
        e.addContext(fmt::format("while running {} in {}", n->kind().toQualString(), name));
    }
    throw;
  } catch (const std::exception& ex) {
    const int32_t nodeIndex = code[pc].node;
    const Node* n = nodeIndex >= 0 ? impl.nodes[static_cast<size_t>(nodeIndex)] : nullptr;
    // Note [Naming out of memory]: a bare std::bad_alloc says what was being built.
    Error e(dynamic_cast<const std::bad_alloc*>(&ex)
                ? outOfMemoryMessage(n ? "running " + n->kind().toQualString() : "running " + name)
                : std::string(ex.what()),
            placeOf(n));
    if (n) e.addContext(fmt::format("while running {} in {}", n->kind().toQualString(), name));
    throw e;
  }
}

}  // namespace

std::string Code::dump() const {
  std::ostringstream out;
  for (size_t i = 0; i < impl_->code.size(); ++i) {
    const auto& in = impl_->code[i];
    out << i << " " << opName(in.op) << " " << in.a;
    if (in.op == OpCode::STOREN || in.op == OpCode::CALLI || in.op == OpCode::CALLIX ||
        in.op == OpCode::HOOK || in.op == OpCode::OPX)
      out << " " << in.b;
    if (in.op == OpCode::LOOPTEST) out << " " << in.b << " " << in.c << " " << in.d;
    if ((in.op == OpCode::OP || in.op == OpCode::OPX) && in.node >= 0)
      out << "  # " << impl_->nodes[static_cast<size_t>(in.node)]->kind().toQualString();
    out << "\n";
  }
  return out.str();
}

namespace {
std::atomic<ExecutionGraphRewrite> gExecutionRewrite{nullptr};
}  // namespace

void setExecutionGraphRewrite(ExecutionGraphRewrite rewrite) { gExecutionRewrite = rewrite; }

namespace {

const Code& codeFor(const GraphFunction& fn, bool checkCallees) {
  return *fn.executionState([checkCallees](const GraphFunction& f) {
              auto s = std::make_shared<ExecutionState>();
              const ExecutionGraphRewrite rewrite = gExecutionRewrite.load();
              s->code = std::make_unique<Code>(rewrite ? rewrite(f.graph()) : f.graph(),
                                               f.qualname(), checkCallees);
              return s;
            }).code;
}

}  // namespace

const Code& codeFor(const GraphFunction& fn) { return codeFor(fn, /*checkCallees=*/true); }

IValue runFunction(const GraphFunction& fn, std::vector<IValue> args) {
  Stack stack = std::move(args);
  TL_CHECK(stack.size() == fn.numInputs(), "{} takes {} arguments, got {}", fn.qualname(),
           fn.numInputs(), stack.size());
  codeFor(fn).run(stack);
  const size_t nout = fn.graph()->outputs().size();
  if (nout == 1) return pop(stack);
  std::vector<IValue> outs(stack.end() - static_cast<std::ptrdiff_t>(nout), stack.end());
  return IValue(TupleImpl::create(std::move(outs)));
}

std::vector<IValue> runObserved(const GraphFunction& fn, std::vector<IValue> args,
                                ExecutionObserver& observer) {
  Stack stack = std::move(args);
  TL_CHECK(stack.size() == fn.numInputs(), "{} takes {} arguments, got {}", fn.qualname(),
           fn.numInputs(), stack.size());
  Observation observation{observer, {}};
  callObserved(observation, nullptr, fn, stack);
  const size_t nout = fn.graph()->outputs().size();
  return std::vector<IValue>(stack.end() - static_cast<std::ptrdiff_t>(nout), stack.end());
}

IValue runMethod(const ObjectPtr& self, const std::string& name, std::vector<IValue> args) {
  const auto* fn = dynamic_cast<const GraphFunction*>(self->type->findMethod(name));
  if (!fn) throw Error(fmt::format("'{}' has no method '{}'", self->type->name(), name));
  args.insert(args.begin(), IValue(self));
  return runFunction(*fn, std::move(args));
}

}  // namespace torchless
