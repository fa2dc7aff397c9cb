// torchless::freeze and optimizeForInference (api/freeze.h): the module-level part of
// PyTorch's torch.jit.freeze / freeze_module; the graph rewrites are passes (src/passes/
// freeze.cpp and the folds), run through a PassManager so TORCHLESS_LOG and
// TORCHLESS_PASS_LIMIT apply.
#include "api/freeze.h"

#include "core/error.h"
#include "passes/pass_manager.h"
#include "passes/passes.h"

#include <algorithm>
#include <unordered_map>

namespace torchless {

namespace {

/// A deep copy of `v` (objects, containers, tensors), keeping sharing inside `v` (memo).
IValue deepCopy(const IValue& v, std::unordered_map<const void*, IValue>& memo) {
  auto remember = [&](const void* key, IValue copy) {
    memo.emplace(key, copy);
    return copy;
  };
  switch (v.tag()) {
    case IValue::Tag::Tensor: {
      const Tensor& t = v.toTensor();
      if (!t.defined()) return v;
      if (auto it = memo.find(t.impl().get()); it != memo.end()) return it->second;
      Tensor c = t.clone();
      c.setRequiresGrad(t.requiresGrad());
      return remember(t.impl().get(), IValue(c));
    }
    case IValue::Tag::List: {
      const ListPtr& l = v.toList();
      if (auto it = memo.find(l.get()); it != memo.end()) return it->second;
      ListPtr c = ListImpl::create(l->elementType);
      IValue out = remember(l.get(), IValue(c));
      for (const IValue& e : l->list) c->list.push_back(deepCopy(e, memo));
      return out;
    }
    case IValue::Tag::Tuple: {
      const TuplePtr& t = v.toTuple();
      // Memoized as well: a tuple shared through the pickle memo is copied once (Note [Shared
      // values] in core/ivalue.cpp). Tuples cannot contain themselves, so copying first is safe.
      if (auto it = memo.find(t.get()); it != memo.end()) return it->second;
      std::vector<IValue> elems;
      for (const IValue& e : t->elements) elems.push_back(deepCopy(e, memo));
      return remember(t.get(), IValue(TupleImpl::create(std::move(elems), t->type)));
    }
    case IValue::Tag::Dict: {
      const DictPtr& d = v.toDict();
      if (auto it = memo.find(d.get()); it != memo.end()) return it->second;
      DictPtr c = DictImpl::create(d->keyType, d->valueType);
      IValue out = remember(d.get(), IValue(c));
      for (const auto& [k, val] : d->entries()) c->insertOrAssign(k, deepCopy(val, memo));
      return out;
    }
    case IValue::Tag::Object: {
      const ObjectPtr& o = v.toObject();
      if (auto it = memo.find(o.get()); it != memo.end()) return it->second;
      ObjectPtr c = Object::create(o->type);
      IValue out = remember(o.get(), IValue(c));
      for (size_t i = 0; i < o->slots.size() && i < c->slots.size(); ++i)
        c->slots[i] = deepCopy(o->slots[i], memo);
      return out;
    }
    default: return v;
  }
}

/// `__torch__.a.M` -> `__torch__.___torch_mangle_N.M` with the first N free in `unit`.
std::string mangledName(const CompilationUnit& unit, const std::string& qualname) {
  size_t dot = qualname.rfind('.');
  std::string base = dot == std::string::npos ? qualname : qualname.substr(dot + 1);
  for (size_t n = 0;; ++n) {
    std::string name = fmt::format("__torch__.___torch_mangle_{}.{}", n, base);
    if (!unit.findType(name) && !unit.findFunction(name + ".forward")) return name;
  }
}

Module freezeImpl(const Module& module, const FreezeOptions& options,
                  const std::vector<std::string>& extraPipeline) {
  TL_CHECK(module.defined(), "freeze: the module is empty");
  const ObjectPtr& self = module.object();
  const ClassTypePtr& cls = self->type;
  if (cls->findAttributeSlot("training")) {
    const IValue& training = self->getAttr("training");
    if (training.isBool() && training.toBool())
      throw Error(fmt::format(
          "freeze: module '{}' is in training mode; freezing is only implemented for modules "
          "in eval mode (call .eval() before torch.jit.save), as torch.jit.freeze",
          cls->name()));
  }

  // Methods and attributes to keep: forward, then preserved_attrs in order.
  std::vector<std::string> methods;
  std::set<std::string> preservedAttrs;
  if (module.findMethod("forward")) methods.push_back("forward");
  for (const std::string& name : options.preservedAttrs) {
    if (module.findMethod(name)) {
      if (std::find(methods.begin(), methods.end(), name) == methods.end()) methods.push_back(name);
    } else {
      std::string root = name.substr(0, name.find('.'));
      if (!cls->findAttributeSlot(root))
        throw Error(fmt::format("freeze: '{}' is neither a method nor an attribute of '{}'", name,
                                cls->name()));
      preservedAttrs.insert(name);
    }
  }
  if (methods.empty())
    throw Error(
        fmt::format("freeze: module '{}' has no forward method and no method was "
                    "named to preserve",
                    cls->name()));

  // Inline every kept method first: what one writes, no other may fold.
  std::vector<std::shared_ptr<Graph>> graphs;
  passes::FreezeGraphOptions fo;
  fo.preservedAttributes = preservedAttrs;
  for (const std::string& m : methods) {
    std::shared_ptr<Graph> g = module.findMethod(m)->graph()->copy();
    passes::inlineCalls(*g);
    passes::foldTrainingAttributes(*g, self);
    try {
      for (const std::string& p : passes::mutatedAttributes(*g)) fo.mutatedAttributes.insert(p);
    } catch (Error& e) {
      e.addContext(fmt::format("while freezing method '{}'", m));
      throw;
    }
    graphs.push_back(std::move(g));
  }

  passes::registerPasses();
  passes::PassManagerOptions pmo = passes::PassManagerOptions::fromEnvironment();
  std::vector<std::string> folds;
  if (passes::jitOptimizationsEnabled()) {
    if (options.optimizeNumerics) {
      folds = {"remove_dropout", "constant_propagation", "fold_conv_bn", "fold_conv_add_mul",
               "fold_linear_bn"};
    } else {
      folds = {"remove_dropout"};
    }
    folds.insert(folds.end(), extraPipeline.begin(), extraPipeline.end());
    folds.push_back("eliminate_dead_code");
  }
  {
    passes::FreezeModuleScope scope(self, fo);
    for (size_t i = 0; i < graphs.size(); ++i) {
      try {
        // TORCHLESS_PASS_LIMIT counts pass executions over both stages and all methods.
        passes::PassManagerOptions fp = pmo;
        passes::PassManager freezer({"freeze"}, fp);
        freezer.run(*graphs[i]);
        if (pmo.stopAfter) *pmo.stopAfter -= std::min(*pmo.stopAfter, freezer.executions());
        if (!folds.empty() && !freezer.stopped()) {
          fp = pmo;
          fp.fixedPoint = true;
          passes::PassManager folder(folds, fp);
          folder.run(*graphs[i]);
          if (pmo.stopAfter) *pmo.stopAfter -= std::min(*pmo.stopAfter, folder.executions());
        }
      } catch (Error& e) {
        e.addContext(fmt::format("while freezing method '{}'", methods[i]));
        throw;
      }
    }
  }
  // Folds may have removed the last reads of an attribute; recount what the graphs use.
  std::set<std::string> used;
  for (const auto& g : graphs) {
    if (g->inputs().empty()) continue;
    for (const Use& u : g->inputs()[0]->uses())
      if ((u.user->kind() == prim::GetAttr || u.user->kind() == prim::SetAttr) && u.offset == 0)
        used.insert(u.user->s(attr::name));
  }
  for (const std::string& p : preservedAttrs) used.insert(p.substr(0, p.find('.')));

  // The frozen class: kept attributes (in the original order, deep-copied values) and
  // methods.
  const std::shared_ptr<CompilationUnit>& unit = module.unit();
  TL_CHECK(unit != nullptr, "freeze: the module has no compilation unit");
  auto frozen = ClassType::create(mangledName(*unit, cls->name()), cls->isModule());
  std::unordered_map<const void*, IValue> memo;
  std::vector<IValue> slots;
  for (size_t i = 0; i < cls->attributes().size(); ++i) {
    const auto& a = cls->attributes()[i];
    if (!used.count(a.name)) continue;
    frozen->addAttribute(a.name, a.type, a.isParameter, a.isBuffer);
    slots.push_back(i < self->slots.size() ? deepCopy(self->slots[i], memo) : IValue());
  }
  for (const auto& c : cls->constants()) frozen->addConstant(c.name, c.value);
  unit->addType(frozen->name(), frozen);
  ObjectPtr object = Object::create(frozen);
  for (size_t i = 0; i < slots.size(); ++i) object->slots[i] = std::move(slots[i]);

  for (size_t i = 0; i < methods.size(); ++i) {
    const GraphFunction* orig = module.findMethod(methods[i]);
    std::shared_ptr<Graph>& g = graphs[i];
    g->inputs()[0]->setType(frozen);
    const FunctionSchema& s = orig->schema();
    std::vector<Argument> args = s.arguments();
    if (!args.empty()) {
      const Argument& a0 = args[0];
      args[0] = Argument(a0.name(), frozen, std::nullopt, a0.defaultValue(), a0.kwargOnly(),
                         a0.aliasInfo());
    }
    FunctionSchema schema(s.name(), s.overloadName(), std::move(args), s.returns(), s.isVararg(),
                          s.isVarret());
    GraphFunction* fn = unit->addFunction(
        std::make_unique<GraphFunction>(frozen->name() + "." + methods[i], g, std::move(schema)));
    frozen->addMethod(fn);
  }
  return Module(object, unit);
}

}  // namespace

IValue deepCopy(const IValue& v) {
  std::unordered_map<const void*, IValue> memo;
  return deepCopy(v, memo);
}

Module freeze(const Module& module, const FreezeOptions& options) {
  return freezeImpl(module, options, {});
}

Module optimizeForInference(const Module& module, const FreezeOptions& options) {
  return freezeImpl(
      module, options,
      {"peephole", "constant_propagation", "common_subexpression_elimination", "fold_linear_mul"});
}

}  // namespace torchless
