// The execution pipeline (Note [Execution pipeline] in api/pipeline.h).
#include "api/pipeline.h"

#include "api/freeze.h"
#include "core/error.h"
#include "passes/passes.h"

namespace torchless {

namespace {

// True when some node of the graph reads or writes an attribute (the method keeps state).
bool touchesAttributes(const Block* b) {
  for (const Node* n : b->nodes()) {
    if (n->kind() == prim::GetAttr || n->kind() == prim::SetAttr) return true;
    for (const Block* sub : n->blocks())
      if (touchesAttributes(sub)) return true;
  }
  return false;
}

}  // namespace

std::shared_ptr<ExecutionPlan> buildExecutionPlan(const Module& module, const std::string& name,
                                                  const PipelineOptions& options) {
  const GraphFunction* fn = module.findMethod(name);
  if (!fn)
    throw Error(fmt::format("module '{}' has no method '{}'",
                            module.object() ? module.object()->type->name() : "<empty>", name));
  auto plan = std::make_shared<ExecutionPlan>();
  Module frozen;
  try {
    FreezeOptions fo;
    if (name != "forward") fo.preservedAttrs = {name};
    frozen = optimizeForInference(module, fo);
  } catch (const Error& e) {
    std::string msg = e.what();
    plan->notFrozen = msg.substr(0, msg.find('\n'));
  }
  const GraphFunction* ffn = frozen.defined() ? frozen.findMethod(name) : nullptr;
  if (ffn && touchesAttributes(ffn->graph()->block())) {
    plan->notFrozen = "the method reads or writes module attributes at run time";
    ffn = nullptr;
  }
  if (!ffn) {
    if (plan->notFrozen.empty()) plan->notFrozen = "freezing kept no such method";
    plan->graph = fn->graph();
    plan->self = module.object();
    plan->code = nullptr;  // runs through the module's own function (codeFor)
    return plan;
  }
  plan->graph = ffn->graph()->copy();
  plan->self = frozen.object();
  engine::PartitionOptions po = options.partition;
  // Profiles are given per method input (self excluded); the graph's input 0 is self.
  std::unordered_map<size_t, engine::InputProfile> byGraphInput;
  for (const auto& [i, p] : po.inputProfiles) byGraphInput[i + 1] = p;
  po.inputProfiles = std::move(byGraphInput);
  plan->report = engine::partitionGraph(*plan->graph, po);
  passes::fuseConvActivation(*plan->graph);  // what stays in the interpreter
  plan->code = std::make_unique<Code>(plan->graph, fn->qualname());
  return plan;
}

IValue runExecutionPlan(const ExecutionPlan& plan, std::vector<IValue> inputs) {
  TL_INTERNAL_ASSERT(plan.code != nullptr, "runExecutionPlan on a method that runs as loaded");
  inputs.insert(inputs.begin(), IValue(plan.self));
  Stack stack = std::move(inputs);
  const size_t nout = plan.graph->outputs().size();
  plan.code->run(stack);
  if (nout == 1) return pop(stack);
  std::vector<IValue> outs(stack.end() - static_cast<std::ptrdiff_t>(nout), stack.end());
  return IValue(TupleImpl::create(std::move(outs)));
}

}  // namespace torchless
