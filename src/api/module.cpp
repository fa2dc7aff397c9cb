#include "api/module.h"

#include "api/pipeline.h"
#include "core/error.h"
#include "ops/core_parallelism.h"
#include "passes/pass_manager.h"
#include "runtime/interpreter.h"

#include <mutex>
#include <unordered_map>

namespace torchless {

/// Execution plans by method, shared by copies of a Module (Note [Execution pipeline]).
struct ModuleExecutionCache {
  std::mutex mu;
  std::unordered_map<const GraphFunction*, std::shared_ptr<ExecutionPlan>> plans;
};

Module::Module(ObjectPtr object, std::shared_ptr<CompilationUnit> unit)
    : object_(std::move(object)),
      unit_(std::move(unit)),
      exec_(std::make_shared<ModuleExecutionCache>()) {}

namespace {
void setTraining(const ObjectPtr& obj, bool on) {
  if (obj->type->findAttributeSlot("training")) obj->setAttr("training", IValue(on));
  for (const IValue& v : obj->slots)
    if (v.isObject() && v.toObject()->type->isModule()) setTraining(v.toObject(), on);
}
}  // namespace

void Module::train(bool on) {
  TL_CHECK(object_ != nullptr, "train(): the module is empty");
  setTraining(object_, on);
  exec_ = std::make_shared<ModuleExecutionCache>();  // plans read `training`: plan again
}

bool Module::isTraining() const {
  if (!object_ || !object_->type->findAttributeSlot("training")) return true;
  const IValue& v = object_->getAttr("training");
  return !v.isBool() || v.toBool();
}

std::shared_ptr<const ExecutionPlan> Module::executionPlan(const std::string& name) const {
  const GraphFunction* fn = findMethod(name);
  if (!fn || !exec_) return buildExecutionPlan(*this, name);
  std::lock_guard<std::mutex> lock(exec_->mu);
  auto it = exec_->plans.find(fn);
  if (it != exec_->plans.end()) return it->second;
  auto plan = buildExecutionPlan(*this, name);
  exec_->plans.emplace(fn, plan);
  return plan;
}

const GraphFunction* Module::findMethod(const std::string& name) const {
  if (!object_) return nullptr;
  return dynamic_cast<const GraphFunction*>(object_->type->findMethod(name));
}

std::vector<std::string> Module::methodNames() const {
  std::vector<std::string> names;
  if (!object_) return names;
  for (Function* f : object_->type->methods()) names.push_back(f->name());
  return names;
}

Error Module::noSuchMethod(const std::string& name) const {
  std::vector<std::string> names = methodNames();
  return Error(fmt::format(
      "module '{}' has no method '{}' (methods: {})", object_ ? object_->type->name() : "<empty>",
      name, names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
}

std::vector<ParamSpec> Module::methodParams(const std::string& name) const {
  const GraphFunction* fn = findMethod(name);
  if (!fn) throw noSuchMethod(name);
  std::vector<ParamSpec> params;
  const auto& args = fn->schema().arguments();
  for (size_t i = 1; i < args.size(); ++i)  // skip self
    params.push_back({args[i].name(), args[i].type(), args[i].defaultValue()});
  return params;
}

namespace {
// Checks the count of `inputs` (self excluded) against `fn`'s schema and appends the defaults
// of missing trailing arguments.
void fillDefaults(const GraphFunction& fn, const std::string& name, std::vector<IValue>& inputs) {
  const auto& args = fn.schema().arguments();
  const size_t given = inputs.size() + 1;
  if (given > args.size())
    throw Error(fmt::format("{}() takes {} argument{} but {} were given", name, args.size() - 1,
                            args.size() == 2 ? "" : "s", inputs.size()));
  for (size_t i = given; i < args.size(); ++i) {
    if (!args[i].defaultValue())
      throw Error(fmt::format("{}() missing value for argument '{}'", name, args[i].name()));
    inputs.push_back(*args[i].defaultValue());
  }
}
}  // namespace

bool Module::prepare(const std::string& name, const std::vector<IValue>& inputs) const {
  const GraphFunction* fn = findMethod(name);
  if (!fn) throw noSuchMethod(name);
  if (!exec_ || !passes::jitOptimizationsEnabled()) return false;
  std::vector<IValue> filled = inputs;
  fillDefaults(*fn, name, filled);
  ops::adaptThreadsToLoad();  // engine plans are made for the thread count of the calls
  return preparePlan(*executionPlan(name), filled);
}

IValue Module::runMethod(const std::string& name, std::vector<IValue> inputs) const {
  const GraphFunction* fn = findMethod(name);
  if (!fn) throw noSuchMethod(name);
  fillDefaults(*fn, name, inputs);
  ops::adaptThreadsToLoad();  // Note [Threads that never hurt] in ops/core_parallelism.h
  if (exec_ && passes::jitOptimizationsEnabled()) {
    std::shared_ptr<const ExecutionPlan> plan = executionPlan(name);
    if (plan->code) return runExecutionPlan(*plan, std::move(inputs));
  }
  inputs.insert(inputs.begin(), IValue(object_));
  return runFunction(*fn, std::move(inputs));
}

// Note [One call runs as loaded]
// Building a method's plan (freezing with batch norm folded into copies of the weights,
// partitioning, the engines' primitives and reordered weights) pays for itself over many
// calls. A process that makes one call (`torchless run`) only pays it: resnet50 took 1.4-2.0 s
// of CPU and 381-433 MiB peak through the plan against 0.9 s and 198 MiB as loaded (load
// average 12). So a single call runs the loaded graph in the interpreter, whose kernels
// (oneDNN convolutions with fused activations) give PyTorch's numbers as the engines do.
IValue runMethodOnce(const Module& module, const std::string& name, std::vector<IValue> inputs) {
  const GraphFunction* fn = module.findMethod(name);
  if (!fn) throw module.noSuchMethod(name);
  fillDefaults(*fn, name, inputs);
  ops::adaptThreadsToLoad();  // Note [Threads that never hurt] in ops/core_parallelism.h
  inputs.insert(inputs.begin(), IValue(module.object()));
  return runFunction(*fn, std::move(inputs));
}

namespace {
void collectTensors(const ObjectPtr& obj, const std::string& prefix, bool parameters,
                    std::vector<std::pair<std::string, Tensor>>& out) {
  const auto& attrs = obj->type->attributes();
  for (size_t i = 0; i < attrs.size() && i < obj->slots.size(); ++i) {
    const auto& a = attrs[i];
    const IValue& v = obj->slots[i];
    if ((parameters ? a.isParameter : a.isBuffer) && v.isTensor())
      out.emplace_back(prefix + a.name, v.toTensor());
  }
  for (size_t i = 0; i < attrs.size() && i < obj->slots.size(); ++i) {
    const IValue& v = obj->slots[i];
    if (v.isObject() && v.toObject()->type->isModule())
      collectTensors(v.toObject(), prefix + attrs[i].name + ".", parameters, out);
  }
}
}  // namespace

std::vector<std::pair<std::string, Tensor>> Module::namedParameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  if (object_) collectTensors(object_, "", true, out);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::namedBuffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  if (object_) collectTensors(object_, "", false, out);
  return out;
}

}  // namespace torchless
