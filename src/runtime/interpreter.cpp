#include "runtime/interpreter.h"

#include "core/error.h"
#include "core/stack_guard.h"
#include "ir/operator_matching.h"
#include "runtime/op_observer.h"

#include <atomic>
#include <sstream>
#include <unordered_map>

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
};

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
    case prim::Param:
      return true;
    default:
      return false;
  }
}

std::string placeOf(const Node* n) {
  if (n && n->sourceRange()) return n->sourceRange()->str();
  return {};
}

const GraphFunction* asGraphFunction(Function* f) { return dynamic_cast<const GraphFunction*>(f); }

std::atomic<OpObserver*> gOpObserver{nullptr};

// The OP instruction with the observer on (Note [Op observer]), out of the hot loop.
[[gnu::noinline]] void runObserved(OpObserver& obs, const Node* n, const Operation& op, Stack& stack) {
  if (n == nullptr) return op(stack);
  obs.onOpStart(*n);
  op(stack);
  obs.onOpEnd(*n);
}

}  // namespace

void setOpObserver(OpObserver* observer) { gOpObserver.store(observer); }

struct Code::Impl {
  std::vector<Instruction> code;
  std::vector<Operation> ops;
  std::vector<IValue> constants;
  std::vector<const GraphFunction*> callees;
  std::vector<std::string> ifaceMethods;
  std::vector<const Node*> nodes;
  size_t numRegisters = 0;
  size_t numInputs = 0;
};

namespace {

class Compiler {
 public:
  Compiler(Code::Impl& impl, const Graph& graph, const std::string& name)
      : impl_(impl), graph_(graph), name_(name) {}

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
  // Every node needs a kernel or compiler support; list all that lack one, at once.
  void checkKernels() {
    std::vector<std::string> missing;
    collectMissing(graph_.block(), missing);
    if (missing.empty()) return;
    std::string details;
    for (const auto& m : missing) details += "  " + m + "\n";
    if (!details.empty()) details.pop_back();
    throw UnsupportedError(
        fmt::format("{} unsupported operator{} in {}", missing.size(),
                    missing.size() == 1 ? "" : "s", name_),
        "", details);
  }

  void collectMissing(const Block* b, std::vector<std::string>& missing) {
    const auto& registry = KernelRegistry::global();
    for (const Node* n : b->nodes()) {
      for (const Block* sub : n->blocks()) collectMissing(sub, missing);
      if (isStructural(n->kind())) continue;
      const OpInfo* op = matchOperator(n, OperatorRegistry::global());
      opOf_[n] = op;
      if (registry.hasKernel(*n, op)) continue;
      std::string what = op ? op->key : fmt::format("{} (no schema matches its inputs)", n->kind().toQualString());
      std::string where = placeOf(n);
      missing.push_back(fmt::format("unsupported operator {}{}", what,
                                    where.empty() ? "" : " used at " + where));
    }
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

  void emitBlock(const Block* b) {
    for (const Node* n : b->nodes()) emitNode(n);
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
        emitStoreOutputs(n->outputs());
        break;
      }
      case prim::SetAttr: {
        emitLoad(n->input(0));
        emitLoad(n->input(1));
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
        emit(OpCode::OP, static_cast<int32_t>(impl_.ops.size() - 1));
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
    emitBlock(thenB);
    for (const Value* v : thenB->outputs()) emitLoad(v);
    emitStoreOutputs(n->outputs());
    int32_t jmp = emit(OpCode::JMP);
    impl_.code[static_cast<size_t>(jf)].a = here();
    emitBlock(elseB);
    for (const Value* v : elseB->outputs()) emitLoad(v);
    emitStoreOutputs(n->outputs());
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
    const int32_t head = here();
    const int32_t test = emit(OpCode::LOOPTEST, trip, counter, cond);
    emitBlock(body);
    for (const Value* v : body->outputs()) emitLoad(v);
    if (carried) emit(OpCode::STOREN, regOf(body->inputs()[1]), static_cast<int32_t>(carried));
    emit(OpCode::STORE, cond);
    emit(OpCode::INC, counter);
    emit(OpCode::JMP, head);
    impl_.code[static_cast<size_t>(test)].d = here();
    for (size_t i = 0; i < carried; ++i) emit(OpCode::LOAD, regOf(body->inputs()[1 + i]));
    emitStoreOutputs(n->outputs());
  }

  void emitCall(const Node* n, const GraphFunction* fn, size_t firstInput) {
    for (size_t i = firstInput; i < n->inputs().size(); ++i) emitLoad(n->input(i));
    impl_.callees.push_back(fn);
    emit(OpCode::CALL, static_cast<int32_t>(impl_.callees.size() - 1));
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
      if (!fn)
        throw Error(fmt::format("'{}' has no method '{}'", cls->name(), method), placeOf(n));
      emitCall(n, fn, 0);
      return;
    }
    if (selfType->kind() == TypeKind::InterfaceType) {
      for (const Value* v : n->inputs()) emitLoad(v);
      impl_.ifaceMethods.push_back(method);
      emit(OpCode::CALLI, static_cast<int32_t>(impl_.ifaceMethods.size() - 1),
           static_cast<int32_t>(n->inputs().size()));
      emitStoreOutputs(n->outputs());
      return;
    }
    throw Error(fmt::format("cannot call method '{}' on a value of type {}", method, selfType->str()),
                placeOf(n));
  }

