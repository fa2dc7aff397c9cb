// torchless::compile (api/compile.h).
#include "api/compile.h"

#include "api/freeze.h"
#include "api/pipeline.h"
#include "convert/engine/engine_record.h"
#include "core/error.h"
#include "runtime/torchbind.h"

#include <fstream>
#include <sstream>

namespace torchless {

namespace {

constexpr const char* kEngineClass = "__torch__.torch.classes.torchless.Engine";

// Each in-memory engine node becomes, as Torch-TensorRT writes it:
//   %l = prim::ListConstruct(inputs); %e = prim::GetAttr[name="__torchless_engine_k"](%self)
//   %r = torchless::execute_engine(%l, %e); %o... = prim::ListUnpack(%r)
void rewriteEngines(Block* b, Value* self, const ObjectPtr& obj, int& counter) {
  std::vector<Node*> nodes(b->nodes().begin(), b->nodes().end());
  for (Node* n : nodes) {
    for (Block* sub : n->blocks()) rewriteEngines(sub, self, obj, counter);
    if (n->kind() != engine::executeEngineSymbol() || !n->hasAttribute(engine::engineAttribute()))
      continue;
    std::shared_ptr<engine::Engine> e = engine::engineOf(*n);
    engine::EngineRecord r = engine::serializeEngine(*e);
    std::string profiles;
    for (size_t i = 0; i < r.profiles.size(); ++i) profiles += (i ? "|" : "") + r.profiles[i];
    std::vector<IValue> weights(r.weights.begin(), r.weights.end());
    ObjectPtr eo = torchbind::makeObject(
        kEngineClass,
        {IValue(r.version), IValue(r.network), IValue(r.graph),
         IValue(ListImpl::create(TensorType::get(), std::move(weights))), IValue(profiles)});
    const std::string name = fmt::format("__torchless_engine_{}", counter++);
    obj->type->addAttribute(name, torchbind::classType(kEngineClass));
    obj->resizeSlots();
    obj->slots.back() = IValue(eo);
    Graph& g = *n->owningGraph();
    WithInsertPoint guard(n);
    for (const Value* in : n->inputs())
      TL_INTERNAL_ASSERT(in->type()->kind() == TypeKind::TensorType,
                         "engine input %{} is not a tensor", in->debugName());
    Node* list = g.insertNode(g.createList(TensorType::get(), n->inputs()));
    Node* get = g.insertNode(g.createGetAttr(self, name, torchbind::classType(kEngineClass)));
    Node* call =
        g.insertNode(g.create(engine::executeEngineSymbol(), {list->output(), get->output()}, 1));
    call->output()->setType(ListType::ofTensors());
    call->setSourceRange(n->sourceRange());
    Node* unpack = g.insertNode(g.createListUnpack(call->output(), n->outputs().size()));
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      unpack->output(i)->copyMetadata(n->output(i));
      n->output(i)->replaceAllUsesWith(unpack->output(i));
    }
    n->destroy();
  }
}

}  // namespace

bool cpuHasBf16() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0)
      return line.find(" avx512_bf16") != std::string::npos ||
             line.find(" amx_bf16") != std::string::npos;
  return false;
}

CompileResult compile(const Module& module, const CompileSpec& spec) {
  if (spec.precision != "fp32" && spec.precision != "bf16")
    throw Error(fmt::format("unknown precision '{}' (fp32 or bf16)", spec.precision));
  if (spec.precision == "bf16" && !cpuHasBf16())
    throw Error(
        "--precision bf16 needs a CPU with AVX512-BF16 or AMX (this one has neither: /proc/cpuinfo "
        "lists no avx512_bf16 or amx_bf16); use --precision fp32");
  PipelineOptions po;
  po.partition.minBlockSize = spec.minBlockSize;
  po.partition.torchExecutedOps = spec.torchExecutedOps;
  po.partition.requireFullCompilation = spec.requireFullCompilation;
  po.partition.tensorBoundaries = true;
  po.partition.bf16 = spec.precision == "bf16";
  po.stateInFrozenCopy = true;  // the compiled archive holds the method's module state
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (!spec.inputs[i].empty()) po.partition.inputProfiles[i] = spec.inputs[i];
  if (!spec.exampleInputs.empty()) {
    // Methods that branch on tensor properties are specialized to the examples' signature
    // (Note [Specialization] in api/pipeline.h).
    po.exampleInputs = spec.exampleInputs;
    const GraphFunction* fwd = module.findMethod("forward");
    if (!fwd) throw Error("compile needs a module with a forward method");
    const auto& args = fwd->schema().arguments();  // self first
    for (size_t i = po.exampleInputs.size() + 1; i < args.size(); ++i) {
      if (!args[i].defaultValue())
        throw Error(fmt::format("forward() missing value for argument '{}'", args[i].name()));
      po.exampleInputs.push_back(*args[i].defaultValue());
    }
  }
  std::shared_ptr<ExecutionPlan> plan = buildExecutionPlan(module, "forward", po);
  if (!plan->notFrozen.empty())
    throw Error("compile needs a module it can freeze: " + plan->notFrozen +
                " (`run` runs the module as loaded)");
  IValue exampleOutput;
  if (!po.exampleInputs.empty()) exampleOutput = runExecutionPlan(*plan, po.exampleInputs);
  const ObjectPtr& obj = plan->self;
  // The example's runs (the specialization's, exampleOutput's) moved the state a method keeps
  // in the frozen copy (Note [Module state in a frozen plan]): the archive starts from the
  // module's. The frozen class keeps only the attributes its method touches, by their names.
  for (size_t i = 0; i < obj->type->attributes().size(); ++i) {
    const std::string& attr = obj->type->attributes()[i].name;
    if (module.object()->type->findAttributeSlot(attr))
      obj->slots.at(i) = deepCopy(module.object()->getAttr(attr));
  }
  std::shared_ptr<Graph> g = plan->graph->copy();
  int counter = 0;
  rewriteEngines(g->block(), g->inputs().at(0), obj, counter);
  auto* fn = const_cast<GraphFunction*>(
      dynamic_cast<const GraphFunction*>(obj->type->findMethod("forward")));
  TL_INTERNAL_ASSERT(fn != nullptr, "the frozen module has no forward");
  fn->setGraph(g);
  CompileResult result;
  result.module = Module(obj, module.unit());
  result.report = std::move(plan->report);
  result.exampleOutput = std::move(exampleOutput);
  return result;
}

}  // namespace torchless
