// Kernels of TorchScript's dict builtins for every key type the schema table has (str, int,
// bool, float, complex, Tensor): indexing, get/setdefault/pop, keys/values/items (items as a
// list of tuples), update, copy, dict(). Dicts keep insertion order, as Python's do.

#include "core/error.h"
#include "runtime/register_utils.h"

namespace torchless {
namespace {

using namespace kreg;

std::string keyError(const IValue& key) {
  return fmt::format("KeyError: {}", key.isString() ? "'" + key.toStringRef() + "'" : key.repr());
}

// Registers `fn` for `base + suffix` when the table has that overload.
template <size_t N, typename Fn>
void forKey(KernelRegistry& r, const std::string& name, Fn fn) {
  if (OperatorRegistry::global().findOverload(name)) defN<N>(r, name, fn);
}

DictPtr copyDict(const DictPtr& d) {
  auto out = DictImpl::create(d->keyType, d->valueType);
  for (const auto& [k, v] : d->entries()) out->insertOrAssign(k, v);
  return out;
}

}  // namespace

void registerBuiltinDictKernels(KernelRegistry& r) {
  for (const std::string k : {"str", "int", "bool", "float", "complex", "Tensor"}) {
    forKey<2>(r, "aten::__getitem__.Dict_" + k, [](const IValue* a) {
      const IValue* v = a[0].toDict()->find(a[1]);
      if (!v) throw ModelError(keyError(a[1]));
      return *v;
    });
    forKey<3>(r, "aten::_set_item." + k,
              [](const IValue* a) { a[0].toDict()->insertOrAssign(a[1], a[2]); });
    forKey<2>(r, "aten::__contains__." + k,
              [](const IValue* a) { return IValue(a[0].toDict()->contains(a[1])); });
    forKey<1>(r, "aten::len.Dict_" + k,
              [](const IValue* a) { return IValue(static_cast<int64_t>(a[0].toDict()->size())); });
    forKey<1>(r, "aten::keys." + k, [](const IValue* a) {
      auto d = a[0].toDict();
      std::vector<IValue> out;
      for (const auto& e : d->entries()) out.push_back(e.first);
      return IValue(ListImpl::create(d->keyType, std::move(out)));
    });
    forKey<1>(r, "aten::values." + k, [](const IValue* a) {
      auto d = a[0].toDict();
      std::vector<IValue> out;
      for (const auto& e : d->entries()) out.push_back(e.second);
      return IValue(ListImpl::create(d->valueType, std::move(out)));
    });
    forKey<1>(r, "aten::items." + k, [](const IValue* a) {
      auto d = a[0].toDict();
      std::vector<IValue> out;
      TypePtr tt = TupleType::create({d->keyType, d->valueType});
      for (const auto& e : d->entries()) out.emplace_back(TupleImpl::create({e.first, e.second}));
      return IValue(ListImpl::create(tt, std::move(out)));
    });
    forKey<2>(r, "aten::get." + k, [](const IValue* a) {
      const IValue* v = a[0].toDict()->find(a[1]);
      return v ? *v : IValue();
    });
    forKey<3>(r, "aten::get.default_" + k, [](const IValue* a) {
      const IValue* v = a[0].toDict()->find(a[1]);
      return v ? *v : a[2];
    });
    forKey<3>(r, "aten::setdefault." + k, [](const IValue* a) {
      auto d = a[0].toDict();
      if (const IValue* v = d->find(a[1])) return *v;
      d->insertOrAssign(a[1], a[2]);
      return a[2];
    });
    forKey<2>(r, "aten::pop.Dict_" + k, [](const IValue* a) {
      auto d = a[0].toDict();
      const IValue* v = d->find(a[1]);
      if (!v) throw ModelError(keyError(a[1]));
      IValue out = *v;
      d->erase(a[1]);
      return out;
    });
    forKey<3>(r, "aten::pop.Dict_default_" + k, [](const IValue* a) {
      auto d = a[0].toDict();
      const IValue* v = d->find(a[1]);
      if (!v) return a[2];
      IValue out = *v;
      d->erase(a[1]);
      return out;
    });
    forKey<1>(r, "aten::popitem." + k, [](const IValue* a) {
      auto d = a[0].toDict();
      if (d->size() == 0) throw ModelError("KeyError: 'popitem(): dictionary is empty'");
      auto last = d->entries().back();
      d->erase(last.first);
      return IValue(TupleImpl::create({last.first, last.second}));
    });
    forKey<2>(r, "aten::Delete.Dict_" + k, [](const IValue* a) {
      if (!a[0].toDict()->erase(a[1])) throw ModelError(keyError(a[1]));
    });
    forKey<1>(r, "aten::clear." + k, [](const IValue* a) { a[0].toDict()->clear(); });
    forKey<2>(r, "aten::update." + k, [](const IValue* a) {
      auto d = a[0].toDict();
      const auto entries = a[1].toDict()->entries();
      for (const auto& [key, v] : entries) d->insertOrAssign(key, v);
    });
    forKey<1>(r, "aten::copy.Dict_" + k,
              [](const IValue* a) { return IValue(copyDict(a[0].toDict())); });
    forKey<1>(r, "aten::dict.Dict_" + k,
              [](const IValue* a) { return IValue(copyDict(a[0].toDict())); });
    // dict(list of (key, value) tuples)
    if (OperatorRegistry::global().findOverload("aten::dict." + k))
      defCreator(r, "aten::dict." + k, [](const Node& n) -> Operation {
        const auto* dt = n.output()->type()->cast<DictType>();
        TypePtr kt = dt ? dt->getKeyType() : AnyType::get();
        TypePtr vt = dt ? dt->getValueType() : AnyType::get();
        return kernel<1>([kt, vt](const IValue* a) {
          auto d = DictImpl::create(kt, vt);
          for (const auto& t : a[0].toList()->list) {
            const auto& e = t.toTuple()->elements;
            d->insertOrAssign(e.at(0), e.at(1));
          }
          return IValue(d);
        });
      });
  }
  defCreator(r, "aten::dict", [](const Node& n) -> Operation {
    const auto* dt = n.output()->type()->cast<DictType>();
    TypePtr kt = dt ? dt->getKeyType() : StringType::get();
    TypePtr vt = dt ? dt->getValueType() : TensorType::get();
    return kernel<0>([kt, vt](const IValue*) { return IValue(DictImpl::create(kt, vt)); });
  });
}

}  // namespace torchless