  Code::Impl& impl_;
  const Graph& graph_;
  const std::string& name_;
  std::unordered_map<const Value*, int32_t> regs_;
  std::unordered_map<const Value*, int32_t> constIndex_;
  std::unordered_map<const Node*, const OpInfo*> opOf_;
  size_t nextReg_ = 0;
  int32_t currentNode_ = -1;
};

}  // namespace

Code::Code(std::shared_ptr<Graph> graph, std::string name)
    : graph_(std::move(graph)), name_(std::move(name)), impl_(std::make_unique<Impl>()) {
  Compiler(*impl_, *graph_, name_).compile();
}

Code::~Code() = default;

void Code::run(Stack& stack) const {
  const Impl& impl = *impl_;
  TL_CHECK(stack.size() >= impl.numInputs, "{} expects {} inputs, got {}", name_, impl.numInputs,
           stack.size());
  std::vector<IValue> regs(impl.numRegisters);
  size_t pc = 0;
  const Instruction* code = impl.code.data();
  try {
    for (;;) {
      const Instruction& in = code[pc];
      switch (in.op) {
        case OpCode::OP:
          if (OpObserver* obs = gOpObserver.load(std::memory_order_relaxed); obs == nullptr) [[likely]]
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
        case OpCode::JF:
          pc = pop(stack).toBool() ? pc + 1 : static_cast<size_t>(in.a);
          break;
        case OpCode::JMP:
          pc = static_cast<size_t>(in.a);
          break;
        case OpCode::LOOPTEST: {
          const bool go = regs[static_cast<size_t>(in.b)].toInt() < regs[static_cast<size_t>(in.a)].toInt() &&
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
            throw ModelError(fmt::format("RecursionError: maximum recursion depth exceeded while "
                                         "calling '{}'",
                                         impl.callees[static_cast<size_t>(in.a)]->qualname()));
          codeFor(*impl.callees[static_cast<size_t>(in.a)]).run(stack);
          ++pc;
          break;
        case OpCode::CALLI: {
          const auto& method = impl.ifaceMethods[static_cast<size_t>(in.a)];
          const IValue& self = stack[stack.size() - static_cast<size_t>(in.b)];
          const auto& obj = self.toObject();
          const GraphFunction* fn = asGraphFunction(obj->type->findMethod(method));
          if (!fn)
            throw Error(fmt::format("'{}' has no method '{}'", obj->type->name(), method));
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
        case OpCode::RET:
          return;
      }
    }
  } catch (Error& e) {
    const int32_t nodeIndex = code[pc].node;
    const Node* n = nodeIndex >= 0 ? impl.nodes[static_cast<size_t>(nodeIndex)] : nullptr;
    if (code[pc].op == OpCode::CALL || code[pc].op == OpCode::CALLI) {
      std::string where = placeOf(n);
      e.addContext(fmt::format("called from {}{}", name_, where.empty() ? "" : " at " + where));
    } else {
      e.withPlace(placeOf(n));
      if (n && !n->kind().is_prim())
        e.addContext(fmt::format("while running {} in {}", n->kind().toQualString(), name_));
    }
    throw;
  } catch (const std::exception& ex) {
    const int32_t nodeIndex = code[pc].node;
    const Node* n = nodeIndex >= 0 ? impl.nodes[static_cast<size_t>(nodeIndex)] : nullptr;
    Error e(ex.what(), placeOf(n));
    if (n) e.addContext(fmt::format("while running {} in {}", n->kind().toQualString(), name_));
    throw e;
  }
}

std::string Code::dump() const {
  std::ostringstream out;
  for (size_t i = 0; i < impl_->code.size(); ++i) {
    const auto& in = impl_->code[i];
    out << i << " " << opName(in.op) << " " << in.a;
    if (in.op == OpCode::STOREN || in.op == OpCode::CALLI) out << " " << in.b;
    if (in.op == OpCode::LOOPTEST) out << " " << in.b << " " << in.c << " " << in.d;
    if (in.op == OpCode::OP && in.node >= 0)
      out << "  # " << impl_->nodes[static_cast<size_t>(in.node)]->kind().toQualString();
    out << "\n";
  }
  return out.str();
}

namespace {
std::atomic<ExecutionGraphRewrite> gExecutionRewrite{nullptr};
}  // namespace

void setExecutionGraphRewrite(ExecutionGraphRewrite rewrite) { gExecutionRewrite = rewrite; }

const Code& codeFor(const GraphFunction& fn) {
  return *fn
              .executionState([](const GraphFunction& f) {
                auto s = std::make_shared<ExecutionState>();
                const ExecutionGraphRewrite rewrite = gExecutionRewrite.load();
                s->code = std::make_unique<Code>(rewrite ? rewrite(f.graph()) : f.graph(), f.qualname());
                return s;
              })
              .code;
}

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

IValue runMethod(const ObjectPtr& self, const std::string& name, std::vector<IValue> args) {
  const auto* fn = dynamic_cast<const GraphFunction*>(self->type->findMethod(name));
  if (!fn) throw Error(fmt::format("'{}' has no method '{}'", self->type->name(), name));
  args.insert(args.begin(), IValue(self));
  return runFunction(*fn, std::move(args));
}

}  // namespace torchless
